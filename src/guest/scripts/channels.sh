# SPDX-License-Identifier: GPL-3.0-or-later
# Set (or restore) a NIC's combined channel count (guest/ethtool.hpp).
# pathwarden-args: interface count [restore]
# A NIC that is gone falls through to `ethtool -L`, whose error names it. Exit 97 (untouched,
# guest::kChannelsUntouchedExit): the NIC has no combined channels, nothing was changed.
untouched=97
if [ -e "/sys/class/net/$1" ]; then
  out=$(ethtool -l "$1" 2>&1) && rc=0 || rc=$?
  cur=n/a
  why="ethtool -l: ${out##*
}"
  [ "$rc" -eq 127 ] && why="no ethtool on the guest's PATH"
  if [ "$rc" -eq 0 ]; then
    cur=${out#*Current hardware settings:}
    [ "$cur" = "$out" ] && cur=
    case $cur in *Combined:*) cur=${cur#*Combined:} ;; *) cur= ;; esac
    cur=${cur#"${cur%%[![:space:]]*}"}
    cur=${cur%%[[:space:]]*}
    why="Combined: $cur"
  fi
  if [ "$cur" = n/a ]; then
    if [ "${3:-}" = restore ]; then
      echo "pathwarden: no combined channels of $1 to restore ($why): nothing to do"
      exit 0
    fi
    echo "pathwarden: cannot set the combined channels of $1 ($why): nothing changed" >&2
    exit "$untouched"
  fi
  if [ "${3:-}" = restore ] && [ "$cur" = "$2" ]; then
    echo "pathwarden: $1 combined channels are $cur: nothing to restore"
    exit 0
  fi
fi
exec ethtool -L "$1" combined "$2"
