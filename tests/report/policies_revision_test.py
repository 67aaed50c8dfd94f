#!/usr/bin/python3
"""GitOps: a report records the git commit of the policy directory and whether it was dirty.

usage: policies_revision_test.py PATHWARDEN PVESIM
Runs the real `pathwarden reconcile --check --output json` against pvesim on loopback, with the
policies in a git checkout made by the test, and compares the report's `policies_revision` and
`policies_dirty` with what git says: a clean checkout, an edited policy, a commit of the edit, an
untracked file, a policy directory that is a subdirectory of the checkout, and a directory that
is not a checkout at all. The inventory's guest is an SSH port on 127.0.0.1 where nothing listens:
the guest side fails fast and stays on loopback, and the run still reports (with the failure).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "proxmox"))
from pvesim_fixture import Pvesim, check, local_env  # noqa: E402

SECRET = "4c0ffee0-gitops-secret"
STATE = {
    "nodes": ["pve1"],
    "guests": [{"vmid": 301, "node": "pve1", "running": True,
                "config": {"name": "media-vm", "net0": "virtio=BC:24:11:00:03:00,bridge=vmbr0",
                           "net1": "virtio=BC:24:11:00:03:01,bridge=vmbr1"}}],
}
POLICY = """apiVersion: pathwarden/v1
kind: StoragePath
metadata: {name: movies}
spec:
  guest: {node: pve1, vmid: 301, host: media-vm}
  nic: {device: net1, queues: 4}
  mount:
    server: 198.51.100.2
    export: /volume1/movies
    path: /mnt/movies
    options: [vers=3]
  verify: {probe_file: probe-64m}
"""


def free_loopback_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=pw test", "-c", "user.email=pw@test.invalid", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


class Controller:
    def __init__(self, binary, sim, work):
        self.binary = binary
        # git never looks above the work directory, wherever the temporary directory is.
        self.env = dict(local_env(), GIT_CEILING_DIRECTORIES=work)
        token = os.path.join(work, "token")
        with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(SECRET + "\n")
        inventory = os.path.join(work, "inventory.ini")
        with open(inventory, "w") as f:
            f.write(f"media-vm ansible_host=127.0.0.1 ansible_port={free_loopback_port()}\n")
        known_hosts = os.path.join(work, "known_hosts")
        open(known_hosts, "w").close()
        self.settings = os.path.join(work, "pathwarden.yaml")
        with open(self.settings, "w") as f:
            f.write(f"""apiVersion: pathwarden/v1
kind: Controller
spec:
  proxmox:
    url: {sim.url}
    token_id: "root@pam!gitops"
    token_secret_file: {token}
    fingerprint: "{sim.fingerprint}"
  ansible:
    inventory: {inventory}
    known_hosts_file: {known_hosts}
    timeout: 2m
  state_dir: {os.path.join(work, "state")}
""")

    def report(self, policies):
        proc = subprocess.run([self.binary, "--config", self.settings, "reconcile", "--check", "--output", "json",
                               policies], capture_output=True, text=True, timeout=600, env=self.env)
        try:
            return json.loads(proc.stdout)
        except json.JSONDecodeError:
            raise AssertionError(f"no JSON report (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def main(binary, pvesim):
    with tempfile.TemporaryDirectory(prefix="pw-gitops-") as work, \
            Pvesim(pvesim, STATE, ["--token", "root@pam!gitops=" + SECRET]) as sim:
        ctl = Controller(binary, sim, work)
        repo = os.path.join(work, "policies")
        os.makedirs(os.path.join(repo, "site-a"))
        policy = os.path.join(repo, "site-a", "movies.yaml")
        with open(policy, "w") as f:
            f.write(POLICY)
        git(repo, "init", "-q")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "movies over the 10 GbE link")
        first = git(repo, "rev-parse", "HEAD")

        r = ctl.report(repo)
        check(r["schema"] == "pathwarden-report/v1" and [p["policy"] for p in r["policies"]] == ["movies"],
              f"report of the checkout: {json.dumps(r)[:1500]}")
        check(r["policies_revision"] == first and r["policies_dirty"] is False,
              f"clean checkout: revision {r['policies_revision']!r} dirty {r['policies_dirty']}, want {first} clean")

        with open(policy, "a") as f:
            f.write("# edited, not committed\n")
        r = ctl.report(repo)
        check(r["policies_revision"] == first and r["policies_dirty"] is True,
              f"edited policy: {r['policies_revision']!r} dirty {r['policies_dirty']}, want {first} dirty")

        git(repo, "commit", "-q", "-am", "comment")
        second = git(repo, "rev-parse", "HEAD")
        check(second != first, "the commit made a new revision")
        r = ctl.report(repo)
        check(r["policies_revision"] == second and r["policies_dirty"] is False,
              f"after the commit: {r['policies_revision']!r} dirty {r['policies_dirty']}, want {second} clean")

        # The policy directory may be a subdirectory of the checkout.
        r = ctl.report(os.path.join(repo, "site-a"))
        check(r["policies_revision"] == second and r["policies_dirty"] is False, f"subdirectory: {r['policies_revision']!r}")

        with open(os.path.join(repo, "site-a", "notes.txt"), "w") as f:
            f.write("untracked\n")
        r = ctl.report(repo)
        check(r["policies_dirty"] is True, "an untracked file makes the tree dirty")

        plain = os.path.join(work, "plain")
        os.makedirs(plain)
        with open(os.path.join(plain, "movies.yaml"), "w") as f:
            f.write(POLICY)
        r = ctl.report(plain)
        check(r["policies_revision"] == "" and r["policies_dirty"] is False,
              f"not a checkout: {r['policies_revision']!r} dirty {r['policies_dirty']}")
    print("ok policies_revision")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    try:
        main(sys.argv[1], sys.argv[2])
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
