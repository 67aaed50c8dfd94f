// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Traffic marks (verify/traffic_since.hpp): made from what a converged run already observed, kept
// with the policy's stored result ("traffic_mark" in its details), and read back by the next run.
// A stored mark that does not parse is no mark: the next run says "no comparison", never traffic.
#include <boost/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "guest/facts.hpp"
#include "journal/result_store.hpp"
#include "plan/model.hpp"
#include "proxmox/api.hpp"
#include "proxmox/types.hpp"
#include "verify/traffic_since.hpp"

namespace pw::reconcile {

// The key of the mark in a stored result's details.
inline constexpr std::string_view kTrafficMarkKey = "traffic_mark";

// The mark of `proof`'s path now: the guest's NFS connections to its NAS with their counters, and
// the VM's taps from `status` (or why there are none: `taps_missing`).
verify::TrafficMark mark_of(const plan::ProvePath& proof, const guest::GuestFacts& facts,
                            const proxmox::VmConfig* config, const proxmox::VmStatus* status, std::string taps_missing,
                            std::string taken_at);

boost::json::value to_json(const verify::TrafficMark& mark);
std::optional<verify::TrafficMark> traffic_mark_from(const boost::json::value& v);

// The mark the policy's last stored result holds, if any (an unreadable store or mark: none).
std::optional<verify::TrafficMark> stored_mark(journal::PolicyResultStore& results, std::string_view policy);

// The statuses of the VMs named by `vms`, from one GET /nodes/{node}/qemu?full=1 per node. A
// node whose read failed leaves its VMs out, with the error as `failed[node]`.
struct NodeStatuses {
  std::map<proxmox::VmRef, proxmox::VmStatus> by_vm;
  std::map<std::string, std::string> failed;  // node → why
};
NodeStatuses read_node_statuses(proxmox::Api& api, std::span<const proxmox::VmRef> vms);

}  // namespace pw::reconcile
