// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What one ansible-playbook run did, per guest and task, read from the ansible.posix.jsonl
// stdout callback (one JSON event per line, so a run cut short still tells what happened).
#include <boost/json.hpp>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"

namespace pw::ansible {

// The string at `key` of a module result or a jsonl event; "" when missing or not a string.
std::string string_at(const boost::json::object& o, std::string_view key);

enum class TaskResult { ok, changed, failed, skipped, unreachable };

struct TaskOutcome {
  std::string task;
  TaskResult status = TaskResult::ok;
  std::string message;         // msg of a failure or an unreachable host
  boost::json::object result;  // the module result as Ansible reported it
};

enum class HostOutcome {
  ok,           // every task ran, nothing changed
  changed,      // every task ran, something changed
  failed,       // a task failed (see failure())
  unreachable,  // SSH could not reach it or log in
  timed_out,    // the run was stopped before this guest finished
  not_run,      // no task ran for it (e.g. not in the inventory)
};

struct HostReport {
  std::string host;
  HostOutcome outcome = HostOutcome::not_run;
  std::vector<TaskOutcome> tasks;
  std::string pending_task;  // for timed_out: the task it was in

  const TaskOutcome* failure() const;
  const TaskOutcome* task(std::string_view name) const;
};

struct PlaybookRun {
  std::string phase;
  int exit_code = 0;
  bool timed_out = false;
  bool complete = false;  // the final stats event arrived
  std::map<std::string, HostReport> hosts;
  std::string stderr_text;
  std::vector<std::string> other_output;  // stdout lines that were not callback events

  const HostReport* host(std::string_view name) const;
  // Ansible's "[WARNING]: ..." lines about the inventory ("Unable to parse ... as an inventory
  // source", "No inventory was parsed", "Could not match supplied host pattern"): why a guest
  // may not have run at all.
  std::vector<std::string> inventory_warnings() const;
  // Guests whose outcome is ok or changed.
  std::vector<std::string> succeeded() const;
};

// Reads the jsonl stdout of a run for `hosts`. A run that never got going (a bad playbook,
// inventory or option: exit 1, 4 or 5 without events) is an error carrying ansible's message.
Result<PlaybookRun> read_run(std::string_view phase, std::string_view jsonl, std::string_view stderr_text,
                             int exit_code, bool timed_out, std::span<const std::string> hosts);

// Ansible's "[WARNING]: TEXT" lines of a stderr, as TEXT.
std::vector<std::string> ansible_warnings(std::string_view stderr_text);

std::string_view to_string(HostOutcome outcome);
std::string_view to_string(TaskResult status);

}  // namespace pw::ansible
