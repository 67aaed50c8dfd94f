// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Interface byte counters around a probe, and the arithmetic that turns them into per-interface
// deltas with the expected background taken out. Pure: no I/O, no clock.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/mac_address.hpp"
#include "verify/direction.hpp"

namespace pw::verify {

// One interface as one read of /sys/class/net/IF/{address,statistics/*,speed} saw it.
struct InterfaceCounters {
  std::string name;     // the guest's name at that moment (may change)
  net::MacAddress mac;  // identity across snapshots
  std::uint64_t rx_bytes = 0;
  std::uint64_t tx_bytes = 0;
  std::optional<std::uint64_t> speed_mbps;  // absent when the driver reports none (virtio: -1)
  // A VLAN, bridge or bond stacked on another interface: its bytes are also counted below it,
  // so it never stands for the intended NIC when a device with the same MAC exists, and it is
  // left out of byte totals.
  bool upper_device = false;
  // A re-created netdev (NIC hot-plug) gets a new ifindex: its counters restarted even when
  // they already climbed past the old values.
  std::optional<int> ifindex;
};

// All interfaces of the guest read at one moment of the guest's monotonic clock.
struct CounterSnapshot {
  std::chrono::nanoseconds taken_at{0};
  std::vector<InterfaceCounters> interfaces;
};

// What the probe did: read moves its bytes into the guest (rx), write out of it (tx).
struct ProbeRun {
  std::uint64_t bytes = 0;  // what the probe moved (dd's count)
  ProbeDirection direction = ProbeDirection::read;
  std::chrono::nanoseconds wall_time{0};
  std::uint64_t requested_bytes = 0;        // what it was asked to move; 0 when unknown
  std::optional<std::string> open_error{};  // dd could not open the probe file ("No such file or directory")
  bool file_existed = false;                // the write probe's new file was there already: never overwritten
  std::optional<std::string> error{};       // dd failed after opening it (I/O error, killed)
  // The guest refused the file before anything was read: a link, a FIFO, a device ("... is a
  // FIFO (named pipe), not a regular file"). No counters were read.
  std::optional<std::string> refused{};
};

// The four snapshots of one measurement, in the order they were taken. The baseline pair, a
// short window apart with no probe running, gives each interface's background rate.
struct CounterSamples {
  CounterSnapshot baseline_start;
  CounterSnapshot baseline_end;
  CounterSnapshot before_probe;
  CounterSnapshot after_probe;
};

enum class CounterIssue {
  none,
  reset,         // a counter went down or the netdev was re-created: deltas are meaningless
  no_baseline,   // absent from a baseline snapshot: background assumed 0
  not_in_probe,  // absent before or after the probe: no delta at all
};

std::string_view to_string(CounterIssue issue);

// One interface's bytes across the probe. "net" = raw delta minus the expected background; it
// can be negative when the background was quieter than in the baseline window.
struct CounterDelta {
  std::string name;           // as in the after-probe snapshot (or the last one it appears in)
  std::string previous_name;  // set when the interface had another name in an earlier snapshot
  net::MacAddress mac;
  bool intended = false;
  bool upper_device = false;
  std::optional<std::uint64_t> speed_mbps;
  CounterIssue issue = CounterIssue::none;

  std::uint64_t rx_bytes = 0;  // raw deltas over the probe window (0 when issue != none)
  std::uint64_t tx_bytes = 0;
  std::uint64_t rx_background = 0;  // expected from the baseline rate over the probe window
  std::uint64_t tx_background = 0;
  std::int64_t rx_net = 0;
  std::int64_t tx_net = 0;
  // ± bytes the net figure in the probe's direction may be off by (noise floor + background
  // uncertainty).
  std::uint64_t uncertainty = 0;

  std::int64_t net(ProbeDirection d) const { return d == ProbeDirection::read ? rx_net : tx_net; }
  std::uint64_t raw(ProbeDirection d) const { return d == ProbeDirection::read ? rx_bytes : tx_bytes; }
};

struct NoiseModel {
  std::uint64_t floor_bytes = 64ULL * 1024;  // ARP, SSH of the probe itself, management chatter
  double background_uncertainty = 0.5;       // the background may be off by this fraction of itself
};

// Which interface of a snapshot is the intended one: the device carrying the MAC, preferring
// real devices over upper devices (a VLAN on the NIC shares its MAC).
struct IntendedInterface {
  std::optional<InterfaceCounters> found;
  std::vector<std::string> candidates;  // more than one: ambiguous, nothing is chosen
};
IntendedInterface find_intended(const CounterSnapshot& snapshot, const net::MacAddress& intended_mac);

struct CounterAnalysis {
  std::vector<CounterDelta> deltas;  // intended first, then in the order first seen
  std::chrono::nanoseconds baseline_window{0};
  std::chrono::nanoseconds probe_window{0};
  std::vector<std::string> notes;  // what was assumed (renames, missing interfaces, ...)

  const CounterDelta* intended() const;
};

// Per-interface deltas across the probe, interfaces matched by MAC over all four snapshots (a
// renamed interface keeps its identity; interfaces sharing one MAC are told apart by name).
// The probe window is taken from the snapshot times, or the probe's wall time without them.
CounterAnalysis analyze_counters(const CounterSamples& samples, const ProbeRun& probe,
                                 const net::MacAddress& intended_mac, const NoiseModel& noise);

}  // namespace pw::verify
