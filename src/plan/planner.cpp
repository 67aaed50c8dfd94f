#include "plan/planner.hpp"

#include "net/mac_address.hpp"

#include <algorithm>
#include <cctype>

#include "guest/interfaces.hpp"
#include "guest/mounts.hpp"
#include "guest/sha256.hpp"
#include "plan/names.hpp"
#include "plan/unowned_mount.hpp"
#include "policy/option_notes.hpp"
#include "proxmox/net_device.hpp"
#include "verify/trunking_risk.hpp"

namespace pw::plan {
namespace {

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

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
  if (m.has_option("ro")) a.options.push_back("ro");
  return a;
}

struct MountCheck {
  bool ok = false;
  std::string why;  // what differs, for the plan's summary
};

MountCheck check_mount(const guest::MountInfo* m, const policy::StoragePath& p) {
  if (m == nullptr) return {false, p.mount.path + " is not mounted"};
  if (!m->is_nfs()) return {false, p.mount.path + " holds a " + m->fstype + " mount, not NFS"};
  std::vector<std::string> diffs;
  if (m->server_address() != p.mount.server) {
    diffs.push_back("uses server address " + m->server_address() + " instead of " + p.mount.server);
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
  if (m->has_option("ro") != want_ro) diffs.push_back(want_ro ? "is read-write" : "is read-only");
  if (diffs.empty()) return {true, {}};
  return {false, p.mount.path + " " + join(diffs, ", ")};
}

std::string where(const policy::StoragePath& p, std::string_view field) {
  return " (" + std::string(field) + " at " + p.position_of(field).to_string() + ")";
}

std::string percent(double share) { return std::to_string(static_cast<int>(share * 100 + 0.5)) + "%"; }

std::string verify_summary(const VerifyPath& v, const guest::InterfaceInfo& iface, const policy::StoragePath& p) {
  return "verify with byte counters: " + std::to_string(p.verify.probe_bytes >> 20) + " MiB " +
         (v.direction == verify::ProbeDirection::write ? "written to " : "read from ") + v.probe_file + " must cross " +
         iface.name + " (" + p.nic.device + ") for at least " + percent(p.verify.min_share);
}

// A mount pathwarden does not own: compared, proven, and on drift the remedy; never written.
// The NIC's steps (queues) stay: the NIC is pathwarden's either way.
template <class Finish>
PolicyPlan plan_unowned(const policy::StoragePath& p, const policy::StoragePath& q, const guest::GuestFacts& facts,
                        const net::MacAddress& mac, const proxmox::VmRef& vm, const guest::InterfaceInfo& iface,
                        PolicyPlan& out, Finish finish) {
  auto located = locate_unowned_mount(p, q, facts);
  if (!located) {
    out.blockers.push_back(located.error().to_string());
    return finish();
  }
  policy::StoragePath at = q;  // the resolved policy, at the path its owner mounts it
  at.mount.path = located->path;
  const guest::MountInfo* live = mount_at(facts.mounts, located->path);
  if (live != nullptr && live->fstype == "autofs") live = nullptr;  // the trigger, not yet the NFS mount
  const std::string owner(policy::to_string(p.mount.owner));
  if (!located->configured.empty()) out.notes.push_back(p.mount.display() + " is configured with " + located->configured);
  std::vector<std::string> diffs = located->differences;
  if (live != nullptr) {
    const MountCheck check = check_mount(live, at);
    if (!check.ok) diffs.push_back("mounted now: " + check.why);
  }
  if (!diffs.empty()) {
    out.notes.insert(out.notes.begin(), p.mount.display() + " (" + owner + "'s mount, " + located->path +
                                            ") differs from the policy: " + join(diffs, "; "));
    if (!out.steps.empty()) out.notes.push_back("the NIC's planned changes wait until the mount is as the policy says");
    out.steps.clear();
    out.remedy = unowned_remedy(p, *located);
    out.state = PolicyState::drift;
    return finish();
  }
  if (live == nullptr) {
    out.blockers.push_back(
        p.mount.display() + " is not mounted now" +
        (p.mount.owner == policy::MountOwner::compose
             ? std::string(": Docker mounts a volume only while a container uses it; start the project (docker compose up -d)")
             : p.mount.owner == policy::MountOwner::autofs ? std::string(": autofs mounts it on first access (ls " + located->path + ")")
                                                             : std::string(": systemctl start " + systemd_mount_unit(located->path))) +
        ", then run again");
    return finish();
  }
  out.notes.push_back(p.mount.display() + " is mounted as the policy says (" + owner + "'s mount; pathwarden only verifies it)");
  if (!out.steps.empty()) {
    VerifyPath v = verify_path_of(at, p, mac, vm);
    out.steps.push_back({v, false, verify_summary(v, iface, at)});
  }
  return finish();
}

}  // namespace

bool network_hotplug_enabled(const proxmox::VmConfig& config) {
  // As qemu-server's parse_hotplug_features reads it: "0" none, "1" the default
  // (network,disk,usb), else a list split like pve-common's split_list: on ',', ';' and
  // whitespace, empty items dropped ("disk;network" has network).
  const auto value = config.get("hotplug").value_or("network,disk,usb");
  if (value == "0") return false;
  if (value == "1") return true;
  std::size_t i = 0;
  auto separator = [](char c) { return c == ',' || c == ';' || std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (i < value.size()) {
    while (i < value.size() && separator(value[i])) ++i;
    std::size_t j = i;
    while (j < value.size() && !separator(value[j])) ++j;
    if (std::string_view(value).substr(i, j - i) == "network") return true;
    i = j;
  }
  return false;
}

bool nfs_version_matches(std::string_view wanted, std::string_view effective) {
  if (wanted == effective) return true;
  if (wanted == "4") return effective.starts_with("4");
  if (wanted == "4.0") return effective == "4";
  return false;
}

guest::FstabEntrySpec desired_fstab_entry(const policy::StoragePath& p) {
  guest::FstabEntrySpec spec;
  const bool v6 = p.mount.server.find(':') != std::string::npos;
  spec.spec = (v6 ? "[" + p.mount.server + "]" : p.mount.server) + ":" + p.mount.export_path;
  spec.file = p.mount.path;
  spec.vfstype = "nfs";  // mount.nfs picks v3 or v4 from vers=; "nfs4" would refuse vers=3
  for (const auto& o : p.mount.options) spec.options.push_back(o.to_string());
  return spec;
}

PolicyPlan plan_header(const policy::StoragePath& p) {
  PolicyPlan out;
  out.policy = p.name;
  out.source = p.source.to_string();
  out.vm = proxmox::VmRef{p.guest.node, p.guest.vmid};
  out.host = p.guest.host;
  out.nas = p.mount.server;
  return out;
}

PolicyPlan plan_policy(const policy::StoragePath& p, const Observation& observed, const PlanningContext& ctx) {
  PolicyPlan out = plan_header(p);
  if (observed.vm) out.vm = observed.vm->config.ref;
  out.warnings = observed.warnings;
  for (auto& note : policy::option_notes(p.mount)) out.warnings.push_back(std::move(note.message));
  auto block = [&](std::string why) { out.blockers.push_back(std::move(why)); };
  auto finish = [&]() -> PolicyPlan {
    if (observed.unobserved()) {
      out.state = PolicyState::unobserved;
      out.steps.clear();
      out.remedy.clear();
    } else if (out.state == PolicyState::drift) {
      out.steps.clear();  // drift of a mount not pathwarden's: the remedy is the operator's
    } else if (!out.blockers.empty()) {
      out.state = PolicyState::precondition_failed;
      out.steps.clear();
    } else {
      out.state = out.steps.empty() ? PolicyState::converged : PolicyState::changes;
    }
    return out;
  };

  if (observed.api_error) block("could not observe VM " + std::to_string(p.guest.vmid) + ": " + observed.api_error->to_string());
  if (observed.vm_error) block("Proxmox: " + observed.vm_error->to_string());
  if (observed.guest_error)
    block("could not observe guest " + p.guest.host + ": " + observed.guest_error->to_string());
  if (!observed.vm || !observed.guest) return finish();
  const ObservedVm& vm = *observed.vm;
  const guest::GuestFacts& facts = *observed.guest;

  if (!vm.status.lock.empty()) {
    block("VM " + std::to_string(p.guest.vmid) + " is locked (" + vm.status.lock +
          "); wait for the backup/migration to finish and run again");
  }
  if (vm.status.status != "running") {
    block("VM " + std::to_string(p.guest.vmid) + " is " + (vm.status.status.empty() ? "not running" : vm.status.status) +
          "; pathwarden only changes running guests and never starts a stopped one");
  }

  // ---- Proxmox NIC and the guest interface behind it -------------------------------------
  const auto nic_value = vm.config.get(p.nic.device);
  if (!nic_value) {
    block("VM " + std::to_string(p.guest.vmid) + " has no " + p.nic.device + where(p, "spec.nic.device"));
    return finish();
  }
  auto nic = proxmox::NetDeviceSpec::parse(*nic_value);
  if (!nic) {
    block(p.nic.device + " of VM " + std::to_string(p.guest.vmid) + " cannot be read: " + nic.error().to_string());
    return finish();
  }
  const net::MacAddress mac = nic->mac() ? net::MacAddress(*nic->mac()) : net::MacAddress();
  const guest::InterfaceInfo* iface = mac.empty() ? nullptr : guest::find_nic_interface(facts.interfaces, mac);
  if (iface == nullptr) {
    block("no interface in guest " + p.guest.host + " has " + p.nic.device + "'s MAC " + mac +
          "; is the NIC attached and up inside the guest?");
    return finish();
  }

  const bool running = vm.status.status == "running";
  const bool hotplug = network_hotplug_enabled(vm.config);
  bool nic_changes = false;
  if (p.nic.queues) {
    const int want = *p.nic.queues;
    if (nic->model() != "virtio" && want > 1) {
      block(p.nic.device + " is a " + nic->model() + " NIC; queues only take effect on virtio" +
            where(p, "spec.nic.queues"));
    }
    const int have = nic->effective_queues();
    const proxmox::PendingItem* pend = vm.pending.find(p.nic.device);
    std::vector<std::string> other_pending;
    for (const auto& key : vm.pending.changed_keys()) {
      if (key != p.nic.device) other_pending.push_back(key);
    }
    bool needs_restart = false;
    std::optional<SetNic> set;
    if (pend != nullptr && pend->pending) {
      auto pending_spec = proxmox::NetDeviceSpec::parse(*pend->pending);
      auto without_queues = [](proxmox::NetDeviceSpec s) {
        (void)s.erase("queues");
        return s.canonical();
      };
      if (pending_spec && pending_spec->effective_queues() == want && without_queues(*pending_spec) == without_queues(*nic)) {
        needs_restart = true;  // our change is already pending: only the restart is missing
        out.notes.push_back(p.nic.device + " queues=" + std::to_string(want) + " is already pending in Proxmox");
      } else {
        block(p.nic.device + " has a pending change that is not pathwarden's (" + *pend->pending +
              "); apply or revert it in Proxmox first");
      }
    } else if (have != want) {
      proxmox::NetDeviceSpec to = *nic;
      if (auto st = to.set("queues", std::to_string(want)); !st) {
        block(st.error().to_string());
      } else {
        set = SetNic{vm.config.ref, p.nic.device, *nic_value, to.to_string(), vm.config.digest, running && hotplug,
                     nic->queues(), want, p.restart.window ? p.restart.window->text : std::string()};
        needs_restart = !(running && hotplug);
      }
    }
    if (set || needs_restart) {
      nic_changes = true;
      const std::string change = p.nic.device + " queues " + std::to_string(have) + " → " + std::to_string(want);
      if (!p.restart.allowed) {
        block(change + (set && set->hotplug ? " re-plugs the NIC in the running guest" : " needs a guest restart") +
              ", which the policy does not allow" + where(p, "spec.restart.allowed"));
      } else if (p.restart.window && !p.restart.window->contains(ctx.now, ctx.local_zone)) {
        block(change + " is disruptive and it is outside the restart window '" + p.restart.window->text + "' (it is " +
              p.restart.window->describe(ctx.now, ctx.local_zone) + ")" + where(p, "spec.restart.window"));
      }
      if (needs_restart && !other_pending.empty()) {
        block("a restart would also apply pending changes to " + join(other_pending, ", ") +
              " that are not pathwarden's; apply or revert them in Proxmox first");
      }
    }
    if (set) {
      out.steps.push_back({*set, true,
                           "set " + p.nic.device + " queues " + std::to_string(have) + " → " + std::to_string(want) +
                               (set->hotplug ? " (hot-plug: the NIC is re-plugged)" : " (pending until restart)")});
    }
    if (needs_restart) {
      out.steps.push_back({RestartVm{vm.config.ref, p.guest.host,
                                     "apply pending " + p.nic.device + " queues=" + std::to_string(want),
                                     p.restart.window ? p.restart.window->text : std::string()},
                           true, "reboot VM " + std::to_string(p.guest.vmid) + " through Proxmox to apply " +
                                     p.nic.device + " queues=" + std::to_string(want)});
    }
    const int channels = iface->combined_current().value_or(iface->rx_queues > 0 ? iface->rx_queues : 1);
    if (nic_changes) {
      out.steps.push_back({SetChannels{p.guest.host, mac, iface->name, channels, want}, false,
                           "set " + iface->name + " combined channels to " + std::to_string(want) + " in the guest"});
    } else if (channels < want) {
      const int max = iface->combined_max().value_or(0);
      if (max >= want) {
        out.steps.push_back({SetChannels{p.guest.host, mac, iface->name, channels, want}, false,
                             "set " + iface->name + " combined channels " + std::to_string(channels) + " → " +
                                 std::to_string(want) + " in the guest"});
      } else {
        out.notes.push_back(iface->name + " offers " + std::to_string(max) + " channels although " + p.nic.device +
                            " has queues=" + std::to_string(want) + " (the guest kernel or a pending change?)");
      }
    }
  }

  // ---- fstab entry and the mount -----------------------------------------------------------
  // q: the policy with its NAS names as the guest resolves them, for every comparison with what
  // the guest shows; the fstab entry keeps p's name.
  auto named = with_resolved_names(p, facts);
  if (!named) {
    block(named.error().to_string());
    return finish();
  }
  const policy::StoragePath& q = *named;
  if (q.mount.server != p.mount.server) {
    out.notes.push_back(p.mount.server + " resolves in guest " + p.guest.host + " to " + q.mount.server +
                        " (the address mount.nfs uses there)");
  }
  if (!p.mount.owned()) return plan_unowned(p, q, facts, mac, vm.config.ref, *iface, out, finish);
  guest::FstabFile fstab = facts.fstab;
  auto changed = fstab.set_entry(desired_fstab_entry(p), {p.name, p.mount.reason});
  if (!changed) {
    block("cannot write the fstab entry of " + p.mount.path + ": " + changed.error().to_string());
    return finish();
  }
  const guest::MountInfo* current = mount_at(facts.mounts, p.mount.path);
  const MountCheck mount_check = check_mount(current, q);
  if (*changed || !mount_check.ok || nic_changes) {
    ChangeFstab c;
    c.host = p.guest.host;
    c.mount_point = p.mount.path;
    c.old_content = facts.fstab_content;
    c.new_content = fstab.print();
    c.old_sha256 = facts.fstab_sha256.empty() ? guest::sha256_hex(c.old_content) : facts.fstab_sha256;
    c.new_sha256 = guest::sha256_hex(c.new_content);
    c.backup_path = ctx.backup_dir + "/fstab." + ctx.plan_id + "." + p.name;
    const auto spec = desired_fstab_entry(p);
    c.activations.push_back({p.mount.path, spec.spec, spec.vfstype, spec.options, true});

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
    // A mount Docker or autofs made is theirs: pathwarden never unmounts it, so nconnect cannot
    // change for the client they share.
    for (const auto* m : sharing) {
      const auto owner = other_owner_of(facts.mounts, *m);
      if (owner.empty()) continue;
      block(m->mount_point + " shares " + p.mount.path + "'s NFS client (same server address and NFS version), so " +
            "nconnect changes only when both are mounted anew, but " + owner + " made it and pathwarden does not " +
            "unmount what it does not own; stop what uses it first, or give this mount its own client (another "
            "address of the NAS, or another NFS version)");
    }
    if (!out.blockers.empty()) return finish();
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

    // The seed's trap: an NFSv4.1+ mount to an address of a NAS the guest already reaches
    // elsewhere joins that client and keeps its old link.
    std::vector<verify::GuestNfsMount> existing;
    for (const auto& m : facts.mounts) {
      if (m.is_nfs()) existing.push_back({m.mount_point, m.server_address(), m.nfs_version()});
    }
    for (const auto& risk : verify::predict_trunking_risk(
             {p.mount.path, q.mount.server, q.mount.nas_addresses, p.mount.nfs_version()}, existing)) {
      out.warnings.push_back(risk.message);
    }
  } else {
    out.notes.push_back(p.mount.path + " is mounted as the policy says and its fstab entry is current");
  }

  if (!out.steps.empty()) {
    VerifyPath v = verify_path_of(q, p, mac, vm.config.ref);
    out.steps.push_back({v, false, verify_summary(v, *iface, p)});
  }
  return finish();
}

VerifyPath verify_path_of(const policy::StoragePath& p, net::MacAddress intended_mac) {
  VerifyPath v;
  v.vm = {p.guest.node, p.guest.vmid};
  v.nic = proxmox::net_index(p.nic.device);
  v.host = p.guest.host;
  v.mount_point = p.mount.path;
  v.intended_mac = std::move(intended_mac);
  v.server = p.mount.server;
  v.nas_addresses = p.mount.nas_addresses;
  v.vers = p.mount.nfs_version();
  v.nconnect = p.mount.nconnect();
  v.queues = p.nic.queues;
  v.probe_file = p.mount.path + "/" + p.verify.probe_file;
  v.probe_bytes = p.verify.probe_bytes;
  v.max_probe_bytes = p.verify.max_probe_bytes;
  v.min_share = p.verify.min_share;
  v.direction = p.verify.direction;
  v.baseline_ms = static_cast<int>(p.verify.baseline.count());
  v.commit_cycles = p.verify.commit_cycles;
  v.min_commit_rate = p.verify.min_commit_rate;
  v.rollback_on_inconclusive = p.rollback.on_inconclusive;
  v.verify_restored = p.rollback.verify_restored;
  return v;
}

VerifyPath verify_path_of(const policy::StoragePath& resolved, const policy::StoragePath& written,
                          net::MacAddress intended_mac, const proxmox::VmRef& runs_on) {
  VerifyPath v = verify_path_of(resolved, std::move(intended_mac));
  v.vm = runs_on;
  if (resolved.mount.server != written.mount.server) v.server_name = written.mount.server;
  return v;
}

Plan make_plan(std::span<const policy::StoragePath> policies, std::span<const Observation> observations,
               const PlanningContext& ctx) {
  Plan plan;
  plan.id = ctx.plan_id;
  plan.created_at = ctx.created_at;
  for (std::size_t i = 0; i < policies.size() && i < observations.size(); ++i) {
    plan.policies.push_back(plan_policy(policies[i], observations[i], ctx));
  }
  return plan;
}

}  // namespace pw::plan
