# SPDX-License-Identifier: GPL-3.0-or-later
# The probe (guest/probe_report.hpp), after marks.sh.
# pathwarden-args: baseline remove cycles commit_path mode mount_point file dd...
#   baseline     seconds of the background baseline before the probe ("0": none)
#   remove       a write probe's new file, removed after unless dd said the name was taken
#   cycles       commit-latency cycles after the probe ("0": none), to commit_path
#   mode         read or write; mount_point: no part of `file` below it may be a link
#   file         the probe file checked before anything is read; dd...: the probe's own argv
baseline=$1 remove=$2 cycles=$3 commit_path=$4 mode=$5 mp=$6 file=$7
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
