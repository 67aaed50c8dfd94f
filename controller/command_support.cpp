#include "command_support.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "build_info/build_info.hpp"
#include "command_errors.hpp"
#include "files/atomic_write.hpp"
#include "progress.hpp"
#include "settings_file.hpp"

namespace pw::cli {
namespace {

std::optional<double> unix_time(const std::string& rfc3339) {
  std::tm tm{};
  std::istringstream in(rfc3339);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return std::nullopt;
  return static_cast<double>(timegm(&tm));
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
    std::map<std::string, double> last_success;
    if (auto all = rt.results->all()) {
      for (const auto& r : *all) {
        if (r.last_verified_at) {
          if (auto t = unix_time(*r.last_verified_at)) last_success[r.policy] = *t;
        }
      }
    }
    const report::MetricsLabels labels{.shard = shard_name(args), .commit = std::string(build_info::commit())};
    if (auto st = files::write_atomically(*file, report::render_prometheus(rep, last_success, labels),
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
