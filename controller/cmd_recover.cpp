// SPDX-License-Identifier: GPL-3.0-or-later
// recover: finish or undo the runs the journals show were interrupted.
#include "command_support.hpp"
#include "commands.hpp"
#include "progress.hpp"

namespace pw::cli {
namespace {

int run_recover(const Args& args, const GlobalOptions& globals) {
  auto rt = make_runtime(globals, {}, {}, progress_sink(args.value_or("output", "text") == "text"));
  if (!rt) return usage_error("recover", rt.error());
  return emit((*rt)->engine->recover(), args, **rt);
}

}  // namespace

Command recover_command() {
  return {.name = "recover",
          .summary = "finish or undo runs that were interrupted (crash, kill, power loss)",
          .usage = "recover [--output text|json]",
          .description =
              "Reads the journals in the state directory. A run whose verification had passed is\n"
              "finished; any other is undone step by step and the old state checked.",
          .options = {kOutput, kReportFile, kNoColor},
          .run = run_recover};
}

}  // namespace pw::cli
