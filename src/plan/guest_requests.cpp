#include "plan/guest_requests.hpp"

#include <algorithm>
#include <chrono>

namespace pw::plan {

namespace {
// Without a baseline window the verifier cannot tell background traffic from the probe's bytes.
constexpr std::chrono::milliseconds kMinBaseline{500};
}  // namespace

guest::FstabChange fstab_change(const ChangeFstab& s) {
  return {s.host, s.old_sha256, s.new_content, s.backup_path, s.activations};
}

guest::FstabRestore fstab_restore(const ChangeFstab& s) {
  return {s.host, s.backup_path, s.old_sha256, s.new_sha256, s.inverse_activations};
}

guest::ChannelsRequest channels_change(const SetChannels& s) { return {s.host, s.interface, s.to}; }

guest::ChannelsRequest channels_restore(const SetChannels& s) { return {s.host, s.interface, s.from, true}; }

guest::ProbeRequest probe_request(const VerifyPath& v, std::uint64_t bytes) {
  guest::ProbeRequest r;
  r.host = v.host;
  r.path = v.probe_file;
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
  for (const auto& p : plan.policies) {
    if (std::find(out.facts_hosts.begin(), out.facts_hosts.end(), p.host) == out.facts_hosts.end()) {
      out.facts_hosts.push_back(p.host);
    }
    for (const auto& step : p.steps) {
      if (const auto* f = std::get_if<ChangeFstab>(&step.action)) {
        out.fstab_changes.push_back(fstab_change(*f));
        out.fstab_restores.push_back(fstab_restore(*f));
      } else if (const auto* c = std::get_if<SetChannels>(&step.action)) {
        out.channels_changes.push_back(channels_change(*c));
        out.channels_restores.push_back(channels_restore(*c));
      } else if (const auto* v = std::get_if<VerifyPath>(&step.action)) {
        out.probes.push_back(probe_request(*v, v->probe_bytes));
      }
    }
  }
  return out;
}

}  // namespace pw::plan
