#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Files are never followed (issue 39, items 2 and 9), with the real binary: a policy tree's symbolic
# links are refused by name and never read, a file that is no policy is never quoted, a FIFO never
# hangs the loader, every file pathwarden writes (--report-file, --prometheus) goes through one
# atomic writer that never changes a link's target, planted at the file or at the old fixed temp
# name; a token file every user can read and a settings file others can change are refused.
# Usage: files_test.sh PATHWARDEN SOURCE_DIR
set -uo pipefail
pw=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL $1"; shift; printf '%s\n' "$@" | head -8; ((failures++)); }
ok() { echo "ok   $1"; }
cd "$tmp" || exit 1

secret=0b5e55ed-5ec2-e7a1-0000-7e57ab1e5ec2
printf '%s\n' "$secret" > token
chmod 600 token

# A tree with one good policy, a link to the token file, a copy of it under a policy's name, and a FIFO.
mkdir tree
cp "$src/policies/movies-10g.yaml" tree/
ln -s ../token tree/leak.yaml
cp token tree/plain.yaml
mkfifo tree/pipe.yaml
out=$(timeout 60 "$pw" validate tree 2>&1); rc=$?
if [[ $rc == 1 ]] && grep -q "tree/leak.yaml: is a symbolic link" <<<"$out" \
   && grep -q "tree/plain.yaml:1:1: 'document' must be a mapping, got a plain text (not shown)" <<<"$out" \
   && ! grep -q "$secret" <<<"$out"; then ok policy-tree-links-and-secrets
else fail "policy-tree-links-and-secrets: exit $rc" "$out"; fi
rm tree/leak.yaml tree/plain.yaml

# A file name is text from outside too: its newline and escape sequence are shown, never sent.
evil=$(printf 'evil\n\033[31mname.yaml')
printf 'not: [closed\n' > "tree/$evil"
out=$("$pw" validate tree 2>&1); rc=$?
if [[ $rc == 1 ]] && grep -qF 'evil\x0a\x1b[31mname.yaml' <<<"$out" && ! grep -q $'\033' <<<"$out"; then
  ok control-characters-escaped
else fail "control-characters-escaped: exit $rc" "$(cat -A <<<"$out")"; fi
rm "tree/$evil"
out=$(timeout 60 "$pw" validate tree 2>&1); rc=$?
if [[ $rc == 0 ]]; then ok fifo-not-read; else fail "fifo-not-read: exit $rc" "$out"; fi

# The tree named on the command line may itself be a link (to a git checkout): followed.
ln -s tree linked
out=$("$pw" validate linked 2>&1); rc=$?
if [[ $rc == 0 ]]; then ok tree-itself-a-link; else fail "tree-itself-a-link: exit $rc" "$out"; fi

# Reports from a run whose API is down (a closed loopback port: exit 6), written over planted links.
# shellcheck source=tests/cli/offline_controller.sh
source "$src/tests/cli/offline_controller.sh"
write_offline_controller
printf 'precious\n' > victim
mkdir out
ln -s ../victim out/report.json         # the target itself a link
ln -s ../victim out/metrics.prom.tmp    # the fixed temp name the old writer used
(umask 077 && "$pw" --config pathwarden.yaml reconcile --check --report-file out/report.json \
  --prometheus out/metrics.prom tree >/dev/null 2>run.log); rc=$?
if [[ $rc == 6 && "$(cat victim)" == precious && ! -L out/report.json && -f out/report.json ]] \
   && grep -q '"format":"pathwarden-report"' out/report.json && [[ -L out/metrics.prom.tmp ]] \
   && [[ "$(stat -c %a out/report.json)" == 644 && "$(stat -c %a out/metrics.prom)" == 644 ]] \
   && [[ -z "$(find out -name '.*tmp-*')" ]]; then ok reports-never-follow-links
else fail "reports-never-follow-links: exit $rc, victim '$(cat victim)'" "$(ls -la out)" "$(tail -3 run.log)"; fi

# Secrets and settings others could read or change are refused, as ssh refuses such keys.
chmod 644 token
out=$("$pw" --config pathwarden.yaml reconcile --check tree 2>&1); rc=$?
if [[ $rc != 0 && $rc != 6 ]] && grep -q "the secret file is readable by every user (mode 0644)" <<<"$out" \
   && grep -q "chmod o-r" <<<"$out" && ! grep -q "$secret" <<<"$out"; then ok token-readable-by-others
else fail "token-readable-by-others: exit $rc" "$out"; fi
chmod 600 token
chmod 664 pathwarden.yaml
out=$("$pw" --config pathwarden.yaml reconcile --check tree 2>&1); rc=$?
if [[ $rc != 0 && $rc != 6 ]] && grep -q "the settings file is writable by its group or by others (mode 0664)" <<<"$out"
then ok settings-writable-by-others
else fail "settings-writable-by-others: exit $rc" "$out"; fi
chmod 644 pathwarden.yaml

# A secret read from the environment is gone before any child starts: the "ansible-playbook" here
# (the facts run goes out although the API is down) records what it inherited.
printf '#!/bin/sh\nenv > "%s/child-env"\nexit 1\n' "$tmp" > fake-playbook
chmod 755 fake-playbook
sed -e 's/token_secret_file: token/token_secret_env: PW_FILES_TEST_SECRET/' \
    -e "s|known_hosts_file: known_hosts}|known_hosts_file: known_hosts, playbook_command: $tmp/fake-playbook}|" \
    pathwarden.yaml > env-settings.yaml
PW_FILES_TEST_SECRET=$secret "$pw" --config env-settings.yaml reconcile --check tree >/dev/null 2>env-run.log; rc=$?
if [[ -s child-env ]] && ! grep -q "$secret" child-env && ! grep -q PW_FILES_TEST_SECRET child-env \
   && ! grep -q "$secret" env-run.log; then ok env-secret-not-inherited
else fail "env-secret-not-inherited: exit $rc, $(grep -c . child-env 2>/dev/null) env lines" "$(tail -3 env-run.log)"; fi

# The settings file is read once per run (issue 40): for the default policies directory and for
# the run itself alike. Counted with inotify: plan and validate without a PATH.
mkdir -p once/policies
cp "$src/policies/movies-10g.yaml" once/policies/
(cd once && write_offline_controller && printf '  policies: policies\n' >> pathwarden.yaml && chmod 600 pathwarden.yaml)
for cmd in plan validate; do
  out=$(cd once && /usr/bin/python3 "$src/tests/cli/count_opens.py" pathwarden.yaml -- "$pw" --config pathwarden.yaml "$cmd")
  if [[ $out == "opens=1 exit="* ]]; then ok "settings-read-once-$cmd"; else fail "settings-read-once-$cmd: $out"; fi
done

echo "$failures failed"
exit $((failures > 0))
