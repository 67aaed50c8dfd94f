// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What some NFS mount options really do, said where a policy gives them: options that are valid
// but do not do what their name promises, or trade safety for something. Notes, not errors: the
// policy stays valid and pathwarden writes what it says; `validate` and the plan show them.
//
// - `async`: already the Linux client's default (nfs(5), "The sync mount option"); it does not make
//   the server acknowledge writes before they are on stable storage. That is the export's
//   `sync`/`async` (exports(5)) or a ZFS dataset's `sync` property, which no client option changes.
// - `nolock` on NFSv4: locking is part of NFSv4 itself; `nolock` only turns off NLM for NFSv3.
// - `soft` on a read-write mount: after `retrans` timeouts the client gives up with EIO, and
//   nfs(5) warns that it "can cause silent data corruption"; data that is written wants `hard`.
#include <string>
#include <vector>

#include "policy/model.hpp"

namespace pw::policy {

struct OptionNote {
  std::string option;   // "async", as written
  std::string message;  // the whole sentence, naming the option
};

std::vector<OptionNote> option_notes(const MountSpec& mount);

}  // namespace pw::policy
