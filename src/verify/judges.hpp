// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Each signal judged on its own (signals.hpp): what it says about one probe. The verifier
// (verifier.cpp) then weighs them. Pure.
#include <optional>

#include "verify/connection_bytes.hpp"
#include "verify/host_taps.hpp"
#include "verify/settings.hpp"
#include "verify/signals.hpp"

namespace pw::verify {

struct HostTapJudgement {
  SignalReading reading{Signal::host_taps, SignalState::unavailable, {}};
  std::optional<int> carrier;  // the netN that carried the probe's worth when the intended one did not
};

// The intended tap must carry at least min_share of the probe's bytes (minus the noise floor)
// in a window that holds the whole probe: background only adds, so less is conclusive.
HostTapJudgement judge_host_taps(const HostTapSamples& taps, const ProbeRun& probe, const VerifySettings& s);

// The probe's bytes on the NFS connections: on those of the intended interface (agreed), on those
// of another (contradicted), or too few / spread / unattributable (undecided).
SignalReading judge_connections(const ConnectionAnalysis& a, const ProbeRun& probe, const VerifySettings& s);

}  // namespace pw::verify
