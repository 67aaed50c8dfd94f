// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The verifier's decision: did the probe's bytes take the intended link? Pure function over
// counter samples and NFS evidence; the engine gathers them and acts on the advice.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "verify/connection_bytes.hpp"
#include "verify/counters.hpp"
#include "verify/host_taps.hpp"
#include "verify/nfs_evidence.hpp"
#include "verify/settings.hpp"
#include "verify/signals.hpp"
#include "verify/verdict.hpp"

namespace pw::verify {

struct Measurement {
  CounterSamples samples;
  ProbeRun probe;
  ConnectionSamples connections;  // the NFS connections' byte counters before and after the probe
  HostTapSamples host;            // Proxmox's tap counters around the probe run
};

struct VerificationInput {
  DesiredPath desired;
  NfsEvidence evidence;
  // Absent for an audit without a probe: then nothing can be verified, only found wrong.
  std::optional<Measurement> measurement;
  // The guest's interfaces for the preconditions when there is no measurement (with one, its
  // after-probe snapshot is used).
  CounterSnapshot interfaces;
  VerifySettings settings;
};

struct LineRateMatch {
  std::string interface_name;
  std::uint64_t speed_mbps = 0;
  double ratio = 0;  // throughput / line rate
};

struct VerificationResult {
  Verdict verdict = Verdict::inconclusive;
  std::string summary;  // one line: what was found and why
  std::vector<Error> failed_preconditions;
  std::vector<CounterDelta> deltas;      // intended first
  std::optional<double> intended_share;  // net bytes on the intended NIC / probe bytes
  std::optional<double> throughput;      // probe bytes per second of wall time
  std::optional<LineRateMatch> exactly_old_number;
  std::optional<PathDiagnosis> diagnosis;  // for wrong-path, and for inconclusive when evidence points somewhere
  ProbeAdvice advice;
  std::vector<std::string> notes;
  // Every signal as it was read, and the one the verdict rests on (none: preconditions, or no
  // probe). For wrong-path, the netN the host saw carry the bytes when it could tell.
  std::vector<SignalReading> signals;
  std::optional<Signal> decided_by;
  std::optional<int> carrier_net;
  // The mount's connections as the kernel has them after the probe (or as observed), beside the
  // nconnect asked: the report's per-mount connection count.
  std::optional<EffectiveTransports> transports;
};

VerificationResult verify_path(const VerificationInput& input);

// The interface whose line rate the throughput matches, when that interface is slower than
// the intended one (or the intended speed is unknown).
std::optional<LineRateMatch> match_line_rate(double throughput, const std::vector<CounterDelta>& deltas,
                                             const VerifySettings& settings);

}  // namespace pw::verify
