// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The planner's warning before it applies: an NFSv4.1+ mount to an address of a NAS the guest
// already reaches through another address will join that existing client and carry its bytes
// over the old address's link (the seed's trap). Pure.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "verify/nfs_evidence.hpp"

namespace pw::verify {

// Which servers trunk a second address (docs/field-next-upstream.md §5.3): said wherever trunking
// is only foreseen, since nothing in the guest tells the two kinds apart before the mount.
inline constexpr std::string_view kTrunkingNeedsOneClientId =
    "if the NAS answers both addresses with one client ID (knfsd, Synology, TrueNAS do; NFS-Ganesha "
    "gives one per address and does not trunk: the probe tells)";

// The mount a plan is about to make.
struct PlannedMount {
  std::string mount_point;
  std::string server;                      // X: the address it will mount
  std::vector<std::string> nas_addresses;  // X's NAS's other addresses
  std::optional<std::string> vers;         // "3", "4", "4.1", "4.2"; absent: negotiated
};

// A mount the guest has now (from /proc/mounts).
struct GuestNfsMount {
  std::string mount_point;
  std::string address;  // effective addr=, not the device column (a trunked mount's device lies)
  std::string vers;     // effective vers=
};

struct TrunkingRisk {
  GuestNfsMount existing;  // the mount whose client the planned one would join
  // False when the planned version is negotiated: the risk is real only if the negotiation
  // lands on the existing mount's minor version (Linux keeps one client per minor version).
  bool certain = true;
  std::string message;
  std::vector<Remedy> remedies;
};

// One risk per existing mount that would capture the planned one; empty when there is none.
// A mount at the planned mount point is ignored: the plan re-makes it.
std::vector<TrunkingRisk> predict_trunking_risk(const PlannedMount& planned, std::span<const GuestNfsMount> existing);

// The same from /proc/mounts as the verifier sees it.
std::vector<GuestNfsMount> guest_nfs_mounts(std::span<const EffectiveMount> mounts);

}  // namespace pw::verify
