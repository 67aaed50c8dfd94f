// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The verifier's verdict and its advice to the probe loop (grow the probe, measure again).
#include <cstdint>
#include <string>
#include <string_view>

namespace pw::verify {

// The verifier's part of the verdict contract (DESIGN.md); rolled-back and rollback-failed are
// the engine's.
enum class Verdict { verified, wrong_path, inconclusive, precondition_failed };

std::string_view to_string(Verdict verdict);  // "verified", "wrong-path", ...

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

}  // namespace pw::verify
