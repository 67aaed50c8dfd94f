# SPDX-License-Identifier: GPL-3.0-or-later
# The facts report (guest/facts.hpp), after marks.sh.
# pathwarden-args: fstab [name...]
#   fstab  the fstab's path: its bytes, base64, are the first section (exit 66: unreadable)
#   name   host names resolved as the guest does (getent ahosts), each a section "resolve NAME"
# ethtool lives in /usr/sbin, which Debian's PATH for a user other than root leaves out: without
# it an unprivileged SSH user's report had no permanent MACs and no channels (ethtool -P and -l
# need no privilege), while root's (and the guest agent's) had them.
PATH=$PATH:/usr/sbin:/sbin
export PATH
value() { v=; { read -r v <"$1"; } 2>/dev/null; printf '%s %s\n' "$2" "$v"; }
count() { if [ -e "$2" ]; then n=$(($# - 1)); else n=0; fi; printf '%s %s\n' "$1" "$n"; }
if [ "$#" -gt 0 ]; then
  mark fstab
  base64 <"$1" || exit 66
  shift
fi
mark boot_id
v=; { read -r v </proc/sys/kernel/random/boot_id; } 2>/dev/null; printf '%s\n' "$v"
mark mounts
cat /proc/mounts
mark mountstats
cat /proc/self/mountstats
mark netdev
cat /proc/net/dev
mark nfs_servers
cat /proc/fs/nfsfs/servers 2>/dev/null || true
# sunrpc's transports (Linux 5.14+), one line each: switch, transport, dstaddr, main_xprt, dst_port.
mark sunrpc
if [ -d /sys/kernel/sunrpc/xprt-switches ]; then
  for x in /sys/kernel/sunrpc/xprt-switches/switch-*/xprt-*; do
    [ -e "$x/dstaddr" ] || continue
    s=${x%/*}
    a=-
    { read -r a <"$x/dstaddr"; } 2>/dev/null
    m=-
    p=-
    i=$(cat "$x/xprt_info" 2>/dev/null) || i=
    # shellcheck disable=SC2086 # split into its key=value words
    for w in $i; do
      case $w in main_xprt=*) m=${w#*=} ;; dst_port=*) p=${w#*=} ;; esac
    done
    printf '%s %s %s %s %s\n' "${s##*/}" "${x##*/}" "${a:--}" "$m" "$p"
  done
else
  echo absent
fi
mark statfs
nfs_statfs
mark nfs_connections
ss -Htni state established '( dport = :2049 )' 2>/dev/null || true
mark addresses
ip -j addr show 2>/dev/null || echo "[]"
# Set by the facts playbook when the settings become root with sudo: "given" when the inventory
# gives a become password, else "ask". Can sudo become root here without asking?
if [ -n "${PW_SUDO_CHECK:-}" ]; then
  mark sudo
  if [ "$(id -u)" = 0 ]; then
    echo root
  elif ! command -v sudo >/dev/null 2>&1; then
    echo absent
  elif pw_sudo=$(sudo -n true 2>&1 </dev/null); then
    echo nopasswd
  elif [ "$PW_SUDO_CHECK" = given ]; then
    echo given
  else
    printf 'asks %s\n' "$(printf '%s\n' "$pw_sudo" | head -n 1)"
  fi
fi
for dir in /sys/class/net/*; do
  [ -e "$dir" ] || continue
  name=${dir##*/}
  mark "iface $name"
  value "$dir/ifindex" ifindex
  value "$dir/address" address
  perm=$(ethtool -P "$name" 2>/dev/null || true)
  printf 'permaddr %s\n' "${perm##* }"
  for lower in "$dir"/lower_*; do
    [ -e "$lower" ] && printf 'lower %s\n' "${lower##*/lower_}"
  done
  value "$dir/speed" speed
  value "$dir/operstate" operstate
  value "$dir/mtu" mtu
  count rx_queues "$dir"/queues/rx-*
  count tx_queues "$dir"/queues/tx-*
  ethtool -l "$name" 2>/dev/null || true
done
for name in "$@"; do
  case $name in pmtu=*) continue ;; esac
  mark "resolve $name"
  getent ahosts "$name" 2>/dev/null || true
done
# The path MTU toward each NAS asked (pmtu=TARGET: guest/path_mtu.hpp): a don't-fragment ping of
# the route's interface MTU, and of 1500 when that gets no answer. Only above 1500: a jumbo
# interface behind a hop that is not drops full-size frames without a word.
pmtu_ping() {
  out=$(LC_ALL=C ping -n -c 2 -i 0.2 -W 2 -M 'do' -s "$1" "$addr" 2>&1)
  rc=$?
  rx=$(printf '%s\n' "$out" | sed -n 's/.* \([0-9][0-9]*\) received.*/\1/p' | head -n 1)
  said=$(printf '%s\n' "$out" | sed -n 's/.*mtu *= *\([0-9][0-9]*\).*/\1/p' | head -n 1)
  printf 'ping %s %s %s %s\n' "$1" "$rc" "${rx:-0}" "${said:--}"
  [ "${rx:-0}" -gt 0 ]
}
for arg in "$@"; do
  case $arg in pmtu=*) ;; *) continue ;; esac
  target=${arg#pmtu=}
  mark "pmtu $target"
  addr=$(getent ahosts "$target" 2>/dev/null | sed -n '1s/ .*//p')
  if [ -z "$addr" ]; then echo unresolved; continue; fi
  dev=$(ip -o route get "$addr" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n 1)
  mtu=
  [ -n "$dev" ] && { read -r mtu <"/sys/class/net/$dev/mtu"; } 2>/dev/null
  if [ -z "$mtu" ]; then printf 'noroute %s\n' "$addr"; continue; fi
  printf 'route %s %s %s\n' "$addr" "$dev" "$mtu"
  if [ "$mtu" -le 1500 ]; then echo nojumbo; continue; fi
  if ! command -v ping >/dev/null 2>&1; then echo noping; continue; fi
  case $addr in *:*) hdr=48 ;; *) hdr=28 ;; esac
  pmtu_ping $((mtu - hdr)) || pmtu_ping $((1500 - hdr)) || true
done
mark end
