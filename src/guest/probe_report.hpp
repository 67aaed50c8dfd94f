// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The probe phase in one run of one script per guest (the probe playbook's only task): the
// interface counters read before and after the probe's bytes, the bytes themselves (dd), the
// optional background baseline before, and the optional commit-latency cycles after, timed by
// the guest's own monotonic clock (/proc/uptime). One script instead of a task per step: the
// counter window holds the dd and nothing else (no Ansible task, no Python start-up between the
// reads), and each task costs every guest a worker fork and an SSH exchange on the controller.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/counter_read.hpp"
#include "verify/direction.hpp"

namespace pw::guest {

using verify::ProbeDirection;

// What the script is told, in the order of its arguments.
struct ProbeScriptArgs {
  double baseline_seconds = 0;  // 0: no baseline read
  std::string remove_after;     // a write probe's new file, removed after (unless dd refused)
  int commit_cycles = 0;        // 0: no commit cycles
  std::string commit_path;      // their new file, removed after (unless dd refused)
  ProbeDirection direction = ProbeDirection::read;
  std::string mount_point;           // no part of `file`'s path below it may be a symbolic link
  std::string file;                  // the probe file (read: must be a regular file)
  std::vector<std::string> dd_argv;  // the probe itself
};

// The script's argv after "sh -c SCRIPT sh": every value one argument.
std::vector<std::string> probe_script_argv(const ProbeScriptArgs& args);

// The script (POSIX sh), framed as guest/script_output.hpp says. Each counter read is a section
// "read NAME UPTIME" (NAME baseline, before, after; UPTIME the guest's /proc/uptime just before
// /proc/net/dev is read) followed by "ifindex" and "nfs_connections"; then "probe RC START END"
// with dd's stderr, "commit RC" with dd's stderr, and "end". A file it will not touch gives
// only "refused KIND" (link, fifo, device, socket, directory, other) with the reason. It exits
// 0 whatever dd does: dd's failure is the verifier's to judge.
std::string_view probe_script();

struct TimedRead {
  CounterRead read;
  double at = 0;  // guest uptime, seconds
};

struct DdOutcome {
  int rc = 0;
  std::string stderr_text;
};

// The probe file refused before anything was read (ProbeScriptArgs).
struct ProbeRefusal {
  std::string kind;     // link, fifo, device, socket, directory, other
  std::string message;  // "/mnt/x/probe is a FIFO (named pipe), not a regular file"
};

struct ProbeReport {
  std::optional<ProbeRefusal> refused;  // set: nothing else is
  std::optional<TimedRead> baseline;
  TimedRead before;
  TimedRead after;
  DdOutcome probe;
  double probe_seconds = 0;  // dd's run time by the guest's clock
  std::optional<DdOutcome> commit;
};

// Reads the script's output; `where` names the guest in messages.
Result<ProbeReport> parse_probe_report(std::string_view text, std::string_view where);

}  // namespace pw::guest
