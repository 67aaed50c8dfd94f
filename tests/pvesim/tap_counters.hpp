// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The per-tap byte counters GET .../status/current returns as "nics" and the guests' netin/netout
// sums (qemu-server PVE/QemuServer.pm, sub vmstatus). Two sources:
// - a node's real /proc/net/dev (the lab's QEMU taps; --node-net-dev), read on every request as
//   vmstatus does through pve-common's read_proc_net_dev;
// - counters synthesised for simulated VMs: zero when the tap is made, moved only by the admin API.
// pvesim parses /proc/net/dev itself, from pve-common's regex, instead of linking the client's
// guest-side parser: the emulator and the client check each other only if neither borrows the
// other's reading.
#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "sim_state.hpp"

namespace pvesim {

// A device's line of /proc/net/dev as read_proc_net_dev keeps it: bytes received and transmitted.
struct NetDevLine {
  std::uint64_t receive = 0;
  std::uint64_t transmit = 0;
};
using NetDev = std::map<std::string, NetDevLine>;  // by device name

// pve-common PVE/ProcFSTools.pm, read_proc_net_dev: every line matching
// m/^\s*(.*):\s*(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+(\d+)\s+/ (receive = field 1,
// transmit = field 9); other lines (the two headers) are skipped.
NetDev parse_proc_net_dev(std::string_view text);

// Reads a /proc/net/dev: PATH is a file in that format (/proc/<pid>/net/dev of a process inside
// the node's network namespace, or a fixture), or a network namespace file (/run/netns/NAME,
// /proc/<pid>/ns/net), in which case it is read from inside that namespace (needs CAP_SYS_ADMIN).
struct NetDevText {
  std::optional<std::string> text;
  std::string error;  // when there is no text
};
NetDevText read_net_dev(const std::string& path);

// The nodes whose taps are real (--node-net-dev NODE=PATH). Thread-safe.
class NodeNetDevs {
 public:
  explicit NodeNetDevs(std::map<std::string, std::string> paths) : paths_(std::move(paths)) {}
  bool real(const std::string& node) const { return paths_.contains(node); }
  std::optional<std::string> path(const std::string& node) const;

  struct Read {
    NetDev devices;
    std::string error;  // "" when read
  };
  // The node's devices now. Unreadable: no devices, as read_proc_net_dev returns {} when it cannot
  // open the file; pvesim also says so on stderr once, when the reads start failing.
  Read read(const std::string& node);

 private:
  std::map<std::string, std::string> paths_;
  std::mutex mutex_;
  std::set<std::string> failing_;
};

// A VM's taps by device name (tap<vmid>i<N>), as "nics" keys them.
using Taps = std::map<std::string, TapCounters>;

std::string tap_name(int vmid, int index);

// vmstatus's loop over the node's devices: those matching m/^tap([1-9]\d*)i/ with this vmid,
// netout = receive, netin = transmit (the tap's rx is what the guest sent).
Taps real_taps(const NetDev& devices, int vmid);

// A simulated VM's taps: while it runs, one per netN in effect that has a bridge (without one,
// qemu-server's print_netdev_full gives it type=user networking: no tap). A tap counts from 0
// after a start or a re-plug; see SyntheticTap.
Taps synthetic_taps(const Vm& vm);

// What the admin API changes on a simulated tap; absent members stay.
struct TapChange {
  std::optional<std::uint64_t> netin;
  std::optional<std::uint64_t> netout;
};
// Sets (or with `advance` adds to; counters wrap like the kernel's u64) the counters of netN's tap
// of a simulated running VM. Returns "" or why there is no such tap.
std::string change_synthetic_tap(Vm& vm, int index, const TapChange& change, bool advance);

// The admin API's body {"net0": {"netin": N, "netout": N}, ...}: every change or none (set, or
// with `advance` add). Returns "" or what is wrong.
std::string change_synthetic_taps(Vm& vm, const boost::json::value& body, bool advance);

// vmstatus's netin/netout: the sums over the VM's taps.
TapCounters total(const Taps& taps);
// "nics": {"tap101i0": {"netin": N, "netout": N}, ...}, numbers as qemu-server's int() makes them.
boost::json::object nics_json(const Taps& taps);

}  // namespace pvesim
