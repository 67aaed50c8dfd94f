// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the commands that drive the engine share (plan, apply, reconcile, verify, recover,
// status): their common options, the policy and runtime setup, and the run report's output.
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "diagnostics/error.hpp"
#include "policy/model.hpp"
#include "report/run_report.hpp"
#include "runtime.hpp"

namespace pw::cli {

inline const OptionSpec kPolicy{
    "policy", "NAME", "only this policy, or those a glob such as 'media-*' matches (repeatable)",
    true,     {},     ValueKind::policy_name};
inline const OptionSpec kExclude{
    "exclude", "NAME", "leave out this policy, or those a glob matches; --policy '!NAME' too (repeatable)",
    true,      {},     ValueKind::policy_name};
inline const OptionSpec kSelector{"selector", "KEY=VALUE",
                                  "only policies with this metadata.labels entry (repeatable: all)", true};
inline const OptionSpec kNode{"node", "NODE", "only policies of VMs on this Proxmox node (repeatable)", true};
inline const OptionSpec kHost{"host", "HOST", "only policies of this inventory host (repeatable)", true};
inline const OptionSpec kReportFile{"report-file", "FILE", "also write the JSON report to FILE"};
inline const OptionSpec kPrometheus{"prometheus", "FILE", "write a node_exporter textfile (atomically) to FILE"};
inline const OptionSpec kShard{"shard", "NAME",
                               "the textfile's shard label, unique per host (default: its file name without .prom)"};
inline const OptionSpec kNoColor{"no-color", "", "never colour the output"};

// The `shard` label of the --prometheus textfile: --shard, else the file's name without ".prom"
// (two runs on one host write two files, so the names differ; and they stay the same run after run).
std::string shard_name(const Args& args);

// Text output to a terminal, unless --no-color or $NO_COLOR says otherwise.
bool colour(const Args& args);

// Prints the report as --output asks, writes --report-file and --prometheus, and returns the
// run's exit code.
int emit(const report::RunReport& rep, const Args& args, Runtime& rt);

// Commands that need the policies, Proxmox and the guests.
struct Session {
  std::vector<policy::StoragePath> policies;
  std::unique_ptr<Runtime> rt;
};

// Loads the policies the command line names (or the settings' directory), then the runtime,
// its runs marked with the git revision of the policies.
Result<Session> open_session(const Args& args, const GlobalOptions& globals);

// Prints "pathwarden COMMAND: problem" and returns 1.
int usage_error(const std::string& command, const Error& e);

}  // namespace pw::cli
