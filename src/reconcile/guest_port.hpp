#pragma once
// What the engine asks of the guests. Each call covers many guests at once (the Ansible
// implementation runs one ansible-playbook per call, never one per guest) and answers per host.
#include <chrono>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ansible/playbooks.hpp"
#include "diagnostics/error.hpp"
#include "guest/facts.hpp"
#include "verify/counters.hpp"

namespace pw::reconcile {

struct GuestFailure {
  enum class Kind {
    unreachable,  // SSH could not reach the guest
    conflict,     // the fstab changed since it was observed: re-observe, never overwrite
    failed,       // a task failed
    timeout,
  };
  Kind kind = Kind::failed;
  Error error;
};

template <class T>
using GuestResult = std::expected<T, GuestFailure>;

struct ProbeSpec {
  std::string host;
  std::string path;  // file on the mount
  std::uint64_t bytes = 0;
  verify::ProbeDirection direction = verify::ProbeDirection::read;
  std::chrono::milliseconds baseline{2000};
};

// Four counter snapshots around one probe, then the guest's NFS state right after it.
struct ProbeOutcome {
  verify::CounterSamples samples;
  verify::ProbeRun run;
  guest::GuestFacts after;  // mounts, connections, transports, interfaces after the probe
};

class GuestPort {
 public:
  virtual ~GuestPort() = default;
  virtual std::map<std::string, GuestResult<guest::GuestFacts>> gather_facts(std::span<const std::string> hosts) = 0;
  virtual std::map<std::string, GuestResult<void>> apply_fstab(std::span<const ansible::FstabChange> changes) = 0;
  virtual std::map<std::string, GuestResult<void>> restore_fstab(std::span<const ansible::FstabRestore> restores) = 0;
  virtual std::map<std::string, GuestResult<void>> set_channels(std::span<const ansible::ChannelsRequest> requests) = 0;
  virtual std::map<std::string, GuestResult<ProbeOutcome>> probe(std::span<const ProbeSpec> probes) = 0;
  // Waits until each guest answers over SSH again (after a restart).
  virtual std::map<std::string, GuestResult<void>> wait_reachable(std::span<const std::string> hosts,
                                                                  std::chrono::seconds timeout) = 0;
};

}  // namespace pw::reconcile
