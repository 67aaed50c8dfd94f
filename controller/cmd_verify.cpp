// SPDX-License-Identifier: GPL-3.0-or-later
// verify: audit without changes; --probe compares byte counters.
#include "command_support.hpp"
#include "commands.hpp"

namespace pw::cli {
namespace {

int run_verify(const Args& args, const GlobalOptions& globals) {
  auto s = open_session(args, globals);
  if (!s) return usage_error("verify", s.error());
  return emit(s->rt->engine->audit(s->policies, args.flag("probe")), args, *s->rt);
}

}  // namespace

Command verify_command() {
  return {.name = "verify",
          .summary = "audit without changes: options, queues, connection addresses; --probe for counters",
          .usage = "verify [--probe] [--policy NAME] [--output text|json] [PATH...]",
          .description =
              "Without --probe no probe traffic is sent: the audit can find a path wrong but never prove\n"
              "it right (the verdict is then inconclusive).",
          .options = {{"probe", "", "read the probe file and compare byte counters"},
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
          .run = run_verify};
}

}  // namespace pw::cli
