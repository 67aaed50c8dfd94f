// SPDX-License-Identifier: GPL-3.0-or-later
#include "ansible/phase_results.hpp"

#include "ansible/playbooks.hpp"
#include "guest/probe_report.hpp"
#include "guest/tokens.hpp"

namespace pw::ansible {

namespace {

// The Docker task runs with failed_when false: its exit code says what happened.
Result<std::vector<guest::DockerVolume>> docker_volumes_of(const TaskOutcome& t, const std::string& host) {
  const auto* rc = t.result.if_contains("rc");
  const long long code = rc != nullptr && rc->is_int64() ? rc->as_int64() : -1;
  return guest::docker_volumes_answer(code, string_at(t.result, "stdout"), string_at(t.result, "stderr"), t.message,
                                      host);
}

Result<const TaskOutcome*> finished_task(const HostReport& host, const char* name) {
  if (host.outcome != HostOutcome::ok && host.outcome != HostOutcome::changed) {
    return fail(describe_outcome(host), host.host);
  }
  const auto* t = host.task(name);
  if (!t) return fail(std::string("no result for task '") + name + "'", host.host, "was the right playbook run?");
  return t;
}

}  // namespace

std::string describe_outcome(const HostReport& host) {
  switch (host.outcome) {
    case HostOutcome::ok:
    case HostOutcome::changed:
      return std::string(to_string(host.outcome));
    case HostOutcome::unreachable: {
      const auto* f = host.failure();
      return "unreachable: " + (f ? f->message : std::string("no SSH connection"));
    }
    case HostOutcome::failed: {
      const auto* f = host.failure();
      return "failed in '" + (f ? f->task : std::string("?")) + "': " + (f ? f->message : std::string());
    }
    case HostOutcome::timed_out:
      return "timed out" + (host.pending_task.empty() ? std::string() : " in '" + host.pending_task + "'");
    case HostOutcome::not_run:
      return "not run (is the guest in the inventory?)";
  }
  return "?";
}

std::string privilege_hint(std::string_view message, bool become) {
  auto has = [&](std::string_view s) { return message.find(s) != std::string_view::npos; };
  if (has("Missing sudo password") || has("a password is required") || has("incorrect sudo password")) {
    return "the SSH user must be able to sudo without a password: a sudoers entry as in policies/README.md "
           "(spec.ansible.become)";
  }
  if (!become && (has("Permission denied") || has("Operation not permitted") || has("must be superuser") ||
                  has("only root can"))) {
    return "if the guest is reached as a user other than root, set spec.ansible.become: true (policies/README.md)";
  }
  return {};
}

std::map<std::string, Result<guest::GuestFacts>> guest_facts_from(const PlaybookRun& report) {
  std::map<std::string, Result<guest::GuestFacts>> out;
  for (const auto& [name, host] : report.hosts) {
    auto report_task = finished_task(host, task::report);
    if (!report_task) {
      out.emplace(name, std::unexpected(report_task.error()));
      continue;
    }
    auto facts = guest::parse_guest_report(string_at((*report_task)->result, "stdout"), name);
    if (const auto* docker = host.task(task::docker_volumes);
        facts && docker != nullptr && docker->status != TaskResult::skipped) {
      facts->docker = docker_volumes_of(*docker, name);
      if (*facts->docker) guest::take_volume_answers(**facts->docker, facts->mounts);
    }
    out.emplace(name, std::move(facts));
  }
  return out;
}

bool ended_by_time_limit(const TaskOutcome& task) {
  if (task.status != TaskResult::failed) return false;
  if (task.result.contains("timedout")) return true;
  const auto* rc = task.result.if_contains("rc");
  return rc != nullptr && rc->is_int64() && (rc->as_int64() == 124 || rc->as_int64() == 137);
}

Result<ChangeOutcome> change_outcome_from(const HostReport& host, std::string_view task_name) {
  const auto* t = host.task(task_name);
  if (t == nullptr) return fail(std::string("no result for task '") + std::string(task_name) + "'", host.host);
  auto report = guest::parse_change_report(string_at(t->result, "stdout"), host.host);
  if (!report) return std::unexpected(report.error());
  ChangeOutcome out;
  out.report = std::move(*report);
  if (t->status == TaskResult::failed) {
    out.failed_in = out.report.last();
    // The script's one line on stderr; without a stage it never ran, and Ansible's message says why.
    // Ended by the guest's time limit: said so, with the stage it was in (a hard NFS mount that
    // stopped answering hangs mount and umount).
    std::string why(guest::trim(string_at(t->result, "stderr")));
    if (ended_by_time_limit(*t) && why.empty()) {
      why = "ended by the guest's time limit (spec.ansible.guest_timeout)";
    } else if (!out.failed_in || why.empty()) {
      why = t->message;
    }
    out.message = "failed in '" + std::string(out.failed_in ? guest::title(*out.failed_in) : task_name) + "': " + why;
    return out;
  }
  if (!out.report.finished) {
    return fail("the fstab script ended without its end mark", host.host,
                "check that /bin/sh, sha256sum, mktemp, dd, mount and awk work there");
  }
  return out;
}

std::map<std::string, Result<ProbeObservation>> probe_observations_from(const PlaybookRun& report) {
  std::map<std::string, Result<ProbeObservation>> out;
  for (const auto& [name, host] : report.hosts) {
    auto task = finished_task(host, task::probe);
    if (!task) {
      out.emplace(name, std::unexpected(task.error()));
      continue;
    }
    auto probe = guest::parse_probe_report(string_at((*task)->result, "stdout"), name);
    if (!probe) {
      out.emplace(name, std::unexpected(probe.error()));
      continue;
    }
    ProbeObservation obs;
    obs.host = name;
    if (probe->refused) {
      obs.refused = std::move(probe->refused);
      out.emplace(name, std::move(obs));
      continue;
    }
    obs.before = std::move(probe->before.read);
    obs.after = std::move(probe->after.read);
    obs.window_seconds = probe->after.at - probe->before.at;
    obs.probe_seconds = probe->probe_seconds;
    if (probe->baseline) {
      obs.baseline_seconds = probe->before.at - probe->baseline->at;
      obs.baseline = std::move(probe->baseline->read);
    }
    obs.probe_rc = probe->probe.rc;
    obs.probe_stderr = std::move(probe->probe.stderr_text);
    obs.dd = guest::parse_dd_summary(obs.probe_stderr);
    if (probe->commit) {
      auto& run = obs.commit.emplace();
      const auto dd = guest::parse_dd_summary(probe->commit->stderr_text);
      if (probe->commit->rc == 0 && dd && dd->seconds > 0) {
        run.cycles = static_cast<int>(dd->bytes / 8192);
        run.seconds = dd->seconds;
      } else {
        const auto line = guest::dd_error_line(probe->commit->stderr_text);
        run.error = line.empty() ? std::string("dd gave no summary") : line;
      }
    }
    out.emplace(name, std::move(obs));
  }
  return out;
}

}  // namespace pw::ansible
