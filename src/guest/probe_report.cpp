// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/probe_report.hpp"

#include <cstdio>
#include <span>

#include "guest/script_output.hpp"
#include "guest/scripts.hpp"
#include "guest/tokens.hpp"

namespace pw::guest {
namespace {

// A counter read: its "read NAME UPTIME" section and the "ifindex" and "nfs_connections"
// sections after it.
Result<TimedRead> timed_read(std::span<const ScriptSection> s, std::string_view where) {
  const auto& head = s.front().words;
  auto at = head.size() == 3 ? to_seconds(head[2]) : std::nullopt;
  if (!at) return fail("unreadable probe mark 'read " + (head.size() > 1 ? head[1] : "") + "'", std::string(where));
  auto body_of = [&](std::size_t i, std::string_view name) -> const std::string* {
    return s.size() > i && s[i].words == std::vector<std::string>{std::string(name)} ? &s[i].body : nullptr;
  };
  const auto* ifindex = body_of(1, "ifindex");
  const auto* connections = body_of(2, "nfs_connections");
  if (ifindex == nullptr || connections == nullptr) {
    return fail("the probe report's counter read '" + head[1] + "' lacks its ifindex or connections",
                std::string(where));
  }
  auto read = parse_counter_read(s.front().body, *ifindex, *connections, where);
  if (!read) return std::unexpected(read.error());
  return TimedRead{std::move(*read), *at};
}

std::string without_last_newline(std::string text) {
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

std::vector<std::string> probe_script_argv(const ProbeScriptArgs& args) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", args.baseline_seconds);
  std::vector<std::string> out{args.baseline_seconds > 0 ? std::string(seconds) : std::string("0"),
                               args.remove_after,
                               std::to_string(args.commit_cycles > 0 ? args.commit_cycles : 0),
                               args.commit_path,
                               args.direction == ProbeDirection::read ? "read" : "write",
                               args.mount_point,
                               args.file};
  out.insert(out.end(), args.dd_argv.begin(), args.dd_argv.end());
  return out;
}

std::string_view probe_script() {
  static const std::string text = "set -u\n" + std::string(scripts::marks) + std::string(scripts::probe);
  return text;
}

Result<ProbeReport> parse_probe_report(std::string_view text, std::string_view where) {
  auto output = split_script_output(text, "probe report", where);
  if (!output) return std::unexpected(output.error());
  if (!output->finished) {
    return fail("the guest's probe report is incomplete (no end mark)", std::string(where),
                "check that /bin/sh works there and the task was not cut short");
  }
  const auto& sections = output->sections;
  ProbeReport out;
  if (!sections.empty() && sections.front().words.front() == "refused") {
    const auto& w = sections.front().words;
    out.refused = ProbeRefusal{w.size() > 1 ? w[1] : "other", without_last_newline(sections.front().body)};
    return out;
  }
  bool before = false, after = false, probe = false;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const auto& s = sections[i];
    const auto& kind = s.words.front();
    if (kind == "read") {
      const auto name = s.words.size() > 1 ? s.words[1] : std::string();
      auto read = timed_read(std::span(sections).subspan(i), where);
      if (!read) return std::unexpected(read.error());
      i += 2;  // its ifindex and connections
      if (name == "baseline") {
        out.baseline = std::move(*read);
      } else if (name == "before") {
        out.before = std::move(*read);
        before = true;
      } else if (name == "after") {
        out.after = std::move(*read);
        after = true;
      }
    } else if (kind == "probe") {
      auto rc = s.words.size() == 4 ? to_int(s.words[1]) : std::nullopt;
      auto start = s.words.size() == 4 ? to_seconds(s.words[2]) : std::nullopt;
      auto end = s.words.size() == 4 ? to_seconds(s.words[3]) : std::nullopt;
      if (!rc || !start || !end) return fail("unreadable probe mark in the probe report", std::string(where));
      out.probe = DdOutcome{static_cast<int>(*rc), without_last_newline(s.body)};
      out.probe_seconds = *end - *start;
      probe = true;
    } else if (kind == "commit") {
      auto rc = s.words.size() == 2 ? to_int(s.words[1]) : std::nullopt;
      if (!rc) return fail("unreadable commit mark in the probe report", std::string(where));
      out.commit = DdOutcome{static_cast<int>(*rc), without_last_newline(s.body)};
    } else {
      return fail("unknown section '" + kind + "' in the probe report", std::string(where));
    }
  }
  if (!before || !after || !probe) {
    return fail("the guest's probe report lacks its before/after reads or the probe", std::string(where));
  }
  return out;
}

}  // namespace pw::guest
