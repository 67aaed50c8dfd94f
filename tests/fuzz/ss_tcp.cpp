// SPDX-License-Identifier: GPL-3.0-or-later
// `ss -tni` output: which local address each NFS transport uses. Accepted text gives connections
// with real ports and byte counters that are the numbers shown in the info items.
#include <string>

#include "guest/connections.hpp"
#include "guest/tokens.hpp"
#include "invariant.hpp"

namespace {

using namespace pw;

void one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto conns = guest::parse_ss_tcp(text, "fuzz");
  if (!fuzz::accepted(conns, "fuzz:")) return;
  for (const auto& c : *conns) {
    const std::string who = fuzz::printable(c.local_address) + " -> " + fuzz::printable(c.peer_address);
    PW_FUZZ_CHECK(c.local_port >= 0 && c.local_port <= 65535 && c.peer_port >= 0 && c.peer_port <= 65535,
                  who + " ports " + std::to_string(c.local_port) + "/" + std::to_string(c.peer_port));
    auto number = [&](const char* key) -> std::optional<std::uint64_t> {
      auto it = c.info.find(key);
      return it == c.info.end() ? std::nullopt : guest::to_uint64(it->second);
    };
    PW_FUZZ_CHECK(c.bytes_acked == number("bytes_acked") && c.bytes_received == number("bytes_received") &&
                      c.bytes_sent == number("bytes_sent"),
                  who);
  }
  for (const auto& c : guest::connections_to_port(*conns, 2049)) PW_FUZZ_CHECK(c.peer_port == 2049, "port filter");
}

}  // namespace

PW_FUZZ_TARGET(one_input)
