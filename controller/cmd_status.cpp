// SPDX-License-Identifier: GPL-3.0-or-later
// status: each selected policy's last result, from the state directory only: the verdict and,
// where it is not healthy, why and what to do; the last change and the last proof; its last runs.
// The exit code is the table's for the stored verdicts (report::kExitCodes): 0 only when every
// selected policy is healthy, so a monitoring check can call it.
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <iostream>

#include "command_support.hpp"
#include "commands.hpp"
#include "policy/selection.hpp"
#include "report/history.hpp"

namespace pw::cli {
namespace {

std::string string_at(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::vector<std::string> strings_at(const boost::json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const auto* a = o.if_contains(key); a != nullptr && a->is_array()) {
    for (const auto& v : a->get_array()) {
      if (v.is_string()) out.emplace_back(v.get_string());
    }
  }
  return out;
}

// The stored results the selection takes: names and globs (with did-you-mean), exclusions,
// nodes and hosts as the results recorded them.
Result<std::vector<journal::PolicyResult>> selected(std::vector<journal::PolicyResult> all, const Args& args) {
  const auto selection = policy::Selection::from(args.values("policy"), {}, args.values("node"), args.values("host"),
                                                 args.values("exclude"));
  if (selection.empty()) return all;
  std::vector<policy::StoragePath> stubs;
  for (const auto& r : all) {
    policy::StoragePath p;
    p.name = r.policy;
    p.guest.node = string_at(r.details, "node");
    p.guest.host = string_at(r.details, "host");
    stubs.push_back(std::move(p));
  }
  auto taken = policy::select_policies(std::move(stubs), selection);
  if (!taken) return std::unexpected(taken.error());
  std::vector<journal::PolicyResult> out;
  for (auto& r : all) {
    if (std::any_of(taken->begin(), taken->end(), [&](const auto& p) { return p.name == r.policy; }))
      out.push_back(std::move(r));
  }
  return out;
}

bool healthy(report::Verdict v) {
  return report::exit_reason(v, false) == report::ExitReason::nothing_to_do;
}

// One policy as text: its verdict and when, then only what helps: why and the remedies where it
// is not healthy, what a converged verdict rests on, the last change and proof, its last runs.
void print(const journal::PolicyResult& r, std::optional<report::Verdict> verdict,
           const std::vector<report::HistoryPoint>& runs, std::size_t show_runs) {
  std::cout << r.policy << ": " << r.verdict;
  const auto cause = string_at(r.details, "cause");
  if (!cause.empty()) std::cout << " (" << cause << ")";
  std::cout << " at " << r.finished_at << " (run " << r.run_id << ")\n";
  if (const auto rests = string_at(r.details, "rests_on"); !rests.empty()) std::cout << "  rests on: " << rests << "\n";
  if (verdict && !healthy(*verdict)) {
    for (const auto& e : strings_at(r.details, "errors")) std::cout << "  why: " << e << "\n";
    if (const auto* v = r.details.if_contains("verification"); v != nullptr && v->is_object()) {
      if (const auto d = string_at(v->get_object(), "diagnosis"); !d.empty()) std::cout << "  diagnosis: " << d << "\n";
      for (const auto& rem : strings_at(v->get_object(), "remedies")) std::cout << "  remedy: " << rem << "\n";
    }
    for (const auto& rem : strings_at(r.details, "remedy")) std::cout << "  remedy: " << rem << "\n";
    if (*verdict == report::Verdict::unobserved) {
      report::PolicyReport p;
      p.host = string_at(r.details, "host");
      for (const auto& rem : report::unobserved_remedies(p)) std::cout << "  remedy: " << rem << "\n";
    }
  }
  const auto changed = std::find_if(runs.rbegin(), runs.rend(), [](const auto& h) { return h.changed; });
  std::cout << "  last change: "
            << (changed != runs.rend() ? changed->finished_at + " (run " + changed->run_id + ")"
                                       : std::string("none in the stored runs"))
            << "\n";
  std::cout << "  last proof: " << r.last_verified_at.value_or("never verified by a probe") << "\n";
  for (std::size_t i = runs.size() > show_runs ? runs.size() - show_runs : 0; i < runs.size(); ++i) {
    const auto& h = runs[i];
    std::cout << "  run " << h.finished_at << " " << report::to_string(h.verdict) << (h.changed ? " changed" : "");
    if (h.intended_share) std::cout << " share " << std::lround(*h.intended_share * 100) << "%";
    std::cout << "\n";
  }
}

int run_status(const Args& args, const GlobalOptions& globals) {
  std::size_t show_runs = 0;
  if (auto n = args.value("runs")) {
    const auto [end, ec] = std::from_chars(n->data(), n->data() + n->size(), show_runs);
    if (ec != std::errc{} || end != n->data() + n->size()) {
      return usage_error("status", Error{"--runs wants a number of runs, not '" + *n + "'", {}, "e.g. --runs 10"});
    }
  }
  auto rt = make_runtime(globals, {.proxmox = false, .guests = false}, {}, {});
  if (!rt) return usage_error("status", rt.error());
  auto all = (*rt)->results->all();
  if (!all) return usage_error("status", all.error());
  auto results = selected(std::move(*all), args);
  if (!results) return usage_error("status", results.error());

  // The stored verdicts as a run's would be: the one table gives the exit code.
  report::RunReport as_run;
  std::vector<std::vector<report::HistoryPoint>> histories;
  for (const auto& r : *results) {
    report::PolicyReport p;
    p.policy = r.policy;
    p.verdict = report::verdict_from(r.verdict).value_or(report::Verdict::unobserved);  // unknown: not known
    as_run.policies.push_back(std::move(p));
    auto h = report::history_from_json(r.history, r.policy);
    histories.push_back(h ? std::move(*h) : std::vector<report::HistoryPoint>{});
  }
  const int code = report::exit_code(as_run);

  if (args.value_or("output", "text") == "json") {
    boost::json::array a;
    for (std::size_t i = 0; i < results->size(); ++i) {
      auto o = (*results)[i].to_json();
      o["healthy"] = healthy(as_run.policies[i].verdict);
      if (show_runs == 0) o.erase("history");
      a.push_back(std::move(o));
    }
    std::cout << boost::json::serialize(boost::json::object{{"format", "pathwarden-status"},
                                                            {"format_version", "1.0"},
                                                            {"healthy", code == 0},
                                                            {"exit_code", code},
                                                            {"policies", std::move(a)}})
              << "\n";
    return code;
  }
  if (results->empty()) std::cout << "no results yet: run 'pathwarden reconcile' or 'pathwarden verify'\n";
  for (std::size_t i = 0; i < results->size(); ++i) {
    print((*results)[i], report::verdict_from((*results)[i].verdict), histories[i], show_runs);
  }
  if (!results->empty()) {
    std::size_t well = 0;
    for (const auto& p : as_run.policies) well += healthy(p.verdict) ? 1 : 0;
    std::cout << "\n"
              << well << " of " << results->size() << " polic" << (results->size() == 1 ? "y" : "ies")
              << " healthy; exit code " << code << "\n";
  }
  return code;
}

}  // namespace

Command status_command() {
  return {
      .name = "status",
      .summary = "last result per policy: why, what to do, its last change, proof and runs",
      .usage = "status [--policy NAME] [--exclude NAME] [--node NODE] [--host HOST] [--runs N] [--output text|json]",
      .description =
          "Reads the state directory only; contacts nothing. Exit code: the table's (reconcile --help)\n"
          "for the stored verdicts: 0 when every selected policy is healthy (converged or verified).",
      .options = {kPolicy,
                  kExclude,
                  kNode,
                  kHost,
                  {"runs", "N", "also show each policy's last N runs (time, verdict, changed, share)"},
                  kOutput},
      .run = run_status};
}

}  // namespace pw::cli
