# SPDX-License-Identifier: GPL-3.0-or-later
# apply (guest/change_script.hpp), after marks.sh and fstab_common.sh.
# pathwarden-args: observed new backup words edit... activations...
#   observed, new  SHA-256 of the fstab as observed and as planned
#   backup         the backup's path; words: how many of the next arguments are the edit
#   edit...        "c OFFSET LENGTH" (bytes of the observed file) or "t TEXT" (guest/fstab_edit.hpp)
#   activations... N, then N pairs (path, /proc/mounts text) to unmount, then 5 per mount:
#                  path, /proc/mounts text, source, type, options ("defaults": none)
observed=$1 new=$2 backup=$3 words=$4
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
# Retention of the backup directory (settings spec.retention, set ahead of this script): beyond the
# newest $pw_keep_backups and older than $pw_backup_days days, backups go with their notes of
# made directories; never this change's. Best effort: a backup that cannot go stays.
prune_backups() {
  [ -n "${pw_keep_backups:-}" ] || return 0
  pw_now=$(date +%s)
  pw_n=0
  find "${backup%/*}" -maxdepth 1 -type f -name 'fstab.*' ! -name '*.dirs' -printf '%T@ %p\n' 2>/dev/null |
    sort -rn | while read -r pw_t pw_f; do
      pw_n=$((pw_n + 1))
      [ "$pw_f" = "$backup" ] && continue
      if [ "$pw_n" -gt "$pw_keep_backups" ] || [ $(((pw_now - ${pw_t%.*}) / 86400)) -gt "${pw_backup_days:-30}" ]; then
        rm -f -- "$pw_f" "$pw_f.dirs"
      fi
    done
}
changed='the fstab changed since pathwarden observed it; gather facts and plan again'
case $now in "$observed" | "$new") ;; *) fail "$changed" ;; esac
# The new content is ours only when this change's backup exists (a retry of it; the backup's
# hash is checked below): the same content written by another controller is its change.
if [ "$now" != "$observed" ] && [ ! -e "$backup" ]; then fail "$changed"; fi
mark stage backup
if [ ! -d "${backup%/*}" ]; then
  # Only the last directory needs to be private (a parent made on the way is checked below).
  # shellcheck disable=SC2174
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
pw_made_log="$backup.dirs"
remake "$@"
pw_made_log=
prune_backups
mark end
