#include "ansible/phase_results.hpp"

#include <charconv>

#include "ansible/playbooks.hpp"

namespace pw::ansible {

namespace json = boost::json;

namespace {

std::string string_at(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::optional<double> number(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
long long days_from_civil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

// The Docker task runs with failed_when false: its exit code says what happened.
Result<std::vector<guest::DockerVolume>> docker_volumes_of(const TaskOutcome& t, const std::string& host) {
  const auto* rc = t.result.if_contains("rc");
  const long long code = rc != nullptr && rc->is_int64() ? rc->as_int64() : -1;
  if (code == 0) return guest::parse_docker_volume_inspect(string_at(t.result, "stdout"), host + ": docker volume inspect");
  std::string why = string_at(t.result, "stderr");
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  if (why.empty()) why = t.message.empty() ? "exit " + std::to_string(code) : t.message;
  const char* hint = code == 3 ? "install Docker there, or use another spec.mount.owner"
                     : why.find("permission denied") != std::string::npos
                         ? "Docker's socket is root's: set spec.ansible.become: true in the Controller settings, or add the SSH user "
                           "to the docker group"
                         : "check 'systemctl status docker' in the guest";
  return fail("Docker did not list its volumes: " + why, host, hint);
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

std::optional<std::string> decode_base64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  std::size_t padding = 0;
  for (char c : text) {
    if (c == '\n' || c == '\r') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0) return std::nullopt;  // data after padding
    int v = value(c);
    if (v < 0) return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  if (padding > 2) return std::nullopt;
  return out;
}

// Cuts the report's leading "@@pathwarden fstab" section out of `report`; returns its body.
static std::optional<std::string> take_fstab_section(std::string& report) {
  constexpr std::string_view head = "@@pathwarden fstab\n";
  if (!std::string_view(report).starts_with(head)) return std::nullopt;
  const auto next = report.find("\n@@pathwarden ", head.size() - 1);
  if (next == std::string::npos) return std::nullopt;
  std::string body = report.substr(head.size(), next + 1 - head.size());
  report.erase(0, next + 1);
  return body;
}

std::optional<double> timestamp_seconds(std::string_view stamp) {
  // "YYYY-MM-DD HH:MM:SS.ffffff"
  if (stamp.size() < 19 || stamp[4] != '-' || stamp[7] != '-' || stamp[10] != ' ' || stamp[13] != ':' ||
      stamp[16] != ':') {
    return std::nullopt;
  }
  auto part = [&](std::size_t at, std::size_t len) { return number(stamp.substr(at, len)); };
  auto y = part(0, 4), mo = part(5, 2), d = part(8, 2), h = part(11, 2), mi = part(14, 2);
  auto s = number(stamp.substr(17));
  if (!y || !mo || !d || !h || !mi || !s) return std::nullopt;
  auto days = days_from_civil(static_cast<long long>(*y), static_cast<unsigned>(*mo), static_cast<unsigned>(*d));
  return static_cast<double>(days) * 86400.0 + *h * 3600.0 + *mi * 60.0 + *s;
}

std::optional<double> delta_seconds(std::string_view delta) {
  // "H:MM:SS.ffffff"
  auto first = delta.find(':');
  auto second = delta.find(':', first == std::string_view::npos ? first : first + 1);
  if (first == std::string_view::npos || second == std::string_view::npos) return std::nullopt;
  auto h = number(delta.substr(0, first));
  auto m = number(delta.substr(first + 1, second - first - 1));
  auto s = number(delta.substr(second + 1));
  if (!h || !m || !s) return std::nullopt;
  return *h * 3600.0 + *m * 60.0 + *s;
}

std::map<std::string, Result<guest::GuestFacts>> guest_facts_from(const PlaybookRun& report) {
  std::map<std::string, Result<guest::GuestFacts>> out;
  for (const auto& [name, host] : report.hosts) {
    // The fstab's bytes: the report's first section (base64), or, in a run of a playbook from
    // before the report read it (a recording), the slurp task's result.
    const bool slurped = host.task(task::read_fstab) != nullptr;
    auto fstab_task = slurped ? finished_task(host, task::read_fstab) : Result<const TaskOutcome*>{nullptr};
    auto report_task = finished_task(host, task::report);
    if (!fstab_task || !report_task) {
      out.emplace(name, std::unexpected(fstab_task ? report_task.error() : fstab_task.error()));
      continue;
    }
    std::string report_text = string_at((*report_task)->result, "stdout");
    std::optional<std::string> content;
    if (slurped) {
      content = decode_base64(string_at((*fstab_task)->result, "content"));
    } else if (auto section = take_fstab_section(report_text)) {
      content = decode_base64(*section);
    } else {
      out.emplace(name, fail("the facts report has no fstab section", name, "was the right playbook run?"));
      continue;
    }
    if (!content) {
      out.emplace(name, fail("the fstab came back in a form that is not base64", name));
      continue;
    }
    auto facts = guest::parse_guest_report(report_text, std::move(*content), name);
    if (const auto* docker = host.task(task::docker_volumes); facts && docker != nullptr &&
                                                                   docker->status != TaskResult::skipped) {
      facts->docker = docker_volumes_of(*docker, name);
    }
    out.emplace(name, std::move(facts));
  }
  return out;
}

std::map<std::string, Result<ProbeObservation>> probe_observations_from(const PlaybookRun& report) {
  std::map<std::string, Result<ProbeObservation>> out;
  for (const auto& [name, host] : report.hosts) {
    auto before = finished_task(host, task::counters_before);
    auto probe = finished_task(host, task::probe);
    auto after = finished_task(host, task::counters_after);
    if (!before || !probe || !after) {
      out.emplace(name, std::unexpected(!before ? before.error() : !probe ? probe.error() : after.error()));
      continue;
    }
    ProbeObservation obs;
    obs.host = name;
    auto read_before = guest::parse_counter_read(string_at((*before)->result, "stdout"), name);
    auto read_after = guest::parse_counter_read(string_at((*after)->result, "stdout"), name);
    if (!read_before || !read_after) {
      out.emplace(name, std::unexpected(!read_before ? read_before.error() : read_after.error()));
      continue;
    }
    obs.before = std::move(*read_before);
    obs.after = std::move(*read_after);
    obs.probe_seconds = delta_seconds(string_at((*probe)->result, "delta")).value_or(0);
    auto window_start = timestamp_seconds(string_at((*before)->result, "end"));
    auto window_end = timestamp_seconds(string_at((*after)->result, "start"));
    if (!window_start || !window_end) {
      out.emplace(name, fail("the probe's timestamps are missing or unreadable", name));
      continue;
    }
    obs.window_seconds = *window_end - *window_start;
    if (const auto* base = host.task(task::counters_baseline); base != nullptr && base->status != TaskResult::skipped) {
      auto read_base = guest::parse_counter_read(string_at(base->result, "stdout"), name);
      auto base_end = timestamp_seconds(string_at(base->result, "end"));
      if (!read_base || !base_end) {
        out.emplace(name, std::unexpected(!read_base ? read_base.error()
                                                     : Error{"the baseline's timestamps are unreadable", name, {}}));
        continue;
      }
      obs.baseline = std::move(*read_base);
      obs.baseline_seconds = *window_start - *base_end;
    }
    obs.probe_stderr = string_at((*probe)->result, "stderr");
    if (const auto* rc = (*probe)->result.if_contains("rc"); rc != nullptr && rc->is_int64())
      obs.probe_rc = static_cast<int>(rc->as_int64());
    obs.dd = guest::parse_dd_summary(obs.probe_stderr);
    if (const auto* c = host.task(task::commit); c != nullptr && c->status != TaskResult::skipped) {
      auto& run = obs.commit.emplace();
      const auto stderr_text = string_at(c->result, "stderr");
      const auto* rc = c->result.if_contains("rc");
      const auto dd = guest::parse_dd_summary(stderr_text);
      if (rc != nullptr && rc->is_int64() && rc->as_int64() == 0 && dd && dd->seconds > 0) {
        run.cycles = static_cast<int>(dd->bytes / 8192);
        run.seconds = dd->seconds;
      } else {
        const auto line = guest::dd_error_line(stderr_text);
        run.error = line.empty() ? (c->message.empty() ? std::string("dd gave no summary") : c->message) : line;
      }
    }
    out.emplace(name, std::move(obs));
  }
  return out;
}

}  // namespace pw::ansible
