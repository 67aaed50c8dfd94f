// SPDX-License-Identifier: GPL-3.0-or-later
#include "verify/traffic_since.hpp"

#include <algorithm>

#include "verify/text.hpp"

namespace pw::verify {
namespace {

std::uint64_t both_ways(const TapBytes& t) {
  return t.guest_rx + t.guest_tx;
}

// The connection's bytes both ways; nullopt when tcp_info gave no counter at all.
std::optional<std::uint64_t> total_of(const ConnectionCounters& c) {
  if (!c.bytes_received && !c.bytes_acked) return std::nullopt;
  return c.bytes_received.value_or(0) + c.bytes_acked.value_or(0);
}

// Why two marks' taps are not the same taps (empty: they are, for the intended NIC).
std::string taps_differ(const TrafficMark& before, const TrafficMark& now, int intended_net) {
  if (intended_net < 0) return "the plan names no Proxmox NIC";
  if (!before.taps_unavailable.empty()) return "the last run read none: " + before.taps_unavailable;
  if (!now.taps_unavailable.empty()) return now.taps_unavailable;
  if (before.node != now.node)
    return "the VM moved from node " + before.node + " to " + now.node + " since the last run";
  if (before.pid != now.pid) return "the VM was restarted since the last run (another QEMU process, new taps)";
  const auto b = before.nic_lines.find(intended_net), a = now.nic_lines.find(intended_net);
  if (b == before.nic_lines.end() || a == now.nic_lines.end() || b->second != a->second) {
    return text::net_name(intended_net) + " was changed since the last run (its tap was made anew)";
  }
  if (!before.taps.contains(intended_net) || !now.taps.contains(intended_net)) {
    return "Proxmox reported no tap counters for " + text::net_name(intended_net);
  }
  if (both_ways(now.taps.at(intended_net)) < both_ways(before.taps.at(intended_net))) {
    return "the tap of " + text::net_name(intended_net) + " restarted its counters since the last run";
  }
  return {};
}

// A tap's bytes both ways since the last run, when it is the same tap with counters that grew.
std::optional<std::uint64_t> tap_delta(const TrafficMark& before, const TrafficMark& now, int n) {
  const auto b = before.taps.find(n), a = now.taps.find(n);
  const auto lb = before.nic_lines.find(n), la = now.nic_lines.find(n);
  if (b == before.taps.end() || a == now.taps.end() || lb == before.nic_lines.end() || la == now.nic_lines.end() ||
      lb->second != la->second || both_ways(a->second) < both_ways(b->second)) {
    return std::nullopt;
  }
  return both_ways(a->second) - both_ways(b->second);
}

// A tap's bytes in one direction since the last run (guest rx: Proxmox netin; tx: netout).
std::optional<std::uint64_t> tap_delta_one_way(const TrafficMark& before, const TrafficMark& now, int n, bool rx) {
  if (!tap_delta(before, now, n)) return std::nullopt;  // not the same tap, or its counters went down
  const auto& b = before.taps.at(n);
  const auto& a = now.taps.at(n);
  const std::uint64_t x = rx ? b.guest_rx : b.guest_tx, y = rx ? a.guest_rx : a.guest_tx;
  if (y < x) return std::nullopt;
  return y - x;
}

std::uint64_t grown(const std::optional<std::uint64_t>& before, const std::optional<std::uint64_t>& after) {
  return before && after && *after >= *before ? *after - *before : 0;
}

struct Flows {
  std::size_t compared = 0, opened = 0, reset = 0, without_counters = 0, to_nas = 0;
  std::uint64_t intended = 0, other = 0, unattributed = 0;
  std::uint64_t received = 0, sent = 0;  // both ways apart (bytes_received, bytes_acked) over compared connections
  std::map<std::string, std::uint64_t> by_interface;  // other known interfaces
  std::string intended_interface;                     // the guest's name of the intended NIC, when seen
};

Flows compare_connections(const TrafficMark& before, const TrafficMark& now, const DesiredPath& desired,
                          const NfsEvidence& evidence) {
  Flows f;
  for (const auto& l : evidence.local_addresses) {
    if (l.mac.valid() && l.mac == desired.intended_mac) f.intended_interface = l.interface_name;
  }
  for (const auto& c : now.connections) {
    if (!to_nas(desired, c.connection)) continue;
    ++f.to_nas;
    const auto after = total_of(c);
    if (!after) {
      ++f.without_counters;
      continue;
    }
    const auto was =
        std::find_if(before.connections.begin(), before.connections.end(),
                     [&](const ConnectionCounters& b) { return same_connection(b.connection, c.connection); });
    if (was == before.connections.end()) {
      ++f.opened;  // made after the last run: when is not known, so its bytes are not "since the last run"
      continue;
    }
    const auto prior = total_of(*was);
    if (!prior || *after < *prior) {
      ++f.reset;  // not the same socket's counters
      continue;
    }
    ++f.compared;
    const std::uint64_t moved = *after - *prior;
    f.received += grown(was->bytes_received, c.bytes_received);
    f.sent += grown(was->bytes_acked, c.bytes_acked);
    const LocalAddress* owner = nullptr;
    for (const auto& l : evidence.local_addresses) {
      if (same_address(l.address, c.connection.local_address)) owner = &l;
    }
    if (owner == nullptr || !owner->mac.valid()) {
      f.unattributed += moved;
    } else if (owner->mac == desired.intended_mac) {
      f.intended += moved;
    } else {
      f.other += moved;
      f.by_interface[owner->interface_name] += moved;
    }
  }
  return f;
}

std::string why_not_compared(const Flows& f) {
  if (f.to_nas == 0) return "the mount has no NFS connections now";
  if (f.without_counters == f.to_nas)
    return "the guest's facts have no tcp_info byte counters for its NFS connections (ss shows them only with "
           "the guest kernel's inet_diag and tcp_diag; the guest agent's read access reads none)";
  if (f.reset > 0 && f.opened == 0) return "the NFS connections' counters went down (not the same sockets)";
  return std::to_string(f.opened) + " of the mount's NFS connection" + (f.to_nas == 1 ? " is" : "s are") +
         " new since the last run (a reconnect or a re-mount)";
}

}  // namespace

TrafficSince traffic_since(const TrafficMark& before, const TrafficMark& now, const DesiredPath& desired,
                           const NfsEvidence& evidence, int intended_net, const VerifySettings& s) {
  TrafficSince out;
  const std::string since = "since the last run (" + before.taken_at + ")";
  const Flows f = compare_connections(before, now, desired, evidence);
  if (f.compared == 0) {
    out.text = "no comparison with the last run: " + why_not_compared(f) + "; address check only";
    return out;
  }
  const std::uint64_t total = f.intended + f.other + f.unattributed;
  out.nfs_bytes = total;
  if (total < kIdleBytes) {
    out.finding = TrafficFinding::idle;
    out.text = "no NFS traffic " + since + " (" + text::bytes(static_cast<double>(total)) +
               " on the mount's connections): address check only";
    return out;
  }
  const double t = static_cast<double>(total);
  const std::string intended_name = intended_net >= 0               ? text::net_name(intended_net)
                                    : !f.intended_interface.empty() ? f.intended_interface
                                                                    : std::string("the intended NIC");
  std::string busiest;
  std::uint64_t most = 0;
  for (const auto& [name, bytes] : f.by_interface) {
    if (bytes > most) {
      most = bytes;
      busiest = name;
    }
  }
  // The guest's view: the connections' own bytes, by the interface that owns their local address.
  if (static_cast<double>(f.other) >= s.min_seen_share * t && static_cast<double>(f.intended) < s.min_share * t) {
    out.finding = TrafficFinding::elsewhere;
    out.carrier_interface = busiest;
    out.text = text::bytes(t) + " of NFS traffic " + since + ", " + text::bytes(static_cast<double>(f.other)) +
               " of it on connections from " + busiest + ", not " +
               (f.intended_interface.empty() ? intended_name : f.intended_interface);
    out.evidence.push_back(out.text);
    return out;
  }
  // The host's view: the intended tap counts every frame of that NIC, so it can only count more
  // than the NFS bytes it carried. Less is conclusive.
  const std::string differ = taps_differ(before, now, intended_net);
  std::string host;
  if (differ.empty()) {
    const std::uint64_t mine = tap_delta(before, now, intended_net).value_or(0);
    const double need = s.min_share * t - static_cast<double>(s.noise.floor_bytes);
    if (static_cast<double>(mine) < need) {
      std::optional<int> best;
      std::uint64_t best_bytes = 0;
      for (const auto& [n, _] : now.taps) {
        if (n == intended_net) continue;
        if (auto d = tap_delta(before, now, n); d && *d > best_bytes) {
          best = n;
          best_bytes = *d;
        }
      }
      const std::string line = text::bytes(t) + " of NFS traffic " + since + ", but the host's tap of " +
                               intended_name + " counted " + text::bytes(static_cast<double>(mine));
      if (best && static_cast<double>(best_bytes) >= s.min_seen_share * t) {
        out.finding = TrafficFinding::elsewhere;
        out.carrier = best;
        out.text = line + " and " + text::net_name(*best) + "'s " + text::bytes(static_cast<double>(best_bytes));
        out.evidence.push_back(out.text);
        return out;
      }
      out.text = line + ", and no other tap accounts for them: address check only";
      return out;  // no comparison: the counters disagree with each other, not with the path
    }
    // Each way on its own: replies that come back over the intended NIC while the requests and
    // acknowledgements leave over another (or the reverse) pass the total, not this.
    for (const bool rx : {true, false}) {
      const double way = static_cast<double>(rx ? f.received : f.sent);
      if (way < static_cast<double>(kIdleBytes)) continue;
      const std::uint64_t mine_way = tap_delta_one_way(before, now, intended_net, rx).value_or(0);
      if (static_cast<double>(mine_way) >= s.min_share * way - static_cast<double>(s.noise.floor_bytes)) continue;
      std::optional<int> best;
      std::uint64_t best_bytes = 0;
      for (const auto& [n, _] : now.taps) {
        if (n == intended_net) continue;
        if (auto d = tap_delta_one_way(before, now, n, rx); d && *d > best_bytes) {
          best = n;
          best_bytes = *d;
        }
      }
      if (!best || static_cast<double>(best_bytes) < s.min_seen_share * way) continue;
      out.finding = TrafficFinding::elsewhere;
      out.asymmetric = true;
      out.carrier = best;
      out.text = text::bytes(t) + " of NFS traffic " + since + ", but the " + text::bytes(way) + " the guest " +
                 (rx ? "received" : "sent") + " took " + text::net_name(*best) + " (" +
                 text::bytes(static_cast<double>(best_bytes)) + " " + (rx ? "in" : "out") + "), not " + intended_name +
                 " (" + text::bytes(static_cast<double>(mine_way)) + "): the path is asymmetric";
      out.evidence.push_back(out.text);
      return out;
    }
    host = "; the host's tap of " + intended_name + " counted " + text::bytes(static_cast<double>(mine));
  } else if (static_cast<double>(f.intended) < s.min_share * t) {
    out.text = text::bytes(t) + " of NFS traffic " + since + ", on connections of no known interface, and the host's " +
               "taps not compared (" + differ + "): address check only";
    return out;
  } else {
    host = "; the host's taps not compared: " + differ;
  }
  out.finding = TrafficFinding::carried;
  const std::uint64_t elsewhere = f.other + f.unattributed;
  out.text =
      text::bytes(t) + " of NFS traffic on " + intended_name + " " + since + ", " +
      (elsewhere == 0 ? std::string("none elsewhere") : text::bytes(static_cast<double>(elsewhere)) + " elsewhere") +
      host;
  return out;
}

}  // namespace pw::verify
