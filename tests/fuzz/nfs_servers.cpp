// SPDX-License-Identifier: GPL-3.0-or-later
// /proc/fs/nfsfs/servers: one line per NFS client. Accepted text gives ports that are ports,
// use counts that are counts, and a dotted address that is the hex column decoded.
#include "guest/nfs_servers.hpp"

#include <cstdio>
#include <string>

#include "invariant.hpp"

namespace {

using namespace pw;

void one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto servers = guest::parse_nfs_servers(text, "fuzz");
  if (!fuzz::accepted(servers, "fuzz:")) return;
  for (const auto& s : *servers) {
    const std::string who = fuzz::printable(s.address_hex) + " " + fuzz::printable(s.hostname);
    PW_FUZZ_CHECK(s.port >= 0 && s.port <= 65535, who + " port " + std::to_string(s.port));
    PW_FUZZ_CHECK(s.use_count >= 0, who + " use " + std::to_string(s.use_count));
    PW_FUZZ_CHECK(!s.version.empty() && !s.hostname.empty(), who);
    if (!s.address.empty()) {
      unsigned a = 0, b = 0, c = 0, d = 0;
      char hex[16];
      PW_FUZZ_CHECK(std::sscanf(s.address.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d) == 4, who);
      std::snprintf(hex, sizeof hex, "%02x%02x%02x%02x", a, b, c, d);
      std::string lower = s.address_hex;
      for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      PW_FUZZ_CHECK(lower == hex, who + " decoded as " + s.address);
    }
  }
}

}  // namespace

PW_FUZZ_TARGET(one_input)
