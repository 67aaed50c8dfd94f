// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Maps response bodies of the Proxmox API ({"data": ...}) onto the typed values in types.hpp.
// Pure functions over text, so they are tested with recorded bodies. Values Proxmox sends as
// numbers or as strings (depending on version and field) are accepted either way.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "proxmox/types.hpp"

namespace pw::proxmox::json {

struct Ticket {
  std::string username;
  std::string ticket;
  std::string csrf_token;
};

Result<std::string> parse_version(std::string_view body);
Result<std::vector<GuestSummary>> parse_guests(std::string_view body);
Result<std::vector<NodeSummary>> parse_nodes(std::string_view body);
Result<VmConfig> parse_config(std::string_view body, const VmRef& ref, bool current);
Result<PendingConfig> parse_pending(std::string_view body, const VmRef& ref);
Result<VmStatus> parse_vm_status(std::string_view body, const VmRef& ref);
// GET /nodes/{node}/qemu (?full=1 adds each running VM's "nics"): every entry a VmStatus of `node`.
Result<std::vector<VmStatus>> parse_vm_list(std::string_view body, const std::string& node);
// GET /access/permissions?path=P: the privileges held on P. Proxmox answers path → privilege →
// propagate flag (pve-access-control PVE/API2/AccessControl.pm `permissions`); a path it leaves
// out holds none.
Result<std::set<std::string>> parse_permissions(std::string_view body, const std::string& path);
// POST answers: {"data":"UPID:..."} or {"data":null} (PUT, or POST that finished within background_delay).
Result<std::optional<Upid>> parse_optional_upid(std::string_view body);
Result<TaskStatus> parse_task_status(std::string_view body);
// GET /nodes/{node}/tasks: each task as a TaskStatus (status RUNNING = running; otherwise the
// exit text, pve-manager PVE/API2/Tasks.pm node_tasks).
Result<std::vector<TaskStatus>> parse_task_list(std::string_view body);
// GET .../tasks/{upid}/log: the lines' texts in order ({"n": N, "t": text}).
Result<std::vector<std::string>> parse_task_log(std::string_view body);
// GET /cluster/sdn/vnets: VNet -> zone, for the VNets the caller may audit.
Result<std::map<std::string, std::string>> parse_sdn_vnets(std::string_view body);
Result<Ticket> parse_ticket(std::string_view body);

// Percent-encoding: RFC 3986 unreserved characters and those in `keep` stay as they are.
std::string percent_encode(std::string_view value, std::string_view keep = {});
// application/x-www-form-urlencoded encoding of one key or value.
inline std::string form_encode(std::string_view value) {
  return percent_encode(value);
}

}  // namespace pw::proxmox::json
