// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The verifier's thresholds, one set per policy (spec.verify).
#include <cstdint>

#include "verify/counters.hpp"

namespace pw::verify {

struct VerifySettings {
  double min_share = 0.9;  // of the probe's bytes, net of background, on the intended NIC
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

}  // namespace pw::verify
