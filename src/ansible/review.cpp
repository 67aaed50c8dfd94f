// SPDX-License-Identifier: GPL-3.0-or-later
#include "ansible/review.hpp"

#include <map>

namespace pw::ansible {
namespace {

// The engine runs one request per guest per playbook (two NICs' channels, two mounts' probes of
// one guest go in waves: reconcile/host_waves.hpp); the review shows the same playbooks.
template <class Request>
std::vector<std::vector<Request>> waves(const std::vector<Request>& requests) {
  std::vector<std::vector<Request>> out;
  std::map<std::string, std::size_t> seen;
  for (const auto& r : requests) {
    const std::size_t k = seen[r.host]++;
    if (k == out.size()) out.emplace_back();
    out[k].push_back(r);
  }
  return out;
}

}  // namespace

Result<std::vector<Playbook>> review_playbooks(const guest::RequestSet& r, const PlaybookOptions& options) {
  std::vector<Playbook> books;
  auto add = [&](Result<Playbook> b, std::string name = {}) -> Status {
    if (!b) return std::unexpected(b.error());
    if (!name.empty()) b->name = std::move(name);  // a second playbook of one generator: its own name
    books.push_back(std::move(*b));
    return {};
  };
  // Each wave after the first is named after the first with its number ("probe-2").
  auto add_waves = [&](const auto& requests, auto generate, const std::string& name) -> Status {
    const auto all = waves(requests);
    for (std::size_t k = 0; k < all.size(); ++k) {
      auto b = generate(all[k]);
      std::string named = name;
      if (k > 0) named = (name.empty() && b ? b->name : name) + "-" + std::to_string(k + 1);
      if (auto st = add(std::move(b), named); !st) return st;
    }
    return {};
  };
  auto channels = [&](const std::vector<guest::ChannelsRequest>& rs) { return channels_playbook(rs, options); };
  auto transports = [&](const std::vector<guest::TransportMove>& rs) { return transport_playbook(rs, options); };
  auto probes = [&](const std::vector<guest::ProbeRequest>& rs) { return probe_playbook(rs, options); };
  Status st;
  if (st && !r.facts_hosts.empty()) st = add(facts_playbook(r.facts_hosts, options));
  if (st && !r.fstab_changes.empty()) st = add(apply_playbook(r.fstab_changes, options));
  if (st && !r.fstab_restores.empty()) st = add(rollback_playbook(r.fstab_restores, options));
  if (st && !r.channels_changes.empty()) st = add_waves(r.channels_changes, channels, "");
  if (st && !r.channels_restores.empty()) st = add_waves(r.channels_restores, channels, "channels-rollback");
  if (st && !r.transport_moves.empty()) st = add_waves(r.transport_moves, transports, "");
  if (st && !r.transport_restores.empty()) st = add_waves(r.transport_restores, transports, "transport-rollback");
  if (st && !r.probes.empty()) st = add_waves(r.probes, probes, "");
  if (!st) return std::unexpected(st.error());
  return books;
}

}  // namespace pw::ansible
