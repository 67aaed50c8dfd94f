// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where a rollback is done. Every step a run began is undone, in reverse phase order and kind by
// kind across guests (one playbook per kind for all of them); each inverse first checks what is
// really there, so undoing a step that failed half-way, or one already undone, is safe. Then the
// restored state is read back and checked (unless the policy opted out): from the guest only where
// a guest-side step was undone, from the facts that ended the wait after a restart when the VM
// was restarted last, and otherwise in one facts run for every such guest.
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reconcile/context.hpp"
#include "reconcile/policy_run.hpp"

namespace pw::reconcile {

class Rollback {
 public:
  explicit Rollback(const Context& ctx) : ctx_(ctx) {}

  // Undoes the begun steps of every run in `batch`; rollback_ok says how each ended.
  void run(const std::vector<PolicyRun*>& batch);

 private:
  void undo_fstab(const std::vector<std::pair<PolicyRun*, std::size_t>>& todo);
  void undo_channels(const std::vector<std::pair<PolicyRun*, std::size_t>>& todo);
  void undo_transport(const std::vector<std::pair<PolicyRun*, std::size_t>>& todo);
  void undo_nic(const std::vector<std::pair<PolicyRun*, std::size_t>>& todo);
  // Writes `from` back into the VM's config when the value there is still ours; true when the old
  // value is only pending until a restart (hot-plug off).
  Result<bool> revert_nic(const plan::SetNic& s);
  // One restart of the VM to apply the old values written back; the guest's answer is kept.
  Status restart_for_old_values(const proxmox::VmRef& vm, const std::string& host);
  // After the inverses: is everything as it was before the run?
  void check_restored(PolicyRun& run, const guest::PerHost<guest::GuestFacts>& facts);

  const Context& ctx_;
  // Per host: the facts with which the guest answered after the rollback restarted its VM, while
  // no later undo has touched it (set_nic is the last kind undone).
  std::map<std::string, guest::GuestFacts> after_restart_;
  // Per run whose fstab write was undone: the hash the fstab must have now, and whether other
  // policies' entries were kept in it (else it is the backup: byte-identical to before the run).
  struct FstabExpected {
    std::string sha256;
    bool partial = false;
  };
  std::map<const PolicyRun*, FstabExpected> fstab_expected_;
};

}  // namespace pw::reconcile
