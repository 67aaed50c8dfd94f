#include "ansible/review.hpp"

namespace pw::ansible {

Result<std::vector<Playbook>> review_playbooks(const guest::RequestSet& r, const PlaybookOptions& options) {
  std::vector<Playbook> books;
  auto add = [&](Result<Playbook> b, const char* name = nullptr) -> Status {
    if (!b) return std::unexpected(b.error());
    if (name != nullptr) b->name = name;  // a second playbook of one generator: the inverse's own name
    books.push_back(std::move(*b));
    return {};
  };
  Status st;
  if (st && !r.facts_hosts.empty()) st = add(facts_playbook(r.facts_hosts, options));
  if (st && !r.fstab_changes.empty()) st = add(apply_playbook(r.fstab_changes, options));
  if (st && !r.fstab_restores.empty()) st = add(rollback_playbook(r.fstab_restores, options));
  if (st && !r.channels_changes.empty()) st = add(channels_playbook(r.channels_changes, options));
  if (st && !r.channels_restores.empty()) st = add(channels_playbook(r.channels_restores, options), "channels-rollback");
  if (st && !r.probes.empty()) st = add(probe_playbook(r.probes, options));
  if (!st) return std::unexpected(st.error());
  return books;
}

}  // namespace pw::ansible
