#include "guest/probe_report.hpp"

#include <cstdio>

#include "guest/tokens.hpp"

namespace pw::guest {
namespace {

// The counter read is the one of counter_read.hpp (its output parses with parse_counter_read),
// preceded by the read's name and the guest's uptime: the window is measured by the guest's
// monotonic clock, not by when Ansible saw tasks start and end.
constexpr std::string_view kProbeScript = R"sh(set -u
baseline=$1 remove=$2 cycles=$3 commit_path=$4
shift 4
mark() { printf '@@pathwarden %s\n' "$*"; }
uptime_now() { read -r up _ </proc/uptime && printf '%s' "$up"; }
counters() {
  mark read "$1" "$(uptime_now)"
  cat /proc/net/dev
  echo '@@pathwarden ifindex'
  for d in /sys/class/net/*; do
    [ -e "$d/ifindex" ] || continue
    i=; { read -r i <"$d/ifindex"; } 2>/dev/null; printf '%s %s\n' "${d##*/}" "$i"
  done
  echo '@@pathwarden nfs_connections'
  ss -Htni state established '( dport = :2049 )' 2>/dev/null || true
}
if [ "$baseline" != 0 ]; then
  counters baseline
  sleep "$baseline"
fi
counters before
start=$(uptime_now)
err=$("$@" 2>&1 >/dev/null)
rc=$?
end=$(uptime_now)
counters after
mark probe "$rc" "$start" "$end"
printf '%s\n' "$err"
# conv=excl: dd made the file only if it did not say the name was taken; only then is it ours.
if [ -n "$remove" ]; then
  case $err in *'File exists'*) ;; *) rm -f -- "$remove" ;; esac
fi
# After the "after" read: the commit cycles' few bytes never mix into the probe's window.
if [ "$cycles" -gt 0 ]; then
  err=$(dd if=/dev/zero of="$commit_path" bs=8192 count="$cycles" oflag=dsync conv=excl 2>&1 >/dev/null)
  rc=$?
  mark commit "$rc"
  printf '%s\n' "$err"
  case $err in *'File exists'*) ;; *) rm -f -- "$commit_path" ;; esac
fi
mark end
)sh";

struct ProbeSection {
  std::vector<std::string_view> head;  // the mark's words after "@@pathwarden"
  std::string body;
};

Result<TimedRead> timed_read(const ProbeSection& s, std::string_view where) {
  auto at = s.head.size() == 3 ? to_seconds(s.head[2]) : std::nullopt;
  if (!at)
    return fail("unreadable probe mark '" + std::string(s.head.empty() ? "" : s.head[0]) + "'", std::string(where));
  auto read = parse_counter_read(s.body, where);
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
  std::vector<std::string> out{args.baseline_seconds > 0 ? std::string(seconds) : std::string("0"), args.remove_after,
                               std::to_string(args.commit_cycles > 0 ? args.commit_cycles : 0), args.commit_path};
  out.insert(out.end(), args.dd_argv.begin(), args.dd_argv.end());
  return out;
}

std::string_view probe_script() {
  return kProbeScript;
}

Result<ProbeReport> parse_probe_report(std::string_view text, std::string_view where) {
  std::vector<ProbeSection> sections;
  bool complete = false;
  for (auto line : lines_of(text)) {
    if (line.starts_with(kScriptMark)) {
      auto words = fields_of(line.substr(kScriptMark.size()));
      if (!words.empty() && words[0] == "end") {
        complete = true;
        break;
      }
      if (!words.empty() && (words[0] == "read" || words[0] == "probe" || words[0] == "commit")) {
        sections.push_back(ProbeSection{std::vector<std::string_view>(words.begin() + 1, words.end()), {}});
        sections.back().head.insert(sections.back().head.begin(), words[0]);
        continue;
      }
    }
    if (sections.empty()) continue;  // anything a login shell printed before the script
    sections.back().body.append(line).push_back('\n');
  }
  if (!complete) {
    return fail("the guest's probe report is incomplete (no end marker)", std::string(where),
                "check that /bin/sh works there and the task was not cut short");
  }
  ProbeReport out;
  bool before = false, after = false, probe = false;
  for (const auto& s : sections) {
    const auto kind = s.head[0];
    if (kind == "read") {
      const auto name = s.head.size() > 1 ? s.head[1] : std::string_view{};
      auto read = timed_read(s, where);
      if (!read) return std::unexpected(read.error());
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
      auto rc = s.head.size() == 4 ? to_int(s.head[1]) : std::nullopt;
      auto start = s.head.size() == 4 ? to_seconds(s.head[2]) : std::nullopt;
      auto end = s.head.size() == 4 ? to_seconds(s.head[3]) : std::nullopt;
      if (!rc || !start || !end) return fail("unreadable probe mark in the probe report", std::string(where));
      out.probe = DdOutcome{static_cast<int>(*rc), without_last_newline(s.body)};
      out.probe_seconds = *end - *start;
      probe = true;
    } else if (kind == "commit") {
      auto rc = s.head.size() == 2 ? to_int(s.head[1]) : std::nullopt;
      if (!rc) return fail("unreadable commit mark in the probe report", std::string(where));
      out.commit = DdOutcome{static_cast<int>(*rc), without_last_newline(s.body)};
    }
  }
  if (!before || !after || !probe) {
    return fail("the guest's probe report lacks its before/after reads or the probe", std::string(where));
  }
  return out;
}

}  // namespace pw::guest
