// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The fstab phases (apply and its rollback) as one script per guest, the phase's only task: the
// compare-and-swap on the observed hash, the backup, the atomic write, the written hash, the
// unmounts and the mounts, each a stage the script announces before it starts. One `raw` task
// instead of ten module tasks: no Python in the guest, no module payload built and sent per
// task (tests/bench/profiles: each module task costs every guest a worker fork, an SSH exchange
// and a Python start-up; under QEMU's emulation that was 2-4 s a task, 23 s an apply).
//
// The script's output, on stdout: "@@pathwarden stage NAME" before each stage, "@@pathwarden
// end" when all is done. On a failure it writes one line saying why on stderr and exits 1: the
// last stage announced is where it failed, and that decides what the engine may assume (before
// `write` the fstab was not touched; in `refuse` it is someone else's edit).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics/error.hpp"
#include "guest/operations.hpp"

namespace pw::guest {

enum class ChangeStage : std::uint8_t {
  read,           // the fstab's hash as it is now
  refuse,         // compare-and-swap: refused when the fstab is not what the change expects
  backup,         // apply: the backup of the fstab as observed, and its hash checked
  write,          // apply: the new fstab, written to a temporary file beside it and renamed over it
  check_written,  // apply: the fstab's hash is the new content's
  check_backup,   // rollback: the backup's hash is the observed fstab's
  restore,        // rollback: the backup put back the same way as `write`
  unmount,        // every mount to re-make, unmounted (inner mounts first)
  mount,          // mounted again from scratch with exactly the planned values
};

// What an operator reads in "failed in '...'": the words the playbooks' tasks had when each stage
// was a task of its own, kept so messages and runbooks read the same.
std::string_view title(ChangeStage stage);
std::optional<ChangeStage> change_stage_named(std::string_view name);

// The scripts (POSIX sh, coreutils and util-linux: sha256sum, mktemp, dd, stat, mount, umount,
// awk). Their first argument is the fstab's path; the rest come from *_script_argv.
std::string_view apply_script();
std::string_view rollback_script();

// The arguments after the fstab's path, every value one argument. Fails on a value no argv can
// carry (a NUL byte).
Result<std::vector<std::string>> apply_script_argv(const FstabChange& change, std::string_view new_sha256);
Result<std::vector<std::string>> rollback_script_argv(const FstabRestore& restore);

// A mount point as /proc/mounts writes it (space, tab, newline and backslash as octal escapes):
// the scripts find a mount there by its text, never by stat(2), which hangs on a dead NFS server.
std::string proc_mounts_escaped(std::string_view path);

struct ChangeReport {
  std::vector<ChangeStage> stages;  // announced, in order
  bool finished = false;            // "@@pathwarden end" seen
  std::optional<ChangeStage> last() const {
    return stages.empty() ? std::nullopt : std::optional<ChangeStage>(stages.back());
  }
  bool reached(ChangeStage s) const;
};

// Reads the script's stdout (lines before the first mark, a login shell's, are ignored); an
// unknown stage name is an error naming `where`.
Result<ChangeReport> parse_change_report(std::string_view text, std::string_view where);

}  // namespace pw::guest
