// The run as a node_exporter textfile (README "Prometheus textfile"): this run's policies only,
// every series labelled with the shard, so two shards' files never repeat a series.
#include <cmath>
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

std::string render_prometheus(const RunReport& r, const std::map<std::string, double>& last_success,
                              const MetricsLabels& labels) {
  const std::string shard = "shard=\"" + label(labels.shard) + "\"";
  // shard, policy, node, vmid: one policy's series, joinable with prometheus-pve-exporter's.
  auto of = [&](const PolicyReport& p) {
    return shard + ",policy=\"" + label(p.policy) + "\",node=\"" + label(p.node) + "\",vmid=\"" +
           std::to_string(p.vmid) + "\"";
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
  out << "# HELP pathwarden_probe_bytes Bytes each interface carried during the last verification probe.\n"
         "# TYPE pathwarden_probe_bytes gauge\n";
  for (const auto& p : r.policies) {
    if (!p.verification) continue;
    for (const auto& i : p.verification->interfaces) {
      out << "pathwarden_probe_bytes{" << of(p) << ",interface=\"" << label(i.name) << "\",intended=\""
          << (i.intended ? "true" : "false") << "\"} " << p.verification->probe_bytes_of(i) << "\n";
    }
  }
  out << "# HELP pathwarden_probe_throughput_bytes_per_second Throughput of the last verification probe.\n"
         "# TYPE pathwarden_probe_throughput_bytes_per_second gauge\n";
  for (const auto& p : r.policies) {
    if (p.verification && p.verification->throughput) {
      out << "pathwarden_probe_throughput_bytes_per_second{" << of(p) << "} "
          << static_cast<std::uint64_t>(std::llround(*p.verification->throughput)) << "\n";
    }
  }
  out << "# HELP pathwarden_policy_last_success_timestamp_seconds When the policy was last found verified or "
         "converged.\n# TYPE pathwarden_policy_last_success_timestamp_seconds gauge\n";
  for (const auto& p : r.policies) {
    if (const auto when = last_success.find(p.policy); when != last_success.end()) {
      out << "pathwarden_policy_last_success_timestamp_seconds{" << of(p) << "} "
          << static_cast<std::int64_t>(when->second) << "\n";
    }
  }
  out << "# HELP pathwarden_run_exit_code Exit code of the last run.\n# TYPE pathwarden_run_exit_code gauge\n"
      << "pathwarden_run_exit_code{" << shard << "} " << exit_code(r) << "\n";
  return out.str();
}

}  // namespace pw::report
