#include "guest/probe_report.hpp"

#include <cstdio>
#include <span>

#include "guest/script_output.hpp"
#include "guest/tokens.hpp"

namespace pw::guest {
namespace {

// The counter read is the one of counter_read.hpp (its output parses with parse_counter_read),
// preceded by the read's name and the guest's uptime: the window is measured by the guest's
// monotonic clock, not by when Ansible saw tasks start and end.
// Before the probe, the file is checked as dd will meet it (item "the probe" of the hardening):
// every part of its path below the mount point must not be a symbolic link (a link planted by
// whoever can write the share would send a root dd anywhere), and a read probe's file must be a
// regular file (a FIFO blocks dd's open until the task's limit; a device is read as the guest
// sees it). Refusals are a "refused KIND" section saying why, and the script ends there: a
// named precondition, never a hang. dd itself opens without following a link (iflag/oflag
// nofollow) and a read without blocking on a FIFO swapped in after the check (iflag nonblock).
constexpr std::string_view kProbeScript = R"sh(baseline=$1 remove=$2 cycles=$3 commit_path=$4 mode=$5 mp=$6 file=$7
shift 7
uptime_now() { read -r up _ </proc/uptime && printf '%s' "$up"; }
counters() {
  mark read "$1" "$(uptime_now)"
  cat /proc/net/dev
  mark ifindex
  for d in /sys/class/net/*; do
    [ -e "$d/ifindex" ] || continue
    i=; { read -r i <"$d/ifindex"; } 2>/dev/null; printf '%s %s\n' "${d##*/}" "$i"
  done
  mark nfs_connections
  ss -Htni state established '( dport = :2049 )' 2>/dev/null || true
}
refuse() {
  mark refused "$1"
  printf '%s\n' "$2"
  mark end
  exit 0
}
rel=
if [ -n "$mp" ]; then rel=${file#"$mp"/}; fi
at=$mp
while [ -n "$rel" ]; do
  case $rel in
    */*) part=${rel%%/*} rel=${rel#*/} ;;
    *) part=$rel rel= ;;
  esac
  at=$at/$part
  if [ -L "$at" ]; then refuse link "$at is a symbolic link"; fi
done
if [ "$mode" = read ]; then
  if [ -p "$file" ]; then refuse fifo "$file is a FIFO (named pipe), not a regular file"; fi
  if [ -b "$file" ] || [ -c "$file" ]; then refuse device "$file is a device, not a regular file"; fi
  if [ -S "$file" ]; then refuse socket "$file is a socket, not a regular file"; fi
  if [ -d "$file" ]; then refuse directory "$file is a directory, not a regular file"; fi
  if [ -e "$file" ] && [ ! -f "$file" ]; then refuse other "$file is not a regular file"; fi
fi
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
  err=$(dd if=/dev/zero of="$commit_path" bs=8192 count="$cycles" oflag=dsync,nofollow conv=excl 2>&1 >/dev/null)
  rc=$?
  mark commit "$rc"
  printf '%s\n' "$err"
  case $err in *'File exists'*) ;; *) rm -f -- "$commit_path" ;; esac
fi
mark end
)sh";

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
  static const std::string text = "set -u\n" + std::string(script_mark_prelude()) + std::string(kProbeScript);
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
