// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The runs a new run must not cross. A journal left unfinished (its run was killed, or its
// rollback failed) names a guest and a VM that `pathwarden recover` has yet to finish or undo,
// from the journal's own record of what was there: the fstab backup, the fstab hashes and
// Proxmox digests its inverses compare before they write. A run that changed that guest or VM
// first would make the record wrong (recover would refuse, or undo the wrong thing), so a change
// run changes nothing on them until recover has finished: their policies are held at
// precondition-failed, saying which journal holds them. A check only says so, in notes.
//
// Read once per pass, before the pass writes a journal of its own: its own journals never hold
// it. A journal left unfinished by an earlier round of the same reconcile does hold the next
// round, as any other: recover needs that guest as the journal left it.
#include <string>
#include <vector>

#include "plan/model.hpp"
#include "reconcile/context.hpp"
#include "report/run_report.hpp"

namespace pw::reconcile {

class PendingRuns {
 public:
  // What the pass that asks is about to do.
  enum class Purpose {
    change,  // apply: hold the policies of unfinished runs' guests and VMs
    check,   // only report: say what a change would be held by
  };

  // Reads the journal store: the finished journals only from their tails (journal::ScanScope::
  // unfinished_only), the others whole. For a change the guest lock of each unfinished run's
  // guest is tried (and let go at once): one held means the run is going on now in another
  // pathwarden, not waiting for recover. A check takes no lock (it never gets in a run's way).
  static PendingRuns scan(const Context& ctx, Purpose purpose);

  // A change pass: when an unfinished run names this policy's guest (inventory host) or VM (its
  // vmid), or a journal cannot be read (its guest is unknown, so it may be any), the policy is
  // not to be run: its verdict becomes precondition-failed (unobserved stays: nothing is known
  // of it), each reason and the plan's own blockers are errors, and the report says a journal
  // needs recover when one does (exit 5). Returns whether the policy is held.
  bool hold(const plan::PolicyPlan& p, report::PolicyReport& pr, report::RunReport& rep) const;

  // A check: the same reasons as notes; the verdict and the exit code stay the check's.
  void note(const plan::PolicyPlan& p, report::PolicyReport& pr) const;

  bool empty() const { return runs_.empty() && unknown_.empty(); }

 private:
  // What is known of the process that wrote an unfinished journal.
  enum class Writer {
    gone,     // its guest's lock is free: the run was interrupted, recover finishes it
    running,  // its guest's lock is held: another pathwarden is running it (or recover is)
    unknown,  // not asked (a check takes no lock)
  };
  struct Run {
    std::string journal;  // its run id
    std::string policy;
    std::string host;  // the inventory host it changes
    int vmid = 0;      // its VM (unique in the cluster, whichever node it is on now); 0: none named
    Writer writer = Writer::unknown;
    std::string lock_error;  // Writer::running: who holds the lock
  };

  // Why nothing may change on this policy's guest or VM; `recover` is set when a reason needs
  // `pathwarden recover` (not only the end of a run going on now).
  std::vector<std::string> reasons(const plan::PolicyPlan& p, bool& recover) const;

  std::vector<Run> runs_;
  // Journals that name no guest that can be trusted (unreadable, damaged, no plan): every guest
  // is held, each message naming the file.
  std::vector<std::string> unknown_;
};

}  // namespace pw::reconcile
