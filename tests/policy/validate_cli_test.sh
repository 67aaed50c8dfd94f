#!/usr/bin/env bash
# `pathwarden validate` from the command line: exit codes, file:line:col output, no crash on
# hostile files. Usage: validate_cli_test.sh PATHWARDEN SOURCE_DIR
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

check shipped-policies 0 '^ok: 2 storage path policies$' -- "$src/policies"
for f in "$src"/tests/policy/bad/*.yaml "$src"/tests/policy/bad/duplicate-claims; do
  check "bad:$(basename "$f")" 1 '^[^ ]+:[0-9]+:[0-9]+: ' -- "$f"
done
check all-bad-at-once 1 'problems in 11 files' -- "$src"/tests/policy/bad
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
out=$("$pw" validate --output json "$src/policies") && grep -q '"valid":true' <<<"$out" && echo "ok   json-output" \
  || { echo "FAIL json-output: $out"; ((failures++)); }

echo "$failures failed"
exit $((failures > 0))
