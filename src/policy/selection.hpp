#pragma once
// Which policies a run takes: by name (exact, or a shell glob such as 'media-*'), by label
// (--selector key=value over metadata.labels), by Proxmox node and by inventory host. Options of
// one kind are alternatives, different kinds all apply. A name that matches nothing is an error
// with a did-you-mean; so is a selection that leaves no policy, so that a scheduled shard with a
// typo never "succeeds" with nothing done.
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

  bool empty() const { return names.empty() && selectors.empty() && nodes.empty() && hosts.empty(); }
};

// The selected policies, in their order; `all` is consumed.
Result<std::vector<StoragePath>> select_policies(std::vector<StoragePath> all, const Selection& selection);

}  // namespace pw::policy
