// SPDX-License-Identifier: GPL-3.0-or-later
// reconcile: observe, plan, apply, verify by byte counters, roll back on mismatch (--check: drift only).
#include "command_support.hpp"
#include "commands.hpp"
#include "report/run_report.hpp"

namespace pw::cli {
namespace {

int run_reconcile(const Args& args, const GlobalOptions& globals) {
  auto s = open_session(args, globals);
  if (!s) return usage_error("reconcile", s.error());
  return emit(s->rt->engine->reconcile(s->policies, args.flag("check")), args, *s->rt);
}

}  // namespace

Command reconcile_command() {
  return {
      .name = "reconcile",
      .summary = "observe, plan, apply, verify by byte counters, roll back on mismatch",
      .usage = "reconcile [--check] [--policy NAME] [--output text|json] [--prometheus FILE] [PATH...]",
      .description = "Exit codes, for apply, verify and recover too (when several apply: 5, 128+N, 4, 6, 7, 3, 2):\n" +
                     report::exit_code_lines("  "),
      .options = {{"check", "", "only report drift; change nothing (exit 3 on drift)"},
                  {"diff", "", "show each change and planned step with its before (-) and after (+)"},
                  kPolicy,
                  kExclude,
                  kSelector,
                  kNode,
                  kHost,
                  kOutput,
                  kReportFile,
                  kPrometheus,
                  kShard,
                  kNoColor},
      .run = run_reconcile};
}

}  // namespace pw::cli
