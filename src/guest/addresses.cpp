#include "guest/addresses.hpp"

#include "guest/tokens.hpp"

namespace pw::guest {

Result<std::vector<InterfaceAddress>> parse_ip_addr(std::string_view text, std::string_view where) {
  std::vector<InterfaceAddress> out;
  int line_no = 0;
  for (auto line : lines_of(text)) {
    ++line_no;
    const auto f = fields_of(line);
    if (f.size() < 4 || !f[0].ends_with(':') || (f[2] != "inet" && f[2] != "inet6")) continue;
    std::string_view name = f[1];
    if (auto at = name.find('@'); at != std::string_view::npos) name = name.substr(0, at);
    std::string_view cidr = f[3];
    const auto slash = cidr.find('/');
    std::optional<int> prefix = slash == std::string_view::npos ? std::optional<int>(f[2] == "inet" ? 32 : 128)
                                                                : to_int(cidr.substr(slash + 1));
    const std::string_view addr = cidr.substr(0, slash);
    if (name.empty() || addr.empty() || !prefix || *prefix < 0 || *prefix > 128) {
      return fail("line " + std::to_string(line_no) + " is not an address line: " + std::string(trim(line)),
                  std::string(where), "expected the output of `ip -o addr show`");
    }
    out.push_back({std::string(name), std::string(addr), *prefix});
  }
  return out;
}

}  // namespace pw::guest
