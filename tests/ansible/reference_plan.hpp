// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A plan for the shipped seed policy (policies/movies-10g.yaml) on its seed guest, as the planner
// makes it: 8 queues on net1, 8 channels on its interface, the fstab pinned to vers=3,nconnect=8
// on the 10 GbE address, the 64 MiB probe. playbooks/generated/ holds what
// plan::guest_requests and the generators make of it, so an Ansible engineer reads the real
// playbooks without building anything (test ansible_playbooks_checked_in keeps them equal).
#include <string>

#include "guest/sha256.hpp"
#include "plan/model.hpp"

namespace pw::ansible::reference {

inline plan::Plan movies_plan() {
  const std::string old_fstab =
      "# /etc/fstab\nUUID=4f0c1d2e / ext4 errors=remount-ro 0 1\n"
      "192.0.2.2:/volume1/movies /mnt/movies nfs4 defaults,_netdev 0 0\n";
  const std::string new_fstab =
      "# /etc/fstab\nUUID=4f0c1d2e / ext4 errors=remount-ro 0 1\n"
      "# Managed by pathwarden (policy movies-10g): vers=3 on purpose: NFSv4.1 trunking reuses the existing 1 GbE "
      "transport to this NAS; re-verify with interface counters before moving back to v4\n"
      "198.51.100.2:/volume1/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0\n";
  plan::PolicyPlan p;
  p.policy = "movies-10g";
  p.source = "policies/movies-10g.yaml:7:3";
  p.vm = {"pve1", 101};
  p.host = "media-vm";
  p.state = plan::PolicyState::changes;

  plan::SetNic nic;
  nic.vm = p.vm;
  nic.device = "net1";
  nic.from = "virtio=BC:24:11:00:00:02,bridge=vmbr1";
  nic.to = "virtio=BC:24:11:00:00:02,bridge=vmbr1,queues=8";
  nic.hotplug = true;
  nic.queues_to = 8;
  p.steps.push_back({nic, true, "set net1 queues=8 (hot-plug)"});

  p.steps.push_back(
      {plan::SetChannels{"media-vm", "bc:24:11:00:00:02", "ens19", 1, 8}, false, "ethtool -L ens19 combined 8"});

  plan::ChangeFstab fs;
  fs.host = "media-vm";
  fs.mount_point = "/mnt/movies";
  fs.old_content = old_fstab;
  fs.new_content = new_fstab;
  fs.old_sha256 = guest::sha256_hex(old_fstab);
  fs.new_sha256 = guest::sha256_hex(new_fstab);
  fs.backup_path = "/var/backups/pathwarden/fstab.20261201T020000Z-3f9a";
  fs.activations = {{"/mnt/movies", "198.51.100.2:/volume1/movies", "nfs", {"vers=3", "nconnect=8", "_netdev"}, true}};
  fs.inverse_activations = {{"/mnt/movies", "192.0.2.2:/volume1/movies", "nfs4", {"defaults", "_netdev"}, true}};
  p.steps.push_back({fs, true, "fstab: /mnt/movies from 198.51.100.2 with vers=3,nconnect=8,_netdev"});

  plan::ProvePath v;
  v.host = "media-vm";
  v.mount_point = "/mnt/movies";
  v.intended_mac = "bc:24:11:00:00:02";
  v.server = "198.51.100.2";
  v.nas_addresses = {"192.0.2.2"};
  v.vers = "3";
  v.nconnect = 8;
  v.queues = 8;
  v.probe_file = "/mnt/movies/probe-64m";
  v.probe_bytes = 64ull << 20;
  v.max_probe_bytes = 256ull << 20;
  p.steps.push_back({v, false, "verify: 64 MiB read from /mnt/movies/probe-64m must cross ens19"});

  plan::Plan plan;
  plan.id = "20261201T020000Z-3f9a";
  plan.created_at = "2026-12-01T02:00:00.000Z";
  plan.policies.push_back(std::move(p));
  return plan;
}

}  // namespace pw::ansible::reference
