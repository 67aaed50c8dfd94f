// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/guest_requests.hpp"

#include <algorithm>
#include <chrono>

#include "plan/guest_writes.hpp"

namespace pw::plan {

namespace {
// Without a baseline window the verifier cannot tell background traffic from the probe's bytes.
constexpr std::chrono::milliseconds kMinBaseline{500};
}  // namespace

guest::FstabChange fstab_change(const ChangeFstab& s) {
  return {s.host, s.old_sha256, s.new_content, s.backup_path, s.activations, s.old_content};
}

guest::FstabRestore fstab_restore(const ChangeFstab& s) {
  return {s.host, s.backup_path, s.old_sha256, s.new_sha256, s.inverse_activations};
}

guest::ChannelsRequest channels_change(const SetChannels& s) {
  return {s.host, s.interface, s.to};
}

guest::ChannelsRequest channels_restore(const SetChannels& s) {
  return {s.host, s.interface, s.from, true};
}

guest::TransportMove transport_move(const MoveTransport& s) {
  return {s.host, s.mount_point, s.mounted_as, s.from, s.to, false};
}

guest::TransportMove transport_restore(const MoveTransport& s) {
  return {s.host, s.mount_point, s.mounted_as, s.to, s.from, true};
}

guest::ProbeRequest probe_request(const ProvePath& v, std::uint64_t bytes) {
  guest::ProbeRequest r;
  r.host = v.host;
  r.path = v.probe_file;
  r.mount_point = v.mount_point;
  r.as_root = v.probe_as_root;
  r.bytes = bytes;
  r.direction = v.direction;
  r.baseline = std::max(std::chrono::milliseconds(v.baseline_ms), kMinBaseline);
  if (v.commit_cycles > 0) {
    r.commit_cycles = v.commit_cycles;
    r.commit_path = v.probe_file + ".pathwarden-commit";
  }
  return r;
}

guest::RequestSet guest_requests(const Plan& plan) {
  guest::RequestSet out;
  // A guest's policies make one fstab write (plan/guest_writes.hpp): one change and one restore
  // per guest, with every writer's mounts.
  std::vector<std::vector<std::vector<guest::MountActivation>>> forward, inverse;
  for (const auto& p : plan.policies) {
    if (std::find(out.facts_hosts.begin(), out.facts_hosts.end(), p.host) == out.facts_hosts.end()) {
      out.facts_hosts.push_back(p.host);
    }
    for (const auto& step : p.steps) {
      if (const auto* f = std::get_if<ChangeFstab>(&step.action)) {
        auto it = std::find_if(out.fstab_changes.begin(), out.fstab_changes.end(),
                               [&](const guest::FstabChange& c) { return c.host == f->host; });
        if (it == out.fstab_changes.end()) {
          out.fstab_changes.push_back(fstab_change(*f));
          out.fstab_restores.push_back(fstab_restore(*f));
          forward.emplace_back();
          inverse.emplace_back();
          it = out.fstab_changes.end() - 1;
        }
        const auto k = static_cast<std::size_t>(it - out.fstab_changes.begin());
        forward[k].push_back(f->activations);
        inverse[k].push_back(f->inverse_activations);
        out.fstab_changes[k].activations = merged_activations(forward[k]);
        out.fstab_restores[k].activations = merged_activations(inverse[k]);
      } else if (const auto* c = std::get_if<SetChannels>(&step.action)) {
        out.channels_changes.push_back(channels_change(*c));
        out.channels_restores.push_back(channels_restore(*c));
      } else if (const auto* m = std::get_if<MoveTransport>(&step.action)) {
        out.transport_moves.push_back(transport_move(*m));
        out.transport_restores.push_back(transport_restore(*m));
      } else if (const auto* v = std::get_if<ProvePath>(&step.action)) {
        out.probes.push_back(probe_request(*v, v->probe_bytes));
      }
    }
  }
  return out;
}

}  // namespace pw::plan
