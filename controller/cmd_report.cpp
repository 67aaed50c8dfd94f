// SPDX-License-Identifier: GPL-3.0-or-later
// report: a run (a --report-file, or the last result of each policy) as an HTML page or text.
#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>

#include "command_errors.hpp"
#include "commands.hpp"
#include "files/atomic_write.hpp"
#include "journal/posix_file.hpp"
#include "journal/result_store.hpp"
#include "report/history.hpp"
#include "report/html_report.hpp"
#include "report/report_json.hpp"
#include "runtime.hpp"

namespace pw::cli {
namespace {

Result<std::string> read_input(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read the report", path, "write one with 'pathwarden reconcile --report-file FILE'");
  text << in.rdbuf();
  return text.str();
}

struct LoadedReport {
  report::RunReport report;
  report::HtmlOptions html;
};

Result<LoadedReport> from_file(const std::string& path) {
  auto text = read_input(path);
  if (!text) return std::unexpected(text.error());
  const std::string where = path == "-" ? "standard input" : path;
  auto json = report::parse_json_text(*text, where);
  if (!json) return std::unexpected(json.error());
  auto rep = report::run_report_from_json(*json, where);
  if (!rep) return std::unexpected(rep.error());
  return LoadedReport{std::move(*rep), {}};
}

// The last result of every policy, each from the run that last touched it, with its last `runs`
// runs from the store's history.
Result<LoadedReport> from_state_dir(const GlobalOptions& globals, std::size_t runs) {
  auto rt = make_runtime(globals, {.proxmox = false, .guests = false}, {}, {});
  if (!rt) return std::unexpected(rt.error());
  auto all = (*rt)->results->all();
  if (!all) return std::unexpected(all.error());
  LoadedReport out;
  const double now = std::chrono::duration<double>((*rt)->clock.now().time_since_epoch()).count();
  out.html.now = now;
  out.report.mode = report::RunMode::last_results;
  out.html.title = "pathwarden: last results";
  const auto where = ((*rt)->state->result_dir()).string();
  for (const auto& r : *all) {
    report::PolicyReport p;
    if (!r.details.empty()) {
      auto parsed = report::policy_report_from_json(r.details, where + " (policy " + r.policy + ")");
      if (!parsed) return std::unexpected(parsed.error());
      p = std::move(*parsed);
    }
    p.policy = r.policy;
    auto verdict = report::verdict_from(r.verdict);
    if (!verdict) {
      return fail("the stored result of policy '" + r.policy + "' has an unknown verdict '" + r.verdict + "'", where,
                  "a newer pathwarden wrote it, or the file was edited; the next run replaces it");
    }
    p.verdict = *verdict;
    auto ago = [&](const std::string& when) {
      const auto text = report::time_ago(when, now);
      return text.empty() ? text : " (" + text + ")";
    };
    std::string context = "recorded " + r.finished_at + ago(r.finished_at) + " by run " + r.run_id;
    if (r.last_verified_at) context += "; last verified by a probe " + *r.last_verified_at + ago(*r.last_verified_at);
    out.html.policy_context[r.policy] = std::move(context);
    if (!r.history.empty()) {
      auto points = report::history_from_json(r.history, where + "/" + r.policy + ".json");
      if (!points) return std::unexpected(points.error());
      if (points->size() > runs) points->erase(points->begin(), points->end() - static_cast<std::ptrdiff_t>(runs));
      out.html.history[r.policy] = std::move(*points);
    }
    out.report.policies.push_back(std::move(p));
  }
  return out;
}

// A whole positive count ("30"), nullopt for anything else ("3x", "-1", "").
std::optional<std::size_t> parse_count(const std::string& text) {
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return n;
}

int report_error(const Error& e) {
  return fail_command("report", e);
}

int run_report(const Args& args, const GlobalOptions& globals) {
  if (!args.positional().empty()) {
    return report_error(
        Error{"unexpected argument '" + args.positional().front() + "'", {}, "name the report with --input FILE"});
  }
  std::size_t runs = 30;
  if (auto text = args.value("runs")) {
    const auto n = parse_count(*text);
    if (!n || *n < 1 || *n > journal::kHistoryRuns) {
      return report_error(Error{
          "--runs '" + *text + "' is not a number from 1 to " + std::to_string(journal::kHistoryRuns),
          {},
          "the state directory keeps the last " + std::to_string(journal::kHistoryRuns) + " runs of each policy"});
    }
    if (args.value("input"))
      return report_error(Error{"--runs draws the stored history: it does not go with --input", {}, {}});
    runs = *n;
  }
  auto loaded = args.value("input") ? from_file(*args.value("input")) : from_state_dir(globals, runs);
  if (!loaded) return report_error(loaded.error());
  if (!loaded->html.now) {
    loaded->html.now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  if (auto wanted = args.values("policy"); !wanted.empty()) {
    auto& ps = loaded->report.policies;
    for (const auto& name : wanted) {
      if (std::none_of(ps.begin(), ps.end(), [&](const auto& p) { return p.policy == name; })) {
        return report_error(
            Error{"no policy named '" + name + "' in the report", args.value_or("input", "the state directory"), {}});
      }
    }
    std::erase_if(ps, [&](const auto& p) { return std::find(wanted.begin(), wanted.end(), p.policy) == wanted.end(); });
  }
  if (auto file = args.value("html")) {
    const auto page = report::render_html(loaded->report, loaded->html);
    if (*file == "-") {
      std::cout << page;
      return 0;
    }
    // Absolute, so the directory fsync after the rename has a directory to open.
    // Readable (0644), as the reports and the textfile: a page is made to be served or mailed.
    if (auto st = files::write_atomically(*file, page, files::Visibility::readable); !st)
      return report_error(st.error());
    const auto n = loaded->report.policies.size();
    std::cout << "wrote " << *file << " (" << n << (n == 1 ? " policy" : " policies") << ")\n";
    return 0;
  }
  if (args.value_or("output", "text") == "json") {
    std::cout << boost::json::serialize(report::to_json(loaded->report)) << "\n";
  } else {
    std::cout << report::render_text(loaded->report);
  }
  return 0;
}

}  // namespace

Command report_command() {
  return {.name = "report",
          .summary = "render a run (or the last result of each policy) as an HTML page or text",
          .usage = "report [--html FILE] [--input REPORT.json] [--runs N] [--policy NAME] [--output text|json]",
          .description =
              "Reads a report written by --report-file (--input FILE, '-' for standard input) or, without\n"
              "--input, the last result of every policy from the state directory, with its last runs\n"
              "(the state directory keeps 100 per policy; the page plots the last --runs of them: verdicts,\n"
              "the intended NIC's share and the throughput). --html writes one self-contained page (the\n"
              "fleet by node and by NAS, each policy with its plots; no scripts, no external assets; '-' for\n"
              "standard output); otherwise the report is printed. Exit 0 when rendered, 1 when the input\n"
              "cannot be read.",
          .options = {{"html", "FILE", "write the report as a self-contained HTML page"},
                      {"input", "FILE", "a JSON report written by --report-file (default: the state directory)"},
                      {"runs", "N", "how many of each policy's stored runs the page plots (default 30)"},
                      {"policy", "NAME", "only this policy (repeatable)", true, {}, ValueKind::policy_name},
                      {"output", "FMT", "text (default) or json, when not writing --html", false, {"text", "json"}}},
          .run = run_report};
}

}  // namespace pw::cli
