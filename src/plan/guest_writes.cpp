// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/guest_writes.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "guest/fstab.hpp"
#include "guest/sha256.hpp"

namespace pw::plan {
namespace {

struct Writer {
  PolicyPlan* plan = nullptr;
  ChangeFstab* change = nullptr;
};

void block(PolicyPlan& p, std::string why) {
  p.blockers.push_back(std::move(why));
  p.steps.clear();
  p.state = PolicyState::precondition_failed;
}

std::optional<std::string> option_value(const guest::MountActivation& a, std::string_view name) {
  for (const auto& o : a.options) {
    if (o.size() > name.size() && o.starts_with(name) && o[name.size()] == '=') return o.substr(name.size() + 1);
  }
  return std::nullopt;
}

// The NFS client a mount joins on its guest: one per server address and NFS version.
std::string client_of(const guest::MountActivation& a) {
  std::string server = a.source;
  if (server.starts_with('[')) {
    server = server.substr(0, server.find(']') + 1);
  } else {
    server = server.substr(0, server.find(':'));
  }
  return server + " vers=" + option_value(a, "vers").value_or(option_value(a, "nfsvers").value_or("(default)"));
}

// What keeps a set of writers from being one write; blocks the later policy of each clash.
void block_clashes(std::vector<Writer>& writers) {
  std::map<std::string, const Writer*> by_path;
  std::map<std::string, std::pair<const Writer*, std::string>> nconnect_of_client;
  for (auto& w : writers) {
    bool clash = false;
    for (const auto& entry : w.change->entries()) {
      if (auto [it, added] = by_path.try_emplace(entry, &w); !added) {
        block(*w.plan, "policy '" + it->second->plan->policy + "' (" + it->second->plan->source +
                           ") writes the fstab entry of " + entry + " on " + w.change->host +
                           " too; one mount point has one policy");
        clash = true;
        break;
      }
    }
    if (clash) continue;
    if (w.change->activations.empty()) continue;
    const auto& own = w.change->activations.front();
    auto n = option_value(own, "nconnect");
    if (!n) continue;
    const auto client = client_of(own);
    auto [it, added] = nconnect_of_client.try_emplace(client, &w, *n);
    if (!added && it->second.second != *n) {
      block(*w.plan, own.path + " asks nconnect=" + *n + " of the NFS client for " + client + ", which " +
                         it->second.first->change->mount_point + " of policy '" + it->second.first->plan->policy +
                         "' asks nconnect=" + it->second.second +
                         " of: mounts of one server address and NFS version "
                         "share one client and its connections, so only one count can hold; give both the same "
                         "nconnect, or mount one through another address of the NAS");
    }
  }
  std::erase_if(writers, [](const Writer& w) { return w.plan->state == PolicyState::precondition_failed; });
}

Result<std::string> compose(const std::string& base, const std::string& from_content,
                            std::span<const std::string> mount_points) {
  auto file = guest::FstabFile::parse(base);
  const auto from = guest::FstabFile::parse(from_content);
  for (const auto& mp : mount_points) {
    if (auto r = file.take_entry(from, mp); !r) return std::unexpected(r.error());
  }
  return file.print();
}

}  // namespace

void merge_guest_writes(std::span<PolicyPlan> plans) {
  // Long because the composition comes in order per guest: the writers, their clashes, every
  // entry each one writes taken into one file, then the one write handed back to each of them.
  std::map<std::string, std::vector<Writer>> by_host;
  for (auto& p : plans) {
    if (p.state != PolicyState::changes) continue;
    for (auto& s : p.steps) {
      if (auto* c = std::get_if<ChangeFstab>(&s.action)) by_host[c->host].push_back({&p, c});
    }
  }
  for (auto& [host, writers] : by_host) {
    if (writers.size() < 2) {
      if (writers.size() == 1) writers.front().change->writers.clear();  // alone again after a re-plan
      continue;
    }
    block_clashes(writers);
    if (writers.size() < 2) {
      if (writers.size() == 1) writers.front().change->writers.clear();
      continue;
    }
    // One observation per guest: every writer starts from the same file. Each writer's entry is
    // taken from its own new content (the policy's single write, or an earlier merge of it).
    const auto& observed = writers.front().change->old_content;
    auto file = guest::FstabFile::parse(observed);
    std::optional<Error> failed;
    for (const auto& w : writers) {
      if (w.change->old_sha256 != writers.front().change->old_sha256) {
        failed =
            Error{"the plans of " + host + " were made from different observations of its fstab", host, "plan again"};
        break;
      }
      const auto from = guest::FstabFile::parse(w.change->new_content);
      for (const auto& entry : w.change->entries()) {
        if (auto r = file.take_entry(from, entry); !r) {
          failed = r.error();
          break;
        }
      }
      if (failed) break;
    }
    if (failed) {
      for (auto& w : writers)
        block(*w.plan, "cannot compose the fstab entries of " + host + ": " + failed->to_string());
      continue;
    }
    std::vector<std::string> names;
    for (const auto& w : writers) names.push_back(w.plan->policy);
    const std::string content = file.print();
    const std::string sha = guest::sha256_hex(content);
    const std::string backup = writers.front().change->backup_path;
    for (auto& w : writers) {
      const bool first_merge = w.change->writers.empty();
      w.change->new_content = content;
      w.change->new_sha256 = sha;
      w.change->backup_path = backup;
      w.change->writers = names;
      if (!first_merge) continue;
      std::string others;
      for (const auto& n : names) {
        if (n != w.plan->policy) others += (others.empty() ? "'" : ", '") + n + "'";
      }
      w.plan->notes.push_back("one fstab write on " + host + " with " + others +
                              " (one compare-and-swap, one backup); if this policy fails, only its entry is put back");
    }
  }
}

Result<ChangeFstab> narrowed_write(const ChangeFstab& planned, std::span<const std::string> writers,
                                   std::span<const std::string> mount_points) {
  if (!planned.shared() ||
      std::is_permutation(writers.begin(), writers.end(), planned.writers.begin(), planned.writers.end())) {
    return planned;
  }
  auto content = compose(planned.old_content, planned.new_content, mount_points);
  if (!content) return std::unexpected(content.error());
  ChangeFstab out = planned;
  out.new_content = std::move(*content);
  out.new_sha256 = guest::sha256_hex(out.new_content);
  out.writers.assign(writers.begin(), writers.end());
  return out;
}

Result<std::string> content_after_undo(const ChangeFstab& written, std::span<const std::string> mount_points) {
  return compose(written.new_content, written.old_content, mount_points);
}

std::vector<guest::MountActivation> merged_activations(std::span<const std::vector<guest::MountActivation>> lists) {
  std::vector<std::string> own;
  for (const auto& l : lists) {
    if (!l.empty()) own.push_back(l.front().path);
  }
  std::vector<guest::MountActivation> out;
  auto has = [&](const std::string& path) {
    return std::any_of(out.begin(), out.end(), [&](const auto& a) { return a.path == path; });
  };
  for (const auto& l : lists) {
    for (std::size_t i = 0; i < l.size(); ++i) {
      const auto& a = l[i];
      // Another writer's mount, as this writer found it: that writer's own activation says it.
      if (i > 0 && std::find(own.begin(), own.end(), a.path) != own.end()) continue;
      if (!has(a.path)) out.push_back(a);
    }
  }
  return out;
}

std::vector<guest::MountActivation> undo_activations(std::span<const std::vector<guest::MountActivation>> inverse_lists,
                                                     const std::string& content_after,
                                                     std::span<const std::string> undone_mount_points) {
  auto out = merged_activations(inverse_lists);
  const auto after = guest::FstabFile::parse(content_after);
  for (auto& a : out) {
    if (std::find(undone_mount_points.begin(), undone_mount_points.end(), a.path) != undone_mount_points.end())
      continue;
    auto entry = after.entry_for(a.path);
    if (!entry) continue;
    a.source = entry->spec;
    a.fstype = entry->vfstype;
    a.options = entry->option_list();
    if (a.options.size() == 1 && a.options.front() == "defaults") a.options.clear();
    a.mount = true;
  }
  return out;
}

}  // namespace pw::plan
