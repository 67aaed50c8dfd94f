// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Turning a run's per-guest task results into what the engine needs: GuestFacts from the facts
// run, counter snapshots and timings from the probe run.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ansible/playbook_run.hpp"
#include "diagnostics/error.hpp"
#include "guest/change_script.hpp"
#include "guest/counter_read.hpp"
#include "guest/counters.hpp"
#include "guest/dd_summary.hpp"
#include "guest/facts.hpp"
#include "guest/port.hpp"
#include "guest/probe_report.hpp"

namespace pw::ansible {

// Per guest of the run: its facts, or why there are none (unreachable, failed task, bad output).
std::map<std::string, Result<guest::GuestFacts>> guest_facts_from(const PlaybookRun& report);

struct ProbeObservation {
  std::string host;
  std::optional<guest::CounterRead> baseline;  // absent without a baseline
  double baseline_seconds = 0;                 // from the baseline read to the "before" read (guest's clock)
  guest::CounterRead before;
  guest::CounterRead after;
  double probe_seconds = 0;            // the dd command's own run time (the guest's clock)
  double window_seconds = 0;           // from the "before" read to the "after" read (the guest's clock)
  std::optional<guest::DdSummary> dd;  // bytes dd reports it moved
  int probe_rc = 0;                    // dd's exit status (the probe script never fails the host)
  std::string probe_stderr;
  std::optional<guest::CommitRun> commit;      // the commit-latency cycles, when asked for
  std::optional<guest::ProbeRefusal> refused;  // the file refused: nothing else was read
};

std::map<std::string, Result<ProbeObservation>> probe_observations_from(const PlaybookRun& report);

// How a guest's fstab script (apply or rollback) ended: the stages it announced, and, when it
// failed, the stage it failed in and its own words (stderr; Ansible's message when the script
// never ran, e.g. sudo refused).
struct ChangeOutcome {
  guest::ChangeReport report;
  std::optional<guest::ChangeStage> failed_in;  // set when the task failed after announcing a stage
  std::string message;                          // "failed in 'STAGE': WHY" for a failure; empty when done
};

// `task_name`: the phase's script task (task::apply, task::rollback). An error when the host has
// no result for it, or the script's output is unreadable or ends without its end mark.
Result<ChangeOutcome> change_outcome_from(const HostReport& host, std::string_view task_name);

// Why a guest did not finish a phase, as one line: "unreachable: ...", "failed in 'TASK': ...".
std::string describe_outcome(const HostReport& host);

// The hint for a failure for want of root (sudo's and Ansible's become messages; a tool's
// "Permission denied" when the guest is reached as another user without become); empty if none.
std::string privilege_hint(std::string_view failure_message, bool become);

// A failed task that the guest's own `timeout` ended (exit 124, or 137 once it had to kill), or
// that Ansible gave up on (its result's "timedout"): that guest's time limit, not the script's
// failure.
bool ended_by_time_limit(const TaskOutcome& task);

}  // namespace pw::ansible
