// SPDX-License-Identifier: GPL-3.0-or-later
#include "verify/verifier.hpp"

#include <algorithm>
#include <cmath>

#include "verify/counter_verdict.hpp"
#include "verify/judges.hpp"
#include "verify/text.hpp"

namespace pw::verify {

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::verified:
      return "verified";
    case Verdict::wrong_path:
      return "wrong-path";
    case Verdict::inconclusive:
      return "inconclusive";
    case Verdict::precondition_failed:
      return "precondition-failed";
  }
  return "?";
}

std::string_view to_string(NextStep step) {
  switch (step) {
    case NextStep::none:
      return "none";
    case NextStep::grow_probe:
      return "grow-probe";
    case NextStep::remeasure:
      return "remeasure";
    case NextStep::give_up:
      return "give-up";
  }
  return "?";
}

std::optional<LineRateMatch> match_line_rate(double throughput, const std::vector<CounterDelta>& deltas,
                                             const VerifySettings& s) {
  std::optional<std::uint64_t> intended_speed;
  for (const auto& d : deltas)
    if (d.intended) intended_speed = d.speed_mbps;
  std::optional<LineRateMatch> best;
  for (const auto& d : deltas) {
    if (d.intended || d.upper_device || !d.speed_mbps || *d.speed_mbps == 0) continue;
    if (intended_speed && *intended_speed <= *d.speed_mbps) continue;  // no slower "old" link
    const double line = static_cast<double>(*d.speed_mbps) * 1e6 / 8;
    const double ratio = throughput / line;
    if (ratio < s.line_rate_low || ratio > s.line_rate_high) continue;
    if (!best || std::abs(1 - ratio) < std::abs(1 - best->ratio)) best = LineRateMatch{d.name, *d.speed_mbps, ratio};
  }
  return best;
}

namespace {

// What must hold of the probe itself: its file could be opened and held the whole probe.
void check_probe_run(const DesiredPath& d, const ProbeRun& probe, std::vector<Error>& out) {
  const std::string& file = d.probe_file.empty() ? d.mount_point : d.probe_file;
  const std::uint64_t want = probe.requested_bytes ? probe.requested_bytes : probe.bytes;
  const std::string make = "create it in the guest: `dd if=/dev/urandom of=" + file +
                           " bs=1M count=" + std::to_string((want + text::kMiB - 1) / text::kMiB) +
                           "` (random data: compression and READ_PLUS cannot shrink what crosses the wire)";
  if (probe.refused) {
    out.push_back(Error{"the probe file " + file + " was refused: " + *probe.refused, "guest file " + file,
                        "pathwarden opens only a regular file, reached without a symbolic link below the mount "
                        "point: replace it with one; " +
                            make});
    return;
  }
  // ESTALE (strerror's text: the guest scripts run dd under LC_ALL=C): the NAS no longer knows the
  // mount's file handles — its export was re-created, or it restarted without persistent handles
  // (Linux fs/nfs: __nfs_revalidate_inode, the READ reply; docs/field-next-upstream.md §3). No
  // probe can say anything through such a mount until it is made again.
  constexpr std::string_view kStale = "Stale file handle";
  const auto stale = [&](const std::optional<std::string>& why) {
    return why && why->find(kStale) != std::string::npos;
  };
  if (stale(probe.open_error) || stale(probe.error)) {
    out.push_back(Error{"the NAS no longer knows " + d.mount_point +
                            "'s file handles (Stale file handle: its export was re-created, or it restarted "
                            "without persistent handles)",
                        "guest mount " + d.mount_point,
                        "make the mount again: `umount -l " + d.mount_point + "` and `mount " + d.mount_point +
                            "` in the guest (its fstab entry stays); a Compose volume: `docker compose down` and "
                            "`up`"});
    return;
  }
  if (probe.open_error) {
    if (probe.direction == ProbeDirection::read)
      out.push_back(
          Error{"the probe file " + file + " cannot be read: " + *probe.open_error, "guest file " + file, make});
    else if (probe.file_existed)
      // The write probe makes a new file (dd conv=excl) and never overwrites one.
      out.push_back(Error{"the write probe's file " + file + " already exists; pathwarden never overwrites a file",
                          "guest file " + file,
                          "if a run was interrupted between the probe and its removal, the file is pathwarden's "
                          "leftover: remove it; otherwise give spec.verify.probe_file a name of its own"});
    else
      out.push_back(Error{"the probe file " + file + " cannot be written: " + *probe.open_error, "guest file " + file,
                          "check that " + d.mount_point + " is mounted read-write and writable for the SSH user"});
    return;
  }
  // A grown probe may outrun the file (the loop then stops growing); the policy's own probe
  // size must fit.
  const std::uint64_t must_hold =
      d.probe_bytes > 0 ? std::min(probe.requested_bytes, d.probe_bytes) : probe.requested_bytes;
  if (probe.direction == ProbeDirection::read && !probe.error && must_hold > 0 && probe.bytes < must_hold) {
    out.push_back(Error{"the probe file " + file + " holds only " +
                            text::binary_bytes(static_cast<double>(probe.bytes)) + ", the probe reads " +
                            text::binary_bytes(static_cast<double>(must_hold)),
                        "guest file " + file, "replace it with a larger one: " + make});
  }
}

SignalReading guest_reading(const CounterVerdict& cv) {
  SignalReading r{Signal::guest_counters, SignalState::undecided, cv.summary};
  if (cv.verdict == Verdict::verified)
    r.state = SignalState::agreed;
  else if (cv.verdict == Verdict::wrong_path)
    r.state = SignalState::contradicted;
  return r;
}

const SignalReading& reading(const std::vector<SignalReading>& all, Signal s) {
  for (const auto& r : all)
    if (r.signal == s) return r;
  static const SignalReading none{};
  return none;
}

struct Decision {
  Verdict verdict = Verdict::inconclusive;
  std::string summary;
  std::optional<Signal> decided_by;
  ProbeAdvice advice;
};

// Weighs the signals. A contradiction from a signal nothing in the guest can fake (the host's
// taps, the connections' own bytes) decides wrong-path; "verified" needs the guest's counters
// consistent with the probe, no other link clearly carrying it, the host not contradicting, and
// either the connections' bytes on the intended interface or (without them) the counters' net
// share; evidence that the mount cannot be on the intended path vetoes it (inconclusive).
Decision weigh(const std::vector<SignalReading>& sig, const CounterVerdict& cv) {
  const auto& guest = reading(sig, Signal::guest_counters);
  const auto& host = reading(sig, Signal::host_taps);
  const auto& conn = reading(sig, Signal::connection_bytes);
  const auto& iface = reading(sig, Signal::connection_interface);
  auto is = [](const SignalReading& r, SignalState st) { return r.state == st; };
  auto decide = [](Verdict v, const SignalReading& by, const std::string& summary = {}) {
    return Decision{v, summary.empty() ? by.detail : summary, by.signal, {}};
  };

  if (is(host, SignalState::contradicted))
    return decide(Verdict::wrong_path, host, "the host's tap counters: " + host.detail);
  if (is(conn, SignalState::contradicted)) return decide(Verdict::wrong_path, conn);
  if (is(guest, SignalState::contradicted) && !is(conn, SignalState::agreed)) return decide(Verdict::wrong_path, guest);
  const bool veto = is(iface, SignalState::contradicted);
  const bool conn_agrees = is(conn, SignalState::agreed);
  if (conn_agrees && !cv.consistent && !veto)
    return decide(
        Verdict::wrong_path, guest,
        "the NFS connections carried the probe, but the intended interface's counters did not see its bytes: " +
            cv.summary);
  const bool counters_agree = conn_agrees ? cv.consistent : is(guest, SignalState::agreed);
  if (veto) {
    // Never verified; wrong-path needs bytes seen elsewhere (above), so this stays inconclusive.
    if (!counters_agree && !conn_agrees)
      return Decision{Verdict::inconclusive, cv.summary + "; and " + iface.detail, iface.signal, cv.advice};
    Decision d{Verdict::inconclusive, "the counters point to the intended NIC, but " + iface.detail, iface.signal, {}};
    d.advice = {NextStep::give_up, 0, "the mount's own connection evidence contradicts the counters"};
    return d;
  }
  if (conn_agrees && cv.consistent) {
    if (!cv.elsewhere.empty()) {
      Decision d{Verdict::inconclusive,
                 "the NFS connections carried the probe on the intended interface, but " + cv.elsewhere +
                     " also moved a probe's worth of bytes",
                 conn.signal,
                 {}};
      d.advice = {NextStep::remeasure, 0, "unrelated traffic disturbed the measurement; probe again"};
      return d;
    }
    return decide(Verdict::verified, conn, conn.detail + "; " + cv.summary);
  }
  if (is(guest, SignalState::agreed)) return decide(Verdict::verified, guest);
  Decision d{Verdict::inconclusive, cv.summary, std::nullopt, cv.advice};
  return d;
}

}  // namespace

// The verifier: preconditions, the signals, the verdict and its diagnosis. Long because it is
// the pipeline in the order DESIGN.md gives it, each stage a call.
VerificationResult verify_path(const VerificationInput& in) {
  VerificationResult out;
  out.transports = effective_transports(in.desired, in.evidence);
  const auto& s = in.settings;
  const CounterSnapshot& now = in.measurement ? in.measurement->samples.after_probe : in.interfaces;
  out.failed_preconditions = check_preconditions(in.desired, in.evidence, now);
  if (in.measurement) check_probe_run(in.desired, in.measurement->probe, out.failed_preconditions);

  std::optional<CounterAnalysis> analysis;
  if (in.measurement) {
    const auto& m = *in.measurement;
    analysis = analyze_counters(m.samples, m.probe, in.desired.intended_mac, s.noise);
    out.deltas = analysis->deltas;
    out.notes = analysis->notes;
    if (const auto* i = analysis->intended(); i && m.probe.bytes > 0 && measurable(*i))
      out.intended_share = static_cast<double>(i->net(m.probe.direction)) / static_cast<double>(m.probe.bytes);
    // A throughput only of a probe that moved bytes over the path: not of one whose preconditions
    // failed (an unmounted path reads the local directory's file) nor of one that read nothing.
    if (m.probe.wall_time.count() > 0 && m.probe.bytes > 0 && out.failed_preconditions.empty()) {
      out.throughput = static_cast<double>(m.probe.bytes) * 1e9 / static_cast<double>(m.probe.wall_time.count());
      out.exactly_old_number = match_line_rate(*out.throughput, out.deltas, s);
      if (out.exactly_old_number)
        out.notes.push_back("throughput " + text::rate(*out.throughput) + " is " +
                            text::percent(out.exactly_old_number->ratio) + " of " +
                            out.exactly_old_number->interface_name + "'s line rate (" +
                            std::to_string(out.exactly_old_number->speed_mbps) + " Mb/s): exactly the old number");
    }
  }

  if (!out.failed_preconditions.empty()) {
    out.verdict = Verdict::precondition_failed;
    out.summary = out.failed_preconditions.front().what;
    return out;
  }

  const SignalReading iface = judge_connection_interface(in.desired, in.evidence);
  if (!in.measurement) {
    out.signals.push_back(iface);
    if (iface.state == SignalState::contradicted) {
      out.verdict = Verdict::wrong_path;
      out.decided_by = iface.signal;
      out.diagnosis = diagnose(in.desired, in.evidence, nullptr, nullptr);
      out.summary = std::string("the mount's connection does not use the intended link (") +
                    std::string(to_string(out.diagnosis->kind)) + ")";
    } else {
      out.verdict = Verdict::inconclusive;
      out.summary = "options, channels and connections look right; only a probe proves the path";
    }
    return out;
  }

  const auto& m = *in.measurement;
  if (m.probe.error) {
    out.verdict = Verdict::inconclusive;
    out.summary = "the probe failed: " + *m.probe.error;
    out.advice = {NextStep::give_up, 0, "the probe's read or write did not finish"};
    return out;
  }
  const CounterVerdict cv = decide_counters(*analysis, m.probe, s);
  const auto connections = analyze_connections(m.connections, in.desired, in.evidence, m.probe.direction);
  for (const auto& n : connections.notes) out.notes.push_back(n);
  const auto host = judge_host_taps(m.host, m.probe, s);
  out.signals = {guest_reading(cv), host.reading, judge_connections(connections, m.probe, s), iface};

  const Decision d = weigh(out.signals, cv);
  out.verdict = d.verdict;
  out.summary = d.summary;
  out.decided_by = d.decided_by;
  out.advice = d.advice;
  if (d.verdict == Verdict::wrong_path) out.carrier_net = host.carrier;
  if (d.verdict == Verdict::wrong_path ||
      (d.verdict == Verdict::inconclusive && iface.state == SignalState::contradicted))
    out.diagnosis = diagnose(in.desired, in.evidence, &*analysis, &m.probe);
  return out;
}

}  // namespace pw::verify
