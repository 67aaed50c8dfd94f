// SPDX-License-Identifier: GPL-3.0-or-later
#include "report/run_report.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <ostream>
#include <sstream>

namespace pw::report {

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::converged:
      return "converged";  // nothing to do
    case Verdict::drift:
      return "drift";  // check mode: changes would be made
    case Verdict::verified:
      return "verified";
    case Verdict::wrong_path:
      return "wrong-path";
    case Verdict::inconclusive:
      return "inconclusive";
    case Verdict::precondition_failed:
      return "precondition-failed";
    case Verdict::rolled_back:
      return "rolled-back";
    case Verdict::rollback_failed:
      return "rollback-failed";
    case Verdict::unobserved:
      return "unobserved";  // the API or the guest did not answer
  }
  return "?";
}

std::optional<Verdict> verdict_from(std::string_view text) {
  for (auto v : kVerdicts) {
    if (to_string(v) == text) return v;
  }
  return std::nullopt;
}

std::string_view to_string(RollbackCause c) {
  switch (c) {
    case RollbackCause::wrong_path:
      return "wrong-path";
    case RollbackCause::inconclusive:
      return "inconclusive";
    case RollbackCause::precondition_failed:
      return "precondition-failed";
    case RollbackCause::apply_failed:
      return "apply-failed";
    case RollbackCause::interrupted:
      return "interrupted";
    case RollbackCause::conflict:
      return "conflict";
  }
  return "?";
}

std::string cause_label(RollbackCause c) {
  switch (c) {
    case RollbackCause::wrong_path:
    case RollbackCause::inconclusive:
    case RollbackCause::precondition_failed:
      return "verification: " + std::string(to_string(c));
    case RollbackCause::apply_failed:
      return "apply failed";
    case RollbackCause::interrupted:
    case RollbackCause::conflict:
      return std::string(to_string(c));
  }
  return std::string(to_string(c));
}

std::optional<RollbackCause> rollback_cause_of(Verdict v) {
  switch (v) {
    case Verdict::wrong_path:
      return RollbackCause::wrong_path;
    case Verdict::inconclusive:
      return RollbackCause::inconclusive;
    case Verdict::precondition_failed:
      return RollbackCause::precondition_failed;
    default:
      return std::nullopt;
  }
}

std::ostream& operator<<(std::ostream& out, RollbackCause c) {
  return out << to_string(c);
}

Tone tone_of(Verdict v) {
  switch (v) {
    case Verdict::verified:
    case Verdict::converged:
      return Tone::good;
    case Verdict::rolled_back:
    case Verdict::wrong_path:
    case Verdict::rollback_failed:
      return Tone::bad;
    case Verdict::unobserved:
      return Tone::unknown;
    case Verdict::drift:
    case Verdict::inconclusive:
    case Verdict::precondition_failed:
      return Tone::attention;
  }
  return Tone::attention;
}

std::string human_duration(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  auto two = [](long long a, const char* ua, long long b, const char* ub) {
    return std::to_string(a) + " " + ua + (b > 0 ? " " + std::to_string(b) + " " + ub : std::string());
  };
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return two(s / 60, "min", s % 60, "s");
  if (s < 86400) return two(s / 3600, "h", (s % 3600) / 60, "min");
  return two(s / 86400, "d", (s % 86400) / 3600, "h");
}

std::string time_ago(std::string_view rfc3339, double now) {
  const auto then = unix_seconds(rfc3339);
  if (!then) return {};
  const double age = now - *then;
  if (age < -1) return "in the future (the clocks disagree)";
  if (age < 1) return "just now";
  return human_duration(age) + " ago";
}

std::vector<std::string> unobserved_remedies(const PolicyReport& p) {
  const std::string host = p.host.empty() ? "the guest" : p.host;
  return {"nothing was judged and nothing changed: the errors say what did not answer",
          "for the guest: check that " + host + " is up and that Ansible reaches it as the inventory says (ansible " +
              (p.host.empty() ? "HOST" : p.host) + " -i INVENTORY -m ping, as the SSH user of the settings)",
          "for Proxmox: pathwarden proxmox nics names what fails (the address, TLS, the token, a privilege)",
          "the next run observes it again; until then its exit code is 6"};
}

std::ostream& operator<<(std::ostream& out, Verdict v) {
  return out << to_string(v);
}

std::string_view to_string(RunMode m) {
  switch (m) {
    case RunMode::reconcile:
      return "reconcile";
    case RunMode::check:
      return "check";
    case RunMode::apply:
      return "apply";
    case RunMode::verify:
      return "verify";
    case RunMode::recover:
      return "recover";
    case RunMode::last_results:
      return "last-results";
  }
  return "?";
}

namespace json = boost::json;

ExitReason exit_reason(Verdict v, bool changed) {
  switch (v) {
    case Verdict::rollback_failed:
      return ExitReason::rollback_failed;
    case Verdict::rolled_back:
    case Verdict::wrong_path:
      return ExitReason::failed;
    case Verdict::inconclusive:  // kept by the policy: a change not proven; found by a check: drift
      return changed ? ExitReason::failed : ExitReason::drift;
    case Verdict::drift:
    case Verdict::precondition_failed:
      return ExitReason::drift;
    case Verdict::unobserved:
      return ExitReason::unobserved;
    case Verdict::verified:
    case Verdict::converged:  // converged with changes: a comment written, the mount left alone
      return changed ? ExitReason::applied : ExitReason::nothing_to_do;
  }
  return ExitReason::drift;
}

int exit_code(const RunReport& r, bool outputs_failed) {
  auto rank = [](ExitReason reason) {
    for (std::size_t i = 0; i < std::size(kExitCodes); ++i) {
      if (kExitCodes[i].reason == reason) return i;
    }
    return std::size(kExitCodes);
  };
  auto worst = ExitReason::nothing_to_do;
  auto meet = [&](ExitReason reason) {
    if (rank(reason) < rank(worst)) worst = reason;
  };
  if (r.journal_left) meet(ExitReason::rollback_failed);
  if (r.stopped_by_signal > 0) meet(ExitReason::stopped);
  if (outputs_failed) meet(ExitReason::output_failed);
  for (const auto& p : r.policies) meet(exit_reason(p.verdict, !p.changes.empty()));
  for (const auto& row : kExitCodes) {
    if (row.reason == worst) return row.code + (worst == ExitReason::stopped ? r.stopped_by_signal : 0);
  }
  return 0;
}

std::vector<ExitCodeLine> exit_code_list() {
  std::vector<std::pair<int, std::string_view>> rows{{1, "bad usage, or a bad policy or settings file"}};
  for (const auto& row : kExitCodes) rows.emplace_back(row.code, row.meaning);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ExitCodeLine> out;
  for (const auto& [code, meaning] : rows) {
    if (code == 128)
      out.push_back({"128+N", meaning.substr(meaning.find(": ") + 2)});
    else
      out.push_back({std::to_string(code), meaning});
  }
  return out;
}

std::string exit_code_lines(std::string_view indent) {
  std::string out;
  for (const auto& line : exit_code_list()) {
    out += std::string(indent) + line.code + std::string(line.code.size() < 6 ? 6 - line.code.size() : 1, ' ') +
           std::string(line.meaning) + "\n";
  }
  if (!out.empty()) out.pop_back();  // the caller ends the last line
  return out;
}

std::string signal_name(int signal) {
  switch (signal) {
    case 1:
      return "SIGHUP";
    case 2:
      return "SIGINT";
    case 15:
      return "SIGTERM";
    default:
      return "signal " + std::to_string(signal);
  }
}

int signal_number(std::string_view name) {
  for (int s : {1, 2, 15}) {
    if (signal_name(s) == name) return s;
  }
  if (name.starts_with("signal ")) {
    int n = 0;
    auto digits = name.substr(7);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec == std::errc{} && p == digits.data() + digits.size() && n > 0 && n < 128) return n;
  }
  return 0;
}

std::string human_bytes(std::uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1ull << 30));
  else if (bytes >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1ull << 20));
  else if (bytes >= (1ull << 10))
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / (1ull << 10));
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

namespace {

// A rate as people write it: whole above 10, else two significant digits. min_commit_rate may be
// below 1 (a slow archive), and "%.0f" would print 0.5 as "0": "below the policy's minimum of 0".
std::string rate_text(double rate) {
  char buf[64];
  std::snprintf(buf, sizeof buf, rate >= 10 ? "%.0f" : "%.2g", rate);
  return buf;
}

}  // namespace

std::string CommitFigure::describe() const {
  if (error) return "commit latency not measured: " + *error;
  char buf[200];
  const auto rate = per_second();
  std::snprintf(buf, sizeof buf, "%d × %llu KiB O_DSYNC writes in %.2f s: %s commits/s (%.2f ms each)", cycles,
                static_cast<unsigned long long>(block_bytes >> 10), seconds, rate_text(rate.value_or(0)).c_str(),
                cycles > 0 ? seconds * 1000 / cycles : 0.0);
  std::string out = buf;
  if (minimum) {
    out += (below_minimum() ? ", below the policy's minimum of " : ", at least the policy's ") + rate_text(*minimum);
  }
  return out;
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

json::array signals_json(const std::vector<verify::SignalReading>& signals) {
  json::array out;
  for (const auto& sig : signals)
    out.push_back(json::object{
        {"signal", verify::to_string(sig.signal)}, {"state", verify::to_string(sig.state)}, {"detail", sig.detail}});
  return out;
}

json::value commit_json(const CommitFigure& c) {
  return json::object{{"cycles", c.cycles},        {"block_bytes", c.block_bytes},
                      {"seconds", c.seconds},      {"commits_per_second", opt(c.per_second())},
                      {"minimum", opt(c.minimum)}, {"below_minimum", c.below_minimum()},
                      {"error", opt(c.error)}};
}

json::value transports_json(const verify::EffectiveTransports& t) {
  auto count = [](const std::optional<unsigned>& n) { return n ? json::value(*n) : json::value(nullptr); };
  return json::object{{"asked", count(t.asked)},
                      {"nconnect", count(t.nconnect)},
                      {"mountstats", count(t.mountstats)},
                      {"kernel", count(t.kernel)},
                      {"addresses", strings(t.addresses)}};
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
  return json::object{
      {"verdict", to_string(v.verdict)},
      {"summary", v.summary},
      {"direction", verify::to_string(v.direction)},
      {"probe_bytes", v.probe_bytes},
      {"probes", v.probes},
      {"interfaces", std::move(ifs)},
      {"intended_share", opt(v.intended_share)},
      {"throughput_bytes_per_second", opt(v.throughput)},
      {"exactly_old_number", opt(v.exactly_old_number)},
      {"diagnosis", opt(v.diagnosis)},
      {"remedies", strings(v.remedies)},
      {"failed_preconditions", strings(v.failed_preconditions)},
      {"signals", signals_json(v.signals)},
      {"decided_by", v.decided_by ? json::value(verify::to_string(*v.decided_by)) : json::value(nullptr)},
      {"carried_by", opt(v.carried_by)},
      {"server_address", v.server_address},
      {"server_name", opt(v.server_name)},
      {"commit", v.commit ? commit_json(*v.commit) : json::value(nullptr)},
      {"transports", v.transports ? transports_json(*v.transports) : json::value(nullptr)}};
}

json::array changes_json(const std::vector<Change>& changes) {
  json::array a;
  for (const auto& c : changes) a.push_back(to_json(c));
  return a;
}

}  // namespace

std::string format_version() {
  return std::to_string(kFormatMajor) + "." + std::to_string(kFormatMinor);
}

json::value to_json(const Change& c) {
  return json::object{{"action", c.action},    {"target", c.target}, {"before", opt(c.before)},
                      {"after", opt(c.after)}, {"text", c.text},     {"disruptive", c.disruptive}};
}

json::value to_json(const RunReport& r) {
  json::array policies;
  for (const auto& p : r.policies) {
    policies.push_back(json::object{
        {"policy", p.policy},
        {"source", p.source},
        {"node", p.node},
        {"vmid", p.vmid},
        {"host", p.host},
        {"nas", p.nas},
        {"verdict", to_string(p.verdict)},
        {"cause", p.cause ? json::value(to_string(*p.cause)) : json::value(nullptr)},
        {"changed", !p.changes.empty()},
        {"planned", changes_json(p.planned)},
        {"changes", changes_json(p.changes)},
        {"rolled_back", strings(p.rolled_back)},
        {"verification", p.verification ? verification_json(*p.verification) : nullptr},
        {"restored_checks", strings(p.restored_checks)},
        {"warnings", strings(p.warnings)},
        {"errors", strings(p.errors)},
        {"notes", strings(p.notes)},
        {"remedy", strings(p.remedy)},
        {"rests_on", opt(p.rests_on)},
        {"observed_via", p.observed_via ? json::value(guest::to_string(*p.observed_via)) : json::value(nullptr)},
        {"agent_unused", opt(p.agent_unused)}});
  }
  // "schema" names the major as format 1 did, so that a pathwarden that predates format_version
  // refuses this report instead of misreading its changes.
  return json::object{
      {"format", "pathwarden-report"},
      {"format_version", format_version()},
      {"pathwarden_version", PW_VERSION},
      {"schema", "pathwarden-report/v" + std::to_string(kFormatMajor)},
      {"run_id", r.run_id},
      {"plan_id", r.plan_id},
      {"mode", to_string(r.mode)},
      {"started_at", r.started_at},
      {"finished_at", r.finished_at},
      {"policies_revision", r.policies_revision},
      {"policies_dirty", r.policies_dirty},
      {"journal_left", r.journal_left},
      {"stopped_by", r.stopped_by_signal > 0 ? json::value(signal_name(r.stopped_by_signal)) : json::value(nullptr)},
      {"exit_code", exit_code(r)},
      {"policies", std::move(policies)}};
}

}  // namespace pw::report
