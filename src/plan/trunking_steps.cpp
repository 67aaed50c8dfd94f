// SPDX-License-Identifier: GPL-3.0-or-later
// spec.mount.trunking for a mount pathwarden owns: NFSv4.1+ trunking seen on the mount (it names
// the policy's address, its addr= is another's) or foreseen (the guest already reaches the NAS
// through another address with the same minor version), and what the policy chose to do.
//
// move-transport (policies/README.md): the NAS is reached at the policy's address by every mount
// of that NFS client in the guest. The kernel's client is moved (a MoveTransport step after the
// fstab write), and every fstab entry of the NAS at the old address is pointed at the new one,
// since the move does not outlast a reboot: after one, the first mount makes the client, and it
// must be made at the policy's address or the trap is back.
#include <algorithm>
#include <set>

#include "plan/planner_steps.hpp"
#include "plan/unowned_mount.hpp"
#include "verify/nfs_evidence.hpp"
#include "verify/trunking_risk.hpp"

namespace pw::plan::detail {
namespace {

bool is_ipv6(std::string_view address) {
  return address.find(':') != std::string_view::npos;
}

// The minor version NFSv4 runs on a mount; nullopt for NFSv3 or unknown.
std::optional<int> minor_of(const guest::MountInfo& m) {
  return verify::nfs4_minor(m.nfs_version());
}

// The address the policy's mount rides although it names the policy's server: NFSv4.1+
// trunking, seen in /proc/mounts.
std::optional<std::string> seen_trunk(const guest::MountInfo* current, const policy::StoragePath& q) {
  if (current == nullptr || !current->is_nfs()) return std::nullopt;
  const auto minor = minor_of(*current);
  if (!minor || *minor < 1) return std::nullopt;
  if (current->device_host() != q.mount.server || current->server_address() == q.mount.server) return std::nullopt;
  return current->server_address();
}

// The addresses of the clients the planned mount would join (trunking foreseen).
std::set<std::string> foreseen_trunks(const policy::StoragePath& p, const policy::StoragePath& q,
                                      const guest::GuestFacts& facts) {
  std::vector<verify::GuestNfsMount> existing;
  for (const auto& m : facts.mounts) {
    if (m.is_nfs()) existing.push_back({m.mount_point, m.server_address(), m.nfs_version()});
  }
  std::set<std::string> out;
  for (const auto& risk : verify::predict_trunking_risk(
           {p.mount.path, q.mount.server, q.mount.nas_addresses, p.mount.nfs_version()}, existing)) {
    out.insert(risk.existing.address);
  }
  return out;
}

std::string host_of_spec(std::string_view spec) {
  if (spec.starts_with('[')) return std::string(spec.substr(1, spec.find(']') - 1));
  return std::string(spec.substr(0, spec.find(':')));
}

// An fstab entry that makes (or would make) an NFSv4.1+ mount of `from`: NFSv3, v2 and v4.0
// have their own clients and never carry the policy's mount.
bool entry_joins_client(const guest::FstabEntry& e, std::string_view from) {
  if (e.vfstype != "nfs" && e.vfstype != "nfs4") return false;
  if (host_of_spec(e.spec) != from) return false;
  for (const auto& o : e.option_list()) {
    for (std::string_view key : {"vers=", "nfsvers="}) {
      if (o.starts_with(key)) {
        const auto v = o.substr(key.size());
        if (v == "2" || v == "3" || v == "4.0") return false;
      }
    }
  }
  return true;
}

std::string blocked_by_trunking(const policy::StoragePath& p, const std::string& from, bool seen) {
  return p.mount.path +
         (seen ? " names " + p.mount.server + " but rides " + from
               : " would mount " + p.mount.server + " but the guest already reaches this NAS through " + from) +
         " (NFSv4.1+ trunking: the bytes " +
         (seen ? "cross " + from + "'s link)"
               : "would cross " + from + "'s link " + std::string(verify::kTrunkingNeedsOneClientId) + ")");
}

// The other mounts and entries of the client at `from`, pointed at the policy's server in
// `fstab`; false, with blockers, when one of them cannot follow.
bool point_entries_at(const policy::StoragePath& p, const guest::GuestFacts& facts, const std::string& from,
                      const std::string& to, const std::optional<int> minor, guest::FstabFile& fstab,
                      TrunkingChoice& choice, PolicyPlan& out) {
  std::vector<std::string> moving;  // live mounts that follow the client now
  for (const auto& m : facts.mounts) {
    if (!m.is_nfs() || m.mount_point == p.mount.path || m.server_address() != from) continue;
    const auto mm = minor_of(m);
    if (!mm || *mm < 1 || (minor && *mm != *minor)) continue;  // another client
    moving.push_back(m.mount_point);
    if (const auto owner = other_owner_of(facts.mounts, m); !owner.empty()) {
      out.blockers.push_back(m.mount_point + " is " + owner + "'s mount of this NAS at " + from +
                             ": it would move with the client now, but after a reboot it is made at " + from +
                             " again and " + p.mount.path + " trunks onto it; point it at " + p.mount.server +
                             " where " + owner + " makes it first (spec.mount.trunking: move-transport)");
      continue;
    }
    if (!fstab.entry_for(m.mount_point)) {
      out.notes.push_back(m.mount_point + " (no fstab entry: mounted by hand) moves with the client to " +
                          p.mount.server + "; after a reboot it is not mounted again");
    }
  }
  for (const auto& e : fstab.entries()) {
    if (e.file == p.mount.path || !entry_joins_client(e, from)) continue;
    if (auto owner = fstab.owner_of(e.file); owner && owner->policy != p.name) {
      out.blockers.push_back("policy '" + owner->policy + "' keeps " + e.file + " on " + from + ", and " +
                             p.mount.path + " wants " + p.mount.server +
                             " of the same NAS: one NFS client has one address, so both cannot hold; give both "
                             "policies the same server (with trunking: move-transport), or pin vers=3 on one");
      continue;
    }
    const auto slash = e.spec.find(":/");
    if (slash == std::string::npos) continue;
    auto set = fstab.set_entry_spec(e.file, p.mount.server + e.spec.substr(slash));
    if (!set) {
      out.blockers.push_back("cannot point the fstab entry of " + e.file + " at " + p.mount.server + ": " +
                             set.error().to_string());
      continue;
    }
    if (*set) choice.moved_entries.push_back(e.file);
  }
  if (!out.blockers.empty()) return false;
  std::vector<std::string> follow = moving;
  for (const auto& f : choice.moved_entries) {
    if (std::find(follow.begin(), follow.end(), f) == follow.end()) follow.push_back(f);
  }
  if (!follow.empty()) {
    out.notes.push_back("trunking: move-transport: the NAS's NFS client moves from " + from + " to " + p.mount.server +
                        (to != p.mount.server ? " (" + to + ")" : std::string()) + " without a remount, and with it " +
                        join(moving, ", ") + (moving.empty() ? "no other mount" : "") +
                        (choice.moved_entries.empty()
                             ? std::string()
                             : "; the fstab entries of " + join(choice.moved_entries, ", ") + " are pointed at " +
                                   p.mount.server + " so that it holds after a reboot"));
  }
  return true;
}

}  // namespace

std::optional<TrunkingChoice> plan_trunking(const policy::StoragePath& p, const policy::StoragePath& q,
                                            const guest::GuestFacts& facts, const guest::MountInfo* current,
                                            guest::FstabFile& fstab, PolicyPlan& out) {
  TrunkingChoice choice;
  const auto remedy = p.mount.trunking;
  // Not written: the warning of warn_trunking_risk and the probe's verdict. nfsv3: the policy
  // pins vers=3 (checked when loaded), which has no trunking.
  if (!remedy || *remedy == policy::TrunkingRemedy::nfsv3) return choice;
  const auto seen = seen_trunk(current, q);
  std::set<std::string> froms;
  if (seen) {
    froms.insert(*seen);
  } else {
    froms = foreseen_trunks(p, q, facts);
  }
  if (froms.empty()) return choice;
  if (froms.size() > 1) {
    std::vector<std::string> list(froms.begin(), froms.end());
    out.blockers.push_back(p.mount.path + " would join an NFS client of this NAS, which the guest reaches through " +
                           join(list, " and ") + ": the policy cannot tell which one it would ride; unmount the " +
                           "NAS's mounts of all but one address first");
    return std::nullopt;
  }
  const std::string from = *froms.begin();
  if (*remedy == policy::TrunkingRemedy::refuse) {
    out.blockers.push_back(blocked_by_trunking(p, from, seen.has_value()) +
                           "; spec.mount.trunking: refuse applies nothing. Keep NFSv4 with trunking: move-transport "
                           "(the client is moved to " +
                           p.mount.server + "), or pin vers=3 with trunking: nfsv3");
    return std::nullopt;
  }
  if (is_ipv6(from) || is_ipv6(q.mount.server)) {
    out.blockers.push_back(blocked_by_trunking(p, from, seen.has_value()) +
                           "; trunking: move-transport moves IPv4 transports only (the kernel's sunrpc dstaddr "
                           "takes no IPv6 address); pin vers=3 with trunking: nfsv3");
    return std::nullopt;
  }
  if (facts.transport_move == guest::TransportMoveSupport::absent) {
    out.blockers.push_back(blocked_by_trunking(p, from, seen.has_value()) +
                           "; trunking: move-transport needs the kernel's sunrpc sysfs "
                           "(/sys/kernel/sunrpc/xprt-switches, Linux 5.14 and later), which this guest does not have; "
                           "pin vers=3 with trunking: nfsv3");
    return std::nullopt;
  }
  const std::optional<int> minor =
      seen ? minor_of(*current) : (p.mount.nfs_version() ? verify::nfs4_minor(*p.mount.nfs_version()) : std::nullopt);
  if (!point_entries_at(p, facts, from, q.mount.server, minor, fstab, choice, out)) return std::nullopt;
  choice.move_from = from;
  return choice;
}

}  // namespace pw::plan::detail
