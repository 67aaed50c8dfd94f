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

struct MountInfo {
  std::string device;  // as mounted: "192.0.2.2:/export" (may name another address than addr=)
  std::string mount_point;
  std::string fstype;
  std::vector<MountOption> options;

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

// NFS mounts of one server, known by any of its addresses: those whose device names one of them
// or whose transport (addr=) goes to one. Changing nconnect or the NFS version of one of them
// only takes effect when all of them are unmounted and mounted again.
std::vector<MountInfo> nfs_mounts_of_server(const std::vector<MountInfo>& mounts,
                                            std::span<const std::string> server_addresses);

}  // namespace pw::guest
