#pragma once
// One read of the guest's counters as the verifier sees it: each interface's bytes with who the
// interface is (its identity: permanent address, else MAC), its speed and whether it is an upper
// device (VLAN, bond, bridge) that counts its lower device's bytes again. Made in one place for
// the probe's snapshots and the audit's.
#include <chrono>
#include <vector>

#include "guest/counters.hpp"
#include "guest/interfaces.hpp"
#include "verify/counters.hpp"

namespace pw::guest {

// Interfaces are joined by name; `lo` is left out (no storage path runs over it).
verify::CounterSnapshot counter_snapshot(const std::vector<InterfaceCounters>& counters,
                                         const std::vector<InterfaceInfo>& interfaces,
                                         std::chrono::nanoseconds taken_at = {});

}  // namespace pw::guest
