// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One read of the guest's counters as the verifier sees it: each interface's bytes with who the
// interface is (its identity: permanent address, else MAC), its speed and whether it is an upper
// device (VLAN, bond, bridge) that counts its lower device's bytes again. Made in one place for
// the probe's snapshots and the audit's.
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "guest/counters.hpp"
#include "guest/interfaces.hpp"
#include "verify/counters.hpp"

namespace pw::guest {

// Interfaces are joined by name, or, when the read also gave each name's ifindex, by ifindex:
// then an interface renamed between the counter read and the facts keeps its identity, and one
// whose netdev is gone by then has none (it can stand for no NIC). `lo` is left out (no storage
// path runs over it).
verify::CounterSnapshot counter_snapshot(const std::vector<InterfaceCounters>& counters,
                                         const std::vector<InterfaceInfo>& interfaces,
                                         std::chrono::nanoseconds taken_at = {},
                                         const std::map<std::string, int, std::less<>>* ifindex_at_read = nullptr);

}  // namespace pw::guest
