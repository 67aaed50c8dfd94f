// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/step_runner.hpp"

#include <algorithm>
#include <array>

#include "guest/interfaces.hpp"
#include "plan/guest_requests.hpp"
#include "plan/guest_writes.hpp"
#include "proxmox/net_device.hpp"
#include "reconcile/host_waves.hpp"
#include "reconcile/probe_loop.hpp"

namespace pw::reconcile {

void StepRunner::run_phase(plan::StepKind kind, const std::vector<PolicyRun*>& runs) {
  std::vector<PolicyRun*> batch;
  for (auto* run : runs) {
    if (run->at(kind)) batch.push_back(run);
  }
  if (batch.empty()) return;
  switch (kind) {
    case plan::StepKind::set_nic: {
      // One config write per VM: two policies on two NICs of one VM are one write with the digest
      // both were planned from (two writes would have the second refused by the first's digest).
      auto vm_and_digest = [](const PolicyRun* run) {
        const auto& s = run->current_action<plan::SetNic>();
        return std::pair{s.vm, s.digest};
      };
      for (const auto& group : grouped(batch, vm_and_digest)) set_nics(group);
      return;
    }
    case plan::StepKind::restart_vm:
      return restart(batch);
    case plan::StepKind::set_channels:
      return set_channels(batch);
    case plan::StepKind::change_fstab:
      return change_fstab(batch);
    case plan::StepKind::move_transport:
      return move_transport(batch);
    case plan::StepKind::prove_path:
      return ProbeLoop(ctx_).run(batch);
  }
}

// One VM's NIC steps as one config write. Long because the write's gates come in order: the
// restart window, the VM's live state, the new values, then the write and its typed outcome.
void StepRunner::set_nics(const std::vector<PolicyRun*>& group) {
  std::vector<PolicyRun*> begun;
  for (auto* run : group) {
    const auto& s = run->current_action<plan::SetNic>();
    if (s.hotplug) {
      if (auto closed = ctx_.restart_window_refusal(s.restart_window)) {
        run->stop(std::move(*closed));  // before the step began: nothing of it to undo
        continue;
      }
    }
    if (run->begin()) begun.push_back(run);
  }
  if (begun.empty()) return;
  const auto& first = begun.front()->current_action<plan::SetNic>();
  // Planned for a running VM (hot-plug, or pending until the reboot): read its state once more,
  // live, right before the write; a VM stopped (or locked) since is refused like a digest that
  // moved (nothing written) and re-planned.
  if (auto live = ctx_.deps.api.vm_status(first.vm); live && (live->status != "running" || !live->lock.empty())) {
    for (auto* run : begun) {
      run->end(StepEnd::refused(
          "VM " + std::to_string(first.vm.vmid) + " is " + live->status +
              (live->lock.empty() ? "" : ", locked (" + live->lock + ")") + " now (status/current)",
          "VM " + std::to_string(first.vm.vmid) + " changed state since it was observed: re-planned, not written"));
    }
    return;
  }
  proxmox::ConfigChange change;
  change.digest = first.digest;
  std::vector<std::string> devices;
  for (auto* run : begun) {
    const auto& s = run->current_action<plan::SetNic>();
    auto spec = proxmox::NetDeviceSpec::parse(s.to);
    if (!spec) {
      for (auto* x : begun) x->end(StepEnd::failed(spec.error().to_string(), spec.error().to_string()));
      return;
    }
    change.set.emplace_back(s.device, spec->to_string());
    devices.push_back(s.device);
    ctx_.progress(
        Activity::proxmox, run->policy(),
        "setting " + s.device + " of VM " + std::to_string(s.vm.vmid) + (s.hotplug ? " (hot-plug)" : " (pending)"));
  }
  auto r = ctx_.deps.api.update_config(first.vm, change);
  if (r && r->has_value()) {
    auto task = ctx_.deps.api.wait_task(**r, ctx_.options.task_wait);
    if (!task) r = std::unexpected(task.error());
  }
  if (!r) {
    const auto& e = r.error();
    for (auto* run : begun) {
      const auto& s = run->current_action<plan::SetNic>();
      if (e.kind == proxmox::ApiErrorKind::digest_conflict) {
        // Proxmox refused before writing: nothing to undo for this step.
        run->end(StepEnd::refused(describe(e), "Proxmox config of VM " + std::to_string(s.vm.vmid) +
                                                   " changed since it was read (digest mismatch): not overwritten"));
      } else {
        // A failed hot-plug leaves the new value pending: the rollback's inverse clears it.
        run->end(StepEnd::failed(describe(e), "setting " + s.device + ": " + describe(e)));
      }
    }
    return;
  }
  for (auto* run : begun) {
    const auto s = run->current_action<plan::SetNic>();
    run->end(StepEnd::done());
    if (s.hotplug && run->state() == PolicyRun::State::active) wait_for_nic(*run, s);
  }
}

// The NIC was unplugged and plugged again: wait until the guest shows it, found by its MAC.
bool StepRunner::wait_for_nic(PolicyRun& run, const plan::SetNic& s) {
  const auto mac = proxmox::NetDeviceSpec::parse(s.to)->mac().value_or("");
  const auto deadline = ctx_.deps.sleeper.now() + ctx_.options.interface_return_timeout;
  const std::array<std::string, 1> hosts{run.host()};
  ctx_.progress(Activity::proxmox, run.policy(),
                "waiting for " + s.device + " of VM " + std::to_string(s.vm.vmid) + " to come back in " + run.host());
  for (;;) {
    auto facts = ctx_.deps.guests.gather_facts(hosts);
    if (auto it = facts.find(run.host()); it != facts.end() && it->second) {
      const auto* i = guest::find_nic_interface(it->second->interfaces, mac);
      if (i != nullptr && i->operstate != "down") return true;
    }
    if (ctx_.deps.sleeper.now() >= deadline) {
      run.stop(s.device + " did not come back in the guest after the hot-plug within " +
               std::to_string(ctx_.options.interface_return_timeout.count()) + " s");
      return false;
    }
    ctx_.deps.sleeper.sleep(std::chrono::seconds(2));
  }
}

void StepRunner::restart(const std::vector<PolicyRun*>& batch) {
  // One reboot per VM, however many of its policies wait for it (two NICs' queues).
  std::vector<std::string> hosts;
  std::vector<PolicyRun*> restarted;
  std::vector<std::pair<proxmox::VmRef, std::optional<std::string>>> rebooted;  // and why it failed
  for (auto* run : batch) {
    const auto& s = run->current_action<plan::RestartVm>();
    if (auto closed = ctx_.restart_window_refusal(s.restart_window)) {
      run->stop(std::move(*closed));  // the NIC change already pending is undone
      continue;
    }
    if (!run->begin()) continue;
    auto done = std::find_if(rebooted.begin(), rebooted.end(), [&](const auto& r) { return r.first == s.vm; });
    if (done == rebooted.end()) {
      ctx_.progress(Activity::restart, run->policy(),
                    "rebooting VM " + std::to_string(s.vm.vmid) + " through Proxmox, waiting for it to return");
      auto r = ctx_.deps.api.reboot_and_wait(s.vm, ctx_.options.task_wait);
      done =
          rebooted.insert(rebooted.end(), {s.vm, r ? std::nullopt : std::optional<std::string>(describe(r.error()))});
    }
    if (done->second) {
      run->end(StepEnd::failed(*done->second, "rebooting VM " + std::to_string(s.vm.vmid) + ": " + *done->second));
      continue;
    }
    if (std::find(hosts.begin(), hosts.end(), s.host) == hosts.end()) hosts.push_back(s.host);
    restarted.push_back(run);
  }
  if (restarted.empty()) return;
  ctx_.progress(Activity::restart, "", "waiting for " + std::to_string(hosts.size()) + " guest(s) to answer again", 0,
                hosts.size());
  auto back = ctx_.deps.guests.wait_reachable(hosts, ctx_.options.guest_return_timeout);
  for (auto* run : restarted) {
    auto it = back.find(run->host());
    if (it == back.end() || !it->second) {
      const std::string why = it == back.end() ? "no answer" : describe(it->second.error());
      run->end(StepEnd::failed(why, "guest " + run->host() + " did not come back after the restart: " + why));
      continue;
    }
    run->end(StepEnd::done());
  }
}

void StepRunner::set_channels(const std::vector<PolicyRun*>& batch) {
  // Two policies on two NICs of one guest: one request per guest per call, so two waves.
  for (const auto& wave : host_waves(batch, [](const PolicyRun* run) -> const std::string& { return run->host(); })) {
    std::vector<guest::ChannelsRequest> requests;
    std::vector<PolicyRun*> started;
    for (auto* run : wave) {
      if (!run->begin()) continue;
      requests.push_back(plan::channels_change(run->current_action<plan::SetChannels>()));
      started.push_back(run);
    }
    if (started.empty()) continue;
    auto results = ctx_.deps.guests.set_channels(requests);
    for (auto* run : started) {
      auto it = results.find(run->host());
      if (it == results.end() || !it->second) {
        const std::string why = it == results.end() ? "no result" : describe(it->second.error());
        if (it != results.end() && it->second.error().kind == guest::GuestFailure::Kind::untouched) {
          // The NIC has no combined channels: nothing was set, so nothing of this step is undone.
          run->end(StepEnd::untouched(why, "setting channels: " + why));
        } else {
          run->end(StepEnd::failed(why, "setting channels: " + why));
        }
        continue;
      }
      run->end(StepEnd::done());
    }
  }
}

void StepRunner::move_transport(const std::vector<PolicyRun*>& batch) {
  // Two policies moving clients on one guest: one request per guest per call, so two waves.
  for (const auto& wave : host_waves(batch, [](const PolicyRun* run) -> const std::string& { return run->host(); })) {
    std::vector<guest::TransportMove> requests;
    std::vector<PolicyRun*> started;
    for (auto* run : wave) {
      if (!run->begin()) continue;
      const auto& s = run->current_action<plan::MoveTransport>();
      ctx_.progress(Activity::guests, run->policy(),
                    "moving the NFS client of " + s.mount_point + " from " + s.from + " to " + s.to);
      requests.push_back(plan::transport_move(s));
      started.push_back(run);
    }
    if (started.empty()) continue;
    auto results = ctx_.deps.guests.move_transport(requests);
    for (auto* run : started) {
      auto it = results.find(run->host());
      if (it != results.end() && it->second) {
        run->end(StepEnd::done());
        continue;
      }
      const std::string why = it == results.end() ? "no result" : describe(it->second.error());
      if (it != results.end() && it->second.error().kind == guest::GuestFailure::Kind::untouched) {
        run->end(StepEnd::untouched(why, "moving the NFS transport: " + why));
      } else {
        run->end(StepEnd::failed(why, "moving the NFS transport: " + why));
      }
    }
  }
}

// The policies of one guest make one fstab write (plan/guest_writes.hpp), narrowed to those that
// reached this phase; each run's journal records the write as it is made, so a rollback or a
// recover puts back exactly its own entry in what was written.
std::optional<guest::FstabChange> StepRunner::begin_write(const std::vector<PolicyRun*>& runs) {
  std::vector<std::string> writers, mount_points;
  for (auto* run : runs) {
    writers.push_back(run->policy());
    for (auto& e : run->current_action<plan::ChangeFstab>().entries()) mount_points.push_back(std::move(e));
  }
  const auto& planned = runs.front()->current_action<plan::ChangeFstab>();
  auto write = plan::narrowed_write(planned, writers, mount_points);
  if (!write) {
    for (auto* run : runs) run->stop("composing the fstab write: " + write.error().to_string());
    return std::nullopt;
  }
  std::vector<PolicyRun*> begun;
  std::vector<std::vector<guest::MountActivation>> lists;
  for (auto* run : runs) {
    plan::Step step = run->current_step();
    auto& c = std::get<plan::ChangeFstab>(step.action);
    c.new_content = write->new_content;
    c.new_sha256 = write->new_sha256;
    c.writers = write->writers;
    c.backup_path = write->backup_path;
    lists.push_back(c.activations);
    if (run->begin_as(std::move(step))) begun.push_back(run);
  }
  if (begun.size() != runs.size()) {
    // One writer's start is not on record: nothing is written for any of them (its entry would be
    // in the file with no journal saying so).
    for (auto* run : begun) {
      run->end(StepEnd::untouched(
          "not written: the journal of another policy of " + run->host() + " could not record its start",
          "applying the fstab change: nothing written (another policy's journal failed)"));
    }
    return std::nullopt;
  }
  auto change = plan::fstab_change(*write);
  change.activations = plan::merged_activations(lists);
  return change;
}

void StepRunner::change_fstab(const std::vector<PolicyRun*>& batch) {
  std::vector<guest::FstabChange> changes;
  std::vector<PolicyRun*> started;
  for (const auto& runs : grouped(batch, [](const PolicyRun* run) { return run->host(); })) {
    auto change = begin_write(runs);
    if (!change) continue;
    changes.push_back(std::move(*change));
    started.insert(started.end(), runs.begin(), runs.end());
  }
  if (started.empty()) return;
  ctx_.progress(
      Activity::guests, "",
      "writing the fstab of " + std::to_string(changes.size()) + " guest(s) and re-making the mounts it changes", 0,
      changes.size());
  auto results = ctx_.deps.guests.apply_fstab(changes);
  for (auto* run : started) {
    auto it = results.find(run->host());
    if (it == results.end() || !it->second) {
      const std::string why = it == results.end() ? "no result" : describe(it->second.error());
      if (it != results.end() && it->second.error().kind == guest::GuestFailure::Kind::conflict) {
        // The compare-and-swap refused before writing anything: nothing to undo for this step.
        run->end(
            StepEnd::refused(why, "the fstab of " + run->host() + " changed since it was observed: not overwritten"));
      } else if (it != results.end() && it->second.error().kind == guest::GuestFailure::Kind::untouched) {
        run->end(
            StepEnd::untouched(why, "applying the fstab change: " + why + " (failed before anything was changed)"));
      } else {
        run->end(StepEnd::failed(why, "applying the fstab change: " + why));
      }
      continue;
    }
    run->end(StepEnd::done());
  }
}

}  // namespace pw::reconcile
