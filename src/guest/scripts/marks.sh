# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced first by every guest script (guest/script_output.hpp): a token drawn in the guest,
# the begin line, and `mark WORDS...` printing "@@TOKEN WORDS".
pw_mark=
{ read -r pw_mark </proc/sys/kernel/random/uuid; } 2>/dev/null
[ -n "$pw_mark" ] || pw_mark=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
[ -n "$pw_mark" ] || { printf '%s\n' 'no random token: neither /proc/sys/kernel/random/uuid nor /dev/urandom can be read' >&2; exit 70; }
printf '@@pathwarden begin %s\n' "$pw_mark"
mark() { printf '@@%s %s\n' "$pw_mark" "$*"; }
