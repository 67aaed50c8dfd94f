#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `--output` refuses what it does not implement, `pathwarden help CMD` is CMD's help, and log lines
# carry journald priorities when stderr is the journal's stream ($JOURNAL_STREAM = its dev:inode),
# with no colour codes there, with --no-color or with $NO_COLOR.
# Usage: output_and_logs_test.sh PATHWARDEN SOURCE_DIR
# `check && ok NAME || fail NAME`: ok only prints, so fail runs exactly when the check failed.
# shellcheck disable=SC2015
set -uo pipefail
pw=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL $1"; shift; printf '%s\n' "$@" | head -5; ((failures++)); }
ok() { echo "ok   $1"; }

for cmd in validate plan status report; do
  out=$("$pw" "$cmd" --output yaml "$src/policies" 2>&1); rc=$?
  if [[ $rc == 1 ]] && grep -q "option '--output' is 'yaml' (use one of text, json)" <<<"$out"; then ok "output-yaml-$cmd"
  else fail "output-yaml-$cmd: exit $rc" "$out"; fi
done
out=$("$pw" validate --output jsno "$src/policies" 2>&1)
grep -q "is 'jsno', did you mean 'json'" <<<"$out" && ok output-did-you-mean || fail output-did-you-mean "$out"

if diff <("$pw" help plan) <("$pw" plan --help) >/dev/null && "$pw" help plan | grep -q '^Usage: pathwarden plan'; then
  ok help-command
else
  fail help-command "$("$pw" help plan 2>&1)"
fi

# A run that logs two warnings (TLS verification off) before it finds the API down (exit 6).
cd "$tmp" || exit 1
# shellcheck source=tests/cli/offline_controller.sh
source "$src/tests/cli/offline_controller.sh"
write_offline_controller
run_logging() {  # run_logging LOGFILE [ENV...]: plan, stderr appended to LOGFILE
  local log=$1; shift
  env "$@" "$pw" --config pathwarden.yaml plan "$src/policies" >/dev/null 2>>"$log"
}
: > journal.log
run_logging journal.log JOURNAL_STREAM="$(stat -c '%d:%i' journal.log)"; rc=$?
if [[ $rc == 6 ]] && grep -q '^<4>W TLS verification of https://127.0.0.1:1 is OFF' journal.log \
   && ! grep -q $'\033' journal.log; then ok journald-priorities
else fail "journald-priorities: exit $rc" "$(cat -A journal.log)"; fi

# Another stream's dev:inode (a service whose stderr was redirected): no prefixes.
: > other.log
run_logging other.log JOURNAL_STREAM="$(stat -c '%d:%i' journal.log)"
if grep -q '^W [0-9:.]* TLS verification' other.log && ! grep -q '^<' other.log; then ok journald-other-stream
else fail journald-other-stream "$(cat -A other.log)"; fi

# Selections that select nothing are refused before anything is asked of the cluster.
for sel in "--policy movies-10h|no policy named 'movies-10h', did you mean 'movies-10g'" \
           "--policy web-*|no policy matches 'web-\\*'" \
           "--selector tier=db --node pve2|no policy is selected by --selector tier=db --node pve2" \
           "--policy !movies-10h|no policy named '!movies-10h', did you mean 'movies-10g'" \
           "--exclude movies-10g --policy movies-10g|no policy is selected by --policy movies-10g --exclude movies-10g"; do
  args=${sel%%|*} want=${sel#*|}
  # shellcheck disable=SC2086
  out=$("$pw" --config pathwarden.yaml plan $args "$src/policies" 2>&1); rc=$?
  if [[ $rc == 1 ]] && grep -q -- "$want" <<<"$out" && ! grep -q 'TLS' <<<"$out"; then ok "select: $args"
  else fail "select: $args: exit $rc" "$out"; fi
done

# --output json: a failure is a diagnostics document on stdout (as `terraform -json` gives), every
# problem of the policies in it; --log-format json: every stderr line is a JSON object.
mkdir bad
printf 'apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: x}\nspec:\n  guest: {vmid: nope}\n' > bad/p.yaml
json_check() {  # json_check NAME PYTHON-EXPRESSION-ON-d STDOUT
  if /usr/bin/python3 -c "import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if ($2) else 1)" "$3" 2>/dev/null
  then ok "$1"; else fail "$1" "$3"; fi
}
out=$("$pw" --config pathwarden.yaml plan --policy movies-10h --output json "$src/policies" 2>/dev/null)
json_check json-error-selection "d['format'] == 'pathwarden-diagnostics' and d['format_version'] == '1.0' and \
  d['exit_code'] == 1 and d['command'] == 'plan' and 'did you mean' in d['diagnostics'][-1]['summary']" "$out"
out=$("$pw" --config pathwarden.yaml plan bad --output json 2>/dev/null)
json_check json-error-policies "len(d['diagnostics']) >= 2 and d['diagnostics'][0]['where'].startswith('bad/p.yaml:') \
  and 'problem(s) in the policies' in d['diagnostics'][-1]['summary']" "$out"
out=$("$pw" plna --output json 2>/dev/null)
json_check json-error-command "'did you mean' in d['diagnostics'][0]['summary']" "$out"
"$pw" --log-format json --config pathwarden.yaml plan bad --output json >/dev/null 2>json.log
"$pw" --log-format json --config pathwarden.yaml plan "$src/policies" >/dev/null 2>>json.log
if [[ -s json.log ]] && /usr/bin/python3 -c "
import json, sys
lines = open('json.log').read().splitlines()
levels = {json.loads(line)['level'] for line in lines}
sys.exit(0 if {'error', 'warning'} <= levels or {'error', 'warn'} <= levels else 1)"; then ok json-log-every-line
else fail json-log-every-line "$(head -5 json.log)"; fi

# git refuses a policy repository of another user (dubious ownership): a warning with git's remedy,
# never a report silently without its revision. Needs root to give the copy away.
if [[ $(id -u) == 0 ]]; then
  cp -r "$src/policies" theirs
  git -C theirs init -q && git -C theirs add -A \
    && git -C theirs -c user.name=t -c user.email=t@example.invalid commit -qm policies
  chown -R nobody theirs
  out=$("$pw" --config pathwarden.yaml plan theirs 2>&1)
  if grep -q "git revision is not recorded: git refuses theirs (dubious ownership" <<<"$out" \
    && grep -q "git config --global --add safe.directory $tmp/theirs" <<<"$out"; then ok git-dubious-ownership
  else fail git-dubious-ownership "$out"; fi
fi

# Colours: `script` gives stderr a terminal; NO_COLOR and --no-color take them away.
if command -v script >/dev/null; then
  script -qec "$pw --config pathwarden.yaml plan $src/policies" /dev/null > tty.log 2>&1
  grep -q $'\033\\[' tty.log && ok tty-colours || fail tty-colours "$(cat -A tty.log | head -3)"
  NO_COLOR=1 script -qec "$pw --config pathwarden.yaml plan $src/policies" /dev/null > nocolor.log 2>&1
  ! grep -q $'\033\\[33m\|\033\\[31m\|\033\\[1;' nocolor.log && grep -q 'TLS verification' nocolor.log \
    && ok no-color-env || fail no-color-env "$(cat -A nocolor.log | head -3)"
  script -qec "$pw --config pathwarden.yaml plan --no-color $src/policies" /dev/null > flag.log 2>&1
  ! grep -q $'\033\\[33m\|\033\\[31m\|\033\\[1;' flag.log && grep -q 'TLS verification' flag.log \
    && ok no-color-flag || fail no-color-flag "$(cat -A flag.log | head -3)"
fi

echo "$failures failed"
exit $((failures > 0))
