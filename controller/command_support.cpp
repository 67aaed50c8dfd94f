// SPDX-License-Identifier: GPL-3.0-or-later
#include "command_support.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "build_info/build_info.hpp"
#include "command_errors.hpp"
#include "files/atomic_write.hpp"
#include "progress.hpp"
#include "report/history.hpp"
#include "report/report_json.hpp"
#include "settings_file.hpp"

namespace pw::cli {
namespace {

// What the result store remembers of the report's policies, for the textfile's series that a
// run without a probe (or without success) still writes.
std::map<std::string, report::StoredFigures> stored_figures(const report::RunReport& rep, Runtime& rt) {
  std::map<std::string, report::StoredFigures> out;
  std::set<std::string_view> wanted;
  for (const auto& p : rep.policies) wanted.insert(p.policy);
  auto all = rt.results->all();
  if (!all) return out;
  for (const auto& r : *all) {
    if (!wanted.contains(r.policy)) continue;
    auto& f = out[r.policy];
    if (r.last_verified_at) f.last_verified = report::unix_seconds(*r.last_verified_at);
    if (auto history = report::history_from_json(r.history, r.policy)) {
      const auto healthy = std::find_if(history->rbegin(), history->rend(), [](const report::HistoryPoint& h) {
        return h.verdict == report::Verdict::verified || h.verdict == report::Verdict::converged;
      });
      if (healthy != history->rend()) f.last_success = report::unix_seconds(healthy->finished_at);
    }
    if (const auto* probe = r.details.if_contains(report::kLastProbeKey)) {
      if (auto v = report::verification_from_json(*probe, r.policy)) f.last_probe = std::move(*v);
    }
  }
  return out;
}

reconcile::EngineOptions engine_options(const std::filesystem::path& policies_root) {
  reconcile::EngineOptions o;
  if (auto rev = policy_revision(policies_root)) {
    o.policies_revision = rev->commit;
    o.policies_dirty = rev->dirty;
  }
  return o;
}

}  // namespace

std::string shard_name(const Args& args) {
  if (auto shard = args.value("shard"); shard && !shard->empty()) return *shard;
  // Two runs on one host write two textfiles (one would overwrite the other): the name tells them apart.
  auto stem = std::filesystem::path(args.value_or("prometheus", "pathwarden.prom")).filename().string();
  if (stem.ends_with(".prom")) stem.resize(stem.size() - 5);
  return stem.empty() ? "pathwarden" : stem;
}

bool colour(const Args& args) {
  return !args.flag("no-color") && args.value_or("output", "text") == "text" && isatty(STDOUT_FILENO) != 0 &&
         std::getenv("NO_COLOR") == nullptr;
}

int emit(const report::RunReport& rep, const Args& args, Runtime& rt) {
  const bool json_output = args.value_or("output", "text") == "json";
  // Built only when asked for: for 10,000 policies the JSON document weighs more than the run.
  const auto json_text =
      json_output || args.value("report-file") ? boost::json::serialize(report::to_json(rep)) : std::string();
  if (json_output) {
    std::cout << json_text << "\n";
  } else {
    std::cout << report::render_text(rep, colour(args), args.flag("diff"));
  }
  // An output that was asked for and not written is the run's failure too (exit 7): a scheduled
  // run whose textfile is stale must not look like a success.
  bool outputs_failed = false;
  if (auto file = args.value("report-file")) {
    if (auto st = files::write_atomically(*file, json_text + "\n", files::Visibility::readable); !st) {
      spdlog::error("the report file was not written: {}", st.error().to_string());
      outputs_failed = true;
    }
  }
  if (auto file = args.value("prometheus")) {
    const report::MetricsLabels labels{.shard = shard_name(args), .commit = std::string(build_info::commit())};
    if (auto st = files::write_atomically(*file, report::render_prometheus(rep, stored_figures(rep, rt), labels),
                                          files::Visibility::readable);
        !st) {
      spdlog::error("the Prometheus textfile was not written: {}", st.error().to_string());
      outputs_failed = true;
    }
  }
  return report::exit_code(rep, outputs_failed);
}

Result<Session> open_session(const Args& args, const GlobalOptions& globals) {
  Session s;
  // The settings file is read once per run: for the default policies directory and the runtime.
  auto loaded = load_settings(globals);
  if (!loaded) return std::unexpected(loaded.error());
  std::filesystem::path root;
  auto policies = load_policies(args, *loaded, globals, &root);
  if (!policies) return std::unexpected(policies.error());
  s.policies = std::move(*policies);
  auto rt = make_runtime(std::move(*loaded), globals, {}, engine_options(root),
                         progress_sink(args.value_or("output", "text") == "text"));
  if (!rt) return std::unexpected(rt.error());
  s.rt = std::move(*rt);
  return s;
}

int usage_error(const std::string& command, const Error& e) {
  return fail_command(command, e);
}

}  // namespace pw::cli
