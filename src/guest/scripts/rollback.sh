# SPDX-License-Identifier: GPL-3.0-or-later
# rollback (guest/change_script.hpp), after marks.sh and fstab_common.sh.
# pathwarden-args: backup backup_sha written activations...
#   backup, backup_sha  the backup and its SHA-256 (the fstab as observed before apply)
#   written             SHA-256 of what apply wrote: anything else is someone else's edit
#   activations...      as in apply.sh
backup=$1 backup_sha=$2 written=$3
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
# The directories this change's apply made, deepest first, if empty now (rmdir never removes
# what holds anything, nor a mount point in use).
if [ -f "$backup.dirs" ]; then
  while IFS= read -r pw_line; do
    pw_d=$(printf '%s' "$pw_line" | base64 -d 2>/dev/null) || continue
    [ -n "$pw_d" ] && [ -d "$pw_d" ] && [ ! -L "$pw_d" ] && rmdir -- "$pw_d" 2>/dev/null
  done <"$backup.dirs"
  rm -f -- "$backup.dirs"
fi
mark end
