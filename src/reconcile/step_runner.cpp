#include "reconcile/step_runner.hpp"

#include <array>

#include "guest/interfaces.hpp"
#include "plan/guest_requests.hpp"
#include "proxmox/net_device.hpp"
#include "reconcile/probe_loop.hpp"

namespace pw::reconcile {
using report::Verdict;

void StepRunner::run_phase(plan::StepKind kind, const std::vector<PolicyRun*>& runs) {
  std::vector<PolicyRun*> batch;
  for (auto* w : runs) {
    if (w->at(kind)) batch.push_back(w);
  }
  if (batch.empty()) return;
  switch (kind) {
    case plan::StepKind::set_nic:
      for (auto* w : batch) set_nic(*w);  // one VM config at a time: each has its own digest
      return;
    case plan::StepKind::restart_vm: return restart(batch);
    case plan::StepKind::set_channels: return set_channels(batch);
    case plan::StepKind::change_fstab: return change_fstab(batch);
    case plan::StepKind::verify: return ProbeLoop(ctx_).run(batch);
  }
}

void StepRunner::set_nic(PolicyRun& w) {
  const auto& step = *w.current();
  const auto& s = std::get<plan::SetNic>(step.action);
  if (s.hotplug) {
    if (auto refusal = ctx_.restart_window_refusal(s.restart_window); !refusal.empty()) {
      w.fail(Verdict::precondition_failed, refusal);  // before the step began: nothing of it to undo
      return;
    }
  }
  if (!w.begin(step)) return;
  // Planned for a running VM (hot-plug, or pending until the reboot): read its state once more,
  // live, right before the write; a VM stopped (or locked) since is refused like a digest that
  // moved (nothing written) and re-planned.
  if (auto live = ctx_.d.api.vm_status(s.vm); live && (live->status != "running" || !live->lock.empty())) {
    w.refused("VM " + std::to_string(s.vm.vmid) + " is " + live->status +
                  (live->lock.empty() ? "" : ", locked (" + live->lock + ")") + " now (status/current)",
              "VM " + std::to_string(s.vm.vmid) + " changed state since it was observed: re-planned, not written");
    return;
  }
  auto spec = proxmox::NetDeviceSpec::parse(s.to);
  if (!spec) {
    w.failed_step(spec.error().to_string());
    w.fail(Verdict::precondition_failed, spec.error().to_string());
    return;
  }
  ctx_.progress(w.plan->policy, "proxmox", "setting " + s.device + " " + (s.hotplug ? "(hot-plug)" : "(pending)"));
  auto r = ctx_.d.api.update_nic(s.vm, s.device, *spec, s.digest);
  if (r && r->has_value()) {
    auto task = ctx_.d.api.wait_task(**r, ctx_.o.task_wait);
    if (!task) r = std::unexpected(task.error());
  }
  if (!r) {
    const auto& e = r.error();
    if (e.kind == proxmox::ApiErrorKind::digest_conflict) {
      // Proxmox refused before writing: nothing to undo for this step.
      w.refused(describe(e), "Proxmox config of VM " + std::to_string(s.vm.vmid) +
                                 " changed since it was read (digest mismatch): not overwritten");
    } else {
      w.failed_step(describe(e));
      // A failed hot-plug leaves the new value pending: the rollback's inverse clears it.
      w.fail(Verdict::precondition_failed, "setting " + s.device + ": " + describe(e));
    }
    return;
  }
  w.done();
  if (s.hotplug && w.state == PolicyRun::State::active) wait_for_nic(w, s);
}

// The NIC was unplugged and plugged again: wait until the guest shows it, found by its MAC.
bool StepRunner::wait_for_nic(PolicyRun& w, const plan::SetNic& s) {
  const auto mac = proxmox::NetDeviceSpec::parse(s.to)->mac().value_or("");
  const auto deadline = ctx_.d.sleeper.now() + ctx_.o.interface_return_timeout;
  const std::array<std::string, 1> hosts{w.host()};
  for (;;) {
    auto facts = ctx_.d.guests.gather_facts(hosts);
    if (auto it = facts.find(w.host()); it != facts.end() && it->second) {
      const auto* i = guest::find_nic_interface(it->second->interfaces, mac);
      if (i != nullptr && i->operstate != "down") return true;
    }
    if (ctx_.d.sleeper.now() >= deadline) {
      w.fail(Verdict::precondition_failed, s.device + " did not come back in the guest after the hot-plug within " +
                                               std::to_string(ctx_.o.interface_return_timeout.count()) + " s");
      return false;
    }
    ctx_.d.sleeper.sleep(std::chrono::seconds(2));
  }
}

void StepRunner::restart(const std::vector<PolicyRun*>& batch) {
  std::vector<std::string> hosts;
  std::vector<PolicyRun*> restarted;
  for (auto* w : batch) {
    const auto& step = *w->current();
    const auto& s = std::get<plan::RestartVm>(step.action);
    if (auto refusal = ctx_.restart_window_refusal(s.restart_window); !refusal.empty()) {
      w->fail(Verdict::precondition_failed, refusal);  // the NIC change already pending is undone
      continue;
    }
    if (!w->begin(step)) continue;
    ctx_.progress(w->plan->policy, "restart", "rebooting VM " + std::to_string(s.vm.vmid) + " through Proxmox");
    auto r = ctx_.d.api.reboot_and_wait(s.vm, ctx_.o.task_wait);
    if (!r) {
      w->failed_step(describe(r.error()));
      w->fail(Verdict::precondition_failed, "rebooting VM " + std::to_string(s.vm.vmid) + ": " + describe(r.error()));
      continue;
    }
    hosts.push_back(s.host);
    restarted.push_back(w);
  }
  if (restarted.empty()) return;
  auto back = ctx_.d.guests.wait_reachable(hosts, ctx_.o.guest_return_timeout);
  for (auto* w : restarted) {
    auto it = back.find(w->host());
    if (it == back.end() || !it->second) {
      const std::string why = it == back.end() ? "no answer" : describe(it->second.error());
      w->failed_step(why);
      w->fail(Verdict::precondition_failed, "guest " + w->host() + " did not come back after the restart: " + why);
      continue;
    }
    w->done();
  }
}

void StepRunner::set_channels(const std::vector<PolicyRun*>& batch) {
  std::vector<guest::ChannelsRequest> requests;
  std::vector<PolicyRun*> started;
  for (auto* w : batch) {
    const auto& step = *w->current();
    if (!w->begin(step)) continue;
    requests.push_back(plan::channels_change(std::get<plan::SetChannels>(step.action)));
    started.push_back(w);
  }
  if (started.empty()) return;
  auto results = ctx_.d.guests.set_channels(requests);
  for (auto* w : started) {
    auto it = results.find(w->host());
    if (it == results.end() || !it->second) {
      const std::string why = it == results.end() ? "no result" : describe(it->second.error());
      if (it != results.end() && it->second.error().kind == guest::GuestFailure::Kind::untouched) {
        // The NIC has no combined channels: nothing was set, so nothing of this step is undone.
        w->failed_untouched(why, "setting channels: " + why);
      } else {
        w->failed_step(why);
        w->fail(Verdict::precondition_failed, "setting channels: " + why);
      }
      continue;
    }
    w->done();
  }
}

void StepRunner::change_fstab(const std::vector<PolicyRun*>& batch) {
  std::vector<guest::FstabChange> changes;
  std::vector<PolicyRun*> started;
  for (auto* w : batch) {
    const auto& step = *w->current();
    if (!w->begin(step)) continue;
    changes.push_back(plan::fstab_change(std::get<plan::ChangeFstab>(step.action)));
    started.push_back(w);
  }
  if (started.empty()) return;
  ctx_.progress("", "guest", "writing fstab and re-making mounts on " + std::to_string(changes.size()) + " guest(s)");
  auto results = ctx_.d.guests.apply_fstab(changes);
  for (auto* w : started) {
    auto it = results.find(w->host());
    if (it == results.end() || !it->second) {
      const std::string why = it == results.end() ? "no result" : describe(it->second.error());
      if (it != results.end() && it->second.error().kind == guest::GuestFailure::Kind::conflict) {
        // The compare-and-swap refused before writing anything: nothing to undo for this step.
        w->refused(why, "the fstab of " + w->host() + " changed since it was observed: not overwritten");
      } else if (it != results.end() && it->second.error().kind == guest::GuestFailure::Kind::untouched) {
        w->failed_untouched(why, "applying the fstab change: " + why + " (failed before anything was changed)");
      } else {
        w->failed_step(why);
        w->fail(Verdict::precondition_failed, "applying the fstab change: " + why);
      }
      continue;
    }
    w->done();
  }
}

}  // namespace pw::reconcile
