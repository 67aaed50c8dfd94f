// SPDX-License-Identifier: GPL-3.0-or-later
// /proc/self/mountstats: the transports of each NFS mount decide whether the path is trunked.
// Accepted text gives mounts with their fields filled and transports whose counters are the
// numbers printed, with a source port that is a port.
#include "guest/mountstats.hpp"

#include <string>

#include "invariant.hpp"

namespace {

using namespace pw;

void one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto stats = guest::parse_mountstats(text, "fuzz");
  if (!fuzz::accepted(stats, "fuzz")) return;
  for (const auto& s : *stats) {
    PW_FUZZ_CHECK(!s.device.empty() && !s.mount_point.empty() && !s.fstype.empty(), fuzz::printable(s.device));
    for (const auto& t : s.transports) {
      PW_FUZZ_CHECK(!t.protocol.empty(), fuzz::printable(s.device));
      if (t.source_port) {
        PW_FUZZ_CHECK(*t.source_port >= 0 && *t.source_port <= 65535,
                      "source port " + std::to_string(*t.source_port) + " in " + fuzz::printable(text));
      }
      auto field = [&](std::size_t i) -> std::uint64_t { return i < t.fields.size() ? t.fields[i] : 0; };
      if (t.protocol == "tcp" || t.protocol == "tcp6" || t.protocol == "rdma") {
        PW_FUZZ_CHECK(t.sends == field(5) && t.receives == field(6), t.protocol);
      }
    }
  }
  const auto nfs = guest::nfs_only(*stats);
  for (const auto& s : nfs) PW_FUZZ_CHECK(s.is_nfs(), s.fstype);
}

}  // namespace

PW_FUZZ_TARGET(one_input)
