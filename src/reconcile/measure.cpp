// SPDX-License-Identifier: GPL-3.0-or-later
#include "reconcile/measure.hpp"

#include <algorithm>
#include <cstdint>
#include <map>

#include "plan/guest_requests.hpp"
#include "reconcile/evidence.hpp"
#include "reconcile/host_waves.hpp"
#include "report/run_report.hpp"

namespace pw::reconcile {
namespace {

using TapRead = std::map<proxmox::VmRef, proxmox::ApiResult<proxmox::VmStatus>>;

TapRead read_taps(const Context& ctx, const std::vector<proxmox::VmRef>& vms) {
  TapRead out;
  if (vms.empty()) return out;
  auto statuses = ctx.deps.api.vm_statuses(vms);
  for (std::size_t i = 0; i < vms.size() && i < statuses.size(); ++i) out.emplace(vms[i], std::move(statuses[i]));
  return out;
}

std::map<int, verify::TapBytes> tap_bytes(const proxmox::VmStatus& s) {
  std::map<int, verify::TapBytes> out;
  for (const auto& [n, c] : s.nics) out[n] = {c.netin, c.netout};
  return out;
}

// The host side of one path's measurement, or why it has none (said in the report: the verdict
// then rests on the guest's side alone).
verify::HostTapSamples host_samples(const plan::ProvePath& v, const TapRead& before, const TapRead& after) {
  verify::HostTapSamples h;
  if (v.vm.vmid == 0 || !v.nic) {
    h.unavailable = "guest-side only: the plan names no Proxmox NIC to read tap counters for";
    return h;
  }
  h.intended_net = *v.nic;
  const auto b = before.find(v.vm), a = after.find(v.vm);
  if (b == before.end() || a == after.end()) {
    h.unavailable = "guest-side only: the tap counters were not read";
    return h;
  }
  for (const auto* r : {&b->second, &a->second}) {
    if (!*r) {
      h.unavailable = "guest-side only: status/current of " + v.vm.to_string() + " failed: " + describe(r->error());
      return h;
    }
  }
  if (b->second->nics.empty() || a->second->nics.empty()) {
    h.unavailable = "guest-side only: Proxmox sent no tap counters (\"nics\") for " + v.vm.to_string() +
                    " (a stopped VM, an older Proxmox, or a proxy that drops them)";
    return h;
  }
  h.before = tap_bytes(*b->second);
  h.after = tap_bytes(*a->second);
  return h;
}

std::vector<Measured> measure_wave(const Context& ctx, std::span<const MeasureRequest> requests);

}  // namespace

// Several mounts of one guest are measured one after another (waves of at most one probe per
// guest): the guest's interface counters and the VM's taps then carry one probe's bytes, and the
// guest port answers per guest. Different guests still probe at once.
std::vector<Measured> measure(const Context& ctx, std::span<const MeasureRequest> requests) {
  std::vector<std::size_t> order(requests.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<Measured> out(requests.size());
  for (const auto& wave :
       host_waves(order, [&](std::size_t i) -> const std::string& { return requests[i].path->host; })) {
    std::vector<MeasureRequest> some;
    for (auto i : wave) some.push_back(requests[i]);
    auto measured = measure_wave(ctx, some);
    for (std::size_t k = 0; k < wave.size(); ++k) out[wave[k]] = std::move(measured[k]);
  }
  return out;
}

namespace {

// The adaptive probe of one wave of guests: probe, read the taps around it, verify, then grow or
// measure again. Long because the rounds share their state (sizes, file limits, what is finished).
std::vector<Measured> measure_wave(const Context& ctx, std::span<const MeasureRequest> requests) {
  std::vector<Measured> out(requests.size());
  std::vector<bool> finished(requests.size(), false);
  std::vector<std::uint64_t> file_limit(requests.size(), UINT64_MAX);
  for (std::size_t i = 0; i < requests.size(); ++i) out[i].bytes = requests[i].path->probe_bytes;
  for (int round = 0; round < ctx.options.max_measurements; ++round) {
    if (const int sig = round > 0 ? ctx.stop_signal() : 0) {
      // Stopped between rounds: the last measurement stands, as if the probe could not grow.
      for (std::size_t i = 0; i < requests.size(); ++i) {
        if (!finished[i])
          out[i].notes.push_back("not measured again: the run was stopped by " + report::signal_name(sig));
      }
      break;
    }
    std::vector<guest::ProbeRequest> probes;
    std::vector<proxmox::VmRef> vms;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (finished[i]) continue;
      const auto& v = *requests[i].path;
      auto probe = plan::probe_request(v, out[i].bytes);
      if (round > 0) probe.commit_cycles = 0;  // one figure per measurement, from the first probe
      probes.push_back(std::move(probe));
      if (v.vm.vmid != 0 && v.nic && std::find(vms.begin(), vms.end(), v.vm) == vms.end()) vms.push_back(v.vm);
      ctx.progress(Activity::probe, requests[i].policy, "probing " + v.probe_file, 0, out[i].bytes);
    }
    if (probes.empty()) break;
    // The taps' window holds the whole probe run: background only adds to it.
    const TapRead taps_before = read_taps(ctx, vms);
    auto outcomes = ctx.deps.guests.probe(probes);
    const TapRead taps_after = read_taps(ctx, vms);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (finished[i]) continue;
      auto& m = out[i];
      const auto& v = *requests[i].path;
      ++m.probes;
      auto it = outcomes.find(v.host);
      if (it == outcomes.end() || !it->second) {
        const std::string why = it == outcomes.end() ? "no result" : describe(it->second.error());
        m.errors.push_back("probe: " + why);
        verify::VerificationResult r;
        r.verdict = verify::Verdict::inconclusive;
        r.summary = "the probe failed: " + why;
        m.result = r;
        finished[i] = true;
        continue;
      }
      if (it->second->commit) {
        const auto& c = *it->second->commit;
        auto& f = m.commit.emplace();
        f.cycles = c.cycles;
        f.seconds = c.seconds;
        f.error = c.error;
        f.minimum = v.min_commit_rate;
      }
      const auto& run = it->second->run;
      if (run.bytes > 0) ctx.progress(Activity::probe, requests[i].policy, "probed " + v.probe_file, run.bytes);
      m.result = verify::verify_path(probe_input(v, *it->second, host_samples(v, taps_before, taps_after)));
      if (run.error) m.errors.push_back("probe: " + *run.error);
      // dd stopped short of what was asked without an error: the file ends there.
      if (v.direction == verify::ProbeDirection::read && !run.error && !run.open_error && !run.refused &&
          run.requested_bytes > 0 && run.bytes < run.requested_bytes)
        file_limit[i] = run.bytes;
      const std::uint64_t limit = std::min(v.max_probe_bytes, file_limit[i]);
      const auto& advice = m.result->advice;
      if (advice.next == verify::NextStep::grow_probe && advice.probe_bytes > m.bytes && m.bytes < limit) {
        m.bytes = std::min(advice.probe_bytes, limit);
        m.notes.push_back("probe grown: " + advice.reason);
      } else if (advice.next == verify::NextStep::grow_probe && limit < v.max_probe_bytes && m.bytes >= limit) {
        m.notes.push_back("the probe cannot grow past its file " + v.probe_file + " (" + std::to_string(limit >> 20) +
                          " MiB): a larger probe file lets it decide");
        finished[i] = true;
      } else if (advice.next == verify::NextStep::remeasure) {
        m.notes.push_back("measured again: " + advice.reason);
      } else {
        finished[i] = true;
      }
    }
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    auto& m = out[i];
    if (!m.result || !m.commit || !m.commit->below_minimum() || m.result->verdict != verify::Verdict::verified)
      continue;
    m.result->verdict = verify::Verdict::inconclusive;
    // No figure at all (the cycles could not run) is not "too slow": it says why instead.
    m.result->summary += m.commit->per_second()
                             ? "; but commits are too slow: " + m.commit->describe()
                             : "; but the policy's min_commit_rate could not be checked: " + m.commit->describe();
  }
  return out;
}

}  // namespace

report::Verification verification_of(const Measured& m, const plan::ProvePath& v) {
  auto out = verification_report(*m.result, v, m.bytes, m.probes);
  out.commit = m.commit;
  return out;
}

}  // namespace pw::reconcile
