// SPDX-License-Identifier: GPL-3.0-or-later
#include "verify/judges.hpp"

#include "verify/text.hpp"

namespace pw::verify {
namespace {

std::uint64_t directed(const TapBytes& b, ProbeDirection d) {
  return d == ProbeDirection::read ? b.guest_rx : b.guest_tx;
}

}  // namespace

HostTapJudgement judge_host_taps(const HostTapSamples& taps, const ProbeRun& probe, const VerifySettings& s) {
  HostTapJudgement out;
  auto& r = out.reading;
  if (!taps.unavailable.empty()) {
    r.detail = taps.unavailable;
    return out;
  }
  const auto b = taps.before.find(taps.intended_net), a = taps.after.find(taps.intended_net);
  if (taps.intended_net < 0 || b == taps.before.end() || a == taps.after.end()) {
    r.detail = "Proxmox reported no tap counters for " +
               (taps.intended_net < 0 ? std::string("the NIC") : text::net_name(taps.intended_net)) +
               " around the probe";
    return out;
  }
  const double p = static_cast<double>(probe.bytes);
  const std::string dir = probe.direction == ProbeDirection::read ? "to" : "from";
  auto delta = [&](int n) -> std::optional<std::uint64_t> {
    const auto x = taps.before.find(n), y = taps.after.find(n);
    if (x == taps.before.end() || y == taps.after.end()) return std::nullopt;
    const auto before = directed(x->second, probe.direction), after = directed(y->second, probe.direction);
    if (after < before) return std::nullopt;  // the tap was re-created (hot-plug, restart)
    return after - before;
  };
  const auto intended = delta(taps.intended_net);
  if (!intended) {
    r.state = SignalState::undecided;
    r.detail = "the tap of " + text::net_name(taps.intended_net) + " restarted its counters during the probe";
    return out;
  }
  const double need = s.min_share * p - static_cast<double>(s.noise.floor_bytes);
  const std::string mine = text::net_name(taps.intended_net) + " (intended) carried " +
                           text::bytes(static_cast<double>(*intended)) + " " + dir + " the guest";
  if (static_cast<double>(*intended) >= need) {
    r.state = SignalState::agreed;
    r.detail = mine + " during the probe run, at least " + text::percent(s.min_share) + " of the probe's " +
               text::binary_bytes(p);
    return out;
  }
  std::optional<int> best;
  std::uint64_t best_bytes = 0;
  for (const auto& [n, _] : taps.after) {
    if (n == taps.intended_net) continue;
    if (auto d = delta(n); d && *d > best_bytes) {
      best = n;
      best_bytes = *d;
    }
  }
  if (best && static_cast<double>(best_bytes) >= s.min_seen_share * p) {
    r.state = SignalState::contradicted;
    out.carrier = best;
    r.detail = mine + ", less than the probe's " + text::binary_bytes(p) + "; " + text::net_name(*best) + " carried " +
               text::bytes(static_cast<double>(best_bytes));
    return out;
  }
  r.state = SignalState::undecided;
  r.detail = mine + " and no NIC carried the probe's " + text::binary_bytes(p);
  return out;
}

SignalReading judge_connections(const ConnectionAnalysis& a, const ProbeRun& probe, const VerifySettings& s) {
  SignalReading r{Signal::connection_bytes, SignalState::unavailable, {}};
  if (!a.counters_available) {
    r.detail =
        "connection bytes unavailable: the guest's facts have no tcp_info byte counters for the NFS "
        "connections (ss shows them only with the guest kernel's inet_diag and tcp_diag; the guest agent's read "
        "access reads none)";
    return r;
  }
  const double p = static_cast<double>(probe.bytes);
  const double intended = static_cast<double>(a.intended_bytes), other = static_cast<double>(a.other_bytes);
  const double unknown = static_cast<double>(a.unattributed_bytes);
  const std::string line =
      "NFS connections moved " + text::bytes(intended) + " on the intended interface, " + text::bytes(other) +
      " on others" +
      (a.unattributed_bytes ? ", " + text::bytes(unknown) + " on connections of no known interface" : "") + " (probe " +
      text::binary_bytes(p) + ")";
  r.detail = line;
  if (intended + other + unknown < s.min_seen_share * p) {
    r.state = SignalState::undecided;
    r.detail += ": the probe's bytes did not reach the NFS connections (a cached read?)";
  } else if (intended >= s.min_share * p && other < s.min_seen_share * p) {
    r.state = SignalState::agreed;
  } else if (other >= s.min_seen_share * p && intended < s.min_share * p) {
    r.state = SignalState::contradicted;
    r.detail += ": the probe's bytes took the connections from " + a.busiest_other;
  } else {
    r.state = SignalState::undecided;
  }
  return r;
}

}  // namespace pw::verify
