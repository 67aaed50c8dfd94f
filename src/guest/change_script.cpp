#include "guest/change_script.hpp"

#include <array>

#include "guest/fstab.hpp"
#include "guest/fstab_edit.hpp"
#include "guest/script_output.hpp"
#include "guest/tokens.hpp"

namespace pw::guest {
namespace {

// What both scripts share. `put` writes a whole file the way a crash cannot half-do: a new file
// beside the target (same filesystem), its bytes flushed (dd conv=fsync), mode and owner set,
// then renamed over the target; a temporary file left by a failure is removed on exit, also
// when ssh's death hangs the script up. `mounted` reads /proc/self/mounts, never stat(2).
constexpr std::string_view kPrelude = R"sh(fstab=$1
shift
tmp=
trap 'if [ -n "$tmp" ]; then rm -f -- "$tmp"; fi' EXIT
trap 'exit 1' HUP INT TERM
fail() { printf '%s\n' "$*" >&2; exit 1; }
sha_of() { h=$(sha256sum <"$1") || return 1; printf '%s' "${h%% *}"; }
new_tmp() {
  dir=${1%/*}
  [ -n "$dir" ] || dir=/
  tmp=$(mktemp "$dir/.${1##*/}.pathwarden.XXXXXX" 2>&1) || { why=$tmp; tmp=; fail "$dir not writable: ${why##*: }"; }
}
install_tmp() {
  err=$(sync -- "$tmp" 2>&1) || fail "$err"
  err=$(chmod "$2" -- "$tmp" 2>&1) || fail "$err"
  if [ -n "$3" ]; then err=$(chown "$3" -- "$tmp" 2>&1) || fail "$err"; fi
  err=$(mv -f -- "$tmp" "$1" 2>&1) || fail "$err"
  tmp=
  sync -- "$dir" 2>/dev/null || true
}
put() {
  new_tmp "$1"
  err=$(dd if="$4" of="$tmp" status=none 2>&1) || fail "$err"
  install_tmp "$1" "$2" "$3"
}
mounted() { P=$1 awk 'BEGIN { p = ENVIRON["P"] } $2 == p { found = 1 } END { exit !found }' /proc/self/mounts; }
remake() {
  mark stage unmount
  n=$1
  shift
  while [ "$n" -gt 0 ]; do
    if mounted "$2"; then
      err=$(umount -- "$1" 2>&1) || fail "Error unmounting $1: $err"
    fi
    shift 2
    n=$((n - 1))
  done
  mark stage mount
  while [ "$#" -gt 0 ]; do
    if [ ! -d "$1" ]; then
      err=$(mkdir -p -- "$1" 2>&1) || fail "Error making dir $1: $err"
    fi
    if mounted "$2"; then fail "Error mounting $1: something mounted it again after it was unmounted"; fi
    if [ "$5" = defaults ]; then
      err=$(mount -t "$4" -- "$3" "$1" 2>&1)
    else
      err=$(mount -t "$4" -o "$5" -- "$3" "$1" 2>&1)
    fi || fail "Error mounting $1: $err"
    shift 5
  done
}
# A symlinked fstab is changed where it points: the link stays, and the file's own mode and owner
# are kept (stat(1) of the link itself says 777, and renaming over it would drop the link).
if [ -L "$fstab" ]; then
  real=$(readlink -f -- "$fstab" 2>&1) || fail "cannot follow the symlink $fstab: $real"
  fstab=$real
fi
now=
mark stage read
if [ -e "$fstab" ]; then now=$(sha_of "$fstab") || fail "cannot read $fstab"; fi
mark stage refuse
)sh";

// The new file is assembled from the backup (the observed bytes, checked) and the edit's
// pieces (guest/fstab_edit.hpp), and its hash checked before it replaces the fstab.
constexpr std::string_view kApply = R"sh(observed=$1 new=$2 backup=$3 words=$4
shift 4
assemble() {
  src=$1 n=$2
  shift 2
  while [ "$n" -gt 0 ]; do
    case $1 in
      c) dd if="$src" iflag=skip_bytes,count_bytes skip="$2" count="$3" bs=65536 status=none || return 1
         shift 3; n=$((n - 3)) ;;
      t) printf '%s' "$2" || return 1
         shift 2; n=$((n - 2)) ;;
      *) return 1 ;;
    esac
  done
}
changed='the fstab changed since pathwarden observed it; gather facts and plan again'
case $now in "$observed" | "$new") ;; *) fail "$changed" ;; esac
# The new content is ours only when this change's backup exists (a retry of it; the backup's
# hash is checked below): the same content written by another controller is its change.
if [ "$now" != "$observed" ] && [ ! -e "$backup" ]; then fail "$changed"; fi
mark stage backup
if [ ! -d "${backup%/*}" ]; then
  err=$(mkdir -p -m 700 -- "${backup%/*}" 2>&1) || fail "cannot make the backup directory: $err"
fi
if [ "$(stat -c %a -- "${backup%/*}")" != 700 ]; then
  err=$(chmod 700 -- "${backup%/*}" 2>&1) || fail "cannot make the backup directory private: $err"
fi
if [ "$now" = "$observed" ]; then put "$backup" 600 "" "$fstab"; fi
if [ ! -f "$backup" ] || [ "$(sha_of "$backup")" != "$observed" ]; then
  fail 'the backup does not hold the fstab as observed (it changed while it was copied?)'
fi
mark stage write
new_tmp "$fstab"
err=$(assemble "$backup" "$words" "$@" 2>&1 >"$tmp") || fail "cannot put the new fstab together: $err"
[ "$(sha_of "$tmp")" = "$new" ] || fail 'the new fstab put together from the observed one is not what was planned'
shift "$words"
install_tmp "$fstab" "$(stat -c %a -- "$fstab")" "$(stat -c %u:%g -- "$fstab")"
mark stage check_written
[ "$(sha_of "$fstab")" = "$new" ] || fail 'the fstab does not hold what pathwarden wrote'
remake "$@"
mark end
)sh";

constexpr std::string_view kRollback = R"sh(backup=$1 backup_sha=$2 written=$3
shift 3
case $now in "$written" | "$backup_sha") ;; *) fail "the fstab changed since pathwarden wrote it; restore the backup by hand if still wanted" ;; esac
# An apply that never got to its write (refused, unreachable) left the fstab as it was: nothing
# to restore and no backup needed; the mounts are still re-made.
if [ "$now" != "$backup_sha" ]; then
  mark stage check_backup
  if [ ! -f "$backup" ] || [ "$(sha_of "$backup")" != "$backup_sha" ]; then
    fail 'the backup is missing or not the fstab pathwarden saved'
  fi
  mark stage restore
  put "$fstab" "$(stat -c %a -- "$fstab")" "$(stat -c %u:%g -- "$fstab")" "$backup"
  [ "$(sha_of "$fstab")" = "$backup_sha" ] || fail 'the fstab does not hold the backup after it was put back'
fi
remake "$@"
mark end
)sh";

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
      "set -u\n" + std::string(script_mark_prelude()) + std::string(kPrelude) + std::string(kApply);
  return text;
}

std::string_view rollback_script() {
  static const std::string text =
      "set -u\n" + std::string(script_mark_prelude()) + std::string(kPrelude) + std::string(kRollback);
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
