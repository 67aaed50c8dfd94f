// SPDX-License-Identifier: GPL-3.0-or-later
#include "ansible/guest_port.hpp"

#include "ansible/phase_results.hpp"
#include "guest/counter_snapshot.hpp"
#include "guest/ethtool.hpp"
#include "guest/interfaces.hpp"
#include "guest/transport_move.hpp"

namespace pw::ansible {

using guest::GuestFailure;
using guest::GuestResult;
using guest::PerHost;
using guest::ProbeOutcome;
namespace {

bool guest_timed_out(const HostReport& h) {
  const auto* task = h.outcome == HostOutcome::failed ? h.failure() : nullptr;
  return task != nullptr && ended_by_time_limit(*task);
}

GuestFailure failure_of(const PlaybookRun& run, const std::string& host, bool become) {
  const auto* h = run.host(host);
  if (h == nullptr) return {GuestFailure::Kind::failed, Error{"no result from ansible-playbook", host, {}}};
  const std::string what = describe_outcome(*h);
  if (guest_timed_out(*h)) {
    return {GuestFailure::Kind::timeout,
            Error{"'" + h->failure()->task + "' did not finish within the guest's time limit and was ended", host,
                  "spec.ansible.guest_timeout in the settings; a hard NFS mount that no longer answers hangs "
                  "what touches it"}};
  }
  switch (h->outcome) {
    case HostOutcome::unreachable:
      return {GuestFailure::Kind::unreachable, Error{what, host, {}}};
    case HostOutcome::timed_out:
      return {GuestFailure::Kind::timeout, Error{what, host, {}}};
    case HostOutcome::failed:
      return {GuestFailure::Kind::failed, Error{what, host, privilege_hint(what, become)}};
    case HostOutcome::not_run: {
      std::string why = "no task ran (is it in the inventory?)";
      for (const auto& w : run.inventory_warnings()) why += "; ansible: " + w;
      return {GuestFailure::Kind::failed,
              Error{why, host, "check spec.ansible.inventory (pathwarden validate checks it)"}};
    }
    default:
      return {GuestFailure::Kind::failed, Error{what, host, {}}};
  }
}

// Which fstab phase a run was, for what its stages mean to the engine.
enum class ChangePhase : std::uint8_t { apply, rollback };

// An fstab script's failure: refused in `refuse` is someone else's edit (conflict); an apply that
// stopped before `write` left the fstab and the mounts as they were (untouched: a backup made on
// the way is no change of state); anything later may have changed them.
GuestFailure change_failure(const ChangeOutcome& outcome, const std::string& host, ChangePhase phase, bool become) {
  using guest::ChangeStage;
  auto kind = GuestFailure::Kind::failed;
  if (outcome.failed_in == ChangeStage::refuse)
    kind = GuestFailure::Kind::conflict;
  else if (phase == ChangePhase::apply && !outcome.report.reached(ChangeStage::write))
    kind = GuestFailure::Kind::untouched;
  return {kind, Error{outcome.message, host, privilege_hint(outcome.message, become)}};
}

bool succeeded(const PlaybookRun& run, const std::string& host) {
  const auto* h = run.host(host);
  return h != nullptr && (h->outcome == HostOutcome::ok || h->outcome == HostOutcome::changed);
}

verify::CounterSnapshot snapshot(const guest::CounterRead& read, const std::vector<guest::InterfaceInfo>& interfaces,
                                 double at_seconds) {
  // A read that listed ifindexes joins by ifindex (renames between the read and the facts are
  // seen); a recorded old-style read has none and joins by name.
  return guest::counter_snapshot(read.counters, interfaces,
                                 std::chrono::nanoseconds(static_cast<std::int64_t>(at_seconds * 1e9)),
                                 read.ifindex.empty() ? nullptr : &read.ifindex);
}

class AnsibleGuestPort final : public guest::GuestPort {
 public:
  AnsibleGuestPort(std::unique_ptr<PlaybookRunner> runner, GuestPortOptions options)
      : runner_(std::move(runner)), o_(std::move(options)) {}

  using guest::GuestPort::gather_facts;
  PerHost<guest::GuestFacts> gather_facts(std::span<const std::string> hosts,
                                          const guest::FactsRequests& names) override {
    PerHost<guest::GuestFacts> out;
    if (hosts.empty()) return out;
    auto run = run_phase("facts", facts_playbook(hosts, o_.playbook, names), hosts);
    if (!run) return all_failed<guest::GuestFacts>(hosts, run.error());
    auto facts = guest_facts_from(*run);
    for (const auto& h : hosts) {
      if (!succeeded(*run, h)) {
        out.emplace(h, std::unexpected(failure_of(*run, h, o_.playbook.become.has_value())));
        continue;
      }
      auto it = facts.find(h);
      if (it == facts.end() || !it->second) {
        out.emplace(h,
                    std::unexpected(GuestFailure{GuestFailure::Kind::failed,
                                                 it == facts.end() ? Error{"no facts", h, {}} : it->second.error()}));
        continue;
      }
      out.emplace(h, std::move(*it->second));
    }
    return out;
  }

  PerHost<void> apply_fstab(std::span<const guest::FstabChange> changes) override {
    std::vector<std::string> hosts;
    for (const auto& c : changes) hosts.push_back(c.host);
    return change(ChangePhase::apply, apply_playbook(changes, o_.playbook), hosts);
  }

  PerHost<void> restore_fstab(std::span<const guest::FstabRestore> restores) override {
    std::vector<std::string> hosts;
    for (const auto& r : restores) hosts.push_back(r.host);
    return change(ChangePhase::rollback, rollback_playbook(restores, o_.playbook), hosts);
  }

  PerHost<void> set_channels(std::span<const guest::ChannelsRequest> requests) override {
    std::vector<std::string> hosts;
    for (const auto& r : requests) hosts.push_back(r.host);
    // The script's own verdict that the NIC has no combined channels: it changed nothing.
    return simple("channels", channels_playbook(requests, o_.playbook), hosts, guest::kChannelsUntouchedExit);
  }

  PerHost<void> move_transport(std::span<const guest::TransportMove> moves) override {
    std::vector<std::string> hosts;
    for (const auto& m : moves) hosts.push_back(m.host);
    // The script's own verdict that it refused before writing: nothing of the step to undo.
    return simple("transport", transport_playbook(moves, o_.playbook), hosts, guest::kTransportUntouchedExit);
  }

  PerHost<ProbeOutcome> probe(std::span<const guest::ProbeRequest> probes) override {
    PerHost<ProbeOutcome> out;
    if (probes.empty()) return out;
    std::vector<std::string> hosts;
    for (const auto& p : probes) hosts.push_back(p.host);
    auto run = run_phase("probe", probe_playbook(probes, o_.playbook), hosts);
    if (!run) return all_failed<ProbeOutcome>(hosts, run.error());
    auto observations = probe_observations_from(*run);
    // The NFS evidence right after the probe (mounts, connections, transports, interfaces): the
    // probe playbook's second task, the facts report.
    auto after = guest_facts_from(*run);
    for (const auto& p : probes) {
      const auto& h = p.host;
      if (!succeeded(*run, h)) {
        out.emplace(h, std::unexpected(failure_of(*run, h, o_.playbook.become.has_value())));
        continue;
      }
      auto obs = observations.find(h);
      if (obs == observations.end() || !obs->second) {
        out.emplace(h, std::unexpected(GuestFailure{GuestFailure::Kind::failed, obs == observations.end()
                                                                                    ? Error{"no probe result", h, {}}
                                                                                    : obs->second.error()}));
        continue;
      }
      auto facts = after.find(h);
      if (facts == after.end() || !facts->second) {
        out.emplace(h, std::unexpected(GuestFailure{
                           GuestFailure::Kind::failed,
                           facts == after.end() ? Error{"no facts after the probe", h, {}} : facts->second.error()}));
        continue;
      }
      const auto& o = *obs->second;
      const auto& ifs = facts->second->interfaces;
      ProbeOutcome po;
      if (o.refused) {
        po.run.requested_bytes = ((p.bytes + p.block_size - 1) / p.block_size) * p.block_size;
        po.run.direction = p.direction;
        po.run.refused = o.refused->message;
        po.after = std::move(*facts->second);
        out.emplace(h, std::move(po));
        continue;
      }
      const double t_before = o.baseline ? o.baseline_seconds : 0.0;
      po.samples.baseline_start = snapshot(o.baseline ? *o.baseline : o.before, ifs, 0.0);
      po.samples.baseline_end = snapshot(o.before, ifs, t_before);
      po.samples.before_probe = po.samples.baseline_end;
      po.samples.after_probe = snapshot(o.after, ifs, t_before + o.window_seconds);
      po.connections_before = o.before.nfs_connections;
      po.connections_after = o.after.nfs_connections;
      po.run.requested_bytes = ((p.bytes + p.block_size - 1) / p.block_size) * p.block_size;
      po.run.bytes = o.dd ? o.dd->bytes : (o.probe_rc == 0 ? po.run.requested_bytes : 0);
      po.run.direction = p.direction;
      po.run.wall_time = std::chrono::nanoseconds(static_cast<std::int64_t>(o.probe_seconds * 1e9));
      if (o.probe_rc != 0) {
        if (auto why = guest::dd_open_failure(o.probe_stderr)) {
          po.run.open_error = *why;
          po.run.file_existed = guest::dd_output_existed(o.probe_stderr);
        } else {
          const auto line = guest::dd_error_line(o.probe_stderr);
          po.run.error = (line.empty() ? "dd exited with status " + std::to_string(o.probe_rc) : line);
        }
      }
      po.commit = o.commit;
      po.after = std::move(*facts->second);
      out.emplace(h, std::move(po));
    }
    return out;
  }

  PerHost<guest::GuestFacts> wait_reachable(std::span<const std::string> hosts, std::chrono::seconds timeout) override {
    auto& sleeper = o_.sleeper ? *o_.sleeper : timing::real_sleeper();
    const auto deadline = sleeper.now() + timeout;
    std::vector<std::string> waiting(hosts.begin(), hosts.end());
    PerHost<guest::GuestFacts> out;
    while (!waiting.empty()) {
      auto facts = gather_facts(waiting);
      std::vector<std::string> still;
      for (const auto& h : waiting) {
        auto it = facts.find(h);
        if (it != facts.end() && it->second) {
          out.emplace(h, std::move(it->second));
        } else if (sleeper.now() >= deadline) {
          out.emplace(h, std::unexpected(GuestFailure{
                             GuestFailure::Kind::timeout,
                             Error{"did not answer over SSH within " + std::to_string(timeout.count()) + " s", h,
                                   "check the guest's console"}}));
        } else {
          still.push_back(h);
        }
      }
      waiting = std::move(still);
      if (!waiting.empty()) sleeper.sleep(std::chrono::seconds(3));
    }
    return out;
  }

 private:
  Result<PlaybookRun> run_phase(const std::string& phase, Result<Playbook> book, std::span<const std::string>) {
    if (!book) return std::unexpected(book.error());
    RunRequest request;
    request.phase = phase;
    request.playbook = std::move(*book);
    request.inventories = o_.inventories;
    request.forks = o_.forks;
    request.timeout = o_.run_timeout;
    return runner_->run(request);
  }

  template <class T>
  static PerHost<T> all_failed(std::span<const std::string> hosts, const Error& e) {
    PerHost<T> out;
    for (const auto& h : hosts) out.emplace(h, std::unexpected(GuestFailure{GuestFailure::Kind::failed, e}));
    return out;
  }

  // One script task whose exit status `untouched_exit` says that it failed before changing anything.
  PerHost<void> simple(const std::string& phase, Result<Playbook> book, const std::vector<std::string>& hosts,
                       int untouched_exit) {
    PerHost<void> out;
    if (hosts.empty()) return out;
    auto run = run_phase(phase, std::move(book), hosts);
    if (!run) return all_failed<void>(hosts, run.error());
    for (const auto& h : hosts) {
      if (succeeded(*run, h)) {
        out.emplace(h, GuestResult<void>{});
        continue;
      }
      auto failure = failure_of(*run, h, o_.playbook.become.has_value());
      const auto* report = run->host(h);
      const auto* task = report != nullptr && report->outcome == HostOutcome::failed ? report->failure() : nullptr;
      const auto* rc = task != nullptr ? task->result.if_contains("rc") : nullptr;
      if (rc != nullptr && rc->is_int64() && rc->as_int64() == untouched_exit)
        failure.kind = GuestFailure::Kind::untouched;
      out.emplace(h, std::unexpected(std::move(failure)));
    }
    return out;
  }

  // apply and rollback: one script task each, whose stages say what a failure touched.
  PerHost<void> change(ChangePhase phase, Result<Playbook> book, const std::vector<std::string>& hosts) {
    const bool apply = phase == ChangePhase::apply;
    PerHost<void> out;
    if (hosts.empty()) return out;
    auto run = run_phase(apply ? "apply" : "rollback", std::move(book), hosts);
    if (!run) return all_failed<void>(hosts, run.error());
    const bool become = o_.playbook.become.has_value();
    for (const auto& h : hosts) {
      const auto* report = run->host(h);
      const bool failed = report != nullptr && report->outcome == HostOutcome::failed;
      if (!failed && !succeeded(*run, h)) {  // unreachable, timed out, not run
        out.emplace(h, std::unexpected(failure_of(*run, h, become)));
        continue;
      }
      auto outcome = change_outcome_from(*report, apply ? task::apply : task::rollback);
      if (!outcome) {
        // Unreadable output of a script that may have written: not "untouched".
        out.emplace(h, std::unexpected(GuestFailure{GuestFailure::Kind::failed, outcome.error()}));
      } else if (failed) {
        out.emplace(h, std::unexpected(change_failure(*outcome, h, phase, become)));
      } else {
        out.emplace(h, GuestResult<void>{});
      }
    }
    return out;
  }

  std::unique_ptr<PlaybookRunner> runner_;
  GuestPortOptions o_;
};

}  // namespace

std::unique_ptr<guest::GuestPort> make_guest_port(std::unique_ptr<PlaybookRunner> runner, GuestPortOptions options) {
  return std::make_unique<AnsibleGuestPort>(std::move(runner), std::move(options));
}

}  // namespace pw::ansible
