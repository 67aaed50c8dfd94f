# SPDX-License-Identifier: GPL-3.0-or-later
# nfs_statfs: each NFS mount's root asked of its NAS (guest/mounts.hpp, MountAnswer), in the facts
# report (as the SSH user) and in the Docker volumes' report (as root: Docker's volumes lie under a
# directory only root may enter). statfs is never answered from the client's caches, so a handle
# the NAS no longer knows shows at once (ESTALE) where a stat could still be served from the
# attribute cache. One line per mount, its point as /proc/mounts escapes it: "ok", "stale",
# "no-answer" (nothing within 5 s: a NAS down or unreachable, never drift) or "error TEXT".
nfs_statfs() {
  while read -r _ mp fstype _; do
    case $fstype in nfs | nfs4) ;; *) continue ;; esac
    path=$(printf '%b' "$mp")
    if why=$(LC_ALL=C timeout -k 2 5 stat -f -c %t -- "$path" 2>&1 >/dev/null); then
      printf 'ok %s\n' "$mp"
    else
      rc=$?
      case $why in
        *'Stale file handle'*) printf 'stale %s\n' "$mp" ;;
        *)
          if [ "$rc" -ge 124 ]; then
            printf 'no-answer %s\n' "$mp"
          else
            printf 'error %s %s\n' "$mp" "$(printf '%s\n' "$why" | head -n 1)"
          fi
          ;;
      esac
    fi
  done </proc/mounts
}
