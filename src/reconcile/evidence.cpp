// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/evidence.hpp"

#include <algorithm>
#include <cstdio>

#include "guest/counter_snapshot.hpp"
#include "guest/interfaces.hpp"

namespace pw::reconcile {
namespace {

verify::CounterSnapshot snapshot_from(const guest::GuestFacts& f) {
  return guest::counter_snapshot(f.counters, f.interfaces);
}

verify::DesiredPath desired_from(const plan::ProvePath& v) {
  verify::DesiredPath d;
  d.intended_mac = v.intended_mac;
  d.mount_point = v.mount_point;
  d.probe_file = v.probe_file;
  d.probe_bytes = v.probe_bytes;
  d.server = v.server;
  d.nas_addresses = v.nas_addresses;
  d.vers = v.vers;
  if (v.nconnect) d.nconnect = static_cast<unsigned>(*v.nconnect);
  if (v.queues) d.queues = static_cast<unsigned>(*v.queues);
  return d;
}

}  // namespace

verify::NfsEvidence evidence_from(const guest::GuestFacts& f, std::string_view mount_point,
                                  const net::MacAddress& intended_mac) {
  verify::NfsEvidence e;
  for (const auto& m : f.mounts) {
    if (!m.is_nfs()) continue;
    verify::EffectiveMount em;
    em.device = m.device;
    em.mount_point = m.mount_point;
    em.fstype = m.fstype;
    for (const auto& o : m.options) em.options[o.name] = o.value.value_or("");
    e.mounts.push_back(std::move(em));
  }
  for (const auto& c : f.nfs_connections) {
    e.connections.push_back({c.local_address, static_cast<std::uint16_t>(c.local_port), c.peer_address,
                             static_cast<std::uint16_t>(c.peer_port)});
  }
  for (const auto& a : f.addresses) {
    const auto* below = guest::device_below(f.interfaces, a.interface);
    e.local_addresses.push_back({a.address, a.interface, below ? below->identity() : net::MacAddress{}});
  }
  for (const auto& s : f.mount_stats) {
    if (s.mount_point == mount_point) e.transport_count = static_cast<unsigned>(s.transports.size());
  }
  // The kernel's client of the mount: the sunrpc switch whose main transport is its addr=.
  if (f.transport_move == guest::TransportMoveSupport::present) {
    const guest::MountInfo* mount = nullptr;
    for (const auto& m : f.mounts) {
      if (m.mount_point == mount_point && m.is_nfs()) mount = &m;
    }
    if (mount != nullptr) {
      const auto client = guest::client_transports(f.sunrpc_transports, mount->server_address());
      if (!client.empty()) {
        e.client_transports = static_cast<unsigned>(client.size());
        for (const auto* t : client) {
          if (std::find(e.client_addresses.begin(), e.client_addresses.end(), t->dstaddr) == e.client_addresses.end())
            e.client_addresses.push_back(t->dstaddr);
        }
      }
    }
  }
  if (const auto* i = guest::find_nic_interface(f.interfaces, intended_mac)) {
    if (auto n = i->combined_current()) e.guest_channels = static_cast<unsigned>(*n);
  }
  return e;
}

namespace {

std::vector<verify::ConnectionCounters> connection_counters(const std::vector<guest::TcpConnection>& all) {
  std::vector<verify::ConnectionCounters> out;
  for (const auto& c : all)
    out.push_back({{c.local_address, static_cast<std::uint16_t>(c.local_port), c.peer_address,
                    static_cast<std::uint16_t>(c.peer_port)},
                   c.bytes_received,
                   c.bytes_acked});
  return out;
}

}  // namespace

verify::VerificationInput probe_input(const plan::ProvePath& v, const guest::ProbeOutcome& out,
                                      verify::HostTapSamples host) {
  verify::VerificationInput in;
  in.desired = desired_from(v);
  in.evidence = evidence_from(out.after, v.mount_point, v.intended_mac);
  in.measurement =
      verify::Measurement{out.samples,
                          out.run,
                          {connection_counters(out.connections_before), connection_counters(out.connections_after)},
                          std::move(host)};
  in.interfaces = out.samples.after_probe;
  in.settings.min_share = v.min_share;
  in.settings.max_probe_bytes = v.max_probe_bytes;
  return in;
}

verify::VerificationInput audit_input(const plan::ProvePath& v, const guest::GuestFacts& facts) {
  verify::VerificationInput in;
  in.desired = desired_from(v);
  in.evidence = evidence_from(facts, v.mount_point, v.intended_mac);
  in.interfaces = snapshot_from(facts);
  in.settings.min_share = v.min_share;
  return in;
}

report::Verification verification_report(const verify::VerificationResult& r, const plan::ProvePath& v,
                                         std::uint64_t probe_bytes, int probes) {
  report::Verification out;
  out.verdict = verdict_of(r.verdict);
  out.summary = r.summary;
  out.direction = v.direction;
  out.probe_bytes = probe_bytes;
  out.probes = probes;
  for (const auto& d : r.deltas) {
    if (d.upper_device) continue;
    out.interfaces.push_back(
        {d.name, d.mac.str(), d.intended, d.rx_bytes, d.tx_bytes, d.net(v.direction), d.speed_mbps});
  }
  out.intended_share = r.intended_share;
  out.throughput = r.throughput;
  if (r.exactly_old_number) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "throughput is %.0f%% of %s's line rate (%llu Mb/s): exactly the old number?",
                  r.exactly_old_number->ratio * 100, r.exactly_old_number->interface_name.c_str(),
                  static_cast<unsigned long long>(r.exactly_old_number->speed_mbps));
    out.exactly_old_number = buf;
  }
  if (r.diagnosis) {
    std::string d = std::string(verify::to_string(r.diagnosis->kind));
    for (std::size_t i = 0; i < r.diagnosis->evidence.size(); ++i) d += (i ? "; " : ": ") + r.diagnosis->evidence[i];
    out.diagnosis = d;
    for (const auto& rem : r.diagnosis->remedies) out.remedies.push_back(rem.text);
  }
  for (const auto& e : r.failed_preconditions) out.failed_preconditions.push_back(e.to_string());
  out.signals = r.signals;
  out.decided_by = r.decided_by;
  if (r.carrier_net) out.carried_by = "net" + std::to_string(*r.carrier_net);
  out.server_address = v.server;
  if (!v.server_name.empty()) out.server_name = v.server_name;
  out.transports = r.transports;
  return out;
}

report::Verdict verdict_of(verify::Verdict v) {
  switch (v) {
    case verify::Verdict::verified:
      return report::Verdict::verified;
    case verify::Verdict::wrong_path:
      return report::Verdict::wrong_path;
    case verify::Verdict::inconclusive:
      return report::Verdict::inconclusive;
    case verify::Verdict::precondition_failed:
      return report::Verdict::precondition_failed;
  }
  return report::Verdict::inconclusive;
}

namespace {

// A path whose traffic since the last run took another NIC: the address check passed (the
// connections were made over the intended interface), the bytes did not follow. Routing is the
// cause (a route or rule changed under established connections): reported, never changed.
report::Verification misrouted_since(const plan::ProvePath& v, const verify::TrafficSince& t) {
  report::Verification out;
  out.verdict = report::Verdict::wrong_path;
  out.summary = "the path no longer holds: " + t.text;
  std::string d =
      t.asymmetric ? std::string("asymmetric") : std::string(verify::to_string(verify::DiagnosisKind::misrouted));
  for (std::size_t i = 0; i < t.evidence.size(); ++i) d += (i ? "; " : ": ") + t.evidence[i];
  out.diagnosis = d;
  const std::string via = t.carrier ? "net" + std::to_string(*t.carrier) : t.carrier_interface;
  if (t.carrier) out.carried_by = via;
  out.remedies.push_back("find what sends " + v.server + " out of " + via + " in guest " + v.host + ": ip route get " +
                         v.server +
                         "; ip rule; a host route or a policy rule added since the last run (pathwarden "
                         "leaves routing alone)");
  out.remedies.push_back("once the route is right, make the connections anew (umount " + v.mount_point + " and mount " +
                         "it again): established connections keep the path they were made on");
  out.server_address = v.server;
  if (!v.server_name.empty()) out.server_name = v.server_name;
  return out;
}

}  // namespace

void judge_converged(const plan::PolicyPlan& p, report::PolicyReport& pr) {
  if (pr.verdict != report::Verdict::converged || !p.proof || !p.passive) return;
  pr.traffic_mark = p.traffic;
  const auto& r = *p.passive;
  if (r.verdict == verify::Verdict::wrong_path) {
    pr.verdict = report::Verdict::wrong_path;
    pr.verification = verification_report(r, *p.proof, 0, 0);
    pr.errors.push_back(p.proof->mount_point +
                        " is configured as the policy says, but its path no longer holds: " + r.summary);
    pr.rests_on = "the guest's facts (its NFS connections' addresses and the mount's addr=): " + r.summary;
    return;
  }
  // Without a probe the facts can contradict a path, never prove it: say what they showed.
  const auto agreed = std::find_if(r.signals.begin(), r.signals.end(), [](const verify::SignalReading& s) {
    return s.state == verify::SignalState::agreed;
  });
  if (r.verdict != verify::Verdict::precondition_failed && agreed != r.signals.end()) {
    pr.notes.push_back("path checked from the guest's facts (address check, no probe): " + agreed->detail);
  } else {
    pr.notes.push_back("path not checked from the guest's facts: " + r.summary);
  }
  if (p.since_last && p.since_last->finding == verify::TrafficFinding::elsewhere) {
    pr.verdict = report::Verdict::wrong_path;
    pr.verification = misrouted_since(*p.proof, *p.since_last);
    pr.errors.push_back(p.proof->mount_point +
                        " is configured as the policy says, but its traffic since the last run " +
                        "took another path: " + p.since_last->text);
    pr.rests_on = p.since_last->text;
    return;
  }
  if (p.since_last) {
    pr.rests_on = p.since_last->text;
  } else if (p.traffic) {
    pr.rests_on =
        "no comparison with the last run: it stored no counters of this path (the first run, or one that "
        "changed it): address check only";
  }
}

}  // namespace pw::reconcile
