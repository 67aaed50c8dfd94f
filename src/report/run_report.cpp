#include "report/run_report.hpp"

#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace pw::report {

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::converged: return verdict::converged;
    case Verdict::drift: return verdict::drift;
    case Verdict::verified: return verdict::verified;
    case Verdict::wrong_path: return verdict::wrong_path;
    case Verdict::inconclusive: return verdict::inconclusive;
    case Verdict::precondition_failed: return verdict::precondition_failed;
    case Verdict::rolled_back: return verdict::rolled_back;
    case Verdict::rollback_failed: return verdict::rollback_failed;
  }
  return "?";
}

std::optional<Verdict> verdict_from(std::string_view text) {
  for (auto v : {Verdict::converged, Verdict::drift, Verdict::verified, Verdict::wrong_path, Verdict::inconclusive,
                 Verdict::precondition_failed, Verdict::rolled_back, Verdict::rollback_failed}) {
    if (to_string(v) == text) return v;
  }
  return std::nullopt;
}

namespace json = boost::json;

int exit_code(const RunReport& r) {
  bool applied = false, drift = false, failed = false, rollback_failed = r.journal_left;
  for (const auto& p : r.policies) {
    if (p.verdict == verdict::rollback_failed) rollback_failed = true;
    else if (p.verdict == verdict::rolled_back || p.verdict == verdict::wrong_path ||
             (p.verdict == verdict::inconclusive && !p.changes.empty()))
      failed = true;
    else if (p.verdict == verdict::drift || p.verdict == verdict::precondition_failed ||
             (p.verdict == verdict::inconclusive && p.changes.empty()))
      drift = true;
    else if (p.verdict == verdict::verified && !p.changes.empty())
      applied = true;
  }
  if (rollback_failed) return 5;
  if (failed) return 4;
  if (drift) return 3;
  if (applied) return 2;
  return 0;
}

std::string human_bytes(std::uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1ull << 30));
  else if (bytes >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1ull << 20));
  else if (bytes >= (1ull << 10)) std::snprintf(buf, sizeof buf, "%.1f KiB", b / (1ull << 10));
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

std::string human_rate(double bps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB/s", bps / 1e6);
  return buf;
}

namespace {

json::array strings(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

template <class T>
json::value opt(const std::optional<T>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::value verification_json(const Verification& v) {
  json::array ifs;
  for (const auto& i : v.interfaces) {
    ifs.push_back(json::object{{"name", i.name},
                               {"mac", i.mac},
                               {"intended", i.intended},
                               {"rx_bytes", i.rx_bytes},
                               {"tx_bytes", i.tx_bytes},
                               {"net_bytes", i.net_bytes},
                               {"speed_mbps", opt(i.speed_mbps)}});
  }
  return json::object{{"verdict", v.verdict},
                      {"summary", v.summary},
                      {"direction", v.direction},
                      {"probe_bytes", v.probe_bytes},
                      {"probes", v.probes},
                      {"interfaces", std::move(ifs)},
                      {"intended_share", opt(v.intended_share)},
                      {"throughput_bytes_per_second", opt(v.throughput)},
                      {"exactly_old_number", opt(v.exactly_old_number)},
                      {"diagnosis", opt(v.diagnosis)},
                      {"remedies", strings(v.remedies)},
                      {"failed_preconditions", strings(v.failed_preconditions)}};
}

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

json::value to_json(const RunReport& r) {
  json::array policies;
  for (const auto& p : r.policies) {
    policies.push_back(json::object{{"policy", p.policy},
                                    {"source", p.source},
                                    {"node", p.node},
                                    {"vmid", p.vmid},
                                    {"host", p.host},
                                    {"verdict", p.verdict},
                                    {"cause", p.cause.empty() ? json::value(nullptr) : json::value(p.cause)},
                                    {"changed", !p.changes.empty()},
                                    {"planned", strings(p.planned)},
                                    {"changes", strings(p.changes)},
                                    {"rolled_back", strings(p.rolled_back)},
                                    {"verification", p.verification ? verification_json(*p.verification) : nullptr},
                                    {"restored_checks", strings(p.restored_checks)},
                                    {"warnings", strings(p.warnings)},
                                    {"errors", strings(p.errors)},
                                    {"notes", strings(p.notes)}});
  }
  return json::object{{"schema", "pathwarden-report/v1"},
                      {"run_id", r.run_id},
                      {"plan_id", r.plan_id},
                      {"mode", r.mode},
                      {"started_at", r.started_at},
                      {"finished_at", r.finished_at},
                      {"policies_revision", r.policies_revision},
                      {"policies_dirty", r.policies_dirty},
                      {"journal_left", r.journal_left},
                      {"exit_code", exit_code(r)},
                      {"policies", std::move(policies)}};
}

std::string render_text(const RunReport& r, bool colour) {
  auto paint = [&](const std::string& text, const char* code) {
    return colour ? std::string("\033[") + code + "m" + text + "\033[0m" : text;
  };
  auto verdict_colour = [](const std::string& v) {
    if (v == verdict::verified || v == verdict::converged) return "32";
    if (v == verdict::rolled_back || v == verdict::wrong_path || v == verdict::rollback_failed) return "31";
    return "33";
  };
  std::ostringstream out;
  out << "Run " << r.run_id << " (" << r.mode << ")";
  if (!r.policies_revision.empty()) {
    out << ", policies at " << r.policies_revision.substr(0, 12) << (r.policies_dirty ? " (dirty)" : "");
  }
  out << "\n";
  for (const auto& p : r.policies) {
    out << "\n" << paint(p.policy, "1") << ": " << paint(p.verdict, verdict_colour(p.verdict));
    if (!p.cause.empty()) out << " (verification: " << p.cause << ")";
    out << "  VM " << p.vmid << " on " << p.node << ", host " << p.host << "\n";
    for (const auto& s : p.changes) out << "  changed: " << s << "\n";
    for (const auto& s : p.planned) {
      if (p.changes.empty() && p.verdict != verdict::converged) out << "  planned: " << s << "\n";
    }
    if (p.verification) {
      const auto& v = *p.verification;
      out << "  verification: " << v.summary << "\n";
      for (const auto& i : v.interfaces) {
        const auto bytes = v.direction == "read" ? i.rx_bytes : i.tx_bytes;
        out << "    " << (i.intended ? "→ " : "  ") << i.name << " (" << i.mac << ")" << std::string(i.name.size() < 10 ? 10 - i.name.size() : 1, ' ')
            << (v.direction == "read" ? "rx " : "tx ") << human_bytes(bytes)
            << (i.intended ? "   intended" : "") << "\n";
      }
      if (v.throughput) out << "    throughput " << human_rate(*v.throughput) << "\n";
      if (v.exactly_old_number) out << "    " << paint("! " + *v.exactly_old_number, "33") << "\n";
      if (v.diagnosis) out << "    diagnosis: " << *v.diagnosis << "\n";
      for (const auto& rem : v.remedies) out << "    remedy: " << rem << "\n";
      for (const auto& pre : v.failed_preconditions) out << "    precondition: " << pre << "\n";
    }
    for (const auto& s : p.rolled_back) out << "  rolled back: " << s << "\n";
    for (const auto& s : p.restored_checks) out << "  restored: " << s << "\n";
    for (const auto& s : p.warnings) out << "  " << paint("warning: " + s, "33") << "\n";
    for (const auto& s : p.errors) out << "  " << paint("error: " + s, "31") << "\n";
  }
  out << "\nexit code " << exit_code(r);
  if (r.journal_left) out << " (a journal needs 'pathwarden recover')";
  out << "\n";
  return out.str();
}

std::string render_prometheus(const RunReport& r, const std::map<std::string, double>& last_success) {
  std::ostringstream out;
  static constexpr const char* kVerdicts[] = {verdict::converged, verdict::drift, verdict::verified,
                                              verdict::wrong_path, verdict::inconclusive, verdict::precondition_failed,
                                              verdict::rolled_back, verdict::rollback_failed};
  out << "# HELP pathwarden_policy_verdict Verdict of the policy's last run (1 for the current verdict).\n"
         "# TYPE pathwarden_policy_verdict gauge\n";
  for (const auto& p : r.policies) {
    for (const char* v : kVerdicts) {
      out << "pathwarden_policy_verdict{policy=\"" << label(p.policy) << "\",verdict=\"" << v << "\"} "
          << (p.verdict == v ? 1 : 0) << "\n";
    }
  }
  out << "# HELP pathwarden_probe_bytes Bytes each interface carried during the last verification probe.\n"
         "# TYPE pathwarden_probe_bytes gauge\n";
  for (const auto& p : r.policies) {
    if (!p.verification) continue;
    for (const auto& i : p.verification->interfaces) {
      out << "pathwarden_probe_bytes{policy=\"" << label(p.policy) << "\",interface=\"" << label(i.name)
          << "\",intended=\"" << (i.intended ? "true" : "false") << "\"} "
          << (p.verification->direction == "read" ? i.rx_bytes : i.tx_bytes) << "\n";
    }
  }
  out << "# HELP pathwarden_probe_throughput_bytes_per_second Throughput of the last verification probe.\n"
         "# TYPE pathwarden_probe_throughput_bytes_per_second gauge\n";
  for (const auto& p : r.policies) {
    if (p.verification && p.verification->throughput) {
      out << "pathwarden_probe_throughput_bytes_per_second{policy=\"" << label(p.policy) << "\"} "
          << static_cast<std::uint64_t>(std::llround(*p.verification->throughput)) << "\n";
    }
  }
  out << "# HELP pathwarden_policy_last_success_timestamp_seconds When the policy was last found verified or "
         "converged.\n# TYPE pathwarden_policy_last_success_timestamp_seconds gauge\n";
  for (const auto& [policy, when] : last_success) {
    out << "pathwarden_policy_last_success_timestamp_seconds{policy=\"" << label(policy) << "\"} "
        << static_cast<std::int64_t>(when) << "\n";
  }
  out << "# HELP pathwarden_run_exit_code Exit code of the last run.\n# TYPE pathwarden_run_exit_code gauge\n"
      << "pathwarden_run_exit_code " << exit_code(r) << "\n";
  return out.str();
}

}  // namespace pw::report
