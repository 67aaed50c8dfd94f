#!/usr/bin/python
# SPDX-License-Identifier: GPL-3.0-or-later
# -*- coding: utf-8 -*-

# Copyright: (c) 2026, pathwarden developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function
__metaclass__ = type


DOCUMENTATION = r'''
---
module: reconcile
short_description: Reconcile Proxmox and NFS storage paths with pathwarden, or apply a saved plan
version_added: 1.0.0
description:
  - Runs C(pathwarden reconcile) on the host the task runs on (where pathwarden, its settings and its state
    directory live), or C(pathwarden apply) of a saved plan when I(plan_file) is given, and returns pathwarden's
    JSON report (C(format_version) 3.x, schema file src/report/report.schema.json in pathwarden's sources; reports of
    format 2.x are read too).
  - pathwarden reaches the Proxmox API and the guests itself, through the inventory named in its settings; this
    module only drives it.
  - The task is C(changed) when pathwarden changed a policy (exit code 2), and in check mode when a policy has drift.
  - The task fails on exit codes 1 (bad usage, policy or settings), 4 (a change failed verification and was rolled
    back), 5 (a rollback failed, or a journal needs C(pathwarden recover)) and 6 (could not observe), when pathwarden
    printed no report, and on exit 3 outside check mode with I(fail_on_blocked=true) (drift pathwarden could not act
    on); without I(fail_on_blocked), exit 3 outside check mode is a warning naming each blocked policy and why. With I(plan_file) it also fails when a policy the plan would change ends C(precondition-failed); then the plan was
    stale (a VM's Proxmox config or a guest's fstab changed since it was made) or the guest busy, and the reviewed
    change did not happen.
  - The failure message's first line is the exit code and its meaning, then one line per policy that needs
    attention (verdict, verification cause, errors, diagnosis, remedies).
  - In diff mode the task returns, per policy that changed and was verified (in check mode, that has drift), the
    Proxmox C(netN) strings, the mount's C(/etc/fstab) line and the NIC's combined channels before and after, and a
    restart. Without I(plan_file) they come from the report of the one run the task makes (in check mode each
    policy's C(planned), otherwise its C(changes)), so diff mode runs nothing more and observes Proxmox and the guests
    once. With I(plan_file) they come from the saved plan.
author:
  - pathwarden developers (@pathwarden)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - Runs C(pathwarden reconcile --check), which observes and plans and changes nothing; C(changed) means drift.
      - With I(plan_file), shows the saved plan (and its diff) without running C(pathwarden apply).
  diff_mode:
    support: full
    details:
      - The C(netN) strings of the VMs' Proxmox configs, the mounts' C(/etc/fstab) lines (with I(plan_file), the
        guests' whole C(/etc/fstab)) and the NICs' combined channels, before and after, from the run's report.
  platform:
    platforms: posix
    details:
      - The host where pathwarden runs (an Ansible control node or a pathwarden controller host), not the guests.
options:
  binary:
    description:
      - The pathwarden executable, a path or a name looked up on C(PATH).
      - Default is C(pathwarden) found on C(PATH) (and the C(sbin) directories), wherever it is installed (the
        Debian package installs C(/usr/bin/pathwarden), C(cmake --install) C(/usr/local/bin/pathwarden)).
    type: path
  config:
    description:
      - The controller settings file (Proxmox URL and token file, the guests' inventory, state directory).
    type: path
    default: /etc/pathwarden/pathwarden.yaml
    aliases: [settings]
  paths:
    description:
      - Policy files or directories. Empty for the settings' C(policies) directory.
      - Mutually exclusive with I(plan_file).
    type: list
    elements: path
    default: []
    aliases: [policy_paths]
  policies:
    description:
      - Only these policies (C(--policy)), each a C(metadata.name) or a glob such as C(media-*). Empty for all.
      - A name that matches no policy fails the task (pathwarden exits 1, with a did-you-mean).
      - Mutually exclusive with I(plan_file).
    type: list
    elements: str
    default: []
    aliases: [policy_names]
  selectors:
    description:
      - Only policies with all these C(metadata.labels) entries (C(--selector KEY=VALUE)).
      - Mutually exclusive with I(plan_file).
    type: dict
    default: {}
  nodes:
    description:
      - Only policies of VMs on these Proxmox nodes (C(--node)).
      - Mutually exclusive with I(plan_file).
    type: list
    elements: str
    default: []
  hosts:
    description:
      - Only policies of these inventory hosts (C(--host)).
      - Mutually exclusive with I(plan_file).
    type: list
    elements: str
    default: []
  plan_file:
    description:
      - Apply exactly this saved plan (C(pathwarden apply PLAN_FILE)) instead of reconciling; it was written by
        C(pathwarden plan --out) on this host.
      - pathwarden refuses a stale plan as a whole, changing nothing (exit 3, every policy C(precondition-failed)).
    type: path
  report_file:
    description:
      - Also write the JSON report to this file on the host (C(--report-file)).
    type: path
  prometheus_file:
    description:
      - Also write a node_exporter textfile to this path on the host (C(--prometheus)).
    type: path
  fail_on_blocked:
    description:
      - Fail on exit 3 outside check mode, that is drift pathwarden could not act on (a restart outside the policy's
        window, someone else's pending Proxmox change, a guest another run holds).
    type: bool
    default: false
  log_level:
    description:
      - pathwarden's log level; its log lines are returned as I(stderr).
    type: str
    choices: [trace, debug, info, warn, error, critical, "off"]
    default: info
notes:
  - The command line is an argument vector, never a shell command; every name and path is one argument.
  - pathwarden's exit codes and its report are described in the README of pathwarden.
seealso:
  - name: pathwarden's README
    description: Exit codes, the JSON report, plans and selectors.
    link: https://github.com/pathwarden/pathwarden#readme
'''  # noqa: E501 (a line of DOCUMENTATION is long)

EXAMPLES = r'''
- name: Reconcile every policy of the settings (check mode runs reconcile --check)
  pathwarden.pathwarden.reconcile:
    config: /etc/pathwarden/pathwarden.yaml

- name: Reconcile the media policies on node pve1 with a pathwarden of its own, keeping the report and a textfile
  pathwarden.pathwarden.reconcile:
    binary: /opt/pathwarden/bin/pathwarden
    paths:
      - /var/lib/pathwarden-policies/policies/cluster-a
    policies:
      - 'media-*'
    selectors:
      tier: media
    nodes:
      - pve1
    report_file: /var/lib/pathwarden/last-run.json
    prometheus_file: /var/lib/prometheus/node-exporter/pathwarden.prom
  register: pathwarden_run

- name: List the policies that were rolled back
  ansible.builtin.debug:
    msg: "{{ item.policy }}: {{ item.verification.diagnosis }}"
  loop: "{{ pathwarden_run.report.policies | selectattr('verdict', 'equalto', 'rolled-back') }}"

- name: Apply exactly a reviewed plan
  pathwarden.pathwarden.reconcile:
    plan_file: /var/lib/pathwarden/plans/cluster-a.json
    fail_on_blocked: true

# ansible-playbook site.yml --check --diff shows the fstab lines and netN strings that would change, taken from
# the report of the one reconcile --check it runs.
'''

RETURN = r'''
report:
  description:
    - pathwarden's JSON report (C(format_version) 3.x) as a dictionary; empty when pathwarden printed none
      (exit 1, or in check mode with I(plan_file)).
    - Per policy C(verdict), C(changed), C(planned) (the steps of its plan, what check mode would change) and
      C(changes) (what the run changed and kept), each a list of C(action), C(target), C(before), C(after), C(text);
      C(rolled_back), C(verification), C(errors). In format 2.x C(planned) was a list of strings.
  returned: always
  type: dict
  sample:
    format: pathwarden-report
    schema: pathwarden-report/v3
    format_version: "3.1"
    mode: reconcile
    exit_code: 2
    policies:
      - policy: movies-10g
        verdict: verified
        changed: true
        changes:
          - action: change-fstab
            target: media-vm /mnt/movies
            before: "192.0.2.2:/srv/nas/movies /mnt/movies nfs vers=4.2,_netdev 0 0"
            after: "198.51.100.2:/srv/nas/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0"
            text: write the fstab entry of /mnt/movies and re-make the mount
rc:
  description: pathwarden's exit code (C(-1) when it did not run).
  returned: always
  type: int
  sample: 2
cmd:
  description: The argument vector pathwarden ran with (it runs once per task, also in diff mode); empty when it did
    not run.
  returned: always
  type: list
  elements: str
  sample: [/usr/bin/pathwarden, --config=/etc/pathwarden/pathwarden.yaml, --log-level=info, reconcile,
           --output=json, --no-color, --check, --]
stderr:
  description: pathwarden's log lines.
  returned: always
  type: str
plan:
  description:
    - The saved plan of I(plan_file) (format C(pathwarden-plan)); with I(plan_file) the diff is taken from it.
  returned: with I(plan_file)
  type: dict
diff:
  description:
    - Ansible's diff, one entry per change; shown by C(--diff).
    - Without I(plan_file), from the report's C(planned) (check mode) or C(changes) (a real run) - C(set-nic) the
      C(netN) string, C(change-fstab) the mount's fstab line (none when only the mount is re-made, its line the
      same), C(set-channels) the combined channels, C(restart-vm) the restart and why; C(verify) none.
  returned: in diff mode
  type: list
  elements: dict
  sample:
    - before_header: "media-vm:/etc/fstab (policy movies-10g)"
      after_header: "media-vm:/etc/fstab (policy movies-10g)"
      before: "192.0.2.2:/srv/nas/movies /mnt/movies nfs vers=4.2,_netdev 0 0\n"
      after: "198.51.100.2:/srv/nas/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0\n"
msg:
  description:
    - What happened. When the task fails, the exit code and its meaning, then one line per policy that needs
      attention (newline separated; also returned as I(failures)).
  returned: always
  type: str
  sample: "pathwarden exited 2: changes applied and verified (1 converged, 1 verified)"
failures:
  description: The failure message as a list of lines.
  returned: failure
  type: list
  elements: str
'''

import json  # noqa: E402
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

# pathwarden's exit codes, word for word as its one table says them (pathwarden reconcile --help;
# tests/docs/exit_codes_test.py compares).
EXIT_MEANINGS = {
    0: "nothing to do, or every policy converged or verified",
    1: "bad usage, or a bad policy or settings file",
    2: "changes applied and verified",
    3: "drift found (plan, --check), or a change blocked by a precondition (a closed restart window, a "
       "stale saved plan)",
    4: "a change failed verification and was rolled back (or kept inconclusive by the policy), or a path is wrong",
    5: "a rollback failed, or a journal waits for 'pathwarden recover'",
    6: "a guest or the Proxmox API did not answer: not observed (never drift)",
    7: "the run stands, but an output it was asked for (--report-file, --prometheus) could not be written",
}
APPLY_EXIT_MEANINGS = {
    3: "the saved plan was not applied where it had changes: pathwarden refuses a plan when a VM's Proxmox config or a "
       "guest's fstab changed since the plan was made (stale), and leaves a guest alone that another run holds",
}
# Report format majors whose planned/changes this module reads: 1 (strings only), 2 (changes structured,
# planned strings), 3 (both structured).
KNOWN_REPORT_MAJORS = (1, 2, 3)
# Verdicts that need nobody's attention.
FINE_VERDICTS = ("converged", "verified", "drift")


def parse_json(text):
    """A JSON object printed on stdout, or None."""
    text = (text or "").strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def describe_diagnostic(d):
    """One entry of a pathwarden-diagnostics document as a line: where: summary (hint)."""
    text = (d.get("where") + ": " if d.get("where") else "") + (d.get("summary") or "")
    return text + (" (%s)" % d["hint"] if d.get("hint") else "")


def find_binary(module):
    """The pathwarden to run: binary as given when it is a path, else that name (default pathwarden) on PATH;
    None when there is none."""
    binary = module.params["binary"]
    if binary and "/" in binary:
        return binary
    return module.get_bin_path(binary or "pathwarden")


def base_argv(binary, params):
    return [binary, "--config=" + params["config"], "--log-level=" + params["log_level"]]


def selector_args(params):
    args = ["--policy=" + p for p in params["policies"]]
    args += ["--selector=%s=%s" % (k, v) for k, v in sorted(params["selectors"].items())]
    args += ["--node=" + n for n in params["nodes"]]
    args += ["--host=" + h for h in params["hosts"]]
    return args


def output_args(params):
    args = []
    if params["report_file"]:
        args.append("--report-file=" + params["report_file"])
    if params["prometheus_file"]:
        args.append("--prometheus=" + params["prometheus_file"])
    return args


def step_diffs(policy):
    """Ansible diff entries for one policy's plan: netN strings, fstab, channels, restarts."""
    out = []
    name = policy.get("policy", "?")
    for step in policy.get("steps") or []:
        kind = step.get("kind")
        vm = step.get("vm") or policy.get("vm") or {}
        if kind == "set-nic":
            header = "VM %s on %s: %s (policy %s)" % (vm.get("vmid"), vm.get("node"), step.get("device"), name)
            before = "%s: %s\n" % (step.get("device"), step.get("from")) if step.get("from") else ""
            after = "%s: %s\n" % (step.get("device"), step.get("to")) if step.get("to") else ""
        elif kind == "change-fstab":
            if step.get("old_content") == step.get("new_content"):
                continue  # only the mount is re-made
            header = "%s:/etc/fstab (policy %s)" % (step.get("host"), name)
            before, after = step.get("old_content", ""), step.get("new_content", "")
        elif kind == "set-channels":
            header = "%s: %s (%s) channels (policy %s)" % (
                step.get("host"), step.get("interface"), step.get("mac"), name)
            before = "combined %s\n" % step.get("from")
            after = "combined %s\n" % step.get("to")
        elif kind == "restart-vm":
            header = "VM %s on %s: power (policy %s)" % (vm.get("vmid"), vm.get("node"), name)
            before = "running\n"
            after = "restarted (%s)\n" % step.get("why")
        else:
            continue
        out.append({"before_header": header, "after_header": header, "before": before, "after": after})
    return out


def plan_diff(plan, wanted):
    """The diff of the plan's policies named in wanted (all with changes when wanted is None)."""
    diffs = []
    for policy in (plan or {}).get("policies") or []:
        if policy.get("state") != "changes":
            continue
        if wanted is not None and policy.get("policy") not in wanted:
            continue
        diffs.extend(step_diffs(policy))
    return diffs


def report_major(report):
    """The major of the report's format_version: 1 for format 1 (no format_version), None when unreadable."""
    version = report.get("format_version")
    if version is None:
        return 1 if report.get("schema") == "pathwarden-report/v1" else None
    try:
        return int(str(version).split(".", 1)[0])
    except ValueError:
        return None


def change_diffs(entry, key):
    """Ansible diff entries for one report policy's structured changes (planned or changes): netN strings, the
    mount's fstab line, channels, restarts. Items that are no objects (format 2's planned strings) give none."""
    out = []
    name = entry.get("policy", "?")
    for change in entry.get(key) or []:
        if not isinstance(change, dict):
            continue
        action = change.get("action")
        target = change.get("target") or ""
        before, after = change.get("before"), change.get("after")
        if action == "set-nic":
            device = target.split()[-1] if target.split() else "?"
            header = "VM %s on %s: %s (policy %s)" % (entry.get("vmid"), entry.get("node"), device, name)
            before = "%s: %s\n" % (device, before) if before is not None else ""
            after = "%s: %s\n" % (device, after) if after is not None else ""
        elif action == "change-fstab":
            if before == after:
                continue  # only the mount is re-made
            host = entry.get("host") or target.split(" ", 1)[0]
            header = "%s:/etc/fstab (policy %s)" % (host, name)
            before = "%s\n" % before if before is not None else ""
            after = "%s\n" % after if after is not None else ""
        elif action == "set-channels":
            host, _, what = target.partition(" ")
            header = "%s: %s (policy %s)" % (host, what, name) if what else "%s (policy %s)" % (target, name)
            before = "combined %s\n" % before if before is not None else ""
            after = "combined %s\n" % after if after is not None else ""
        elif action == "restart-vm":
            header = "VM %s on %s: power (policy %s)" % (entry.get("vmid"), entry.get("node"), name)
            before = "running\n"
            after = "restarted (%s)\n" % change.get("text") if change.get("text") else "restarted\n"
        else:
            continue  # verify changes nothing
        out.append({"before_header": header, "after_header": header, "before": before, "after": after})
    return out


def report_diff(policies, check_mode):
    """The diff of the run's report: check mode, the planned steps of the policies with drift; otherwise the
    changes of the policies changed and verified (those whose changes stand)."""
    diffs = []
    for entry in policies:
        if not isinstance(entry, dict):
            continue
        if check_mode and entry.get("verdict") == "drift":
            diffs.extend(change_diffs(entry, "planned"))
        elif not check_mode and entry.get("changed") and entry.get("verdict") == "verified":
            diffs.extend(change_diffs(entry, "changes"))
    return diffs


def cause_label(cause):
    """A rollback's cause as pathwarden's views say it: by the layer that failed."""
    if cause in ("wrong-path", "inconclusive", "precondition-failed"):
        return "verification: " + cause
    return "apply failed" if cause == "apply-failed" else cause


def failure_lines(rc, report, meanings, not_applied):
    lines = ["pathwarden exited %d: %s" % (rc, meanings.get(rc, "an internal error"))]
    policies = report.get("policies") or []
    if not_applied:
        nothing = "; nothing was changed" if not any(p.get("changes") for p in policies) else ""
        lines.append("not applied: %s%s; launch the review again for a fresh plan" % (", ".join(not_applied), nothing))
    for p in policies:
        if p.get("verdict") in FINE_VERDICTS and not p.get("errors"):
            continue
        line = "%s: %s" % (p.get("policy"), p.get("verdict"))
        if p.get("cause"):
            line += " (%s)" % cause_label(p["cause"])
        if p.get("errors"):
            line += ": " + "; ".join(p["errors"])
        verification = p.get("verification") or {}
        if verification.get("diagnosis"):
            line += "; diagnosis: " + verification["diagnosis"]
        if verification.get("remedies"):
            line += "; remedies: " + "; ".join(verification["remedies"])
        lines.append(line)
    return lines


def blocked_lines(report):
    """Each policy a precondition blocked (exit 3 outside check mode), with why."""
    lines = []
    for p in report.get("policies") or []:
        if p.get("verdict") != "precondition-failed":
            continue
        errors = p.get("errors") or []
        lines.append("%s: %s" % (p.get("policy"), "; ".join(errors) if errors else "blocked by a precondition"))
    return lines


def read_plan(module, path):
    try:
        with open(path) as f:
            plan = json.load(f)
    except (IOError, OSError, ValueError) as e:
        module.fail_json(msg="cannot read the saved plan %s: %s" % (path, e), rc=-1, report={}, cmd=[], stderr="")
    if not isinstance(plan, dict) or plan.get("format") != "pathwarden-plan":
        module.fail_json(msg="%s is not a pathwarden plan (no format: pathwarden-plan)" % path, rc=-1, report={},
                         cmd=[], stderr="")
    return plan


def main():
    module = AnsibleModule(
        argument_spec=dict(
            binary=dict(type="path"),
            config=dict(type="path", default="/etc/pathwarden/pathwarden.yaml", aliases=["settings"]),
            paths=dict(type="list", elements="path", default=[], aliases=["policy_paths"]),
            policies=dict(type="list", elements="str", default=[], aliases=["policy_names"]),
            selectors=dict(type="dict", default={}),
            nodes=dict(type="list", elements="str", default=[]),
            hosts=dict(type="list", elements="str", default=[]),
            plan_file=dict(type="path"),
            report_file=dict(type="path"),
            prometheus_file=dict(type="path"),
            fail_on_blocked=dict(type="bool", default=False),
            log_level=dict(type="str", default="info",
                           choices=["trace", "debug", "info", "warn", "error", "critical", "off"]),
        ),
        # A saved plan is applied as it is: no selection with it.
        mutually_exclusive=[("plan_file", other) for other in ("paths", "policies", "selectors", "nodes", "hosts")],
        supports_check_mode=True,
    )
    params = module.params
    check_mode = module.check_mode
    want_diff = module._diff
    plan_file = params["plan_file"]
    result = dict(changed=False, rc=-1, report={}, cmd=[], stderr="")
    binary = find_binary(module)
    if binary is None:
        module.fail_json(msg="no pathwarden on PATH (%s): install the pathwarden package, or set binary to its path"
                         % os.environ.get("PATH", ""), **result)

    plan = None
    if plan_file:
        plan = read_plan(module, plan_file)
        result["plan"] = plan
        if check_mode:
            # pathwarden apply has no dry run: the saved plan is what it would do.
            result["changed"] = any(p.get("state") == "changes" for p in plan.get("policies") or [])
            if want_diff:
                result["diff"] = plan_diff(plan, None)
            result["msg"] = "check mode: plan %s not applied" % plan.get("id")
            module.exit_json(failed=False, **result)
        argv = (base_argv(binary, params) + ["apply", "--output=json", "--no-color"] + output_args(params)
                + ["--", plan_file])
    else:
        # Diff mode needs no second run: the report's planned (check mode) and changes carry the values.
        argv = (base_argv(binary, params) + ["reconcile", "--output=json", "--no-color"]
                + (["--check"] if check_mode else []) + selector_args(params) + output_args(params) + ["--"]
                + params["paths"])

    try:
        rc, out, err = module.run_command(argv, handle_exceptions=False)
    except OSError as e:
        # Not run (no such file, not executable): said with the argument vector as RETURN has it.
        module.fail_json(msg="pathwarden did not run: %s: %s" % (argv[0], e.strerror or e), **dict(result, cmd=argv))
    result.update(rc=rc, cmd=argv, stderr=err)
    meanings = dict(EXIT_MEANINGS)
    if plan_file:
        meanings.update(APPLY_EXIT_MEANINGS)
    report = parse_json(out)
    if report is not None and report.get("format") == "pathwarden-diagnostics":
        # The failure as pathwarden said it on stdout (--output json): each problem, where and what to do.
        lines = ["pathwarden exited %d (%s): %s" % (rc, meanings.get(rc, "an internal error"), describe_diagnostic(d))
                 for d in report.get("diagnostics") or []] or ["pathwarden exited %d" % rc]
        result.update(failures=lines, msg="\n".join(lines))
        module.fail_json(**result)
    if report is None or "schema" not in report:
        lines = ["pathwarden exited %d (%s) without a report: %s"
                 % (rc, meanings.get(rc, "an internal error"), " | ".join(err.splitlines()))]
        result.update(failures=lines, msg=lines[0])
        module.fail_json(**result)
    result["report"] = report
    policies = report.get("policies") or []

    result["changed"] = any(p.get("changed") or (check_mode and p.get("verdict") == "drift") for p in policies)
    if want_diff and plan_file:
        result["diff"] = plan_diff(plan, set(p.get("policy") for p in policies
                                             if p.get("changed") and p.get("verdict") == "verified"))
    elif want_diff:
        major = report_major(report)
        if major in KNOWN_REPORT_MAJORS:
            result["diff"] = report_diff(policies, check_mode)
        else:
            result["diff"] = []
            module.warn("diff mode: report format_version %s is not one this collection reads (it reads %s and "
                        "format 1), so no diff" % (report.get("format_version"),
                                                   ", ".join("%d.x" % m for m in KNOWN_REPORT_MAJORS[1:])))

    planned = set(p.get("policy") for p in (plan or {}).get("policies") or [] if p.get("state") == "changes") \
        if plan_file else set()
    not_applied = [p.get("policy") for p in policies
                   if p.get("verdict") == "precondition-failed" and p.get("policy") in planned]
    failed = (rc not in (0, 2, 3) or (rc == 3 and params["fail_on_blocked"] and not check_mode)
              or len(not_applied) > 0)
    if failed:
        lines = failure_lines(rc, report, meanings, not_applied)
        result.update(failures=lines, msg="\n".join(lines))
        module.fail_json(**result)
    if rc == 3 and not check_mode:
        blocked = blocked_lines(report)
        module.warn("pathwarden exited 3: %s; %s" % (meanings[3], " | ".join(blocked) or "no policy said why"))
    counts = {}
    for p in policies:
        counts[p.get("verdict")] = counts.get(p.get("verdict"), 0) + 1
    result["msg"] = "pathwarden exited %d: %s (%s)" % (
        rc, meanings.get(rc, "an internal error"),
        ", ".join("%d %s" % (n, v) for v, n in sorted(counts.items())) or "no policy")
    # Explicitly not failed: Ansible takes a result with a nonzero rc for a failure otherwise.
    module.exit_json(failed=False, **result)


if __name__ == "__main__":
    main()
