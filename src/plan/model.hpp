// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A plan is a value (as in Terraform): computed once from desired × observed state, printed,
// saved, and applied exactly as written. Every step carries the data its inverse needs, so a
// rollback or a `pathwarden recover` never has to re-decide anything.
#include <array>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/facts_channel.hpp"
#include "guest/operations.hpp"
#include "net/mac_address.hpp"
#include "proxmox/types.hpp"
#include "verify/traffic_since.hpp"
#include "verify/verifier.hpp"

namespace pw::plan {

// Proxmox: write netN with the digest read in the same run. Inverse: write `from` back.
struct SetNic {
  proxmox::VmRef vm;
  std::string device;  // "net1"
  std::string from;    // property string as configured before (pending value if one was set)
  std::string to;
  std::string digest;    // of the config this change was planned from
  bool hotplug = false;  // running VM with network hot-plug: the NIC is re-plugged at once
  std::optional<int> queues_from;
  int queues_to = 0;
  // The policy's restart window as written ("" = any time): a hot-plug re-plugs the NIC, so
  // apply re-checks it at the time it runs, not only when the plan was made.
  std::string restart_window;
};

// Proxmox: reboot through the API, which applies pending changes, then wait until the guest
// answers again. Stopped VMs are never started by pathwarden.
struct RestartVm {
  proxmox::VmRef vm;
  std::string host;
  std::string why;
  std::string restart_window;  // as in SetNic: re-checked right before the reboot
};

// Guest: `ethtool -L IF combined N` on the interface with this MAC. Inverse: back to `from`.
struct SetChannels {
  std::string host;
  net::MacAddress mac;
  std::string interface;  // as observed; re-resolved by MAC after a NIC re-plug
  int from = 1;
  int to = 1;
};

// Guest: compare-and-swap write of the fstab (backup kept) and the mounts re-made.
// Inverse: restore the backup if the file is still what was written, re-make the old mounts.
struct ChangeFstab {
  std::string host;
  std::string mount_point;  // the policy's mount
  std::string old_content;  // the file as observed
  std::string new_content;  // equal to old_content when only the mounts are re-made
  std::string old_sha256;
  std::string new_sha256;
  std::string backup_path;
  std::vector<guest::MountActivation> activations;          // new state, in mount order
  std::vector<guest::MountActivation> inverse_activations;  // old state, in mount order
  // Several policies on one guest make one write (plan/guest_writes.hpp): new_content holds every
  // writer's entry, old_sha256 is the one compare-and-swap token, backup_path the one backup.
  // The policies of that write, this one among them, in plan order; empty: this policy alone.
  std::vector<std::string> writers;
  // Other entries this write changes, besides mount_point's: under spec.mount.trunking:
  // move-transport, every entry of the NAS at the address its NFS client is moved away from is
  // pointed at the policy's address (the move does not outlast a reboot, the fstab must).
  std::vector<std::string> moved_entries;
  bool writes_file() const { return old_content != new_content; }
  // The mount points whose lines this write sets: the policy's own first.
  std::vector<std::string> entries() const;
  bool shared() const { return writers.size() > 1; }
};

// Guest: move the NFS client that `mount_point` rides from one server address to another
// without unmounting anything: every TCP transport of that client pointing at `from` gets
// `to` written to its sunrpc sysfs dstaddr (Linux 5.14+), and every mount of the client
// follows, NFSv4 kept (spec.mount.trunking: move-transport; guest/transport_move.hpp).
// Planned after the change-fstab step that points the NAS's entries at `to`. Inverse: the
// same move from `to` back to `from`.
struct MoveTransport {
  std::string host;
  std::string mount_point;  // the policy's mount: its device names `mounted_as`, its addr= is `from`
  std::string mounted_as;   // the policy's server as written (a name, or `to` itself)
  std::string from;         // IPv4: the address the client was made with (the other mount's)
  std::string to;           // IPv4: the policy's server, as the guest resolves it
};

// Prove the path with byte counters; no inverse. Carries everything the verifier needs, so an
// applied plan file does not depend on the policy files still saying the same.
struct ProvePath {
  // Whose tap counters the host side of the verification reads (status/current "nics"): the VM
  // and N of the intended netN. vmid 0 or no nic: plans without them verify guest-side only.
  proxmox::VmRef vm;
  std::optional<int> nic;
  std::string host;
  std::string mount_point;
  net::MacAddress intended_mac;
  std::string server;       // an address: a name is resolved by the guest at planning
  std::string server_name;  // the name the policy gave, when it gave one
  std::vector<std::string> nas_addresses;
  std::optional<std::string> vers;
  std::optional<int> nconnect;
  std::optional<int> queues;
  std::string probe_file;  // absolute path in the guest
  std::uint64_t probe_bytes = 0;
  std::uint64_t max_probe_bytes = 0;
  double min_share = 0.9;
  verify::ProbeDirection direction = verify::ProbeDirection::read;  // "write" in the plan file: tx
  bool probe_as_root = false;  // a read probe as root (policy spec.verify.probe_as: root)
  int baseline_ms = 2000;
  int commit_cycles = 0;                  // commit-latency figure after the probe (0: none)
  std::optional<double> min_commit_rate;  // commits/s; below it the path is not proven
  bool rollback_on_inconclusive = true;
  bool verify_restored = true;
};

using StepAction = std::variant<SetNic, RestartVm, SetChannels, ChangeFstab, MoveTransport, ProvePath>;

// The kinds of step, in StepAction's order and in the order phases run. Strings ("set-nic") only
// at the edges: plan files, journals, reports.
enum class StepKind { set_nic, restart_vm, set_channels, change_fstab, move_transport, prove_path };
inline constexpr std::array<StepKind, 6> kPhaseOrder{StepKind::set_nic,        StepKind::restart_vm,
                                                     StepKind::set_channels,   StepKind::change_fstab,
                                                     StepKind::move_transport, StepKind::prove_path};
// "set-nic", "restart-vm", "set-channels", "change-fstab", "move-transport", "prove-path"
std::string_view to_string(StepKind kind);
// Also reads "verify", prove-path's name in plan files before format 1.6 and their journals.
std::optional<StepKind> step_kind_from(std::string_view text);

struct Step {
  StepAction action;
  bool disruptive = false;  // interrupts the guest's path or the guest itself
  std::string summary;      // one line for plans, journals and reports

  StepKind kind() const { return static_cast<StepKind>(action.index()); }
};

enum class PolicyState {
  converged,            // nothing to do
  changes,              // steps to apply
  precondition_failed,  // cannot be planned safely; see `blockers`
  unobserved,           // the API or the guest did not answer: nothing is known, so nothing is planned
  // The mount differs from the policy, but it is not pathwarden's (Docker, systemd or autofs
  // makes it): nothing is planned, `remedy` says what the operator changes. Exit 3, as drift.
  drift,
};

std::string_view to_string(PolicyState state);

struct PolicyPlan {
  std::string policy;
  std::string source;  // file:line of the policy
  proxmox::VmRef vm;
  std::string host;
  std::string nas;  // the NAS as the policy names it (spec.mount.server): the fleet page groups by it
  PolicyState state = PolicyState::converged;
  std::vector<Step> steps;
  std::vector<std::string> blockers;  // why nothing can be applied
  std::vector<std::string> warnings;  // e.g. the NFSv4.1 trunking risk
  std::vector<std::string> notes;     // what was observed and left alone
  std::vector<std::string> remedy;    // drift: what to change by hand, in order
  // Converged: the path its proof checks on every run from the facts the plan was made from (the
  // mount's NFS connections -> interface -> intended NIC, addr=), at no probe and no extra round
  // trip; `passive` is what that check found (reconcile/observer.cpp). A configuration can stay
  // as the policy says while its path drifts (a host route, a trunked transport): that is never
  // "converged". Runtime only, not in the plan file, whose proofs are its verify steps.
  std::optional<ProvePath> proof;
  std::optional<verify::VerificationResult> passive;
  // Converged with a proof: the counters this run read of its path (the NFS connections' bytes
  // from the facts, the VM's taps from one read per node), differenced against the last run's
  // (verify/traffic_since.hpp) and stored with this run's result. Runtime only, like `passive`.
  std::optional<verify::TrafficMark> traffic;
  // `traffic` differenced against the mark the policy's last stored result holds (none stored:
  // unset, "no comparison").
  std::optional<verify::TrafficSince> since_last;
  // How the guest's facts were read (spec.observe), and under via: auto why not through the
  // agent. Runtime only, like `passive`: the report says it per policy.
  std::optional<guest::FactsChannel> observed_via;
  std::string agent_unused;
};

struct Plan {
  // The plan file's format_version (diagnostics/format_version.hpp; src/plan/plan.schema.json).
  // 1.0 is the plan file that said only "version": 1; 1.1 added format_version and
  // pathwarden_version, and still writes "version": MAJOR for the pathwardens that read only that;
  // 1.2 added each policy's "nas"; 1.3 the "writers" of a change-fstab step (several policies'
  // entries in one write); 1.4 the file's "seal" (plan/plan_seal.hpp), which `apply` requires;
  // 1.5 the proof's "probe_as_root"; 1.6 names the proof step "prove-path" (was "verify", still read);
  // 1.7 the "move-transport" step and a change-fstab step's "moved_entries".
  static constexpr int kFormatMajor = 1;
  static constexpr int kFormatMinor = 7;
  std::string id;                 // random, names journals and backups
  std::string created_at;         // ISO 8601 UTC
  std::string policies_revision;  // git commit of the policy directory, when known
  bool policies_dirty = false;
  std::vector<PolicyPlan> policies;

  bool has_changes() const;
  bool has_blockers() const;
};

boost::json::value to_json(const Plan& plan);
Result<Plan> plan_from_json(const boost::json::value& json);
boost::json::value step_to_json(const Step& step);
Result<Step> step_from_json(const boost::json::value& json);

}  // namespace pw::plan
