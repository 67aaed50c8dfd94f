// SPDX-License-Identifier: GPL-3.0-or-later
#include "verify/connection_bytes.hpp"

#include <algorithm>
#include <map>

namespace pw::verify {
namespace {

std::optional<std::uint64_t> counter(const ConnectionCounters& c, ProbeDirection d) {
  return d == ProbeDirection::read ? c.bytes_received : c.bytes_acked;
}

}  // namespace

bool same_connection(const NfsConnection& a, const NfsConnection& b) {
  return a.local_port == b.local_port && a.remote_port == b.remote_port &&
         same_address(a.local_address, b.local_address) && same_address(a.remote_address, b.remote_address);
}

bool to_nas(const DesiredPath& d, const NfsConnection& c) {
  if (same_address(c.remote_address, d.server)) return true;
  return std::any_of(d.nas_addresses.begin(), d.nas_addresses.end(),
                     [&](const std::string& a) { return same_address(a, c.remote_address); });
}

ConnectionAnalysis analyze_connections(const ConnectionSamples& samples, const DesiredPath& desired,
                                       const NfsEvidence& evidence, ProbeDirection direction) {
  ConnectionAnalysis out;
  std::map<std::string, std::uint64_t> other_by_interface;
  for (const auto& now : samples.after) {
    if (!to_nas(desired, now.connection)) continue;
    const auto after = counter(now, direction);
    if (!after) continue;
    const ConnectionCounters* was = nullptr;
    for (const auto& b : samples.before)
      if (same_connection(b.connection, now.connection)) was = &b;
    ConnectionFlow f;
    f.connection = now.connection;
    if (was == nullptr) {
      // A connection made during the probe (a reconnect): every byte it counts is from the window.
      f.opened_during_probe = true;
      f.bytes = *after;
      out.notes.push_back("the connection " + now.connection.local_address + ":" +
                          std::to_string(now.connection.local_port) + " → " + now.connection.remote_address +
                          " opened during the probe");
    } else if (const auto before = counter(*was, direction); before && *after >= *before) {
      f.bytes = *after - *before;
    } else {
      continue;  // no counter before, or it went down (not the same socket): says nothing
    }
    out.counters_available = true;
    for (const auto& l : evidence.local_addresses) {
      if (!same_address(l.address, now.connection.local_address)) continue;
      f.interface_name = l.interface_name;
      f.nic = l.mac;
    }
    f.intended = f.nic.valid() && f.nic == desired.intended_mac;
    if (f.intended)
      out.intended_bytes += f.bytes;
    else if (f.nic.valid()) {
      out.other_bytes += f.bytes;
      other_by_interface[f.interface_name] += f.bytes;
    } else
      out.unattributed_bytes += f.bytes;
    out.flows.push_back(std::move(f));
  }
  std::uint64_t most = 0;
  for (const auto& [name, bytes] : other_by_interface)
    if (bytes > most) {
      most = bytes;
      out.busiest_other = name;
    }
  for (const auto& before : samples.before) {
    if (!to_nas(desired, before.connection)) continue;
    const bool still = std::any_of(samples.after.begin(), samples.after.end(), [&](const ConnectionCounters& a) {
      return same_connection(a.connection, before.connection);
    });
    if (!still)
      out.notes.push_back("the connection " + before.connection.local_address + ":" +
                          std::to_string(before.connection.local_port) + " → " + before.connection.remote_address +
                          " closed during the probe: its last bytes are not counted");
  }
  return out;
}

}  // namespace pw::verify
