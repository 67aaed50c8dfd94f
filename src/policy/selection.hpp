// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Which policies a run takes: by name (exact, or a shell glob such as 'media-*'), by label
// (--selector key=value over metadata.labels), by Proxmox node and by inventory host. Options of
// one kind are alternatives, different kinds all apply; an excluded name or glob (--exclude, or a
// --policy that starts with '!') is taken out of what they select, or out of every policy. A name that matches nothing
// is an error with a did-you-mean; so is a selection that leaves no policy, so that a scheduled shard with a typo never
// "succeeds" with nothing done.
#include <string>
#include <vector>

#include "diagnostics/error.hpp"
#include "policy/model.hpp"

namespace pw::policy {

struct Selection {
  std::vector<std::string> names;      // --policy: exact names or globs (* ? [...])
  std::vector<std::string> selectors;  // --selector: key=value
  std::vector<std::string> nodes;      // --node
  std::vector<std::string> hosts;      // --host
  std::vector<std::string> excluded;   // --exclude, and the --policy names that start with '!'

  // --policy values, '!'-prefixed ones as exclusions.
  static Selection from(const std::vector<std::string>& policy, std::vector<std::string> selectors,
                        std::vector<std::string> nodes, std::vector<std::string> hosts,
                        const std::vector<std::string>& exclude);
  bool empty() const {
    return names.empty() && selectors.empty() && nodes.empty() && hosts.empty() && excluded.empty();
  }
};

// The selected policies, in their order; `all` is consumed.
Result<std::vector<StoragePath>> select_policies(std::vector<StoragePath> all, const Selection& selection);

}  // namespace pw::policy
