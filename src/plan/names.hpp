// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A NAS given by host name (`server: truenas.lan`). mount.nfs in the guest resolves it with the
// guest's resolver and mounts the first address it gets; /proc/mounts then shows that address
// (addr=), and the NFS connections go to it. So every comparison with what the guest shows uses
// the addresses the guest resolved (GuestFacts::resolved), never the controller's resolver, and
// the fstab keeps the name as the policy wrote it.
#include <string>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/facts.hpp"
#include "policy/model.hpp"

namespace pw::plan {

// The names of a policy the guest must resolve: its server and nas_addresses that are not IP
// addresses, each once.
std::vector<std::string> names_to_resolve(const policy::StoragePath& p);

// The policy with those names replaced by what the guest resolved: the server by the first
// address (the one mount.nfs uses), each nas_addresses name by all of its addresses. Fails,
// naming the guest and the name, when one did not resolve there or was not asked for.
Result<policy::StoragePath> with_resolved_names(const policy::StoragePath& p, const guest::GuestFacts& facts);

}  // namespace pw::plan
