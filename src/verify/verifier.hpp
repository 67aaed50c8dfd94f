#pragma once
// The verifier's decision: did the probe's bytes take the intended link? Pure function over
// counter samples and NFS evidence; the engine gathers them and acts on the advice.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "verify/counters.hpp"
#include "verify/nfs_evidence.hpp"

namespace pw::verify {

// The verifier's part of the verdict contract (DESIGN.md); rolled-back and rollback-failed are
// the engine's.
enum class Verdict { verified, wrong_path, inconclusive, precondition_failed };

std::string_view to_string(Verdict verdict);  // "verified", "wrong-path", ...

struct VerifySettings {
  double min_share = 0.9;       // of the probe's bytes, net of background, on the intended NIC
  // Below this share found on all interfaces together, the probe's bytes went unseen (a cached
  // read, a short file): nothing can be concluded.
  double min_seen_share = 0.5;
  std::uint64_t max_probe_bytes = 4ull << 30;  // growing the probe stops here
  NoiseModel noise;
  // "Exactly the old number": throughput within this band of another interface's line rate.
  // A saturated link delivers 80–98 % of its line rate to NFS (the seed's 105 MB/s on 1 GbE is 84 %).
  double line_rate_low = 0.80;
  double line_rate_high = 1.02;
};

struct Measurement {
  CounterSamples samples;
  ProbeRun probe;
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

enum class NextStep {
  none,        // the verdict stands
  grow_probe,  // measure again with probe_bytes
  remeasure,   // counters were reset or disturbed: new baseline, same probe
  give_up,     // more probing cannot help: the verdict stays inconclusive
};

std::string_view to_string(NextStep step);

struct ProbeAdvice {
  NextStep next = NextStep::none;
  std::uint64_t probe_bytes = 0;  // for grow_probe and remeasure
  std::string reason;
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
  std::vector<CounterDelta> deltas;  // intended first
  std::optional<double> intended_share;  // net bytes on the intended NIC / probe bytes
  std::optional<double> throughput;      // probe bytes per second of wall time
  std::optional<LineRateMatch> exactly_old_number;
  std::optional<PathDiagnosis> diagnosis;  // for wrong-path, and for inconclusive when evidence points somewhere
  ProbeAdvice advice;
  std::vector<std::string> notes;
};

VerificationResult verify_path(const VerificationInput& input);

// The interface whose line rate the throughput matches, when that interface is slower than
// the intended one (or the intended speed is unknown).
std::optional<LineRateMatch> match_line_rate(double throughput, const std::vector<CounterDelta>& deltas,
                                             const VerifySettings& settings);

}  // namespace pw::verify
