# SPDX-License-Identifier: GPL-3.0-or-later
# Move the NFS client a mount rides from one server address to another, no remount
# (guest/transport_move.hpp; spec.mount.trunking: move-transport).
# pathwarden-args: mount_point mount_point_as_in_proc_mounts mounted_as from to move|restore
# Exit 97 (guest::kTransportUntouchedExit): refused before any transport was written.
# The kernel checks nothing it is given (net/sunrpc/sysfs.c rpc_sysfs_xprt_dstaddr_store: a typo
# or an IPv6 address "succeeds" and leaves the transport dead), so everything is checked here,
# and every written address is read back.
untouched=97
sunrpc=${PW_SUNRPC_DIR:-/sys/kernel/sunrpc/xprt-switches}
mounts=${PW_PROC_MOUNTS:-/proc/self/mounts}
mp=$1
mp_text=$2
mounted_as=$3
from=$4
to=$5
mode=$6
refuse() {
  echo "pathwarden: $*: nothing changed" >&2
  exit "$untouched"
}
is_ipv4() {
  case $1 in '' | *[!0-9.]* | *..* | .* | *.) return 1 ;; esac
  rest=$1.
  count=0
  while [ -n "$rest" ]; do
    octet=${rest%%.*}
    rest=${rest#*.}
    count=$((count + 1))
    [ "${#octet}" -le 3 ] && [ "$octet" -le 255 ] || return 1
  done
  [ "$count" -eq 4 ]
}
is_ipv4 "$from" || refuse "'$from' is not an IPv4 address (the kernel moves a transport to IPv4 only)"
is_ipv4 "$to" || refuse "'$to' is not an IPv4 address (the kernel moves a transport to IPv4 only)"
[ -d "$sunrpc" ] || refuse "this kernel has no $sunrpc (sunrpc sysfs, Linux 5.14 and later)"

# The mount in effect at that path (the last line: stacked mounts).
line=$(P=$mp_text awk 'BEGIN { p = ENVIRON["P"] } $2 == p { l = $0 } END { print l }' "$mounts")
if [ -z "$line" ]; then
  if [ "$mode" = restore ]; then
    echo "pathwarden: $mp is not mounted: no transport to move back"
    exit 0
  fi
  refuse "$mp is not mounted"
fi
dev=${line%% *}
rest=${line#* }
rest=${rest#* }
type=${rest%% *}
rest=${rest#* }
opts=${rest%% *}
addr=
vers=
old_ifs=$IFS
IFS=,
for o in $opts; do
  case $o in addr=*) addr=${o#addr=} ;; vers=*) vers=${o#vers=} ;; esac
done
IFS=$old_ifs
[ "$type" = nfs4 ] || refuse "$mp is a $type mount, not NFSv4"
case $vers in 4.[1-9]*) ;; *) refuse "$mp runs NFS $vers: only NFSv4.1 and later trunk" ;; esac
if [ "$mode" = restore ]; then
  if [ "$addr" != "$from" ]; then
    echo "pathwarden: $mp's NFS client is at ${addr:-an unknown address}, not $from: nothing to move back"
    exit 0
  fi
else
  # Mounted by the policy's server and joined to another address's client: the kernel found
  # both addresses to be one server (the same NFSv4 server owner), so moving is safe.
  [ "${dev%%:*}" = "$mounted_as" ] || refuse "$mp is mounted from ${dev%%:*}, not $mounted_as"
  if [ "$addr" = "$to" ]; then
    echo "pathwarden: $mp already has its own NFS client at $to: nothing to move"
    exit 0
  fi
  [ "$addr" = "$from" ] || refuse "$mp rides ${addr:-an unknown address}, not $from as planned"
fi

# The client: the switch whose main transport to port 2049 points at `from`.
switch=
for x in "$sunrpc"/switch-*/xprt-*; do
  [ -e "$x/dstaddr" ] || continue
  a=
  read -r a <"$x/dstaddr" || true
  [ "$a" = "$from" ] || continue
  info=$(cat "$x/xprt_info" 2>/dev/null) || info=
  # shellcheck disable=SC2086 # the key=value words on one line
  words=$(printf ' %s' $info)
  case "$words " in *" main_xprt=1 "*" dst_port=2049 "*) ;; *) continue ;; esac
  s=${x%/*}
  if [ -n "$switch" ] && [ "$switch" != "$s" ]; then
    refuse "several NFS clients talk to $from (${switch##*/}, ${s##*/}): cannot tell which one $mp rides; move it by hand (rpcctl xprt set)"
  fi
  switch=$s
done
[ -n "$switch" ] || refuse "no NFS client's main transport points at $from:2049"

moved=
back_out() {
  for n in $moved; do printf '%s\n' "$from" >"${switch}/$n/dstaddr" 2>/dev/null || true; done
}
for x in "$switch"/xprt-*; do
  a=
  read -r a <"$x/dstaddr" || true
  [ "$a" = "$from" ] || continue
  case ${x##*/} in
    *-tcp) ;;
    *)
      echo "pathwarden: ${x##*/} is not a TCP transport: left at $from"
      continue
      ;;
  esac
  if ! printf '%s\n' "$to" >"$x/dstaddr"; then
    back_out
    echo "pathwarden: writing $to to ${x##*/}'s dstaddr failed; moved back what was moved" >&2
    exit 1
  fi
  now=
  read -r now <"$x/dstaddr" || true
  moved="$moved ${x##*/}"
  if [ "$now" != "$to" ]; then
    back_out
    echo "pathwarden: ${x##*/}'s dstaddr reads '$now' after writing $to; moved back" >&2
    exit 1
  fi
done
[ -n "$moved" ] || refuse "no TCP transport of ${switch##*/} points at $from"

# One RPC over the moved transports (statfs always asks the server), then they must be
# connected: an address that does not answer NFS is moved back before anything waits on it.
if ! timeout -k 2 20 stat -f "$mp" >/dev/null 2>&1; then
  back_out
  echo "pathwarden: $mp did not answer through $to within 20 s; moved back to $from" >&2
  exit 1
fi
for n in $moved; do
  state=$(cat "$switch/$n/xprt_state" 2>/dev/null) || state=
  case $state in
    *CONNECTED*) ;;
    *)
      back_out
      echo "pathwarden: $n is not connected to $to after the move (${state:-no state}); moved back to $from" >&2
      exit 1
      ;;
  esac
  src=
  read -r src <"$switch/$n/srcaddr" 2>/dev/null || true
  echo "pathwarden: moved $n of ${switch##*/} from $from to $to (local address ${src:-unknown})"
done
