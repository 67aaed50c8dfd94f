# -*- coding: utf-8 -*-
# Copyright: (c) 2026, pathwarden developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the module pathwarden.pathwarden.reconcile: its AnsibleModule driven in-process
with the arguments Ansible would pass, pathwarden's run and the PATH lookup replaced, so each case
says exactly what the module decides: which binary, which argv, changed/failed/warnings, and
that every key it returns has the type RETURN documents.

Run with Debian's pytest (python3-pytest), the collections directory on the path:
  PYTHONPATH=playbooks/collections /usr/bin/python3 -m pytest -q -p no:cacheprovider \\
      playbooks/collections/ansible_collections/pathwarden/pathwarden/tests/unit
(the CTest ops_collection_units); `ansible-test units` runs them as well where its requirements are.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import json

import pytest
import yaml

from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes
from ansible_collections.pathwarden.pathwarden.plugins.modules import reconcile

FOUND = "/usr/bin/pathwarden"


class Exit(Exception):
    def __init__(self, kwargs, failed):
        super(Exit, self).__init__(kwargs)
        self.result = kwargs
        self.failed = failed


def policy(name, verdict, changed=False, **extra):
    entry = {"policy": name, "source": "policies/%s.yaml:4:1" % name, "node": "pve1", "vmid": 101,
             "host": "media-vm", "verdict": verdict, "cause": None, "changed": changed, "planned": [],
             "changes": [], "rolled_back": [], "verification": None, "errors": []}
    entry.update(extra)
    return entry


def report(exit_code, policies, mode="reconcile"):
    return {"format": "pathwarden-report", "schema": "pathwarden-report/v3", "format_version": "3.4",
            "mode": mode, "exit_code": exit_code, "policies": policies}


class Run(object):
    """One module run: its result, whether it failed, its warnings, and the argv pathwarden got."""

    def __init__(self, monkeypatch, args, rc=0, stdout="", stderr="", check_mode=False, diff=False,
                 on_path=FOUND, raises=None):
        self.argv = None
        self.looked_up = []
        self.warnings = []
        module_args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
        monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": module_args})))

        def run_command(module, argv, **kw):
            self.argv = argv
            assert kw.get("handle_exceptions") is False, "run_command must raise, so cmd stays a list"
            if raises is not None:
                raise raises
            return rc, stdout, stderr

        def get_bin_path(module, name, required=False, opt_dirs=None):
            self.looked_up.append(name)
            return on_path

        def leave(failed):
            def method(module, **kwargs):
                raise Exit(kwargs, failed or kwargs.get("failed", False))
            return method

        monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
        monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", get_bin_path)
        monkeypatch.setattr(basic.AnsibleModule, "warn", lambda module, w: self.warnings.append(w))
        monkeypatch.setattr(basic.AnsibleModule, "exit_json", leave(False))
        monkeypatch.setattr(basic.AnsibleModule, "fail_json", leave(True))
        with pytest.raises(Exit) as e:
            reconcile.main()
        self.result = e.value.result
        self.failed = e.value.failed


def returned_types():
    """{key: (type, returned)} from the module's RETURN."""
    doc = yaml.safe_load(reconcile.RETURN)
    return {key: (spec["type"], spec["returned"]) for key, spec in doc.items()}


PYTHON_TYPES = {"dict": dict, "int": int, "list": list, "str": str, "bool": bool}


def check_return_types(run):
    """Every key RETURN documents as always returned is there, and every documented key that is
    returned has the documented type (a list's elements too)."""
    doc = yaml.safe_load(reconcile.RETURN)
    for key, spec in doc.items():
        if spec["returned"] == "always":
            assert key in run.result, "%s is documented as always returned: %s" % (key, sorted(run.result))
        if key not in run.result:
            continue
        value = run.result[key]
        assert isinstance(value, PYTHON_TYPES[spec["type"]]), "%s is %r, RETURN says %s" % (key, value, spec["type"])
        if spec["type"] == "list" and "elements" in spec:
            want = PYTHON_TYPES[spec["elements"]]
            assert all(isinstance(v, want) for v in value), "%s: elements %r, RETURN says %s" % (
                key, value, spec["elements"])


def test_binary_defaults_to_pathwarden_on_path(monkeypatch):
    run = Run(monkeypatch, {}, rc=0, stdout=json.dumps(report(0, [policy("movies", "converged")])))
    assert run.looked_up == ["pathwarden"]
    assert run.argv[0] == FOUND
    assert run.argv[1:] == ["--config=/etc/pathwarden/pathwarden.yaml", "--log-level=info", "reconcile",
                            "--output=json", "--no-color", "--"]
    assert not run.failed and run.result["changed"] is False
    check_return_types(run)


def test_binary_as_a_path_is_run_as_given(monkeypatch):
    run = Run(monkeypatch, {"binary": "/opt/pw/bin/pathwarden"}, stdout=json.dumps(report(0, [])))
    assert run.looked_up == [] and run.argv[0] == "/opt/pw/bin/pathwarden"


def test_binary_as_a_name_is_looked_up(monkeypatch):
    run = Run(monkeypatch, {"binary": "pathwarden-nightly"}, stdout=json.dumps(report(0, [])),
              on_path="/usr/local/bin/pathwarden-nightly")
    assert run.looked_up == ["pathwarden-nightly"] and run.argv[0] == "/usr/local/bin/pathwarden-nightly"


def test_no_pathwarden_on_path_fails_with_the_remedy(monkeypatch):
    run = Run(monkeypatch, {}, on_path=None)
    assert run.failed and run.argv is None
    assert "no pathwarden on PATH" in run.result["msg"] and "install the pathwarden package" in run.result["msg"]
    assert run.result["rc"] == -1 and run.result["cmd"] == []
    check_return_types(run)


def test_a_binary_that_cannot_run_fails_with_cmd_a_list(monkeypatch):
    run = Run(monkeypatch, {"binary": "/nonexistent/pathwarden"},
              raises=OSError(errno.ENOENT, "No such file or directory"))
    assert run.failed and run.result["rc"] == -1
    assert run.result["cmd"][0] == "/nonexistent/pathwarden" and "No such file or directory" in run.result["msg"]
    check_return_types(run)


@pytest.mark.parametrize("rc,verdict,changed,failed", [
    (0, "converged", False, False),
    (2, "verified", True, False),
    (4, "rolled-back", True, True),
    (5, "rollback-failed", True, True),
    (6, "unobserved", False, True),
])
def test_changed_and_failed_follow_the_exit_code(monkeypatch, rc, verdict, changed, failed):
    run = Run(monkeypatch, {}, rc=rc, stdout=json.dumps(report(rc, [policy("movies", verdict, changed=changed)])))
    assert run.failed is failed and bool(run.result["changed"]) is changed
    assert run.result["msg"].startswith("pathwarden exited %d: %s" % (rc, reconcile.EXIT_MEANINGS[rc]))
    if failed:
        assert run.result["failures"][1].startswith("movies: " + verdict)
    check_return_types(run)


def test_blocked_drift_warns_and_names_why(monkeypatch):
    blocked = policy("movies", "precondition-failed", errors=["VM 101 is locked (backup)"])
    run = Run(monkeypatch, {}, rc=3, stdout=json.dumps(report(3, [blocked, policy("docs", "converged")])))
    assert not run.failed and run.result["changed"] is False
    assert len(run.warnings) == 1
    assert run.warnings[0].startswith("pathwarden exited 3: ")
    assert "movies: VM 101 is locked (backup)" in run.warnings[0]


def test_blocked_drift_fails_with_fail_on_blocked(monkeypatch):
    blocked = policy("movies", "precondition-failed", errors=["outside the restart window"])
    run = Run(monkeypatch, {"fail_on_blocked": True}, rc=3, stdout=json.dumps(report(3, [blocked])))
    assert run.failed and "movies: precondition-failed: outside the restart window" in run.result["msg"]


def test_drift_in_check_mode_is_changed_without_a_warning(monkeypatch):
    run = Run(monkeypatch, {}, rc=3, check_mode=True,
              stdout=json.dumps(report(3, [policy("movies", "drift")], mode="check")))
    assert "--check" in run.argv and not run.failed and run.result["changed"] is True and run.warnings == []


@pytest.mark.parametrize("other", [{"paths": ["/srv/policies"]}, {"policies": ["media-*"]}, {"selectors": {"a": "b"}},
                                   {"nodes": ["pve1"]}, {"hosts": ["media-vm"]}])
def test_plan_file_is_exclusive_of_a_selection(monkeypatch, other):
    args = dict(other, plan_file="/var/lib/pathwarden/plans/plan.json")
    run = Run(monkeypatch, args)
    assert run.failed and run.argv is None
    assert "mutually exclusive" in run.result["msg"] and "plan_file" in run.result["msg"]


def test_selection_reaches_the_argv_one_argument_each(monkeypatch):
    run = Run(monkeypatch, {"policies": ["media-*", "a b;c"], "selectors": {"tier": "media"}, "nodes": ["pve1"],
                            "hosts": ["media-vm"], "paths": ["/srv/policies with space"]},
              stdout=json.dumps(report(0, [])))
    assert run.argv[run.argv.index("--no-color") + 1:] == [
        "--policy=media-*", "--policy=a b;c", "--selector=tier=media", "--node=pve1", "--host=media-vm", "--",
        "/srv/policies with space"]


def test_diagnostics_on_stdout_become_the_failure(monkeypatch):
    diagnostics = {"format": "pathwarden-diagnostics", "format_version": "1.0", "command": "reconcile",
                   "exit_code": 1, "diagnostics": [{"severity": "error", "summary": "unknown policy 'movie'",
                                                    "where": "", "hint": "did you mean 'movies'?"}]}
    run = Run(monkeypatch, {"policies": ["movie"]}, rc=1, stdout=json.dumps(diagnostics))
    assert run.failed
    assert run.result["failures"] == ["pathwarden exited 1 (%s): unknown policy 'movie' (did you mean 'movies'?)"
                                      % reconcile.EXIT_MEANINGS[1]]
    check_return_types(run)


def test_no_report_fails_with_the_log_lines(monkeypatch):
    run = Run(monkeypatch, {}, rc=134, stdout="", stderr="terminate called\nAborted\n")
    assert run.failed and run.result["msg"] == "pathwarden exited 134 (an internal error) without a report: " \
                                               "terminate called | Aborted"
    check_return_types(run)


def test_diff_from_the_changes_of_a_verified_policy(monkeypatch):
    changed = policy("movies", "verified", changed=True, changes=[
        {"action": "change-fstab", "target": "media-vm /mnt/movies", "before": "old line", "after": "new line",
         "text": "write the fstab entry"},
        {"action": "set-nic", "target": "VM 101 net1", "before": "virtio=AA,bridge=vmbr1",
         "after": "virtio=AA,bridge=vmbr1,queues=8", "text": "set net1 queues 1 -> 8"}])
    run = Run(monkeypatch, {}, rc=2, diff=True, stdout=json.dumps(report(2, [changed])))
    assert run.result["diff"] == [
        {"before_header": "media-vm:/etc/fstab (policy movies)", "after_header": "media-vm:/etc/fstab (policy movies)",
         "before": "old line\n", "after": "new line\n"},
        {"before_header": "VM 101 on pve1: net1 (policy movies)",
         "after_header": "VM 101 on pve1: net1 (policy movies)",
         "before": "net1: virtio=AA,bridge=vmbr1\n", "after": "net1: virtio=AA,bridge=vmbr1,queues=8\n"}]
    check_return_types(run)


def test_check_mode_with_plan_file_runs_nothing(monkeypatch, tmp_path):
    plan = {"format": "pathwarden-plan", "id": "7f3a", "policies": [{"policy": "movies", "state": "changes",
                                                                    "steps": []}]}
    saved = tmp_path / "plan.json"
    saved.write_text(json.dumps(plan))
    run = Run(monkeypatch, {"plan_file": str(saved)}, check_mode=True)
    assert run.argv is None and not run.failed and run.result["changed"] is True and run.result["plan"] == plan
    check_return_types(run)


def test_return_documents_every_key_it_returns(monkeypatch):
    """No key returned that RETURN does not describe (Ansible's own keys aside)."""
    run = Run(monkeypatch, {"fail_on_blocked": True}, rc=4,
              stdout=json.dumps(report(4, [policy("movies", "rolled-back", changed=True)])))
    own = set(run.result) - {"changed", "failed"}
    assert own <= set(returned_types()), sorted(own - set(returned_types()))
