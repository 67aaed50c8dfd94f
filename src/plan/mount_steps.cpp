// SPDX-License-Identifier: GPL-3.0-or-later
// Planning the fstab entry and the mount: a ChangeFstab step with its activations (the mounts
// sharing the NFS client re-made with it) and the trunking-risk warnings, or, for a mount
// pathwarden does not own, the comparison with the policy and on drift the operator's remedy.
#include <array>
#include <optional>

#include "guest/mounts.hpp"
#include "guest/sha256.hpp"
#include "plan/names.hpp"
#include "plan/planner_steps.hpp"
#include "plan/unowned_mount.hpp"
#include "verify/trunking_risk.hpp"

namespace pw::plan::detail {
namespace {

const guest::MountInfo* mount_at(const std::vector<guest::MountInfo>& mounts, std::string_view path) {
  // Stacked mounts: the last one in /proc/mounts is the one in effect.
  const guest::MountInfo* found = nullptr;
  for (const auto& m : mounts) {
    if (m.mount_point == path) found = &m;
  }
  return found;
}

// Options to mount an existing mount again as it is now: its fstab entry when it has one, else
// the effective options that matter for the path (version, connections, read-only).
guest::MountActivation activation_as_is(const guest::MountInfo& m, const guest::FstabFile& fstab) {
  guest::MountActivation a;
  a.path = m.mount_point;
  if (auto entry = fstab.entry_for(m.mount_point)) {
    a.source = entry->spec;
    a.fstype = entry->vfstype;
    a.options = entry->option_list();
    if (a.options.size() == 1 && a.options[0] == "defaults") a.options.clear();
    return a;
  }
  a.source = m.device;
  a.fstype = m.fstype;
  if (auto v = m.nfs_version(); !v.empty()) a.options.push_back("vers=" + v);
  if (m.nconnect() > 1) a.options.push_back("nconnect=" + std::to_string(m.nconnect()));
  if (m.has_option("ro")) a.options.emplace_back("ro");
  return a;
}

struct MountCheck {
  bool ok = false;
  std::string why;          // what differs, for the plan's summary
  bool stale_only = false;  // as the policy says, but the NAS no longer knows its handles
};

MountCheck check_mount(const guest::MountInfo* m, const policy::StoragePath& p) {
  if (m == nullptr) return {false, p.mount.path + " is not mounted"};
  if (!m->is_nfs()) return {false, p.mount.path + " holds a " + m->fstype + " mount, not NFS"};
  std::vector<std::string> diffs;
  // ESTALE from the NAS (the facts' statfs): no option change can mend it, only a new mount,
  // which looks the export's root up again (docs/field-next-upstream.md §3).
  if (m->answer == guest::MountAnswer::stale)
    diffs.emplace_back("has stale file handles (the NAS no longer knows them: its export was re-created or changed)");
  if (m->server_address() != p.mount.server) {
    // Mounted by the right address but riding another's transport: NFSv4.1 trunking. Re-making
    // the mount (with the sharing client down) is the fix, so it is planned like any difference.
    const bool trunked = m->device_host() == p.mount.server;
    diffs.push_back(
        "uses server address " + m->server_address() + " instead of " + p.mount.server +
        (trunked ? " (trunked: mounted as " + p.mount.server + ", its addr= is another address's transport)" : ""));
  }
  if (m->export_path() != p.mount.export_path) diffs.push_back("mounts " + m->export_path());
  if (auto v = p.mount.nfs_version(); v && !nfs_version_matches(*v, m->nfs_version())) {
    diffs.push_back("runs NFS " + m->nfs_version() + " instead of " + *v);
  }
  const int want_nconnect = p.mount.nconnect().value_or(1);
  if (p.mount.nconnect() && m->nconnect() != want_nconnect) {
    diffs.push_back("has nconnect=" + std::to_string(m->nconnect()) + " instead of " + std::to_string(want_nconnect));
  }
  const bool want_ro = p.mount.option("ro") != nullptr;
  if (m->has_option("ro") != want_ro) diffs.emplace_back(want_ro ? "is read-write" : "is read-only");
  if (diffs.empty()) return {true, {}};
  const bool stale_only = diffs.size() == 1 && m->answer == guest::MountAnswer::stale;
  return {false, p.mount.path + " " + join(diffs, ", "), stale_only};
}

// A mount pathwarden does not own: compared, proven, and on drift the remedy; never written.
// The NIC's steps (queues) stay: the NIC is pathwarden's either way.
std::optional<policy::StoragePath> plan_unowned(const policy::StoragePath& p, const policy::StoragePath& q,
                                                const guest::GuestFacts& facts, PolicyPlan& out) {
  auto located = locate_unowned_mount(p, q, facts);
  if (!located) {
    out.blockers.push_back(located.error().to_string());
    return std::nullopt;
  }
  policy::StoragePath at = q;  // the resolved policy, at the path its owner mounts it
  at.mount.path = located->path;
  const guest::MountInfo* live = mount_at(facts.mounts, located->path);
  if (live != nullptr && live->fstype == "autofs") live = nullptr;  // the trigger, not yet the NFS mount
  const std::string owner(policy::to_string(p.mount.owner));
  if (!located->configured.empty())
    out.notes.push_back(p.mount.display() + " is configured with " + located->configured);
  std::vector<std::string> diffs = located->differences;
  MountCheck live_check;
  if (live != nullptr) {
    live_check = check_mount(live, at);
    if (!live_check.ok) diffs.push_back("mounted now: " + live_check.why);
  }
  if (!diffs.empty()) {
    out.notes.insert(out.notes.begin(), p.mount.display() + " (" + owner + "'s mount, " + located->path +
                                            ") differs from the policy: " + join(diffs, "; "));
    if (!out.steps.empty())
      out.notes.emplace_back("the NIC's planned changes wait until the mount is as the policy says");
    out.steps.clear();
    // Stale and otherwise as the policy says: only a new mount mends it, not a configuration edit.
    const bool only_stale = located->differences.empty() && live_check.stale_only;
    out.remedy = only_stale ? stale_mount_remedy(p, *located) : unowned_remedy(p, *located);
    out.state = PolicyState::drift;
    return std::nullopt;
  }
  if (live == nullptr) {
    out.blockers.push_back(
        p.mount.display() + " is not mounted now" +
        (p.mount.owner == policy::MountOwner::compose
             ? std::string(
                   ": Docker mounts a volume only while a container uses it; start the project (docker compose up -d)")
         : p.mount.owner == policy::MountOwner::autofs
             ? std::string(": autofs mounts it on first access (ls " + located->path + ")")
             : std::string(": systemctl start " + systemd_mount_unit(located->path))) +
        ", then run again");
    return std::nullopt;
  }
  out.notes.push_back(p.mount.display() + " is mounted as the policy says (" + owner +
                      "'s mount; pathwarden only verifies it)");
  return at;
}

// The other mounts that must be re-made with the policy's mount because they share its NFS client.
std::vector<const guest::MountInfo*> mounts_sharing_client(const policy::StoragePath& p, const policy::StoragePath& q,
                                                           const guest::GuestFacts& facts) {
  // nconnect is fixed by the first mount of a server+version: the others sharing that client
  // must come down and go up again with it, the policy's mount first.
  std::vector<const guest::MountInfo*> sharing;
  const std::array<std::string, 1> server{q.mount.server};
  const auto want_version = p.mount.nfs_version();
  const int want_nconnect = p.mount.nconnect().value_or(1);
  bool nconnect_differs = false;
  for (const auto& m : guest::nfs_mounts_of_server(facts.mounts, server)) {
    if (m.mount_point == p.mount.path || m.server_address() != q.mount.server) continue;
    if (want_version && !nfs_version_matches(*want_version, m.nfs_version())) continue;
    const auto* live = mount_at(facts.mounts, m.mount_point);
    if (live == nullptr) continue;
    sharing.push_back(live);
    if (live->nconnect() != want_nconnect) nconnect_differs = true;
  }
  // A policy that does not name nconnect takes the client as it is: its mount joins it, and
  // re-making the others would only change their nconnect (or, for a mount Docker or autofs
  // made, block the policy) for nothing the policy asked.
  if (!nconnect_differs || !p.mount.nconnect()) sharing.clear();
  return sharing;
}

// The write of `fstab` (the guest's with the policy's entry set) over the file as observed, with
// its compare-and-swap token and backup; no mounts yet.
ChangeFstab fstab_write(const policy::StoragePath& p, const guest::GuestFacts& facts, const guest::FstabFile& fstab,
                        const PlanningContext& ctx) {
  ChangeFstab c;
  c.host = p.guest.host;
  c.mount_point = p.mount.path;
  c.old_content = facts.fstab_content;
  c.new_content = fstab.print();
  c.old_sha256 = facts.fstab_sha256.empty() ? guest::sha256_hex(c.old_content) : facts.fstab_sha256;
  c.new_sha256 = guest::sha256_hex(c.new_content);
  c.backup_path = ctx.backup_dir + "/fstab." + ctx.plan_id + "." + p.name;
  return c;
}

// The ChangeFstab step: write `fstab` (the guest's with the policy's entry set) and re-make the
// mount, with the mounts sharing its client. false when a blocker stops the plan.
bool plan_fstab_change(const policy::StoragePath& p, const policy::StoragePath& q, const guest::GuestFacts& facts,
                       const guest::FstabFile& fstab, const guest::FstabEntrySpec& spec,
                       const guest::MountInfo* current, const MountCheck& mount_check, const PlanningContext& ctx,
                       PolicyPlan& out) {
  ChangeFstab c = fstab_write(p, facts, fstab, ctx);
  c.activations.push_back({p.mount.path, spec.spec, spec.vfstype, spec.options, true});

  const std::vector<const guest::MountInfo*> sharing = mounts_sharing_client(p, q, facts);
  // A mount Docker or autofs made is theirs: pathwarden never unmounts it, so nconnect cannot
  // change for the client they share.
  for (const auto* m : sharing) {
    const auto owner = other_owner_of(facts.mounts, *m);
    if (owner.empty()) continue;
    out.blockers.push_back(
        m->mount_point + " shares " + p.mount.path + "'s NFS client (same server address and NFS version), so " +
        "nconnect changes only when both are mounted anew, but " + owner + " made it and pathwarden does not " +
        "unmount what it does not own; stop what uses it first, or give this mount its own client (another "
        "address of the NAS, or another NFS version)");
  }
  if (!out.blockers.empty()) return false;
  for (const auto* m : sharing) c.activations.push_back(activation_as_is(*m, facts.fstab));

  for (const auto* m : sharing) c.inverse_activations.push_back(activation_as_is(*m, facts.fstab));
  if (current != nullptr) {
    c.inverse_activations.push_back(activation_as_is(*current, facts.fstab));
  } else {
    c.inverse_activations.push_back({p.mount.path, spec.spec, spec.vfstype, {}, false});
  }

  std::string summary = c.writes_file() ? "write the fstab entry of " + p.mount.path + " and re-make the mount"
                                        : "re-make the mount " + p.mount.path;
  if (!mount_check.ok) summary += " (" + mount_check.why + ")";
  if (!sharing.empty()) {
    std::vector<std::string> names;
    for (const auto* m : sharing) names.push_back(m->mount_point);
    summary += "; also re-made because they share its NFS client: " + join(names, ", ");
  }
  out.steps.push_back({std::move(c), true, std::move(summary)});
  return true;
}

// The ChangeFstab step that writes only lines of entries that stay (the comment of the policy's
// own, the NAS's other entries pointed at its address under trunking: move-transport): no mount
// re-made, none restored by its rollback (which puts the file back).
void plan_lines_write(const policy::StoragePath& p, const guest::GuestFacts& facts, const guest::FstabFile& fstab,
                      bool own_changed, bool adopting, const std::vector<std::string>& moved,
                      const PlanningContext& ctx, PolicyPlan& out) {
  ChangeFstab c = fstab_write(p, facts, fstab, ctx);
  c.moved_entries = moved;
  std::vector<std::string> what;
  if (own_changed) {
    out.notes.push_back(p.mount.path + " is mounted as the policy says: " +
                        (adopting ? "its hand-written entry is adopted" : "its reason is updated") +
                        " in the fstab, and the mount is not touched");
    what.push_back(adopting ? "adopt the fstab entry of " + p.mount.path + " (write pathwarden's comment above it)"
                            : "update the reason in the fstab comment of " + p.mount.path);
  }
  if (!moved.empty()) what.push_back("point the fstab entries of " + join(moved, ", ") + " at " + p.mount.server);
  out.steps.push_back(
      {std::move(c), false,
       join(what, "; ") + (moved.empty() ? "; the mount stays as it is" : "; the mounts stay as they are")});
}

void warn_trunking_risk(const policy::StoragePath& p, const policy::StoragePath& q, const guest::GuestFacts& facts,
                        PolicyPlan& out) {
  // A policy that chose (nfsv3 pins vers=3, which predicts nothing; refuse and move-transport
  // acted on it in plan_trunking) is not warned of what it already handles.
  if (p.mount.trunking && *p.mount.trunking != policy::TrunkingRemedy::nfsv3) return;
  // The seed's trap: an NFSv4.1+ mount to an address of a NAS the guest already reaches
  // elsewhere joins that client and keeps its old link.
  std::vector<verify::GuestNfsMount> existing;
  for (const auto& m : facts.mounts) {
    if (m.is_nfs()) existing.push_back({m.mount_point, m.server_address(), m.nfs_version()});
  }
  for (const auto& risk : verify::predict_trunking_risk(
           {p.mount.path, q.mount.server, q.mount.nas_addresses, p.mount.nfs_version()}, existing)) {
    out.warnings.push_back(risk.message +
                           "; choose in spec.mount.trunking: move-transport (keeps NFSv4: the client is moved to " +
                           p.mount.server + "), nfsv3 (with vers=3) or refuse");
  }
}

// The policy's fstab entry. An entry written `nfs4` (by hand, or adopted by `pathwarden import`)
// keeps that type when the policy asks NFSv4 or no version: mount.nfs4 is mount.nfs without the
// fall-back to v3, so the entry means what the operator wrote, and rewriting only the type would
// re-make a mount that is as the policy says.
guest::FstabEntrySpec entry_spec(const policy::StoragePath& p, const std::optional<guest::FstabEntry>& before) {
  auto spec = desired_fstab_entry(p);
  const auto version = p.mount.nfs_version();
  if (before && before->vfstype == "nfs4" && (!version || version->starts_with('4'))) spec.vfstype = "nfs4";
  return spec;
}

// A mount pathwarden owns: its fstab entry and the mount, re-made when either differs from the
// policy or the NIC changes under it.
std::optional<policy::StoragePath> plan_owned(const policy::StoragePath& p, const policy::StoragePath& q,
                                              const guest::GuestFacts& facts, bool nic_changes,
                                              const PlanningContext& ctx, PolicyPlan& out) {
  guest::FstabFile fstab = facts.fstab;
  const auto entry_before = facts.fstab.entry_for(p.mount.path);
  const auto owner_before = facts.fstab.owner_of(p.mount.path);
  const auto spec = entry_spec(p, entry_before);
  auto changed = fstab.set_entry(spec, {p.name, p.mount.reason});
  if (!changed) {
    out.blockers.push_back("cannot write the fstab entry of " + p.mount.path + ": " + changed.error().to_string());
    return std::nullopt;
  }
  const guest::MountInfo* current = mount_at(facts.mounts, p.mount.path);
  const auto trunking = plan_trunking(p, q, facts, current, fstab, out);
  if (!trunking) return std::nullopt;
  // Under move-transport a mount riding the client's old address is what the move mends:
  // compared with that address, so it is not re-made only to trunk onto it again.
  policy::StoragePath as_moved = q;
  if (trunking->move_from && current != nullptr && current->server_address() == *trunking->move_from)
    as_moved.mount.server = *trunking->move_from;
  const MountCheck mount_check = check_mount(current, as_moved);
  const auto& moved = trunking->moved_entries;
  // Only lines of entries that stay change (a hand-written entry adopted, the policy's reason
  // edited, the NAS's other entries pointed at its address) and the mount is as the policy
  // says: the file is written and the mount left alone. Re-making it would tear down its NFS
  // connections under whatever uses them, for a comment; nothing on the path changes, so there
  // is nothing to probe either (unless the client moves after it).
  if ((*changed || !moved.empty()) && mount_check.ok && !nic_changes && entry_before == fstab.entry_for(p.mount.path)) {
    plan_lines_write(p, facts, fstab, *changed, !owner_before || owner_before->policy != p.name, moved, ctx, out);
  } else if (*changed || !moved.empty() || !mount_check.ok || nic_changes) {
    if (!plan_fstab_change(p, q, facts, fstab, spec, current, mount_check, ctx, out)) return std::nullopt;
    std::get<ChangeFstab>(out.steps.back().action).moved_entries = moved;
    if (!moved.empty())
      out.steps.back().summary += "; point the fstab entries of " + join(moved, ", ") + " at " + p.mount.server;
    warn_trunking_risk(p, q, facts, out);
  } else if (!trunking->move_from) {
    out.notes.push_back(p.mount.path + " is mounted as the policy says and its fstab entry is current");
  }
  if (trunking->move_from) {
    out.steps.push_back(
        {MoveTransport{p.guest.host, p.mount.path, p.mount.server, *trunking->move_from, q.mount.server}, true,
         "move the NAS's NFS client of " + p.mount.path + " from " + *trunking->move_from + " to " + q.mount.server +
             " (sunrpc transport dstaddr; no remount, NFSv4 kept)"});
  }
  return q;
}

}  // namespace

std::optional<policy::StoragePath> plan_mount(const policy::StoragePath& p, const guest::GuestFacts& facts,
                                              bool nic_changes, const PlanningContext& ctx, PolicyPlan& out) {
  // q: the policy with its NAS names as the guest resolves them, for every comparison with what
  // the guest shows; the fstab entry keeps p's name.
  auto named = with_resolved_names(p, facts);
  if (!named) {
    out.blockers.push_back(named.error().to_string());
    return std::nullopt;
  }
  const policy::StoragePath& q = *named;
  if (q.mount.server != p.mount.server) {
    out.notes.push_back(p.mount.server + " resolves in guest " + p.guest.host + " to " + q.mount.server +
                        " (the address mount.nfs uses there)");
  }
  if (!p.mount.owned()) return plan_unowned(p, q, facts, out);
  return plan_owned(p, q, facts, nic_changes, ctx, out);
}

}  // namespace pw::plan::detail
