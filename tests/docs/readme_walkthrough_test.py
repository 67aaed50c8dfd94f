#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""README.md's "First run against your cluster", run as written (issue 14, item 10).

The files and commands come out of README.md itself, so the page and this test cannot drift
apart. In that section every fenced block follows a marker comment:

  <!-- walkthrough: file NAME -->  the block is written, as shown, to NAME in the walkthrough's
                                   directory (a fresh temporary one, the operator's config dir)
  <!-- walkthrough: sh -->         each line is one command, run by bash in that directory with
                                   the real binary first on PATH as `pathwarden`
  <!-- walkthrough: guest -->      each line is one command, run in the guest (its console)
  <!-- walkthrough: probe -->      each line is one command for the share, run in a stand-in
                                   directory for it (light guests cannot mount NFS)

An unmarked fenced block in the section fails the test, as does a command without an expectation
in EXPECT below or an expectation no command meets. Only what must differ in the test world is
replaced, by the table in Walk.substitutions() (each entry must still occur in the README, or the
test fails before anything runs). One file is provided rather than written from the README:
`id_ed25519`, the controller's SSH key (the light lab's key, whose public half the guests
authorize).

The world: pvesim on the controller namespace's loopback with one VM as the policy names it
(node, vmid, NIC device from the README's policy; the NIC's MAC is guest 2's eth0), an API
token with exactly the privileges of the README's `pveum role add` line, and light guest 2 as
the inventory's guest, reached as `pwadmin` (the light guests' account with the sudoers entry
the README gives). Light guests cannot mount NFS, so the last reconcile writes the fstab (as
root, through sudo), the mount fails and the change is rolled back (exit 4): the test asserts
that, and that the fstab is then byte for byte what it was. \
The guest packages' `apt-get install` line is an indented block, not
run here (the guests are namespaces of this machine).

usage: readme_walkthrough_test.py PVESIM PATHWARDEN
"""
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
import uuid
import zlib

import yaml

from pwtest.cli_world import Guests, enter_controller_namespace
from pwtest.paths import ROOT
from pwtest.pvesim_process import Pvesim, local_env
from pwtest.script import Failure, check, test_main

SECTION = "## First run against your cluster"
GUEST = 2  # the light guest that plays the README's media-vm
MARKER = re.compile(r"<!-- walkthrough: (file|sh|guest|probe)(?: (\S+))? -->\n```[a-z]*\n(.*?)\n```\n", re.S)
FENCE = re.compile(r"^```", re.M)
ROLE_LINE = re.compile(r'pveum role add (\S+) -privs "([^"]+)"')
ACL_LINE = re.compile(r'pveum aclmod (\S+) \$who -role (\S+)')


def readme_acl(readme):
    """The README's 'Minimal Proxmox role' as pvesim --acl entries: (path, privileges)."""
    roles = {m.group(1): m.group(2).split() for m in ROLE_LINE.finditer(readme)}
    check("PathwardenOperator" in roles, "README.md's 'pveum role add PathwardenOperator -privs \"...\"' line is gone")
    entries = [(m.group(1), roles.get(m.group(2))) for m in ACL_LINE.finditer(readme)]
    check(entries and all(privs for _, privs in entries),
          "README.md's 'pveum aclmod PATH $who -role ROLE' lines are gone or name a role it does not add")
    return entries


def readme_section():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    start = text.find("\n" + SECTION + "\n")
    check(start >= 0, f"README.md has no section '{SECTION}'")
    end = text.find("\n## ", start + 1)
    return text, text[start:end if end >= 0 else len(text)]


def blocks(section):
    """(kind, name, text) in README order; every fenced block must be marked."""
    found = [(m.group(1), m.group(2), m.group(3) + "\n") for m in MARKER.finditer(section)]
    fences = len(FENCE.findall(section)) // 2
    check(fences == len(found), f"{fences} fenced blocks in '{SECTION}' but {len(found)} marked "
          "<!-- walkthrough: ... -->: every block there must be marked so this test runs it")
    return found


def commands(text):
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


class Walk:
    """The test world and what the commands left behind, for the expectations."""

    def __init__(self, pvesim, pathwarden, readme, found):
        self.sim = None
        self.top = tempfile.mkdtemp(prefix="pw-docs-")
        try:
            self._start(pvesim, pathwarden, readme, found)
        except BaseException:
            self.close()
            raise

    def _start(self, pvesim, pathwarden, readme, found):
        os.chmod(self.top, 0o700)
        self.dir = os.path.join(self.top, "walk")    # the operator's directory
        self.share = os.path.join(self.top, "share")  # stand-in for the mounted share
        self.bin = os.path.join(self.top, "bin")
        for d in (self.dir, self.share, self.bin):
            os.mkdir(d, 0o700)
        os.symlink(os.path.realpath(pathwarden), os.path.join(self.bin, "pathwarden"))
        self.guests = Guests()
        check(self.guests.count >= GUEST, f"the light lab needs {GUEST} guests")
        lab = self.guests.env["LAB_STATE"]
        shutil.copyfile(os.path.join(lab, "id_ed25519"), os.path.join(self.dir, "id_ed25519"))
        os.chmod(os.path.join(self.dir, "id_ed25519"), 0o600)
        self.host_key_pub = os.path.join(lab, f"g{GUEST}", "ssh_host_ed25519_key.pub")
        with open(self.guests.env["LAB_INVENTORY"]) as f:
            self.address = re.search(rf"^guest{GUEST} ansible_host=(\S+)", f.read(), re.M).group(1)

        files = {name: text for kind, name, text in found if kind == "file"}
        settings = yaml.safe_load(files["pathwarden.yaml"])["spec"]
        policy_files = [name for name in files if name.startswith("policies/")]
        check(len(policy_files) == 1, f"the walkthrough has {len(policy_files)} policy files, not one")
        policy = self.policy = yaml.safe_load(files[policy_files[0]])
        acl = readme_acl(readme)
        self.secret = str(uuid.uuid4())
        g = policy["spec"]["guest"]
        self.vmid, self.device = g["vmid"], policy["spec"]["nic"]["device"]
        net = f"virtio={self.guests.mac(GUEST).upper()},bridge=vmbr0"
        # The token and its user hold exactly the README's ACL entries (a privilege-separated
        # token gets the intersection of both, as on Proxmox).
        token_id = settings["proxmox"]["token_id"]
        access = ["--token", f"{token_id}={self.secret}:none",
                  "--user", f"{token_id.split('!')[0]}={uuid.uuid4()}:none"]
        for who in (token_id, token_id.split("!")[0]):
            for path, privs in acl:
                access += ["--acl", f"{who}:{path}:{','.join(privs)}"]
        self.sim = Pvesim(pvesim, {"nodes": [g["node"]], "guests": [
            {"vmid": self.vmid, "node": g["node"], "running": True,
             "config": {"name": g["host"], "cores": 2, self.device: net}}]}, access)
        self.env = dict(local_env(), GIT_CEILING_DIRECTORIES=self.top, PATH=self.bin + ":" + os.environ["PATH"])
        self.env.pop("ANSIBLE_CONFIG", None)  # as on an operator's controller: Ansible's defaults
        self.outputs = []
        self.before = self.snapshot()
        self.backups_before = self.backups()

    def close(self):
        if self.sim:
            self.sim.stop()
        shutil.rmtree(self.top, ignore_errors=True)

    def substitutions(self):
        """(block, README text, test world, why): block is a file name or a command kind."""
        return [
            ("pathwarden.yaml", "https://pve1.example.org:8006", self.sim.url,
             "pvesim listens on a free port of the controller namespace's loopback"),
            ("pathwarden.yaml", '"AB:CD:…:89"', f'"{self.sim.fingerprint}"', "pvesim's own certificate"),
            ("pathwarden.yaml", "state_dir: /var/lib/pathwarden", "state_dir: state",
             "a state directory of the test's own (relative: resolved like the other paths)"),
            ("inventory.ini", "203.0.113.10", self.address, f"light guest {GUEST}'s address"),
            ("inventory.ini", "ansible_user=pathwarden", "ansible_user=pwadmin",
             "the light guests' unprivileged account with the README's sudoers entry"),
            ("sh", "203.0.113.10", self.address, f"light guest {GUEST}'s address"),
            ("sh", "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", self.secret, "the secret of pvesim's token"),
            ("guest", "/etc/ssh/ssh_host_ed25519_key.pub", self.host_key_pub,
             "a light guest's host key lives in the lab's state directory"),
            ("probe", self.policy["spec"]["mount"]["path"], self.share,
             "a directory standing in for the policy's mounted share"),
        ]

    def snapshot(self):
        """The guest's fstab bytes and mounts under /mnt, the VM's NIC and pending changes."""
        vm = self.sim.guest(self.vmid)
        return {"fstab": self.guests.fstab(GUEST), "mounts": self.guests.mount_points(GUEST),
                "nic": vm["config"].get(self.device), "pending": vm.get("pending", {}),
                "pending_delete": vm.get("pending_delete", [])}

    def backups(self):
        """pathwarden's fstab backups in the guest (the apply playbook's, kept after a rollback)."""
        r = self.guests.run(GUEST, "sh", "-c", "stat -c '%U %n' /var/backups/pathwarden/fstab.* 2>/dev/null || true")
        return set(r.stdout.split("\n")[:-1])


def ran(r, want, *phrases):
    out = r.stdout + r.stderr
    check(r.returncode == want, f"exit {r.returncode}, want {want}:\n{out[-4000:]}")
    for p in phrases:
        check(p in out, f"output lacks '{p}':\n{out[-4000:]}")
    return out


def probe_written(w, r):
    ran(r, 0)
    path = os.path.join(w.share, w.policy["spec"]["verify"]["probe_file"])
    check(os.path.isfile(path), "the probe block did not write the policy's probe_file in its mount path")
    size = os.path.getsize(path)
    want = parse_size(w.policy["spec"]["verify"].get("probe_bytes", "256MiB"))  # policies/README.md's default
    check(size >= want, f"the probe file holds {size} bytes, the policy's probe reads {want}")
    with open(path, "rb") as f:
        sample = f.read(1 << 20)
    check(len(zlib.compress(sample)) > 0.99 * len(sample), "the probe file's data compresses: not random")


def probe_readable(w, r):
    ran(r, 0)
    mode = stat.S_IMODE(os.stat(os.path.join(w.share, w.policy["spec"]["verify"]["probe_file"])).st_mode)
    check(mode & 0o004, f"the probe file is mode {mode:o}: not readable by nobody (a squashed root)")


def keyscanned(w, r):
    ran(r, 0)
    with open(os.path.join(w.dir, "known_hosts")) as f:
        lines = f.read().split("\n")[:-1]
    with open(w.host_key_pub) as f:
        key = " ".join(f.read().split()[:2])
    check(lines == [f"{w.address} {key}"], f"known_hosts is not the guest's one ed25519 key: {lines}")


def fingerprint(out):
    m = re.search(r"\b256 (SHA256:\S+) .*\(ED25519\)", out)
    check(m is not None, f"no ED25519 fingerprint in:\n{out}")
    return m.group(1)


def shown_on_controller(w, r):
    w.controller_fingerprint = fingerprint(ran(r, 0, w.address))


def shown_on_console(w, r):
    check(fingerprint(ran(r, 0)) == w.controller_fingerprint,
          "the guest's console shows another fingerprint than the one ssh-keyscan stored")


def token_written(w, r):
    ran(r, 0)
    path = os.path.join(w.dir, "token")
    mode = stat.S_IMODE(os.stat(path).st_mode)
    check(mode == 0o600, f"token is mode {mode:o}, not 600")
    with open(path) as f:
        check(f.read() == w.secret + "\n", "token does not hold the secret on its first line")


def validated(w, r):
    out = ran(r, 0)
    check(out.strip() == "ok: 1 storage path policy", f"validate printed:\n{out}")


def fstab_line(w):
    m = w.policy["spec"]["mount"]
    return f"{m['server']}:{m['export']} {m['path']} nfs {','.join(m['options'])} 0 0"


def planned(w, r):
    ran(r, 3, f"policy {w.policy['metadata']['name']} ", "+ " + fstab_line(w), "1 to change, 0 blocked")
    check(w.snapshot() == w.before, "plan changed something")


def checked(w, r):
    ran(r, 3, f"{w.policy['metadata']['name']}: drift ")
    check(w.snapshot() == w.before, "reconcile --check changed something")
    check(w.backups() == w.backups_before, "reconcile --check wrote an fstab backup in the guest")


def reconciled(w, r):
    name = w.policy["metadata"]["name"]
    ran(r, 4, f"{name}: rolled-back", "failed in 'Mount them again", "restored: /etc/fstab is byte-identical to before")
    after = w.snapshot()
    check(after == w.before, f"not restored byte for byte:\nbefore {w.before}\nafter  {after}")
    # The change really was applied first, as root through sudo (become: true, reached as pwadmin).
    made = sorted(w.backups() - w.backups_before)
    check(len(made) == 1 and made[0].startswith("root "), f"not one fstab backup made by root: {made}")


def status_told(w, r):
    name = w.policy["metadata"]["name"]
    out = ran(r, 4, f"{name}: rolled-back", "  why: ", "  last change: ", "0 of 1 policy healthy; exit code 4")
    check("  run 20" in out, f"status --runs shows the runs:\n{out}")


def diffed(w, r):
    ran(r, 3, f"{w.policy['metadata']['name']}: drift ", "    + " + fstab_line(w))
    check(w.snapshot() == w.before, "reconcile --check --diff changed something")


def imported(w, r):
    # The light guest mounts no NFS: the guest was observed and its VM found by its MAC, nothing written.
    ran(r, 0, f"{w.policy['spec']['guest']['host']} (VM {w.vmid} on {w.policy['spec']['guest']['node']}): no NFS mount",
        "0 policies written")
    # Nothing written leaves nothing behind: not even the directory (made only for a first file).
    check(not os.path.exists(os.path.join(w.dir, "imported")), "import made the directory, or wrote a file, for a "
          "guest without NFS mounts")


def parse_size(text):
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
             "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
    m = re.fullmatch(r"(\d+)\s*([A-Za-z]*)", str(text))
    return int(m.group(1)) * units[m.group(2) or "B"]


# Each command of the walkthrough (a regular expression on its README text) and what it must give.
EXPECT = [
    (r"^dd if=/dev/urandom of=\S+ ", probe_written),
    (r"^chmod \S+ \S+$", probe_readable),
    (r"^ssh-keyscan -t ed25519 \S+ >> known_hosts$", keyscanned),
    (r"^ssh-keygen -lf known_hosts$", shown_on_controller),
    (r"^ssh-keygen -lf /etc/ssh/", shown_on_console),
    (r"^\(umask \d+; printf .* > token\)$", token_written),
    (r"^pathwarden .* validate ", validated),
    (r"^pathwarden .* plan ", planned),
    (r"^pathwarden .* reconcile --check \./", checked),
    (r"^pathwarden .* status ", status_told),
    (r"^pathwarden .* reconcile --check --diff ", diffed),
    (r"^pathwarden .* import ", imported),
    (r"^pathwarden .* reconcile --policy ", reconciled),
]


def steps(found, table):
    """Every file and command of the walkthrough with the test world substituted, and each
    command's expectation; checked whole before anything runs."""
    used, met, out = set(), [], []

    def substitute(kind, text):
        for i, (where, old, new, _) in enumerate(table):
            if where == kind and old in text:
                text = text.replace(old, new)
                used.add(i)
        return text

    for kind, name, text in found:
        if kind == "file":
            out.append((kind, name, substitute(name, text), None))
            continue
        for command in commands(text):
            hits = [i for i, (pattern, _) in enumerate(EXPECT) if re.search(pattern, command)]
            check(len(hits) == 1, f"README command '{command}' matches {len(hits)} expectations in EXPECT "
                  "(tests/docs/readme_walkthrough_test.py): give it exactly one")
            check(hits[0] not in met, f"README command '{command}' is the second to meet one expectation")
            met.append(hits[0])
            out.append((kind, command, substitute(kind, command), EXPECT[hits[0]][1]))
    unmet = [EXPECT[i][0] for i in range(len(EXPECT)) if i not in met]
    check(not unmet, f"no README command for the expectations {unmet}: the walkthrough lost a step")
    unused = [f"{old!r} in {where}" for i, (where, old, _, _) in enumerate(table) if i not in used]
    check(not unused, f"substitutions the README no longer needs: {unused}; update Walk.substitutions()")
    return out


def main(pvesim, pathwarden):
    enter_controller_namespace()
    readme, section = readme_section()
    found = blocks(section)
    w = Walk(pvesim, pathwarden, readme, found)
    try:
        table = w.substitutions()
        print("substituted for the test world:\n" +
              "".join(f"  {where}: {old!r} -> {new!r} ({why})\n" for where, old, new, why in table), flush=True)
        todo = steps(found, table)
        settings = next(text for kind, name, text, _ in todo if kind == "file" and name == "pathwarden.yaml")
        check(not os.path.isabs(yaml.safe_load(settings)["spec"]["state_dir"]),
              "the state directory would be outside the test's directory")
        for kind, shown, actual, expect in todo:
            if kind == "file":
                path = os.path.join(w.dir, shown)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(actual)
                print(f"wrote {shown}", flush=True)
                continue
            if kind == "guest":
                r = w.guests.run(GUEST, "sh", "-c", actual)
            else:
                r = subprocess.run(["bash", "-c", actual], cwd=w.share if kind == "probe" else w.dir, env=w.env,
                                   stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
            w.outputs.append(r.stdout + r.stderr)
            print(f"$ {shown}\n" + "".join(f"  | {line}\n" for line in (r.stdout + r.stderr).splitlines()[-40:])
                  + f"  exit {r.returncode}", flush=True)
            try:
                expect(w, r)
            except Failure as e:
                raise Failure(f"README command '{shown}' (run as {shlex.quote(actual)} in {kind}): {e}")
        check(not any(w.secret in o for o in w.outputs), "the token's secret appeared in a command's output")
    finally:
        w.close()


if __name__ == "__main__":
    test_main(main, __doc__, 2)
    print("ok")
