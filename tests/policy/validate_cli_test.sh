#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `pathwarden validate` from the command line: exit codes, file:line:col output, no crash on
# hostile files. Usage: validate_cli_test.sh PATHWARDEN SOURCE_DIR
# `check && ok NAME || fail NAME`: ok only prints, so fail runs exactly when the check failed.
# shellcheck disable=SC2015
set -uo pipefail
pw=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
check() {  # check NAME EXPECTED_RC GREP_PATTERN -- args...
  local name=$1 want=$2 pattern=$3; shift 4
  local out rc
  out=$("$pw" validate "$@" 2>&1); rc=$?
  if [[ $rc != "$want" ]]; then echo "FAIL $name: exit $rc, want $want"; echo "$out" | head -5; ((failures++)); return; fi
  if ! grep -qE -- "$pattern" <<<"$out"; then echo "FAIL $name: output lacks /$pattern/"; echo "$out" | head -5; ((failures++)); return; fi
  if grep -qiE 'internal error|terminate called|Segmentation|AddressSanitizer|runtime error' <<<"$out"; then
    echo "FAIL $name: crash output"; echo "$out" | head -5; ((failures++)); return
  fi
  echo "ok   $name"
}

check shipped-policies 0 '^ok: 3 storage path policies$' -- "$src/policies"
# Without controller settings the inventory is not checked, and validate says so (never silently).
out=$(PATHWARDEN_CONFIG="$tmp/none.yaml" "$pw" validate "$src/policies" 2>&1) \
  && grep -qF "$tmp/none.yaml: note: no controller settings here" <<<"$out" && grep -q "inventory were not checked" <<<"$out" \
  && echo "ok   says-unchecked" || { echo "FAIL says-unchecked: $out"; ((failures++)); }
for f in "$src"/tests/policy/bad/*.yaml "$src"/tests/policy/bad/duplicate-claims; do
  check "bad:$(basename "$f")" 1 '^[^ ]+:[0-9]+:[0-9]+: ' -- "$f"
done
check all-bad-at-once 1 'problems in 16 files' -- "$src"/tests/policy/bad
check missing-path 1 'no such file or directory' -- "$tmp/nope.yaml"

head -c 50000000 /dev/zero | tr '\0' 'a' > "$tmp/huge.yaml"
check 50MB-file 1 'huge.yaml: file is larger than 1024 KiB' -- "$tmp/huge.yaml"
head -c 65536 /dev/urandom > "$tmp/junk.yaml"
check binary-junk 1 'junk.yaml:[0-9]+:[0-9]+: not a text file' -- "$tmp/junk.yaml"
printf '%*s' 10000 '' | tr ' ' '[' > "$tmp/deep.yaml"
check deep-nesting 1 'deep.yaml:[0-9]+:[0-9]+: YAML syntax error' -- "$tmp/deep.yaml"
{
  echo 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'
  prev=a
  for n in b c d e f g h i j; do
    echo "$n: &$n [*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev,*$prev]"; prev=$n
  done
  echo 'apiVersion: pathwarden/v1'
  echo 'kind: StoragePath'
  echo 'metadata: *j'
  echo 'spec: {guest: *j, nic: *j, mount: {options: *j, nas_addresses: *j}, verify: *j}'
} > "$tmp/laughs.yaml"
check anchor-bomb 1 'laughs.yaml:[0-9]+:[0-9]+: ' -- "$tmp/laughs.yaml"
: > "$tmp/empty.yaml"
check empty-file 1 'empty.yaml:1:1: file holds no document' -- "$tmp/empty.yaml"
check unknown-option 1 "unknown option '--outptu', did you mean '--output'" -- --outptu json "$src/policies"
out=$("$pw" validate --output json "$src/policies") && grep -q '"valid":true' <<<"$out" \
  && grep -q '"format":"pathwarden-validate","format_version":"1.0"' <<<"$out" && echo "ok   json-output" \
  || { echo "FAIL json-output: $out"; ((failures++)); }
# --list: one line a policy, the name first (what --policy and --exclude take), then where it is.
out=$("$pw" validate --list "$src/policies") && grep -qE '^movies-10g  .*movies-10g\.yaml:[0-9]+:[0-9]+  pve1/101 ' <<<"$out" \
  && [[ $(grep -cE '\.yaml:[0-9]+:[0-9]+  ' <<<"$out") == 3 ]] && echo "ok   list" || { echo "FAIL list: $out"; ((failures++)); }

# An operator's own ground: settings written from policies/README.md with relative paths, read
# through a relative --config from another directory; the inventory as ansible-inventory reads it.
mkdir -p "$tmp/site/conf" "$tmp/site/pol"
cp "$src"/policies/*.yaml "$tmp/site/pol/"
cat > "$tmp/site/conf/pathwarden.yaml" <<'YAML'
apiVersion: pathwarden/v1
kind: Controller
spec:
  proxmox:
    url: https://pve1.example.net:8006
    token_id: pathwarden@pve!ci
    token_secret_file: token
  ansible: {inventory: hosts.ini, known_hosts_file: known_hosts}
  policies: ../pol
YAML
printf 'secret\n' > "$tmp/site/conf/token"
: > "$tmp/site/conf/known_hosts"
printf '[guests]\nmedia-vm ansible_host=192.0.2.10\ndocker-vm ansible_host=192.0.2.11\nbackup-vm ansible_host=192.0.2.12\n' > "$tmp/site/conf/hosts.ini"
ground() {  # ground NAME EXPECTED_RC GREP_PATTERN: validate with the relative settings file, from $tmp
  local name=$1 want=$2 pattern=$3 out rc
  out=$(cd "$tmp" && "$pw" --config site/conf/pathwarden.yaml validate 2>&1); rc=$?
  if [[ $rc != "$want" ]] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL ground-$name: exit $rc, want $want and /$pattern/"; echo "$out" | head -5; ((failures++)); return
  fi
  echo "ok   ground-$name"
}
ground relative-paths 0 '^ok: 3 storage path policies$'
printf '[guests]\nmedia-vm\ndocker-vm1\nbackup-vm\n' > "$tmp/site/conf/hosts.ini"
ground host-not-in-inventory 1 "pol/postgres-data.yaml:28:40: spec.guest.host 'docker-vm' is not a host of the inventory $tmp/site/conf/hosts.ini, did you mean 'docker-vm1'\\?"
printf '#!/bin/sh\necho "{\\"guests\\": {\\"hosts\\": [\\"media-vm\\", \\"docker-vm\\", \\"backup-vm\\"]}, \\"_meta\\": {\\"hostvars\\": {}}}"\n' > "$tmp/site/conf/inv.sh"
chmod +x "$tmp/site/conf/inv.sh"
sed -i 's/hosts.ini/inv.sh/' "$tmp/site/conf/pathwarden.yaml"
ground dynamic-inventory 0 '^ok: 3 storage path policies$'
rm "$tmp/site/conf/token"
ground missing-token-file 1 "spec.proxmox.token_secret_file: $tmp/site/conf/token does not exist"

echo "$failures failed"
exit $((failures > 0))
