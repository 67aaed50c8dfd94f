// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What pathwarden asks of a guest, in the domain's words: the requests a GuestPort carries out
// (guest/port.hpp). How they are carried out (generated playbooks, ansible-playbook over SSH)
// is the adapter's business (src/ansible); plan/guest_requests.hpp is the one place plan steps
// become these requests.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "verify/direction.hpp"

namespace pw::guest {

// A mount to make again from scratch: unmounted, then mounted with exactly these values.
// (`remount` cannot change the NFS version or the transports, so it is never used.)
struct MountActivation {
  std::string path;                  // mount point
  std::string source;                // "10.0.1.31:/volume1/movies"
  std::string fstype;                // "nfs", "nfs4"
  std::vector<std::string> options;  // as in fstab; empty means "defaults"
  bool mount = true;                 // false: only unmount (e.g. a rollback of a new entry)
};

// Apply: write a guest's new fstab if it still is what was observed, keep a backup, re-make mounts.
struct FstabChange {
  std::string host;
  std::string observed_sha256;  // sha256 of the fstab as observed: the compare-and-swap token
  std::string new_content;      // the whole new file (FstabFile::print())
  std::string backup_path;      // absolute, e.g. /var/backups/pathwarden/fstab.<change-id>
  // Unmounted in reverse order, then mounted in this order. When nconnect or the NFS version
  // changes this must hold every mount of that server (guest::nfs_mounts_of_server).
  std::vector<MountActivation> activations;
  // The observed bytes (their hash is observed_sha256): the guest is sent only an edit of them
  // (guest/fstab_edit.hpp), never the whole new file.
  std::string observed_content;
};

// Rollback: put the backup back if the fstab is still what apply wrote, re-make the mounts.
struct FstabRestore {
  std::string host;
  std::string backup_path;
  std::string backup_sha256;   // the fstab as observed before the change (= the backup)
  std::string written_sha256;  // what apply wrote; anything else is someone else's edit: refuse
  std::vector<MountActivation> activations;
};

using verify::ProbeDirection;

// Probe: interface counters, N bytes through the mount bypassing the page cache, counters again.
struct ProbeRequest {
  std::string host;
  std::string path;         // a file on the mount (read), or a new file to write
  std::uint64_t bytes = 0;  // rounded up to whole blocks
  ProbeDirection direction = ProbeDirection::read;
  std::uint64_t block_size = 1024ULL * 1024;
  // Counters read this long before the probe's own "before" read, to learn background rates
  // (zero: no baseline).
  std::chrono::milliseconds baseline{0};
  // The commit-latency figure after the probe (outside its counter window): this many 8 KiB
  // O_DSYNC writes to commit_path, a new file (never an existing one), removed afterwards.
  int commit_cycles = 0;
  std::string commit_path{};
  std::string mount_point{};  // no part of `path` below it may be a symbolic link ("": not checked)
  bool as_root = false;       // a read probe as root (a write probe always is, with become)
};

// Channels: `ethtool -L IF combined N` in the guest (virtio multiqueue after a Proxmox change).
struct ChannelsRequest {
  std::string host;
  std::string interface;
  int combined = 1;
  // A rollback's request: the count is put back only where it moved. The guest leaves a NIC
  // alone whose count already is `combined` (a failed `ethtool -L` changed nothing) or that has
  // no combined channels (setting one fails there): guest::set_channels_script.
  bool restore = false;
};

// Transport: move the NFS client a mount rides from one server address to another, live
// (spec.mount.trunking: move-transport; guest/transport_move.hpp).
struct TransportMove {
  std::string host;
  std::string mount_point;
  std::string mounted_as;  // the host part of the mount's source (the policy's server as written)
  std::string from;        // IPv4
  std::string to;          // IPv4
  // A rollback's request (from and to already swapped): a no-op where the mount is gone or its
  // client is no longer at `from`.
  bool restore = false;
};

// Every request a whole plan can make, by kind, in plan order (plan::guest_requests): what
// `plan --emit-playbooks` shows for review.
struct RequestSet {
  std::vector<std::string> facts_hosts;  // every guest of the plan, once
  std::vector<FstabChange> fstab_changes;
  std::vector<FstabRestore> fstab_restores;
  std::vector<ChannelsRequest> channels_changes;
  std::vector<ChannelsRequest> channels_restores;
  std::vector<TransportMove> transport_moves;
  std::vector<TransportMove> transport_restores;
  std::vector<ProbeRequest> probes;
};

}  // namespace pw::guest
