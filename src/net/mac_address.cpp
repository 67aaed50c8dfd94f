#include "net/mac_address.hpp"

#include <cctype>

namespace pw::net {

std::optional<MacAddress> MacAddress::parse(std::string_view mac) {
  if (mac.size() != 17) return std::nullopt;
  std::string out;
  out.reserve(17);
  for (std::size_t i = 0; i < mac.size(); ++i) {
    const char c = mac[i];
    if (i % 3 == 2) {
      if (c != ':' && c != '-') return std::nullopt;
      out.push_back(':');
    } else {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  return MacAddress(std::move(out));
}

std::string canonical_mac(std::string_view text) {
  if (auto m = MacAddress::parse(text)) return m->str();
  std::string out;
  out.reserve(text.size());
  for (char c : text) out.push_back(c == '-' ? ':' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

}  // namespace pw::net
