// SPDX-License-Identifier: GPL-3.0-or-later
// The run as a node_exporter textfile (README "Prometheus textfile"): this run's policies only,
// every series labelled with the shard, so two shards' files never repeat a series.
#include <cmath>
#include <ctime>
#include <iomanip>
#include <sstream>

#include "report/run_report.hpp"

namespace pw::report {

namespace {

// Prometheus label values escape backslash, quote and newline.
std::string label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::optional<double> unix_seconds(std::string_view rfc3339) {
  std::tm tm{};
  std::istringstream in{std::string(rfc3339)};
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return std::nullopt;
  double fraction = 0;
  if (in.peek() == '.') in >> fraction;  // ".123Z": the milliseconds the reports write
  return static_cast<double>(timegm(&tm)) + (fraction > 0 && fraction < 1 ? fraction : 0.0);
}

// Long because the textfile is one list of metric families, each a few lines, in the order
// the README documents them.
std::string render_prometheus(const RunReport& r, const std::map<std::string, StoredFigures>& stored,
                              const MetricsLabels& labels) {
  const std::string shard = "shard=\"" + label(labels.shard) + "\"";
  // shard, policy, node, vmid: one policy's series, joinable with prometheus-pve-exporter's.
  auto of = [&](const PolicyReport& p) {
    return shard + ",policy=\"" + label(p.policy) + "\",node=\"" + label(p.node) + "\",vmid=\"" +
           std::to_string(p.vmid) + "\"";
  };
  auto figures = [&](const PolicyReport& p) -> const StoredFigures* {
    const auto it = stored.find(p.policy);
    return it == stored.end() ? nullptr : &it->second;
  };
  // This run's probe, else the last one the result store keeps (a converged run probes nothing).
  auto probe = [&](const PolicyReport& p) -> const Verification* {
    if (p.verification && !p.verification->interfaces.empty()) return &*p.verification;
    const auto* f = figures(p);
    return f != nullptr && f->last_probe ? &*f->last_probe : nullptr;
  };
  std::ostringstream out;
  out << "# HELP pathwarden_build_info The pathwarden that wrote this file (always 1).\n"
         "# TYPE pathwarden_build_info gauge\n"
      << "pathwarden_build_info{" << shard << ",version=\"" << label(PW_VERSION) << "\",commit=\""
      << label(labels.commit) << "\"} 1\n";
  out << "# HELP pathwarden_policy_verdict Verdict of the policy's last run (1 for the current verdict).\n"
         "# TYPE pathwarden_policy_verdict gauge\n";
  for (const auto& p : r.policies) {
    for (const auto v : kVerdicts) {
      out << "pathwarden_policy_verdict{" << of(p) << ",verdict=\"" << v << "\"} " << (p.verdict == v ? 1 : 0) << "\n";
    }
  }
  out << "# HELP pathwarden_probe_bytes Bytes each interface carried during the policy's last verification probe "
         "(this run's, else the last stored).\n# TYPE pathwarden_probe_bytes gauge\n";
  for (const auto& p : r.policies) {
    if (const auto* v = probe(p)) {
      for (const auto& i : v->interfaces) {
        out << "pathwarden_probe_bytes{" << of(p) << ",interface=\"" << label(i.name) << "\",intended=\""
            << (i.intended ? "true" : "false") << "\"} " << v->probe_bytes_of(i) << "\n";
      }
    }
  }
  out << "# HELP pathwarden_probe_throughput_bytes_per_second Throughput of the policy's last verification probe.\n"
         "# TYPE pathwarden_probe_throughput_bytes_per_second gauge\n";
  for (const auto& p : r.policies) {
    if (const auto* v = probe(p); v != nullptr && v->throughput) {
      out << "pathwarden_probe_throughput_bytes_per_second{" << of(p) << "} "
          << static_cast<std::uint64_t>(std::llround(*v->throughput)) << "\n";
    }
  }
  out << "# HELP pathwarden_policy_last_success_timestamp_seconds When the policy was last found verified or "
         "converged.\n# TYPE pathwarden_policy_last_success_timestamp_seconds gauge\n";
  for (const auto& p : r.policies) {
    std::optional<double> when;
    if (p.verdict == Verdict::verified || p.verdict == Verdict::converged) {
      when = unix_seconds(r.finished_at);
    } else if (const auto* f = figures(p)) {
      when = f->last_success;
    }
    if (when)
      out << "pathwarden_policy_last_success_timestamp_seconds{" << of(p) << "} " << std::llround(*when) << "\n";
  }
  out << "# HELP pathwarden_policy_last_verified_timestamp_seconds When a probe last proved the policy's path "
         "(verified).\n# TYPE pathwarden_policy_last_verified_timestamp_seconds gauge\n";
  for (const auto& p : r.policies) {
    std::optional<double> when = p.verdict == Verdict::verified ? unix_seconds(r.finished_at) : std::nullopt;
    if (const auto* f = figures(p); !when && f != nullptr) when = f->last_verified;
    if (when)
      out << "pathwarden_policy_last_verified_timestamp_seconds{" << of(p) << "} " << std::llround(*when) << "\n";
  }
  out << "# HELP pathwarden_run_exit_code Exit code of the last run.\n# TYPE pathwarden_run_exit_code gauge\n"
      << "pathwarden_run_exit_code{" << shard << "} " << exit_code(r) << "\n";
  const auto started = unix_seconds(r.started_at);
  const auto finished = unix_seconds(r.finished_at);
  if (finished) {
    out << "# HELP pathwarden_run_last_timestamp_seconds When the last run finished.\n"
           "# TYPE pathwarden_run_last_timestamp_seconds gauge\n"
        << "pathwarden_run_last_timestamp_seconds{" << shard << "} " << std::fixed << std::setprecision(3) << *finished
        << "\n";
  }
  if (started && finished) {
    out << "# HELP pathwarden_run_duration_seconds How long the last run took.\n"
           "# TYPE pathwarden_run_duration_seconds gauge\n"
        << "pathwarden_run_duration_seconds{" << shard << "} " << std::fixed << std::setprecision(3)
        << std::max(0.0, *finished - *started) << "\n";
  }
  return out.str();
}

}  // namespace pw::report
