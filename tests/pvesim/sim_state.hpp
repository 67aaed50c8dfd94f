// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The simulated cluster: nodes, guests with their config files ([PENDING] included), tokens,
// users, tasks. Config rendering and digest follow qemu-server's write_vm_config.
#include <boost/json/fwd.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "acl.hpp"

namespace pvesim {

struct RecordedAgent;

using Config = std::map<std::string, std::string>;  // sorted like the file

struct PendingDelete {
  std::string key;
  bool force = false;
};

// A tap device's byte counters in Proxmox's names, which are the guest's view (qemu-server
// PVE/QemuServer.pm, sub vmstatus): netin = what the tap transmitted (to the guest),
// netout = what the tap received (from the guest).
struct TapCounters {
  std::uint64_t netin = 0;
  std::uint64_t netout = 0;
};

// The counters pvesim keeps for a simulated VM's tap (no real tap: nobody's bytes cross it, only
// the admin API's). They belong to one tap: the QEMU "process" (pid) and the netN value it was
// plugged with; a new start or a re-plug makes a new tap, which counts from 0 again.
struct SyntheticTap {
  std::int64_t pid = 0;
  std::string net;
  TapCounters counters;
};

struct Vm {
  int vmid = 0;
  std::string node;
  std::string type = "qemu";  // qemu | lxc (lxc guests are listed, not configured)
  Config conf;                // includes "description" and "lock" when set
  Config pending;
  std::vector<PendingDelete> pending_delete;
  bool running = false;
  std::int64_t pid = 0;
  std::int64_t started_at = 0;                 // unix seconds
  std::optional<std::string> sampled_status;   // pvestatd's last sample (SimOptions::pvestatd_interval_ms)
  std::map<int, SyntheticTap> synthetic_taps;  // by N of netN; see tap_counters.hpp
  std::string hook;                            // command run on start/shutdown/stop/hotplug-nic
  // The guest ignores ACPI power-down (no acpid, a hung OS): a shutdown or reboot then waits its
  // timeout and fails, as qemu-server's _do_vm_stop does without forceStop.
  bool ignores_shutdown = false;
  // The recorded guest agent (recorded_agent.hpp), or none: then a real one on --qga-dir's socket.
  std::shared_ptr<const RecordedAgent> agent;
  std::timed_mutex file_lock;  // qemu-server's flock on the config (lock_config, 10 s)

  bool has_pending() const { return !pending.empty() || !pending_delete.empty(); }
  bool pending_delete_has(const std::string& key) const;
  void remove_pending_delete(const std::string& key);
};

struct Privileged {
  Acl acl;  // see acl.hpp; --token/--user privileges are an entry on "/", --acl adds more
};

struct Token : Privileged {
  std::string id;  // user@realm!name
  std::string secret;
};

struct User : Privileged {
  std::string id;  // name@realm
  std::string password;
};

extern const std::set<std::string> kAllPrivileges;

// Parses "A,B,C" into privileges; "all" or empty = every privilege, "none" = none.
std::optional<std::set<std::string>> parse_privileges(const std::string& list, std::string& error);

// The config file text qemu-server would write: description as '#' lines, sorted keys, then
// "[PENDING]" with its own keys and "delete: a,!b".
std::string render_config_file(const Vm& vm);
// sha1_hex of that text: Proxmox's digest.
std::string config_digest(const Vm& vm);
// Pending values folded in, pending deletes removed: what GET config shows without current=1.
Config config_with_pending(const Vm& vm);
// vmconfig_apply_pending: every pending change becomes current.
void apply_pending(Vm& vm);
// PVE::AbstractConfig::cleanup_pending: drop pending values equal to the current ones.
void cleanup_pending(Vm& vm);

struct Cluster {
  std::string name = "pvesim";
  std::string mac_prefix = "BC:24:11";
  std::vector<std::string> nodes;
  std::map<std::string, std::string> sdn_vnets;  // SDN VNet -> its zone; other bridges are in "localnetwork"
  std::map<int, std::unique_ptr<Vm>> vms;

  Vm* find(int vmid) const;
  std::string generate_mac();  // random, with mac_prefix, like PVE::Tools::random_ether_addr

 private:
  std::uint64_t mac_counter_ = 0;
};

// Builds a fleet: `count` guests over `nodes` nodes (pve1..), a mix of running and stopped VMs,
// virtio and e1000 NICs, some with network hot-plug off, every tenth guest an LXC container.
void generate_fleet(Cluster& cluster, int count, int nodes, std::uint64_t seed);

// State files (the --state / --dump-state format, documented in README.md).
bool load_state(Cluster& cluster, const boost::json::value& state, std::string& error);
boost::json::value dump_state(const Cluster& cluster);

}  // namespace pvesim
