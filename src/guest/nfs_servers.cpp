// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/nfs_servers.hpp"

#include <charconv>

#include "guest/tokens.hpp"

namespace pw::guest {

namespace {
std::optional<unsigned long> from_hex(std::string_view s) {
  unsigned long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}
}  // namespace

Result<std::vector<NfsServer>> parse_nfs_servers(std::string_view text, std::string_view where) {
  std::vector<NfsServer> out;
  int line_no = 0;
  for (auto line : lines_of(text)) {
    ++line_no;
    auto f = fields_of(line);
    if (f.empty() || f[0] == "NV") continue;
    const std::string at = std::string(where) + ":" + std::to_string(line_no);
    // The kernel prints the client's hostname as given at mount time, or nothing: a mount(2)
    // with addr= and a device of ":/export" (Docker's local volume driver) has none.
    if (f.size() < 4) return fail("expected 'NV SERVER PORT USE HOSTNAME' columns", at + ":1");
    NfsServer s;
    s.version = std::string(f[0]);
    s.address_hex = std::string(f[1]);
    if (f[1].size() == 8) {
      if (auto v = from_hex(f[1])) {
        s.address = std::to_string((*v >> 24) & 0xff) + "." + std::to_string((*v >> 16) & 0xff) + "." +
                    std::to_string((*v >> 8) & 0xff) + "." + std::to_string(*v & 0xff);
      }
    }
    auto port = from_hex(f[2]);
    auto use = to_int(f[3]);
    if (!port || !use) return fail("port or use count is not a number", at);
    if (*port > 0xffff || *use < 0) return fail("port or use count is out of range", at);
    s.port = static_cast<int>(*port);
    s.use_count = *use;
    if (f.size() > 4) s.hostname = std::string(f[4]);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace pw::guest
