// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// /proc/mounts: what is mounted and with which options the kernel really uses.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::guest {

struct MountOption {
  std::string name;
  std::optional<std::string> value;
  friend bool operator==(const MountOption&, const MountOption&) = default;
};

std::vector<MountOption> split_mount_options(std::string_view options);

// What the NAS answered when the facts asked it about a mount's root (statfs, which the NFS
// client never answers from its caches; facts.sh section "statfs").
enum class MountAnswer {
  unknown,    // not asked (not NFS, or facts read without running a command: agent read access)
  answers,    // the NAS knows the mount
  stale,      // ESTALE: the NAS no longer knows its handles (export re-created); re-make the mount
  no_answer,  // nothing within the facts' wait: the NAS is down or unreachable (unknown, never drift)
  error,      // another error (see MountInfo::answer_error)
};
std::string_view to_string(MountAnswer answer);

struct MountInfo {
  std::string device;  // as mounted: "192.0.2.2:/export" (may name another address than addr=)
  std::string mount_point;
  std::string fstype;
  std::vector<MountOption> options;
  MountAnswer answer = MountAnswer::unknown;
  std::string answer_error{};  // MountAnswer::error: the first line of stat -f's message

  std::optional<std::string> option(std::string_view name) const;
  bool has_option(std::string_view name) const;
  bool is_nfs() const;  // nfs or nfs4
  // "3", "4.1", "4.2"; empty when the kernel shows no vers=.
  std::string nfs_version() const;
  // 1 when absent: the kernel hides nconnect=1.
  int nconnect() const;
  // The address the transport really uses: addr= when present, else the device's host part.
  std::string server_address() const;
  std::string device_host() const;  // "192.0.2.2" of "192.0.2.2:/export", brackets stripped
  std::string export_path() const;  // "/export"
};

Result<std::vector<MountInfo>> parse_proc_mounts(std::string_view text, std::string_view where = "/proc/mounts");

// The facts' "statfs" section: one line per NFS mount, "ok|stale|no-answer|error MOUNT [TEXT]",
// MOUNT escaped as /proc/mounts escapes it. Sets `answer` of the mount in effect at each point
// (the last of stacked mounts); a line of a mount not in `mounts` (unmounted in between) is skipped.
Status apply_statfs_answers(std::string_view text, std::vector<MountInfo>& mounts, std::string_view where);

// NFS mounts of one server, known by any of its addresses: those whose device names one of them
// or whose transport (addr=) goes to one. Changing nconnect or the NFS version of one of them
// only takes effect when all of them are unmounted and mounted again.
std::vector<MountInfo> nfs_mounts_of_server(const std::vector<MountInfo>& mounts,
                                            std::span<const std::string> server_addresses);

}  // namespace pw::guest
