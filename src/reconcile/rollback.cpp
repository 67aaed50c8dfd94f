// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/rollback.hpp"

#include <algorithm>
#include <array>
#include <ranges>

#include "guest/interfaces.hpp"
#include "guest/sha256.hpp"
#include "plan/guest_requests.hpp"
#include "plan/guest_writes.hpp"
#include "proxmox/net_device.hpp"
#include "reconcile/host_waves.hpp"

namespace pw::reconcile {
namespace {

using Todo = std::vector<std::pair<PolicyRun*, std::size_t>>;

// Whether the restored state has a guest side to read: an undone fstab or channels step. A NIC
// revert (and the restart it needed) is checked in Proxmox's config alone.
bool undid_guest_step(const PolicyRun& run) {
  return run.touched_any(plan::StepKind::change_fstab) || run.touched_any(plan::StepKind::set_channels) ||
         run.touched_any(plan::StepKind::move_transport);
}

Status outcome(const guest::PerHost<void>& results, const std::string& host) {
  auto it = results.find(host);
  if (it == results.end()) return fail("no result");
  if (!it->second) return fail(describe(it->second.error()));
  return {};
}

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& run : words) out += (out.empty() ? "" : ", ") + run;
  return out;
}

}  // namespace

void Rollback::run(const std::vector<PolicyRun*>& batch) {
  ctx_.progress(Activity::rollback, batch.size() == 1 ? batch.front()->policy() : "",
                batch.size() == 1 ? "rolling back" : "rolling back " + std::to_string(batch.size()) + " policies");
  for (auto* run : batch) run->rollback_begin();
  // Inverses run kind by kind across guests, in reverse phase order.
  for (const auto kind : plan::kPhaseOrder | std::views::reverse) {
    Todo todo;
    for (auto* run : batch) {
      for (auto it = run->touched().rbegin(); it != run->touched().rend(); ++it) {
        if (run->step(*it).kind() == kind) todo.emplace_back(run, *it);
      }
    }
    if (todo.empty()) continue;
    switch (kind) {
      case plan::StepKind::change_fstab:
        undo_fstab(todo);
        break;
      case plan::StepKind::set_channels:
        undo_channels(todo);
        break;
      case plan::StepKind::move_transport:
        undo_transport(todo);
        break;
      case plan::StepKind::set_nic:
        undo_nic(todo);
        break;
      case plan::StepKind::restart_vm:  // no inverse of its own: reverting the NIC restarts again when it must
      case plan::StepKind::prove_path:
        break;  // a proof changes nothing
    }
  }
  // The restored state of every guest in one facts run, never one per guest; none where the
  // guest's answer after the last restart already says it.
  std::vector<std::string> hosts;
  for (auto* run : batch) {
    if (run->rollback_ok() && checks_restored_state(run->plan()) && undid_guest_step(*run) &&
        !after_restart_.contains(run->host()))
      hosts.push_back(run->host());
  }
  guest::PerHost<guest::GuestFacts> restored;
  if (!hosts.empty()) restored = ctx_.deps.guests.gather_facts(hosts);
  for (auto& [host, facts] : after_restart_) restored.emplace(host, std::move(facts));
  after_restart_.clear();
  for (auto* run : batch) {
    if (run->rollback_ok() && checks_restored_state(run->plan())) check_restored(*run, restored);
    run->rollback_done();
  }
}

// One write per guest made the fstab changes of all its policies (plan/guest_writes.hpp); its
// undo is one too. When every writer is undone, the backup goes back (byte-identical to before
// the run). When some stay, only the undone writers' entries are put back, by compare-and-swap on
// what was written, and their mounts re-made; the kept writers' entries and mounts stay.
void Rollback::undo_fstab(const Todo& todo) {
  for (auto& [run, idx] : todo) run->undo_begin(idx);
  auto written_of = [](const std::pair<PolicyRun*, std::size_t>& t) -> const plan::ChangeFstab& {
    return std::get<plan::ChangeFstab>(t.first->step(t.second).action);
  };
  // One group per write: its guest and the content it wrote.
  const auto writes = grouped(todo, [&](const auto& t) {
    return std::pair{written_of(t).host, written_of(t).new_sha256};
  });
  std::vector<guest::FstabRestore> restores;
  std::vector<guest::FstabChange> partial;
  std::vector<Status> refused(writes.size());
  std::vector<bool> alone(writes.size(), false);  // some writers stay: their entries kept
  for (std::size_t i = 0; i < writes.size(); ++i) {
    const auto& undone = writes[i];
    const auto& written = written_of(undone.front());
    std::vector<std::vector<guest::MountActivation>> inverses;
    std::vector<std::string> names, mount_points;
    for (const auto& t : undone) {
      inverses.push_back(written_of(t).inverse_activations);
      names.push_back(t.first->policy());
      for (auto& e : written_of(t).entries()) mount_points.push_back(std::move(e));
    }
    alone[i] = written.shared() && !std::all_of(written.writers.begin(), written.writers.end(), [&](const auto& n) {
                 return std::find(names.begin(), names.end(), n) != names.end();
               });
    if (!alone[i]) {
      auto r = plan::fstab_restore(written);
      r.activations = plan::merged_activations(inverses);
      restores.push_back(std::move(r));
      for (const auto& t : undone) fstab_expected_[t.first] = {written.old_sha256, false};
      continue;
    }
    auto after = plan::content_after_undo(written, mount_points);
    if (!after) {
      refused[i] =
          fail("cannot put back the entries of " + join_words(mount_points) + ": " + after.error().to_string());
      continue;
    }
    for (const auto& t : undone) fstab_expected_[t.first] = {guest::sha256_hex(*after), true};
    partial.push_back({written.host, written.new_sha256, *after, written.backup_path + ".undo",
                       plan::undo_activations(inverses, *after, mount_points), written.new_content});
  }
  guest::PerHost<void> restored, put_back;
  if (!restores.empty()) restored = ctx_.deps.guests.restore_fstab(restores);
  if (!partial.empty()) put_back = ctx_.deps.guests.apply_fstab(partial);
  for (std::size_t i = 0; i < writes.size(); ++i) {
    Status end = refused[i];
    if (end) {
      end = outcome(alone[i] ? put_back : restored, written_of(writes[i].front()).host);
      if (!end && alone[i]) end = fail("putting back its entry while the other policies' stay: " + end.error().what);
    }
    for (const auto& [run, idx] : writes[i]) run->undo_end(idx, end);
  }
}

// Only where the count moved: the requests are restores (guest::ChannelsRequest::restore), which
// the guest skips where the count already is the old one (a failed `ethtool -L` changed nothing)
// or the NIC has no combined channels; no facts run first. Two NICs of one guest: two waves.
void Rollback::undo_channels(const Todo& todo) {
  for (const auto& wave : host_waves(todo, [](const auto& t) -> const std::string& { return t.first->host(); })) {
    std::vector<guest::ChannelsRequest> requests;
    for (auto& [run, idx] : wave) {
      run->undo_begin(idx);
      requests.push_back(plan::channels_restore(std::get<plan::SetChannels>(run->step(idx).action)));
    }
    auto results = ctx_.deps.guests.set_channels(requests);
    for (auto& [run, idx] : wave) run->undo_end(idx, outcome(results, run->host()));
  }
}

// The client moved back where it was: restores (guest::TransportMove::restore), which the guest
// skips where the mount is gone or its client is no longer at the moved-to address. Before the
// fstab's undo (reverse phase order), so a mount the fstab's undo takes down leaves a client that
// is back where the NAS's other mounts expect it.
void Rollback::undo_transport(const Todo& todo) {
  for (const auto& wave : host_waves(todo, [](const auto& t) -> const std::string& { return t.first->host(); })) {
    std::vector<guest::TransportMove> requests;
    for (auto& [run, idx] : wave) {
      run->undo_begin(idx);
      requests.push_back(plan::transport_restore(std::get<plan::MoveTransport>(run->step(idx).action)));
    }
    auto results = ctx_.deps.guests.move_transport(requests);
    for (auto& [run, idx] : wave) run->undo_end(idx, outcome(results, run->host()));
  }
}

// Per VM: every NIC of it written back, then at most one restart, when an old value waits for
// one and the run had restarted the VM to apply its own (two policies on two NICs of one VM
// restart it once, as they did going forward).
void Rollback::undo_nic(const Todo& todo) {
  auto vm_of = [](const std::pair<PolicyRun*, std::size_t>& t) {
    return std::get<plan::SetNic>(t.first->step(t.second).action).vm;
  };
  for (const auto& group : grouped(todo, vm_of)) {
    bool restarted = false;
    std::vector<Status> ends;
    std::vector<std::size_t> waiting;  // reverted, but only pending until a restart
    for (std::size_t k = 0; k < group.size(); ++k) {
      auto [run, idx] = group[k];
      run->undo_begin(idx);
      after_restart_.erase(run->host());  // this revert may change the guest (a hot-plug) after that answer
      restarted = restarted || run->touched_any(plan::StepKind::restart_vm);
      auto r = revert_nic(std::get<plan::SetNic>(run->step(idx).action));
      ends.push_back(r ? Status{} : Status{std::unexpected(r.error())});
      if (r && *r) waiting.push_back(k);
    }
    if (!waiting.empty()) {
      const auto& first =
          std::get<plan::SetNic>(group[waiting.front()].first->step(group[waiting.front()].second).action);
      // Without a restart of the run's own, the old value waits for the operator's next one.
      const Status applied = restarted ? restart_for_old_values(first.vm, group[waiting.front()].first->host())
                                       : Status{fail("only pending until the next restart")};
      for (auto k : waiting) {
        if (applied) continue;
        const auto& device = std::get<plan::SetNic>(group[k].first->step(group[k].second).action).device;
        ends[k] = fail(device + (restarted ? ": " + applied.error().what
                                           : " is back to its old value but only pending until the next restart"));
      }
    }
    for (std::size_t k = 0; k < group.size(); ++k) group[k].first->undo_end(group[k].second, ends[k]);
  }
}

Status Rollback::restart_for_old_values(const proxmox::VmRef& vm, const std::string& host) {
  auto rb = ctx_.deps.api.reboot_and_wait(vm, ctx_.options.task_wait);
  if (!rb) return fail("restart to apply the old values: " + describe(rb.error()));
  const std::array<std::string, 1> hosts{host};
  auto back = ctx_.deps.guests.wait_reachable(hosts, ctx_.options.guest_return_timeout);
  auto it = back.find(host);
  if (it == back.end() || !it->second) return fail("guest " + host + " did not come back after the restart");
  after_restart_.insert_or_assign(host, std::move(*it->second));
  return {};
}

Result<bool> Rollback::revert_nic(const plan::SetNic& s) {
  // Our own write changed the digest; re-read, check the value is still ours, write it back.
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto pending = ctx_.deps.api.read_pending(s.vm);
    if (!pending) return fail(describe(pending.error()));
    const auto* item = pending->find(s.device);
    const std::string in_effect = item && item->value ? *item->value : "";
    const std::optional<std::string> waiting = item ? item->pending : std::nullopt;
    auto same = [](const std::string& a, const std::string& b) {
      auto pa = proxmox::NetDeviceSpec::parse(a);
      auto pb = proxmox::NetDeviceSpec::parse(b);
      return pa && pb ? pa->canonical() == pb->canonical() : a == b;
    };
    if (same(in_effect, s.from) && !waiting) return false;  // nothing of ours is left
    const bool ours = same(in_effect, s.to) || (waiting && same(*waiting, s.to));
    if (!ours) {
      return fail(s.device + " was changed by someone else since (now '" + in_effect +
                  (waiting ? "', pending '" + *waiting : std::string()) + "'); not overwriting it");
    }
    auto spec = proxmox::NetDeviceSpec::parse(s.from);
    if (!spec) return fail(spec.error().to_string());
    auto r = ctx_.deps.api.update_nic(s.vm, s.device, *spec, pending->digest);
    if (!r) {
      if (r.error().kind == proxmox::ApiErrorKind::digest_conflict) continue;
      return fail(describe(r.error()));
    }
    // The old value may now wait for a restart (hot-plug off): the forward change needed one too.
    auto after = ctx_.deps.api.read_pending(s.vm);
    if (!after) return fail(describe(after.error()));
    const auto* again = after->find(s.device);
    return again != nullptr && again->pending.has_value();
  }
  return fail(s.device + ": the config kept changing while rolling back (digest conflicts)");
}

// Reads the restored state back, step by step. Long because each step type has its own check
// (fstab hash and mounts, channels, the Proxmox config), each said in the report.
void Rollback::check_restored(PolicyRun& run, const guest::PerHost<guest::GuestFacts>& facts) {
  const guest::GuestFacts* guest_side = nullptr;  // read only where a guest-side step was undone
  if (undid_guest_step(run)) {
    auto it = facts.find(run.host());
    if (it == facts.end() || !it->second) {
      run.not_restored("could not read the guest back after the rollback");
      return;
    }
    guest_side = &*it->second;
  }
  auto problem = [&](const std::string& what) { run.not_restored("not restored: " + what); };
  for (auto idx : run.touched()) {
    const auto& step = run.step(idx);
    if (const auto* fs = std::get_if<plan::ChangeFstab>(&step.action)) {
      const auto& f = *guest_side;
      const auto hash = f.fstab_sha256.empty() ? guest::sha256_hex(f.fstab_content) : f.fstab_sha256;
      const auto expected = fstab_expected_.find(&run);
      if (expected != fstab_expected_.end() && expected->second.partial) {
        if (hash == expected->second.sha256) {
          run.restored("/etc/fstab has the entry of " + fs->mount_point +
                       " as before and the other policies' entries as written (sha256 " + hash.substr(0, 12) + ")");
        } else {
          problem("/etc/fstab is not what putting back the entry of " + fs->mount_point + " wrote");
        }
      } else if (hash == fs->old_sha256) {
        run.restored("/etc/fstab is byte-identical to before (sha256 " + hash.substr(0, 12) + ")");
      } else {
        problem("/etc/fstab differs from before the run");
      }
      for (const auto& a : fs->inverse_activations) {
        const guest::MountInfo* m = nullptr;
        for (const auto& mi : f.mounts) {
          if (mi.mount_point == a.path) m = &mi;
        }
        if (!a.mount) {
          if (m == nullptr)
            run.restored(a.path + " is unmounted again, as before");
          else
            problem(a.path + " is still mounted");
        } else if (m == nullptr) {
          problem(a.path + " is not mounted again");
        } else {
          run.restored(a.path + " is mounted again from " + m->device + " (vers=" + m->nfs_version() +
                       ", addr=" + m->server_address() + ")");
        }
      }
    } else if (const auto* mt = std::get_if<plan::MoveTransport>(&step.action)) {
      // The NAS's mounts made with the old address ride it again.
      std::vector<std::string> astray;
      for (const auto& m : guest_side->mounts) {
        if (m.is_nfs() && m.device_host() == mt->from && m.server_address() == mt->to) astray.push_back(m.mount_point);
      }
      if (astray.empty()) {
        run.restored("the NFS client of " + mt->from + " is back at " + mt->from);
      } else {
        problem(join_words(astray) + " still ride" + (astray.size() == 1 ? "s " : " ") + mt->to + ", not " + mt->from);
      }
    } else if (const auto* ch = std::get_if<plan::SetChannels>(&step.action)) {
      const auto* i = guest::find_nic_interface(guest_side->interfaces, ch->mac);
      if (i != nullptr && i->combined_current() == ch->from) {
        run.restored(i->name + " runs " + std::to_string(ch->from) + " channels again");
      } else if (i != nullptr && i->combined_current()) {
        problem(i->name + " runs " + std::to_string(*i->combined_current()) + " channels, not " +
                std::to_string(ch->from));
      }
    } else if (const auto* nic = std::get_if<plan::SetNic>(&step.action)) {
      auto pending = ctx_.deps.api.read_pending(nic->vm);
      if (!pending) {
        problem("cannot read VM " + std::to_string(nic->vm.vmid) + " back: " + describe(pending.error()));
        continue;
      }
      const auto* item = pending->find(nic->device);
      auto now = item && item->value ? proxmox::NetDeviceSpec::parse(*item->value)
                                     : Result<proxmox::NetDeviceSpec>(std::unexpected(Error{}));
      auto was = proxmox::NetDeviceSpec::parse(nic->from);
      if (now && was && now->canonical() == was->canonical() && !(item && item->pending)) {
        run.restored("Proxmox " + nic->device + " is '" + nic->from + "' again");
      } else {
        problem("Proxmox " + nic->device + " is not back to '" + nic->from + "'");
      }
    }
  }
}

}  // namespace pw::reconcile
