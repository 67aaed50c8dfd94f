// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Plain values the Proxmox API returns, already typed. Numbers Proxmox sometimes sends as strings
// and sometimes as numbers are normalised here, so callers never see the difference.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::proxmox {

struct VmRef {
  std::string node;
  int vmid = 0;

  std::string to_string() const { return "VM " + std::to_string(vmid) + " on " + node; }
  friend auto operator<=>(const VmRef&, const VmRef&) = default;
};

enum class GuestType { qemu, lxc };

// One entry of GET /cluster/resources?type=vm (QEMU and LXC guests alike).
struct GuestSummary {
  VmRef ref;
  GuestType type = GuestType::qemu;
  std::string name;
  std::string status;  // running | stopped | ...
  bool template_ = false;
  std::string lock;  // empty when not locked
  std::string tags;
};

struct NodeSummary {
  std::string node;
  std::string status;  // online | offline | unknown
  std::string ssl_fingerprint;
};

// A VM config as returned by GET .../config, keys in the order Proxmox sent them.
struct VmConfig {
  VmRef ref;
  std::vector<std::pair<std::string, std::string>> entries;  // without "digest"
  std::string digest;                                        // SHA-1 of the config file; send it back on writes
  bool current = true;  // true: values in effect (current=1); false: pending values folded in

  std::optional<std::string> get(std::string_view key) const;
  // net0..net31 in numeric order.
  std::vector<std::pair<std::string, std::string>> nics() const;
};

// One item of GET .../pending: the value in effect, the pending value, or a pending delete.
struct PendingItem {
  std::string key;
  std::optional<std::string> value;    // in effect
  std::optional<std::string> pending;  // will apply at the next start or hot-plug
  int delete_ = 0;                     // 1 = pending delete, 2 = forced delete

  bool has_change() const { return pending.has_value() || delete_ != 0; }
};

struct PendingConfig {
  VmRef ref;
  std::vector<PendingItem> items;  // without "digest"
  std::string digest;

  const PendingItem* find(std::string_view key) const;
  // The keys whose new value waits for a restart (or a hot-plug that did not happen).
  std::vector<std::string> changed_keys() const;
};

// One Proxmox NIC's byte counters as the hypervisor sees them, on its tap device tap<vmid>i<N>.
// The names are Proxmox's and are from the GUEST's point of view (qemu-server PVE/QemuServer.pm,
// sub vmstatus, which reads the node's /proc/net/dev through pve-common PVE/ProcFSTools.pm
// read_proc_net_dev and swaps the direction):
//   netin  = bytes sent TO the guest   = what the host tap transmitted = the guest's rx
//   netout = bytes sent FROM the guest = what the host tap received    = the guest's tx
// So a probe that READS from the NAS shows up on the intended NIC's netin; a write on its netout.
// Counters start at 0 when the tap is created (VM start, NIC hot-plug) and only grow.
struct TapCounters {
  std::uint64_t netin = 0;   // guest rx (host tap tx)
  std::uint64_t netout = 0;  // guest tx (host tap rx)
  friend bool operator==(const TapCounters&, const TapCounters&) = default;
};

// A member of status/current's "nics" that was not taken: another VM's tap, a name that is not
// tap<vmid>i<N>, or counters that are not non-negative integers. Proxmox never sends these, so
// their presence says the answer is not to be trusted as the host's view; kept to be reported.
struct IgnoredNic {
  std::string key;
  std::string reason;
};

struct VmStatus {
  VmRef ref;
  std::string status;     // running | stopped
  std::string qmpstatus;  // running | paused | prelaunch | ... (when Proxmox reports it)
  std::string name;
  std::string lock;
  std::optional<std::int64_t> pid;
  std::optional<std::int64_t> uptime;
  // Per Proxmox NIC (N of netN), from "nics": {"tap<vmid>i<N>": {"netin", "netout"}}. Proxmox sends
  // it for a VM whose taps exist (a running or paused VM); it is absent when the VM is stopped,
  // and an older Proxmox or a proxy may leave it out: empty then, which means "unknown", not zero.
  std::map<int, TapCounters> nics;
  std::vector<IgnoredNic> ignored_nics;
};

// A task id: UPID:node:PID:PSTART:STARTTIME:type:id:user: (hex fields).
struct Upid {
  std::string text;
  std::string node;
  std::string type;  // qmconfig, qmstart, qmshutdown, qmreboot, qmstop, ...
  std::string id;    // usually the vmid
  std::string user;
  std::int64_t starttime = 0;  // unix seconds, from the UPID

  static Result<Upid> parse(std::string_view text);
};

struct TaskStatus {
  Upid upid;
  bool running = true;
  std::string exitstatus;  // set once stopped: "OK", "WARNINGS: N" or the error text

  // "OK" and "WARNINGS: N" are success (pve-common UPID.pm status_is_error).
  bool succeeded() const;
  int warnings() const;
};

// A filter of GET /nodes/{node}/tasks; running and finished tasks (source=all).
struct TaskQuery {
  std::optional<int> vmid;
  std::optional<std::int64_t> since;  // started at or after, unix seconds
  std::string typefilter;             // exact task type; "" = any
};

struct WaitOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  std::chrono::milliseconds first_poll{std::chrono::milliseconds(100)};
  std::chrono::milliseconds max_poll{std::chrono::seconds(2)};
};

}  // namespace pw::proxmox
