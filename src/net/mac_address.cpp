// SPDX-License-Identifier: GPL-3.0-or-later
#include "net/mac_address.hpp"

#include <cctype>

namespace pw::net {

namespace {

char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

bool canonical(std::string_view mac, std::string& out) {
  if (mac.size() != 17) return false;
  out.reserve(17);
  for (std::size_t i = 0; i < mac.size(); ++i) {
    const char c = mac[i];
    if (i % 3 == 2) {
      if (c != ':' && c != '-') return false;
      out.push_back(':');
    } else {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
      out.push_back(lower(c));
    }
  }
  return true;
}

}  // namespace

MacAddress::MacAddress(std::string_view text) {
  if (canonical(text, text_)) {
    valid_ = true;
    return;
  }
  text_.clear();
  text_.reserve(text.size());
  for (char c : text) text_.push_back(c == '-' ? ':' : lower(c));
}

std::optional<MacAddress> MacAddress::parse(std::string_view text) {
  MacAddress m(text);
  if (!m.valid()) return std::nullopt;
  return m;
}

}  // namespace pw::net
