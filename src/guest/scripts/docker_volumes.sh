# SPDX-License-Identifier: GPL-3.0-or-later
# Docker's Compose volumes as `docker volume inspect` prints them (guest/docker_volumes.hpp), after
# statfs.sh.
# pathwarden-args: (none)
# Exit 3: no docker command; 4: docker did not list. Volume names are [a-zA-Z0-9][a-zA-Z0-9_.-]*,
# so word splitting of the list is safe.
command -v docker >/dev/null 2>&1 || { echo "no docker command in the guest" >&2; exit 3; }
ids=$(docker volume ls -q --filter label=com.docker.compose.project) || exit 4
# One argument per volume name: the list is split on purpose (names hold no blanks or globs).
# shellcheck disable=SC2086
if [ -z "$ids" ]; then echo '[]'; else docker volume inspect $ids || exit; fi
# Then each NFS mount's answer (statfs.sh), read here as root: the facts report's own read, as
# the SSH user, cannot enter Docker's volume directories.
echo '@@pathwarden statfs'
nfs_statfs
