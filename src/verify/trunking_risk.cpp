// SPDX-License-Identifier: GPL-3.0-or-later
#include "verify/trunking_risk.hpp"

#include <algorithm>

namespace pw::verify {
namespace {

// The minor version the planned mount will use; nullopt when not NFSv4 at all, -1 when the
// client negotiates it ("4" or no vers: Linux asks for the highest, 4.2 on current kernels).
std::optional<int> planned_minor(const std::optional<std::string>& vers) {
  if (!vers || *vers == "4") return -1;
  return nfs4_minor(*vers);
}

bool is_nas_address(const PlannedMount& p, const std::string& a) {
  return same_address(p.server, a) || std::any_of(p.nas_addresses.begin(), p.nas_addresses.end(),
                                                  [&](const std::string& x) { return same_address(x, a); });
}

}  // namespace

std::vector<TrunkingRisk> predict_trunking_risk(const PlannedMount& planned, std::span<const GuestNfsMount> existing) {
  std::vector<TrunkingRisk> out;
  const auto minor = planned_minor(planned.vers);
  if (!minor || *minor == 0) return out;  // NFSv3 and v4.0 do not trunk

  auto same_minor = [&](const GuestNfsMount& m) {
    const auto em = nfs4_minor(m.vers);
    if (!em || *em < 1) return false;
    return *minor == -1 || *em == *minor;
  };
  // Evidence that the NAS does not trunk X with F: right now one mount rides X and another F,
  // with one minor version. A server that answers both addresses with one client ID cannot get
  // there (the second mount joins the first's client: K61 fs/nfs/nfs4client.c nfs4_match_client,
  // nfs41_walk_client_list); NFS-Ganesha does, as it keys its client records by the server
  // address the client connected to (NG V4.3 src/SAL/nfs4_clientid.c get_client_record,
  // client_record_value_hash; nfs4_op_exchange_id.c get_raddr). The planned mount point's own
  // mount counts here: it is re-made, but it shows what the server does.
  auto rides_x_beside = [&](const GuestNfsMount& other) {
    return std::any_of(existing.begin(), existing.end(), [&](const GuestNfsMount& x) {
      return same_address(x.address, planned.server) && nfs4_minor(x.vers) && nfs4_minor(other.vers) &&
             *nfs4_minor(x.vers) == *nfs4_minor(other.vers);
    });
  };
  std::vector<const GuestNfsMount*> others;
  for (const auto& m : existing) {
    if (m.mount_point == planned.mount_point || !same_minor(m) || !is_nas_address(planned, m.address)) continue;
    // A client for X itself already exists: the planned mount joins that one, not another.
    if (same_address(m.address, planned.server) && (*minor != -1 || nfs4_minor(m.vers) == 2)) return {};
    if (!same_address(m.address, planned.server) && !rides_x_beside(m)) others.push_back(&m);
  }
  std::vector<std::string> all_mounts{planned.mount_point};
  for (const auto* m : others) all_mounts.push_back(m->mount_point);
  for (const auto* m : others) {
    TrunkingRisk r;
    r.existing = *m;
    r.certain = *minor != -1;
    r.message = planned.mount_point + " would mount " + planned.server + " with NFSv" +
                (*minor == -1 ? std::string("4 (negotiated, likely 4.2)") : planned.vers.value_or("")) +
                ", but the guest already reaches this NAS through " + m->address + " (" + m->mount_point +
                ", vers=" + m->vers +
                "): NFSv4.1+ trunking would reuse that transport and the bytes would stay on its link, " +
                std::string(kTrunkingNeedsOneClientId);
    if (planned.server.find(':') == std::string::npos && m->address.find(':') == std::string::npos)
      r.remedies.push_back({RemedyKind::move_transport,
                            "keep NFSv4: spec.mount.trunking: move-transport moves the client from " + m->address +
                                " to " + planned.server + " after the mount, and points the NAS's entries at it",
                            all_mounts});
    r.remedies.push_back({RemedyKind::pin_nfs_v3,
                          "pin vers=3 on " + planned.mount_point + " and write the reason next to it",
                          {planned.mount_point}});
    r.remedies.push_back({RemedyKind::remount_all_of_server,
                          "unmount every NFSv4.1+ mount of this NAS and mount " + planned.mount_point + " via " +
                              planned.server + " first",
                          all_mounts});
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<GuestNfsMount> guest_nfs_mounts(std::span<const EffectiveMount> mounts) {
  std::vector<GuestNfsMount> out;
  for (const auto& m : mounts) out.push_back({m.mount_point, m.effective_address(), m.version()});
  return out;
}

}  // namespace pw::verify
