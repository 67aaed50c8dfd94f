# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs playbooks/pathwarden.yml (the role of the collection pathwarden.pathwarden) with real
ansible-playbook and reads its JSON callback output:
the play recap, the report fact the role sets, and failure messages. Debian's /usr/bin/python3."""
import json
import os
import subprocess
import tempfile

from .paths import ROOT

PLAYBOOK = os.path.join(ROOT, "playbooks", "pathwarden.yml")


class RoleRun:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.stdout, self.stderr = proc.stdout, proc.stderr
        try:
            self.out = json.loads(proc.stdout)
        except json.JSONDecodeError:
            raise AssertionError(f"ansible-playbook printed no JSON (exit {proc.returncode}):\n"
                                 f"{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
        self.stats = self.out["stats"].get("localhost", {})

    def task(self, name):
        for play in self.out["plays"]:
            for t in play["tasks"]:
                if t["task"]["name"].split(" : ", 1)[-1] == name:
                    return t["hosts"].get("localhost", {})
        return {}

    @property
    def report(self):
        return (self.task("Read pathwarden's JSON report").get("ansible_facts", {})
                .get("pathwarden_reconcile_report", {}))

    @property
    def failure(self):
        """The failed run's message as a list of lines: the exit code's meaning, then one line per
        policy (the module pathwarden.pathwarden.reconcile's `failures`)."""
        for name in ("Run pathwarden reconcile", "Run pathwarden apply"):
            t = self.task(name)
            if t.get("failed"):
                return t.get("failures") or [t.get("msg")]
        return None

    @property
    def diff(self):
        """The diff entries the module returned (ansible-playbook --diff)."""
        for name in ("Run pathwarden reconcile", "Run pathwarden apply"):
            t = self.task(name)
            if "diff" in t:
                return t["diff"]
        return None

    def __str__(self):
        return f"ansible-playbook exit {self.rc}, stats {self.stats}, failure {self.failure}\n{self.stderr[-1500:]}"


def run_role(binary, settings, extra_vars=None, check=False, env=None, timeout=1800, diff=False):
    """ansible-playbook playbooks/pathwarden.yml on localhost (connection local); --check, --diff."""
    with tempfile.TemporaryDirectory(prefix="pw-role-") as tmp:
        inventory = os.path.join(tmp, "inventory.ini")
        with open(inventory, "w") as f:
            f.write("localhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n")
        variables = {"pathwarden_reconcile_binary": binary, "pathwarden_reconcile_config": settings}
        variables.update(extra_vars or {})
        cmd = ["ansible-playbook", "-i", inventory, PLAYBOOK, "-e", json.dumps(variables)]
        cmd += (["--check"] if check else []) + (["--diff"] if diff else [])
        run_env = dict(env or os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_NOCOLOR="1",
                       ANSIBLE_LOCAL_TEMP=os.path.join(tmp, "ansible-local"), ANSIBLE_RETRY_FILES_ENABLED="0")
        return RoleRun(subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                                      env=run_env, cwd=tmp))
