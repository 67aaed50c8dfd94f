// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/change_script.hpp"

#include <array>

#include "guest/fstab.hpp"
#include "guest/fstab_edit.hpp"
#include "guest/script_output.hpp"
#include "guest/scripts.hpp"
#include "guest/tokens.hpp"

namespace pw::guest {
namespace {

struct Named {
  ChangeStage stage;
  std::string_view name;   // in the script's marks
  std::string_view title;  // for operators
};

constexpr std::array<Named, 9> kStages{{
    {ChangeStage::read, "read", "Read the fstab as it is now"},
    {ChangeStage::refuse, "refuse", "Refuse to write when the fstab changed since it was observed"},
    {ChangeStage::backup, "backup", "Keep a backup of the fstab as observed"},
    {ChangeStage::write, "write", "Write the new fstab"},
    {ChangeStage::check_written, "check_written", "Check the fstab holds exactly what was written"},
    {ChangeStage::check_backup, "check_backup", "Check the backup is the fstab as observed before the change"},
    {ChangeStage::restore, "restore", "Put the backup back"},
    {ChangeStage::unmount, "unmount", "Unmount the mounts to re-make"},
    {ChangeStage::mount, "mount", "Mount them again with the new options"},
}};

Status carried_by_argv(const std::vector<std::string>& argv, const std::string& host) {
  for (const auto& a : argv) {
    if (a.find('\0') != std::string::npos) return fail("a value for the guest's fstab script holds a NUL byte", host);
  }
  return {};
}

void add_activations(std::vector<std::string>& argv, const std::vector<MountActivation>& activations) {
  // Unmounted in reverse order (inner mounts first), mounted in the given order.
  argv.push_back(std::to_string(activations.size()));
  for (auto it = activations.rbegin(); it != activations.rend(); ++it) {
    argv.push_back(it->path);
    argv.push_back(proc_mounts_escaped(it->path));
  }
  for (const auto& a : activations) {
    if (!a.mount) continue;
    argv.insert(argv.end(), {a.path, proc_mounts_escaped(a.path), a.source, a.fstype, join_options(a.options)});
  }
}

}  // namespace

std::string_view title(ChangeStage stage) {
  for (const auto& s : kStages) {
    if (s.stage == stage) return s.title;
  }
  return "?";
}

std::optional<ChangeStage> change_stage_named(std::string_view name) {
  for (const auto& s : kStages) {
    if (s.name == name) return s.stage;
  }
  return std::nullopt;
}

std::string_view apply_script() {
  static const std::string text =
      "set -u\n" + std::string(scripts::marks) + std::string(scripts::fstab_common) + std::string(scripts::apply);
  return text;
}

std::string_view rollback_script() {
  static const std::string text =
      "set -u\n" + std::string(scripts::marks) + std::string(scripts::fstab_common) + std::string(scripts::rollback);
  return text;
}

Result<std::vector<std::string>> apply_script_argv(const FstabChange& change, std::string_view new_sha256) {
  auto pieces = edit_argv(fstab_edit(change.observed_content, change.new_content));
  std::vector<std::string> argv{change.observed_sha256, std::string(new_sha256), change.backup_path,
                                std::to_string(pieces.size())};
  argv.insert(argv.end(), pieces.begin(), pieces.end());
  add_activations(argv, change.activations);
  if (auto s = carried_by_argv(argv, change.host); !s) return std::unexpected(s.error());
  return argv;
}

Result<std::vector<std::string>> rollback_script_argv(const FstabRestore& restore) {
  std::vector<std::string> argv{restore.backup_path, restore.backup_sha256, restore.written_sha256};
  add_activations(argv, restore.activations);
  if (auto s = carried_by_argv(argv, restore.host); !s) return std::unexpected(s.error());
  return argv;
}

std::string proc_mounts_escaped(std::string_view path) {
  // fs/proc_namespace.c: show_vfsmnt() writes the mount point with mangle(): " \t\n\\" as \ooo.
  std::string out;
  for (char c : path) {
    switch (c) {
      case ' ':
        out += "\\040";
        break;
      case '\t':
        out += "\\011";
        break;
      case '\n':
        out += "\\012";
        break;
      case '\\':
        out += "\\134";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

bool ChangeReport::reached(ChangeStage s) const {
  for (auto x : stages) {
    if (x == s) return true;
  }
  return false;
}

Result<ChangeReport> parse_change_report(std::string_view text, std::string_view where) {
  auto output = split_script_output(text, "fstab script's output", where);
  if (!output) return std::unexpected(output.error());
  ChangeReport out;
  out.finished = output->finished;
  for (const auto& s : output->sections) {
    if (s.words.size() != 2 || s.words[0] != "stage") {
      return fail("unreadable mark '" + s.words[0] + "' in the fstab script's output", std::string(where));
    }
    auto stage = change_stage_named(s.words[1]);
    if (!stage) return fail("unknown stage '" + s.words[1] + "' in the fstab script's output", std::string(where));
    out.stages.push_back(*stage);
  }
  return out;
}

}  // namespace pw::guest
