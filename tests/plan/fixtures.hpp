// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Observed states of the seed scenario, built from plain structs.
#include <algorithm>
#include <string>

#include "plan/planner.hpp"
#include "policy/loader.hpp"

namespace pw::plan::testing {

inline constexpr const char* kNet1Mac = "bc:24:11:00:00:02";
inline constexpr const char* kFstab =
    "# /etc/fstab: static file system information.\n"
    "UUID=0a1b2c3d-1111-2222-3333-444455556666 /               ext4    errors=remount-ro 0       1\n"
    "192.0.2.2:/srv/nas/tv\t/mnt/tv\tnfs\tvers=4.2,_netdev\t0 0\n";

inline policy::StoragePath movies_policy(std::string options = "[vers=3, nconnect=8, _netdev]", bool restart = true,
                                         std::string window = "daily 00:00-24:00", std::string trunking = "") {
  const std::string text = std::string("apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: movies-10g}\n") +
                           "spec:\n  guest: {node: pve1, vmid: 101, host: media-vm}\n  nic: {device: net1, queues: 8}\n"
                           "  mount:\n    server: 198.51.100.2\n    nas_addresses: [192.0.2.2]\n"
                           "    export: /srv/nas/movies\n    path: /mnt/movies\n    options: " +
                           options + (trunking.empty() ? std::string() : "\n    trunking: " + trunking) +
                           "\n    reason: vers=3 on purpose\n  verify: {probe_file: probe.bin, probe_bytes: 64MiB}\n"
                           "  restart: {allowed: " +
                           (restart ? "true" : "false") + ", window: '" + window + "'}\n";
  auto r = policy::load_text(text, "movies.yaml");
  if (!r.ok() || r.paths.size() != 1)
    throw std::runtime_error("fixture policy invalid: " + r.diagnostics.at(0).to_string());
  return r.paths.front();
}

// A policy whose mount pathwarden does not own (spec.mount.owner compose, systemd or autofs) on
// the seed's guest: compose names the lab's volume pg/pgdata, the others mount at /mnt/pg. NIC
// queues only when asked for (then the NIC has steps of its own).
inline policy::StoragePath unowned_policy(const std::string& owner, const std::string& options = "[rw, nfsvers=4.2]",
                                          const std::string& server = "198.51.100.2", bool queues = false) {
  const std::string text =
      "apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: pg}\nspec:\n"
      "  guest: {node: pve1, vmid: 101, host: media-vm}\n  nic: {device: net1" +
      std::string(queues ? ", queues: 8" : "") + "}\n  mount:\n    owner: " + owner + "\n" +
      (owner == "compose" ? "    compose: {project: pg, volume: pgdata}\n" : "    path: /mnt/pg\n") +
      "    server: " + server + "\n    export: /volume1/docker/pg14\n    options: " + options +
      "\n  verify: {probe_file: probe.bin, probe_bytes: 64MiB}\n  restart: {allowed: true}\n";
  auto r = policy::load_text(text, "pg.yaml");
  if (!r.ok() || r.paths.size() != 1)
    throw std::runtime_error("fixture policy invalid: " + r.diagnostics.at(0).to_string());
  return r.paths.front();
}

// An autofs trigger (what /proc/mounts shows for a map's mount point before, and under, the NFS mount).
inline guest::MountInfo autofs_trigger(std::string mount_point, std::string map = "/etc/auto.nas") {
  guest::MountInfo m;
  m.device = std::move(map);
  m.mount_point = std::move(mount_point);
  m.fstype = "autofs";
  return m;
}

// The kinds of a plan's steps, in order ("set-nic", "change-fstab", ...).
// The plan's first step of type T, or nullptr.
template <class T>
const T* find_step(const PolicyPlan& p) {
  for (const auto& s : p.steps) {
    if (const auto* a = std::get_if<T>(&s.action)) return a;
  }
  return nullptr;
}

inline std::vector<std::string> kinds(const PolicyPlan& p) {
  std::vector<std::string> out;
  for (const auto& s : p.steps) out.emplace_back(to_string(s.kind()));
  return out;
}

inline guest::InterfaceInfo interface(std::string name, std::string mac, int combined_now, int combined_max) {
  guest::InterfaceInfo i;
  i.name = std::move(name);
  i.mac = std::move(mac);
  i.operstate = "up";
  i.rx_queues = combined_now;
  i.tx_queues = combined_now;
  guest::EthtoolChannels ch;
  ch.interface = i.name;
  ch.maximum.combined = combined_max;
  ch.current.combined = combined_now;
  i.channels = ch;
  return i;
}

inline guest::MountInfo nfs_mount(std::string device, std::string mount_point, std::string options) {
  guest::MountInfo m;
  m.device = std::move(device);
  m.mount_point = std::move(mount_point);
  m.fstype = "nfs4";
  m.options = guest::split_mount_options(options);
  if (options.find("vers=3") != std::string::npos) m.fstype = "nfs";
  return m;
}

// The guest of the seed: /mnt/tv through the old 1 GbE address, /mnt/movies not yet mounted,
// net1 with one queue.
inline Observation seed_observation(
    std::string net1 = std::string("virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1")) {
  Observation o;
  ObservedVm vm;
  vm.config.ref = {"pve1", 101};
  vm.config.entries = {{"cores", "2"}, {"net0", "virtio=BC:24:11:00:00:01,bridge=vmbr0"}, {"net1", net1}};
  vm.config.digest = "0123456789abcdef0123456789abcdef01234567";
  vm.pending.ref = vm.config.ref;
  vm.pending.digest = vm.config.digest;
  vm.status.ref = vm.config.ref;
  vm.status.status = "running";
  o.vm = vm;
  guest::GuestFacts f;
  f.host = "media-vm";
  f.fstab_content = kFstab;
  f.fstab = guest::FstabFile::parse(kFstab);
  f.interfaces = {interface("ens18", "bc:24:11:00:00:01", 1, 1), interface("ens19", kNet1Mac, 1, 1)};
  f.mounts = {nfs_mount("192.0.2.2:/srv/nas/tv", "/mnt/tv", "rw,vers=4.2,addr=192.0.2.2,clientaddr=192.0.2.10")};
  o.guest = f;
  return o;
}

// The seed's guest converged for `policy` (movies_policy's NIC and mount): net1 with queues=8 in
// Proxmox and 8 channels in the guest, the policy's entry written, /mnt/movies mounted with
// `options` (as the kernel shows them) and not yet in the mounts when `mounted` is false.
inline Observation converged_observation(
    const policy::StoragePath& policy,
    const std::string& options = "rw,vers=3,nconnect=8,addr=198.51.100.2,mountaddr=198.51.100.2",
    const std::string& net1 = "virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1,queues=8", bool mounted = true) {
  auto o = seed_observation(net1);
  auto fstab = o.guest->fstab;
  if (!fstab.set_entry(desired_fstab_entry(policy), {policy.name, policy.mount.reason}).value())
    throw std::runtime_error("fixture: the policy's entry was not written");
  o.guest->fstab_content = fstab.print();
  o.guest->fstab = guest::FstabFile::parse(o.guest->fstab_content);
  o.guest->interfaces[1] = interface("ens19", kNet1Mac, 8, 8);
  if (mounted) o.guest->mounts.push_back(nfs_mount("198.51.100.2:/srv/nas/movies", "/mnt/movies", options));
  return o;
}

// Whether any line holds `needle` (a plan's notes, warnings, blockers or remedy).
inline bool has(const std::vector<std::string>& lines, const std::string& needle) {
  return std::any_of(lines.begin(), lines.end(), [&](const auto& l) { return l.find(needle) != std::string::npos; });
}

inline PlanningContext context() {
  PlanningContext ctx;
  ctx.plan_id = "test-plan";
  ctx.created_at = "2026-11-30T02:00:00Z";
  // Sunday 2026-11-29 03:00 UTC (local_zone nullptr: UTC).
  ctx.now = std::chrono::sys_days{std::chrono::year{2026} / 11 / 29} + std::chrono::hours(3);
  return ctx;
}

}  // namespace pw::plan::testing
