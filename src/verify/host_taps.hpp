// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The hypervisor's byte counters of each Proxmox NIC (tap<vmid>i<N>), read through the API just
// before and just after the probe run. Their window holds the whole probe playbook, so they carry
// the probe's bytes plus whatever else moved meanwhile: a NIC that carried less than the probe's
// share cannot have carried the probe, whatever the guest's own counters or MACs say. Pure.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace pw::verify {

struct TapBytes {
  std::uint64_t guest_rx = 0;  // Proxmox "netin"
  std::uint64_t guest_tx = 0;  // Proxmox "netout"
};

struct HostTapSamples {
  int intended_net = -1;           // N of the intended netN
  std::map<int, TapBytes> before;  // by N
  std::map<int, TapBytes> after;
  std::string unavailable;  // why there are none (empty when read)
};

}  // namespace pw::verify
