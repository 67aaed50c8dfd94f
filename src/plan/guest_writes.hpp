// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Several policies on one guest: their fstab changes are ONE write. Every real guest has more
// than one NFS mount, and the fstab is one file: two compare-and-swaps on the same observed hash
// cannot both succeed, and two backups of it would each undo the other's entry. So the planner
// composes the writers' entries into one new file (one CAS token, one backup), the apply phase
// narrows that write to the writers that really reach it, and a rollback puts back only the
// entries of the policies that failed, on the file as it was written, keeping the others.
//
// Each composition goes through guest::FstabFile::take_entry: a policy's lines (its entry and
// the pathwarden comment above it) are moved between versions of the file, nothing else.
#include <span>
#include <string>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/operations.hpp"
#include "plan/model.hpp"

namespace pw::plan {

// Makes the ChangeFstab steps of each guest one write (ChangeFstab::writers). The plans of a
// guest come from one observation, so their old contents agree. Two policies that would write
// the same mount point, or that ask one NFS client (one server address and version on a guest)
// for different nconnect, are blocked with the reason: one write cannot satisfy both. Idempotent:
// a plan merged again (after a policy was re-planned) gives the same write.
void merge_guest_writes(std::span<PolicyPlan> plans);

// The write as the writers that reach the apply phase make it: the planned one when all of them
// do, else the observed file with only their entries (a writer whose run failed earlier must not
// have its entry written). `mount_points` are the reaching writers' own, in `writers`' order.
Result<ChangeFstab> narrowed_write(const ChangeFstab& planned, std::span<const std::string> writers,
                                   std::span<const std::string> mount_points);

// The file after undoing the entries of `mount_points` in the write that holds them (`written`'s
// new_content): each put back as it was before (old_content), the other writers' entries kept.
Result<std::string> content_after_undo(const ChangeFstab& written, std::span<const std::string> mount_points);

// The mounts one write re-makes, from each writer's list (its own mount first, then those it
// re-makes because they share its NFS client): every path once, a writer's own mount as that
// writer asks rather than as another found it, kept in plan order so that mounts sharing a client
// come down and up together.
std::vector<guest::MountActivation> merged_activations(std::span<const std::vector<guest::MountActivation>> lists);

// The mounts a partial undo re-makes: the undone writers' old mounts as their inverses say, and
// every other mount their inverses re-make as the file after the undo (`content_after`) says: a
// kept writer's mount stays as it was written, not as the undone writer once found it.
std::vector<guest::MountActivation> undo_activations(std::span<const std::vector<guest::MountActivation>> inverse_lists,
                                                     const std::string& content_after,
                                                     std::span<const std::string> undone_mount_points);

}  // namespace pw::plan
