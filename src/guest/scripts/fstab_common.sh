# SPDX-License-Identifier: GPL-3.0-or-later
# What apply.sh and rollback.sh share (guest/change_script.hpp), after marks.sh: the fstab's
# path as $1, the temporary file and its clean-up, the atomic write, the unmount and mount of
# what is re-made, and the "read" and "refuse" stages' hash of the fstab as it is now.
# pathwarden-args: fstab
fstab=$1
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
      # The directories an apply makes are noted beside its backup (base64, deepest first), so
      # that its rollback removes them again (rollback.sh); a rollback's own remake notes none.
      if [ -n "${pw_made_log:-}" ]; then
        pw_d=$1
        while [ ! -e "$pw_d" ] && [ -n "$pw_d" ] && [ "$pw_d" != / ]; do
          printf '%s' "$pw_d" | base64 -w0 >>"$pw_made_log" && echo >>"$pw_made_log"
          pw_d=${pw_d%/*}
        done
      fi
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
