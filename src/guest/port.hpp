// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the engine asks of the guests (the port; src/ansible has the adapter, tests have fakes).
// Each call covers many guests at once (the Ansible adapter runs one ansible-playbook per call,
// never one per guest) and answers per host.
#include <chrono>
#include <expected>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "diagnostics/error.hpp"
#include "guest/facts.hpp"
#include "guest/operations.hpp"
#include "proxmox/types.hpp"
#include "verify/counters.hpp"

namespace pw::guest {

struct GuestFailure {
  enum class Kind {
    unreachable,  // SSH could not reach the guest
    conflict,     // the fstab changed since it was observed: re-observe, never overwrite
    untouched,    // a task failed before the guest's state was changed (no fstab written, no mount)
    failed,       // a task failed
    timeout,
  };
  Kind kind = Kind::failed;
  Error error;
};

template <class T>
using GuestResult = std::expected<T, GuestFailure>;

template <class T>
using PerHost = std::map<std::string, GuestResult<T>>;

// The commit-latency cycles as the guest ran them (dd oflag=dsync bs=8k).
struct CommitRun {
  int cycles = 0;
  double seconds = 0;                // dd's own time for all of them
  std::optional<std::string> error;  // they could not run (dd's complaint)
};

// Four counter snapshots around one probe, then the guest's NFS state right after it.
struct ProbeOutcome {
  verify::CounterSamples samples;
  verify::ProbeRun run;
  // The NFS connections (with their tcp_info byte counters, when the kernel gives them) read
  // together with the "before" and "after" counter snapshots.
  std::vector<TcpConnection> connections_before;
  std::vector<TcpConnection> connections_after;
  GuestFacts after;                 // mounts, connections, transports, interfaces after the probe
  std::optional<CommitRun> commit;  // when the request asked for commit cycles
};

// What to gather in a guest beyond the facts every policy needs.
struct FactsWanted {
  std::vector<std::string> names;  // host names to resolve with the guest's own resolver (GuestFacts::resolved)
  bool docker_volumes = false;     // Docker's Compose volumes (GuestFacts::docker), for owner: compose
  // The Proxmox VM the guest is: a port that reads guests through the hypervisor (the QEMU guest
  // agent, src/observe) needs it; without it that port reads this guest over SSH.
  std::optional<proxmox::VmRef> vm{};
  // NAS addresses or names to probe the path MTU to (GuestFacts::path_mtu); a port that runs no
  // program in the guest (the agent's read access) leaves them unmeasured.
  std::vector<std::string> path_mtu{};
};
using FactsRequests = std::map<std::string, FactsWanted>;

class GuestPort {
 public:
  virtual ~GuestPort() = default;
  virtual PerHost<GuestFacts> gather_facts(std::span<const std::string> hosts, const FactsRequests& names) = 0;
  PerHost<GuestFacts> gather_facts(std::span<const std::string> hosts) { return gather_facts(hosts, {}); }
  virtual PerHost<void> apply_fstab(std::span<const FstabChange> changes) = 0;
  virtual PerHost<void> restore_fstab(std::span<const FstabRestore> restores) = 0;
  virtual PerHost<void> set_channels(std::span<const ChannelsRequest> requests) = 0;
  virtual PerHost<void> move_transport(std::span<const TransportMove> moves) = 0;
  virtual PerHost<ProbeOutcome> probe(std::span<const ProbeRequest> probes) = 0;
  // Waits until each guest answers over SSH again (after a restart). The answer is a facts
  // report, and it is returned: a rollback that restarted the VM as its last undo reads the
  // restored state from it instead of starting another facts run.
  virtual PerHost<GuestFacts> wait_reachable(std::span<const std::string> hosts, std::chrono::seconds timeout) = 0;
};

}  // namespace pw::guest
