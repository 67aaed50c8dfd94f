#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Secure defaults, tested through the whole CLI (issue 9, item 5), with the real binary on pvesim
and the light guests:

- TLS: a wrong pinned fingerprint, a CA file that did not sign the certificate, and no trust at
  all each stop the run before any request, with a message naming what was expected and seen;
- secrets: with token auth and with user + password (ticket) auth, a full run at log level trace
  (report file, Prometheus file, emitted playbooks, state directory, stdout, stderr) never shows
  the token secret or the password, in clear or URL-encoded;
- SSH host keys are checked: a guest whose key is not the pinned one is refused;
- the state directory is 0700 and every file in it 0600 after a run;
- a token without VM.Config.Network is found out before anything is written (preflight: GET
  /access/permissions): the policy is precondition-failed (exit 3) naming the privilege and the
  `pveum acl modify` command that grants it, and nothing changes.
Policy values cannot inject into playbooks or shell: tests/ansible (playbooks_test.cpp,
ansible_playbooks_lint with hostile example values) and tests/policy prove that.

usage: security_test.py PVESIM PATHWARDEN
"""
import os
import stat
import subprocess
import urllib.parse

from pwtest.cli_world import PASSWORD, TOKEN_ID, TOKEN_SECRET, USER, World, enter_controller_namespace, policy_text, \
    report_of, results_record
from pwtest.script import check, test_main

AREA = "Secure defaults (real binary; pvesim + light guests)"
WRONG_FP = ":".join(["AB"] * 32)


def record(case, outcome):
    results_record("security", AREA, case, outcome)


def tls(w, policies):
    before = w.snapshot()

    def requests():
        return w.sim.admin("GET", "/pvesim/stats")["api_requests"]

    start = requests()
    # A wrong pin.
    r = w.run(w.settings("tls-pin", fingerprint=WRONG_FP), "reconcile", policies)
    out = r.stdout + r.stderr
    check(r.returncode == 6, f"wrong pin: exit {r.returncode}:\n{out[-3000:]}")
    check(WRONG_FP in out and w.sim.fingerprint in out, f"wrong pin: expected and seen not named:\n{out[-3000:]}")
    # A CA that did not sign pvesim's certificate (a self-signed one of our own).
    ca = os.path.join(w.work, "other-ca.pem")
    key = os.path.join(w.work, "other-ca.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", ca, "-days", "2", "-subj", "/CN=not-the-node"], stdin=subprocess.DEVNULL,
                   check=True, capture_output=True)
    settings = w.settings("tls-ca", fingerprint="-")
    with open(settings) as f:
        text = f.read().replace('    fingerprint: "-"\n', f"    ca_file: {ca}\n")
    with open(settings, "w") as f:
        f.write(text)
    r2 = w.run(settings, "reconcile", policies)
    out2 = r2.stdout + r2.stderr
    check(r2.returncode == 6 and "certificate" in out2 and w.sim.fingerprint in out2,
          f"untrusted CA: exit {r2.returncode}, no clear message:\n{out2[-3000:]}")
    # No pin and no CA: the system's trust store does not know a self-signed node.
    settings = w.settings("tls-none", fingerprint="-")
    with open(settings) as f:
        text = f.read().replace('    fingerprint: "-"\n', "")
    with open(settings, "w") as f:
        f.write(text)
    r3 = w.run(settings, "reconcile", policies)
    out3 = r3.stdout + r3.stderr
    check(r3.returncode == 6 and w.sim.fingerprint in out3, f"no trust: exit {r3.returncode}:\n{out3[-3000:]}")
    check(requests() == start, "a request reached the API over an unverified connection")
    check(w.snapshot() == before, "something changed")
    line = next(out_line for out_line in r.stdout.splitlines() if WRONG_FP in out_line).strip()
    record("wrong pinned fingerprint, a CA that did not sign the certificate, no trust configured",
           f"exit 6 (could not observe) each, no API request sent, nothing changed; e.g. \"{line[:300]}\"")


def secrets(w, policies, auth, secret):
    settings = w.settings(f"secrets-{auth}", auth=auth)
    artefacts = os.path.join(w.work, f"artefacts-{auth}")
    os.makedirs(artefacts)
    outputs = []
    for args in (["plan", "--emit-playbooks", os.path.join(artefacts, "playbooks"), "--out",
                  os.path.join(artefacts, "plan.json"), policies],
                 ["reconcile", "--report-file", os.path.join(artefacts, "report.json"),
                  "--prometheus", os.path.join(artefacts, "pathwarden.prom"), policies],
                 ["reconcile", "--output", "json", policies],
                 ["status", "--output", "json"],
                 ["recover"]):
        r = w.run(settings, "--log-level", "trace", *args)
        check(r.returncode in (0, 2, 3, 4), f"{args[0]}: exit {r.returncode}\n{r.stderr[-2000:]}")
        outputs.append(r.stdout + r.stderr)
    forms = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}
    for text in outputs:
        check(not any(f in text for f in forms), f"the {auth} secret appeared in pathwarden's output")
    files = 0
    for root in (artefacts, w.state_dir(f"secrets-{auth}")):
        for dirpath, _, names in os.walk(root):
            for name in names:
                if not stat.S_ISREG(os.lstat(os.path.join(dirpath, name)).st_mode):
                    continue  # SSH connection-sharing sockets: no content to leak
                with open(os.path.join(dirpath, name), "rb") as f:
                    data = f.read()
                files += 1
                check(not any(f.encode() in data for f in forms), f"the {auth} secret appeared in {dirpath}/{name}")
    check(files >= 8, f"only {files} artefacts: the runs did not produce what they should")
    # A saved plan holds the guests' fstab contents: its owner's only, whatever the umask.
    mode = stat.S_IMODE(os.stat(os.path.join(artefacts, "plan.json")).st_mode)
    check(mode == 0o600, f"the saved plan is mode {mode:o}, not 600")
    check(any("GET /cluster/resources" in o for o in outputs), "no request was logged: the log level did not apply")
    return files


def host_keys(w, policies):
    before = w.snapshot()
    # guest2 pinned with some other key: as if the guest had been replaced or impersonated.
    other = os.path.join(w.work, "other_host_key")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other], stdin=subprocess.DEVNULL, check=True)
    with open(os.path.join(w.guests.env["LAB_STATE"], "known_hosts")) as f:
        pinned = f.read().splitlines()
    with open(other + ".pub") as f:
        fake = f.read().split()[:2]
    known = os.path.join(w.work, "known_hosts_wrong")
    with open(known, "w") as f:
        for line in pinned:
            host = line.split()[0]
            f.write(f"{host} {' '.join(fake)}\n" if host == "203.0.113.12" else line + "\n")
    r = w.run(w.settings("hostkey", known_hosts=known), "reconcile", "--output", "json", policies)
    rep = report_of(r)
    p = rep["policies"][0]
    errors = " ".join(p["errors"])
    check(p["verdict"] == "unobserved" and "host key" in errors.lower(),
          f"a guest with an unpinned host key was not refused: {p}")
    check(w.snapshot() == before, "something changed on a guest whose host key is not the pinned one")
    record("a guest whose SSH host key is not the pinned one",
           f"refused before anything runs there ({p['verdict']}): \"{p['errors'][0][:240]}\"")


def permissions(w, name):
    state = w.state_dir(name)
    bad = []
    count = 0
    for dirpath, dirs, names in os.walk(state):
        mode = stat.S_IMODE(os.stat(dirpath).st_mode)
        if mode != 0o700:
            bad.append(f"{dirpath} {oct(mode)}")
        for n in names:
            path = os.path.join(dirpath, n)
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            count += 1
            if mode != 0o600:
                bad.append(f"{path} {oct(mode)}")
    check(count >= 5, f"only {count} files in the state directory")
    check(not bad, "state directory not private:\n" + "\n".join(bad))
    record("state directory after full runs (journals, locks, results, generated playbooks)",
           f"every directory 0700, all {count} files 0600")


def missing_privilege(pvesim, pathwarden):
    token = "pathwarden@pve!noconf"
    with World(pvesim, pathwarden, hotplug_off=(), pvesim_args=[
            "--token", f"{token}={TOKEN_SECRET}:VM.Audit,VM.PowerMgmt,SDN.Use"]) as w:
        before = w.snapshot()
        settings = w.settings("noconf")
        with open(settings) as f:
            text = f.read().replace(TOKEN_ID, token)
        with open(settings, "w") as f:
            f.write(text)
        r = w.run(settings, "reconcile", w.policies("noconf", [policy_text(1, queues=2)]))
        check(r.returncode == 3,
              f"exit {r.returncode}, want 3 (blocked before any write):\n{r.stdout}\n{r.stderr[-2000:]}")
        line = next((out_line.strip() for out_line in r.stdout.splitlines() if "VM.Config.Network" in out_line), None)
        check(line is not None, f"reconcile's output does not name the missing privilege:\n{r.stdout}")
        check("lacks VM.Config.Network on /vms/201" in line and "pveum acl modify /vms/201" in line,
              f"not the preflight's words (privilege, path, pveum command): {line}")
        check(w.snapshot() == before, "something changed without the privilege")
        record("an API token without VM.Config.Network", f"exit {r.returncode}, nothing changed; reconcile prints "
               f"\"{line[:240]}\"")


def main(pvesim, pathwarden):
    enter_controller_namespace()
    with World(pvesim, pathwarden, hotplug_off=(3,),
               pvesim_args=["--token", f"{TOKEN_ID}={TOKEN_SECRET}", "--user", f"{USER}={PASSWORD}"]) as w:
        policies = w.policies("all", [policy_text(1, queues=2), policy_text(2), policy_text(3, queues=2)])
        tls(w, policies)
        n_token = secrets(w, policies, "token", TOKEN_SECRET)
        n_password = secrets(w, policies, "password", PASSWORD)
        record("secrets in every artefact of full runs (plan --emit-playbooks, reconcile with report and "
               "Prometheus files, status, recover; --log-level trace)",
               f"token auth: {n_token} files + all output; user + password (ticket) auth: {n_password} files + "
               "all output: the secret appears nowhere, in clear or URL-encoded")
        permissions(w, "secrets-token")
        host_keys(w, w.policies("hostkey", [policy_text(2)]))
    missing_privilege(pvesim, pathwarden)
    record("policy values as playbook or shell injection",
           "tested in tests/ansible (playbooks_test: values are unsafe-marked JSON data and argv lists; "
           "ansible_playbooks_lint: every playbook with hostile example values passes ansible-lint)")


if __name__ == "__main__":
    test_main(main, __doc__, 2)
    print("ok")
