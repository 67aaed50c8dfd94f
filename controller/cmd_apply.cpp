// SPDX-License-Identifier: GPL-3.0-or-later
// apply: a saved plan exactly, refused when reality moved since it was made.
#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "command_support.hpp"
#include "commands.hpp"
#include "journal/plan_key.hpp"
#include "plan/model.hpp"
#include "plan/plan_seal.hpp"
#include "progress.hpp"

namespace pw::cli {
namespace {

int run_apply(const Args& args, const GlobalOptions& globals) {
  if (args.positional().size() != 1) {
    return usage_error("apply", Error{"give exactly one plan FILE", {}, "write one with 'pathwarden plan --out FILE'"});
  }
  std::ifstream in(args.positional()[0]);
  if (!in) return usage_error("apply", Error{"cannot read the plan file", args.positional()[0], {}});
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  auto json = boost::json::parse(text.str(), ec);
  if (ec) return usage_error("apply", Error{"not JSON: " + ec.message(), args.positional()[0], {}});
  auto plan = plan::plan_from_json(json);
  if (!plan) return usage_error("apply", plan.error().with_where(args.positional()[0]));
  auto rt = make_runtime(globals, {}, {}, progress_sink(args.value_or("output", "text") == "text"));
  if (!rt) return usage_error("apply", rt.error());
  // Nothing is touched unless the file is as this controller wrote it (plan/plan_seal.hpp).
  auto key = journal::plan_key(*(*rt)->state);
  if (!key) return usage_error("apply", key.error());
  if (auto st = plan::check_seal(json.as_object(), *key, args.positional()[0]); !st) {
    return usage_error("apply", st.error());
  }
  return emit((*rt)->engine->apply(*plan), args, **rt);
}

}  // namespace

Command apply_command() {
  return {.name = "apply",
          .summary = "apply a saved plan exactly; refuses when reality moved since it was made",
          .usage = "apply [--output text|json] [--report-file FILE] [--prometheus FILE] PLAN_FILE",
          .description =
              "Checks the Proxmox digests and fstab hashes the plan was made from, then applies it,\n"
              "verifies with byte counters and rolls back what cannot be proven. Exit codes as reconcile.",
          .options = {kOutput, kReportFile, kPrometheus, kShard, kNoColor},
          .run = run_apply};
}

}  // namespace pw::cli
