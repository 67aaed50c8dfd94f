#pragma once
// The playbooks pathwarden runs in guests, one per phase for all guests at once. A Playbook is
// the YAML (structure only, emitted with yaml-cpp) plus a JSON vars file holding every value that
// came from a policy or from observation. Every string in that file is marked unsafe for
// Ansible's templating, and commands take argv lists, so no value can change what runs.
//
// Only ansible.builtin and ansible.posix modules are used (both ship with Debian's ansible).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::ansible {

struct Playbook {
  std::string name;  // file stem: NAME.yml and NAME.vars.json
  std::string yaml;
  std::string vars_json;  // empty when the playbook needs no data
  std::vector<std::string> hosts;

  std::string yaml_file() const { return name + ".yml"; }
  std::string vars_file() const { return name + ".vars.json"; }
};

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
};

// Rollback: put the backup back if the fstab is still what apply wrote, re-make the mounts.
struct FstabRestore {
  std::string host;
  std::string backup_path;
  std::string backup_sha256;   // the fstab as observed before the change (= the backup)
  std::string written_sha256;  // what apply wrote; anything else is someone else's edit: refuse
  std::vector<MountActivation> activations;
};

enum class ProbeDirection { read, write };

// Probe: interface counters, N bytes through the mount bypassing the page cache, counters again.
struct ProbeRequest {
  std::string host;
  std::string path;         // a file on the mount (read), or a new file to write
  std::uint64_t bytes = 0;  // rounded up to whole blocks
  ProbeDirection direction = ProbeDirection::read;
  std::uint64_t block_size = 1024 * 1024;
  // Counters read this long before the probe's own "before" read, to learn background rates
  // (zero: no baseline).
  std::chrono::milliseconds baseline{0};
};

// Channels: `ethtool -L IF combined N` in the guest (virtio multiqueue after a Proxmox change).
struct ChannelsRequest {
  std::string host;
  std::string interface;
  int combined = 1;
};

struct PlaybookOptions {
  std::chrono::seconds task_timeout{300};  // each task's own limit (a hard NFS mount can hang)
  std::string fstab_path = "/etc/fstab";
};

Result<Playbook> facts_playbook(std::span<const std::string> hosts, const PlaybookOptions& options = {});
Result<Playbook> apply_playbook(std::span<const FstabChange> changes, const PlaybookOptions& options = {});
Result<Playbook> rollback_playbook(std::span<const FstabRestore> restores, const PlaybookOptions& options = {});
Result<Playbook> probe_playbook(std::span<const ProbeRequest> probes, const PlaybookOptions& options = {});
Result<Playbook> channels_playbook(std::span<const ChannelsRequest> requests, const PlaybookOptions& options = {});

// Task names the result readers look for.
namespace task {
inline constexpr const char* read_fstab = "Read the fstab byte for byte";
inline constexpr const char* report = "Report mounts, transports, counters and interfaces";
inline constexpr const char* fstab_now = "Read the fstab as it is now";
inline constexpr const char* refuse_changed = "Refuse to write when the fstab changed since it was observed";
inline constexpr const char* write_fstab = "Write the new fstab";
inline constexpr const char* unmount = "Unmount the mounts to re-make";
inline constexpr const char* mount = "Mount them again with the new options";
inline constexpr const char* restore = "Put the backup back";
inline constexpr const char* counters_baseline = "Read the interface counters for the background baseline";
inline constexpr const char* baseline_wait = "Wait out the baseline window";
inline constexpr const char* counters_before = "Read the interface counters before the probe";
inline constexpr const char* probe = "Move the probe bytes bypassing the page cache";
inline constexpr const char* counters_after = "Read the interface counters after the probe";
inline constexpr const char* set_channels = "Set the combined queue count";
}  // namespace task

// Checks a name before it goes into a play's host list, where Ansible reads patterns.
Status validate_host_name(std::string_view host);

// Writes NAME.yml (and NAME.vars.json) for each playbook into `dir`, creating it.
Status write_playbooks(std::span<const Playbook> playbooks, const std::filesystem::path& dir);

}  // namespace pw::ansible
