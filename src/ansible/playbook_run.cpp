// SPDX-License-Identifier: GPL-3.0-or-later
#include "ansible/playbook_run.hpp"

#include "guest/tokens.hpp"

namespace pw::ansible {

namespace json = boost::json;

const TaskOutcome* HostReport::failure() const {
  for (const auto& t : tasks) {
    if (t.status == TaskResult::failed || t.status == TaskResult::unreachable) return &t;
  }
  return nullptr;
}

const TaskOutcome* HostReport::task(std::string_view name) const {
  for (const auto& t : tasks) {
    if (t.task == name) return &t;
  }
  return nullptr;
}

std::vector<std::string> ansible_warnings(std::string_view stderr_text) {
  std::vector<std::string> out;
  while (!stderr_text.empty()) {
    const auto nl = stderr_text.find('\n');
    std::string_view line = stderr_text.substr(0, nl);
    stderr_text = nl == std::string_view::npos ? std::string_view{} : stderr_text.substr(nl + 1);
    if (!line.starts_with("[WARNING]:")) continue;
    line.remove_prefix(10);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    out.emplace_back(line);
  }
  return out;
}

std::vector<std::string> PlaybookRun::inventory_warnings() const {
  std::vector<std::string> out;
  for (auto& w : ansible_warnings(stderr_text))
    if (w.find("inventory") != std::string::npos || w.find("host pattern") != std::string::npos)
      out.push_back(std::move(w));
  return out;
}

const HostReport* PlaybookRun::host(std::string_view name) const {
  auto it = hosts.find(std::string(name));
  return it == hosts.end() ? nullptr : &it->second;
}

std::vector<std::string> PlaybookRun::succeeded() const {
  std::vector<std::string> out;
  for (const auto& [name, h] : hosts) {
    if (h.outcome == HostOutcome::ok || h.outcome == HostOutcome::changed) out.push_back(name);
  }
  return out;
}

std::string_view to_string(HostOutcome outcome) {
  switch (outcome) {
    case HostOutcome::ok:
      return "ok";
    case HostOutcome::changed:
      return "changed";
    case HostOutcome::failed:
      return "failed";
    case HostOutcome::unreachable:
      return "unreachable";
    case HostOutcome::timed_out:
      return "timed out";
    case HostOutcome::not_run:
      return "not run";
  }
  return "?";
}

std::string_view to_string(TaskResult status) {
  switch (status) {
    case TaskResult::ok:
      return "ok";
    case TaskResult::changed:
      return "changed";
    case TaskResult::failed:
      return "failed";
    case TaskResult::skipped:
      return "skipped";
    case TaskResult::unreachable:
      return "unreachable";
  }
  return "?";
}

std::string string_at(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

namespace {

bool flag_at(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v && v->is_bool() && v->as_bool();
}

// The most telling message of a failed result: msg, else stderr, else the first failed item's.
std::string failure_message(const json::object& r) {
  auto msg = string_at(r, "msg");
  // A command's own words are in stderr; Ansible's msg only says "non-zero return code".
  auto err = std::string(guest::trim(string_at(r, "stderr")));
  if (!err.empty()) msg = msg.empty() ? err : msg + ": " + err;
  if (msg.empty()) {
    if (auto* items = r.if_contains("results"); items && items->is_array()) {
      for (const auto& item : items->as_array()) {
        if (item.is_object() && flag_at(item.as_object(), "failed")) {
          msg = failure_message(item.as_object());
          if (!msg.empty()) break;
        }
      }
    }
  }
  return msg;
}

std::string last_lines(std::string_view text, std::size_t count) {
  auto lines = guest::lines_of(text);
  std::string out;
  for (std::size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i) {
    if (!out.empty()) out.push_back('\n');
    out += lines[i];
  }
  return out;
}

}  // namespace

Result<PlaybookRun> read_run(std::string_view phase, std::string_view jsonl, std::string_view stderr_text,
                             int exit_code, bool timed_out, std::span<const std::string> hosts) {
  PlaybookRun report;
  report.phase = std::string(phase);
  report.exit_code = exit_code;
  report.timed_out = timed_out;
  report.stderr_text = std::string(stderr_text);
  for (const auto& h : hosts) report.hosts[h].host = h;

  std::string current_task;
  bool any_event = false;
  for (auto line : guest::lines_of(jsonl)) {
    if (guest::trim(line).empty()) continue;
    json::value event;
    try {
      event = json::parse(line);
    } catch (const std::exception&) {
      report.other_output.emplace_back(line);
      continue;
    }
    if (!event.is_object() || !event.as_object().contains("_event")) {
      report.other_output.emplace_back(line);
      continue;
    }
    any_event = true;
    const auto& e = event.as_object();
    auto kind = string_at(e, "_event");
    if (kind == "v2_playbook_on_task_start" || kind == "v2_runner_on_start") {
      if (auto* t = e.if_contains("task"); t && t->is_object()) current_task = string_at(t->as_object(), "name");
      continue;
    }
    if (kind == "v2_playbook_on_stats") {
      report.complete = true;
      continue;
    }
    if (!kind.starts_with("v2_runner_on_")) continue;
    std::string task_name;
    if (auto* t = e.if_contains("task"); t && t->is_object()) task_name = string_at(t->as_object(), "name");
    auto* hosts_value = e.if_contains("hosts");
    if (!hosts_value || !hosts_value->is_object()) continue;
    for (const auto& [host, result_value] : hosts_value->as_object()) {
      if (!result_value.is_object()) continue;
      const auto& result = result_value.as_object();
      TaskOutcome outcome;
      outcome.task = task_name;
      outcome.result = result;
      if (kind == "v2_runner_on_unreachable") {
        outcome.status = TaskResult::unreachable;
        outcome.message = string_at(result, "msg");
      } else if (kind == "v2_runner_on_failed") {
        outcome.status = TaskResult::failed;
        outcome.message = failure_message(result);
      } else if (kind == "v2_runner_on_skipped") {
        outcome.status = TaskResult::skipped;
      } else {
        outcome.status = flag_at(result, "changed") ? TaskResult::changed : TaskResult::ok;
      }
      auto& h = report.hosts[std::string(host)];
      h.host = std::string(host);
      h.tasks.push_back(std::move(outcome));
    }
  }

  if (!any_event && !timed_out) {
    auto tail = last_lines(stderr_text, 8);
    return fail("ansible-playbook stopped before running anything (exit code " + std::to_string(exit_code) + ")" +
                    (tail.empty() ? std::string() : ": " + tail),
                std::string(phase) + " playbook",
                exit_code == 5 ? "an option given to ansible-playbook is wrong"
                               : "check the inventory and the playbook with ansible-playbook --syntax-check");
  }

  for (auto& [name, h] : report.hosts) {
    bool unreachable = false, failed = false, changed = false;
    for (const auto& t : h.tasks) {
      unreachable |= t.status == TaskResult::unreachable;
      failed |= t.status == TaskResult::failed;
      changed |= t.status == TaskResult::changed;
    }
    if (unreachable) {
      h.outcome = HostOutcome::unreachable;
    } else if (failed) {
      h.outcome = HostOutcome::failed;
    } else if (!report.complete) {
      // Stopped (timeout or killed) before the end: nothing says this guest finished.
      h.outcome = HostOutcome::timed_out;
      bool has_current = false;
      for (const auto& t : h.tasks) has_current |= t.task == current_task;
      h.pending_task = has_current ? std::string() : current_task;
    } else if (h.tasks.empty()) {
      h.outcome = HostOutcome::not_run;
    } else {
      h.outcome = changed ? HostOutcome::changed : HostOutcome::ok;
    }
  }
  return report;
}

}  // namespace pw::ansible
