#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stands in for ansible-playbook (settings: spec.ansible.playbook_command) so that a whole
`pathwarden plan` / `pathwarden apply` runs on one machine without a guest: the guest is the lab
guest as recorded after the seed's fix (tests/bench/recordings/lab-guest: media-vm, link2 =
bc:24:11:a1:01:02 with 8 channels, /mnt/movies mounted vers=3,nconnect=8 over 198.51.100.2),
whose fstab lives in a file the test can edit.

  guest_stand_in.py [--inventory FILE]... [--forks N] PLAYBOOK
  PW_GUEST_STAND_IN=DIR   DIR/fstab: the guest's fstab (written from the recording when missing)
                          DIR/runs.jsonl: one line per run, {"playbook": "facts.yml", "hosts": [...]}

It answers the generated playbooks as the recorded guest would, task by task from the playbook
file, in the ansible.posix.jsonl callback's format:
- facts: the recorded report, and the fstab file's bytes;
- apply: the apply script's stage marks; it refuses, like the real script, when the fstab's sha256
  is neither the observed nor the new one, and writes the new content into DIR/fstab; the mounts
  stay as recorded (the test's plan re-makes them with the options they have);
- probe: the probe script's report from the interface counters as recorded, link2 (the intended
  NIC) receiving the probe's bytes;
- rollback: the rollback script's marks, the fstab left as it is; channels: ok.
It never connects anywhere. Run with Debian's /usr/bin/python3.
"""
import base64
import datetime
import hashlib
import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.realpath(__file__))
RECORDING = os.path.join(os.path.dirname(HERE), "bench", "recordings", "lab-guest", "facts.jsonl")
INTENDED = "link2"
MARK = "@@pathwarden "  # the recording's marks (the report as an older script printed it)
TOKEN = "3c9e1f2a-7b4d-4e6f-9a8b-1c2d3e4f5a6b"
OUT = "@@" + TOKEN + " "  # marks as the scripts print them now (src/guest/script_output.hpp)
BEGIN = "@@pathwarden begin " + TOKEN + "\n"
LAB_ADDRESSES = ((1, "lo", "127.0.0.1", 8), (2, "link1", "192.0.2.10", 24), (4, "mgmt", "203.0.113.10", 28),
                 (5, "link2", "198.51.100.10", 24))
ADDRESSES = json.dumps([{"ifindex": i, "ifname": name, "addr_info": [{"family": "inet", "local": addr, "prefixlen": n}]}
                        for i, name, addr, n in LAB_ADDRESSES]) + "\n"


def recorded():
    """(fstab bytes as text, report stdout with "@@pathwarden NAME" marks) of the recorded facts run.
    The recording is framed as the scripts print (src/guest/script_output.hpp): a begin line with
    its token, the fstab as the first section (base64), then the other sections."""
    with open(RECORDING) as f:
        for line in f:
            e = json.loads(line)
            for result in e.get("hosts", {}).values():
                if "stdout" not in result:
                    continue
                lines = result["stdout"].split("\n")
                begin = next(i for i, out_line in enumerate(lines) if out_line.startswith("@@pathwarden begin "))
                token = "@@" + lines[begin][len("@@pathwarden begin "):] + " "
                marks = [i for i, out_line in enumerate(lines) if out_line.startswith(token)]
                fstab_end = marks[1]
                fstab = base64.b64decode("".join(lines[marks[0] + 1:fstab_end])).decode()
                report = "\n".join(MARK + out_line[len(token):] if out_line.startswith(token) else out_line
                                   for out_line in lines[fstab_end:])
                return fstab, report
    raise SystemExit("guest_stand_in: the recording has no report")


def sections(report):
    """The recorded report's sections by mark ("netdev", "iface link2", ...)."""
    out, name = {}, None
    for line in report.split("\n"):
        if line.startswith(MARK):
            name = line[len(MARK):]
            out[name] = []
        elif name is not None:
            out[name].append(line)
    return out


def unsafe(v):
    """The vars file's values without their {"__ansible_unsafe": ...} wrappers."""
    if isinstance(v, dict):
        return v["__ansible_unsafe"] if set(v) == {"__ansible_unsafe"} else {k: unsafe(x) for k, x in v.items()}
    if isinstance(v, list):
        return [unsafe(x) for x in v]
    return v


class Guest:
    def __init__(self, directory, playbook):
        self.dir = directory
        self.playbook = playbook
        self.fstab_path = os.path.join(directory, "fstab")
        fstab, self.report = recorded()
        if not os.path.exists(self.fstab_path):
            with open(self.fstab_path, "w") as f:
                f.write(fstab)
        self.sections = sections(self.report)
        self.clock = datetime.datetime.now()
        vars_file = os.path.join(os.path.dirname(playbook), os.path.basename(playbook).rsplit(".", 1)[0] + ".vars.json")
        self.vars = {}
        if os.path.exists(vars_file):
            with open(vars_file) as f:
                self.vars = unsafe(json.load(f))["pathwarden_hosts"]

    def fstab(self):
        with open(self.fstab_path, "rb") as f:
            return f.read()

    def tick(self, seconds):
        start = self.clock
        self.clock += datetime.timedelta(seconds=seconds)
        fmt = "%Y-%m-%d %H:%M:%S.%f"
        return {"start": start.strftime(fmt), "end": self.clock.strftime(fmt), "delta": "0:00:%09.6f" % seconds}

    def counters(self, extra_rx=0):
        netdev = []
        for line in self.sections["netdev"]:
            name, sep, rest = line.partition(":")
            if sep and name.strip() == INTENDED and extra_rx:
                f = rest.split()
                f[0] = str(int(f[0]) + extra_rx)
                f[1] = str(int(f[1]) + extra_rx // 9000 + 1)
                line = f"{name}: " + " ".join(f)
            netdev.append(line)
        ifindex = [f"{k[len('iface '):]} {v[0].split()[1]}" for k, v in self.sections.items() if k.startswith("iface ")]
        return "\n".join(netdev + [OUT + "ifindex"] + ifindex + [OUT + "nfs_connections"]
                         + self.sections["nfs_connections"])

    def result(self, task, host):
        """(event, result) of one task on one host."""
        name = task.get("name", "")
        h = self.vars.get(host, {})
        ok = {"changed": False}
        if name == "Report mounts, transports, counters and interfaces":
            # One raw task: the script reads the fstab itself (its first section, base64).
            fstab = OUT + "fstab\n" + base64.encodebytes(self.fstab()).decode()
            report = "\n".join(OUT + line[len(MARK):] if line.startswith(MARK) else line
                               for line in self.report.split("\n"))
            if OUT + "addresses\n" not in report:
                # Recorded before the script read `ip -j addr`: the lab guest's addresses
                # (tests/pwtest/lab/topology.py), before the closing mark.
                report = report.replace(OUT + "end", OUT + "addresses\n" + ADDRESSES + OUT + "end", 1)
            return "ok", dict(ok, rc=0, stdout=BEGIN + fstab + report, stderr="", **self.tick(0.1))
        if name == "Write the new fstab with a backup and re-make the mounts":
            # The apply script (src/guest/change_script.cpp): its stage marks, its refusal.
            # Its arguments: the hashes, the backup, then the edit of the observed file (c OFFSET
            # LENGTH: bytes copied from it; t TEXT: new bytes), as src/guest/fstab_edit.hpp says.
            observed, new, _backup, words, *rest = h["apply_args"]
            stages = [BEGIN + OUT + "stage read", OUT + "stage refuse"]
            before = self.fstab()
            if hashlib.sha256(before).hexdigest() not in (observed, new):
                why = "the fstab changed since pathwarden observed it; gather facts and plan again"
                return "failed", {"failed": True, "changed": True, "msg": "non-zero return code", "rc": 1,
                                  "stdout": "\n".join(stages) + "\n", "stderr": why + "\n"}
            if hashlib.sha256(before).hexdigest() == observed:
                content, edit = b"", rest[:int(words)]
                while edit:
                    if edit[0] == "c":
                        content += before[int(edit[1]):int(edit[1]) + int(edit[2])]
                        edit = edit[3:]
                    else:
                        content += edit[1].encode()
                        edit = edit[2:]
                if hashlib.sha256(content).hexdigest() != new:
                    why = "the new fstab put together from the observed one is not what was planned"
                    return "failed", {"failed": True, "changed": True, "msg": "non-zero return code", "rc": 1,
                                      "stdout": "\n".join(stages + [OUT + "stage backup", OUT + "stage write"]) + "\n",
                                      "stderr": why + "\n"}
                with open(self.fstab_path, "wb") as f:
                    f.write(content)
            stages += [OUT + "stage " + s for s in ("backup", "write", "check_written", "unmount", "mount")]
            return "ok", {"changed": True, "rc": 0, "stdout": "\n".join(stages + [OUT + "end"]) + "\n", "stderr": ""}
        if name == "Put the fstab back from the backup and re-make the mounts":
            stages = [BEGIN + OUT + "stage " + s if s == "read" else OUT + "stage " + s
                      for s in ("read", "refuse", "unmount", "mount")]
            return "ok", {"changed": True, "rc": 0, "stdout": "\n".join(stages + [OUT + "end"]) + "\n", "stderr": ""}
        if name == "Read the counters around the probe bytes moved bypassing the page cache":
            # The probe script's report (src/guest/probe_report.hpp): the counters before and after
            # (link2 received the probe's bytes), dd's summary; the baseline when asked for.
            baseline, _remove, _cycles, _commit_path, _mode, _mount, _file, *dd = h["probe_args"]
            n, t = self.probe_bytes(dd), 0.5
            clock = 1000.0
            out = [BEGIN.rstrip("\n")]
            if baseline != "0":
                out += [f"{OUT}read baseline {clock:.2f}", self.counters()]
                clock += float(baseline)
            out += [f"{OUT}read before {clock:.2f}", self.counters()]
            out += [f"{OUT}read after {clock + t + 0.1:.2f}", self.counters(n)]
            out += [f"{OUT}probe 0 {clock + 0.05:.2f} {clock + 0.05 + t:.2f}",
                    f"{n // 1048576}+0 records in\n{n // 1048576}+0 records out\n"
                    f"{n} bytes ({n // 1000000} MB, {n // 1048576} MiB) copied, {t} s, {int(n / t / 1e6)} MB/s"]
            out.append(OUT + "end")
            return "ok", dict(ok, rc=0, stdout="\n".join(out) + "\n", stderr="")
        return "ok", ok

    @staticmethod
    def probe_bytes(dd_argv):
        args = dict(a.split("=", 1) for a in dd_argv[1:] if "=" in a)
        return int(args["bs"]) * int(args["count"])

    def run(self):
        with open(self.playbook) as f:
            plays = yaml.safe_load(f)
        events = []
        stats = {}
        for play in plays:
            hosts = play["hosts"]
            events.append({"_event": "v2_playbook_on_play_start", "play": {"name": play["name"]}, "tasks": []})
            failed = set()
            for task in play["tasks"]:
                events.append({"_event": "v2_playbook_on_task_start", "hosts": {}, "task": {"name": task["name"]}})
                for host in hosts:
                    if host in failed:
                        continue
                    kind, result = self.result(task, host)
                    s = stats.setdefault(host, {"ok": 0, "changed": 0, "failures": 0, "skipped": 0, "unreachable": 0})
                    s["failures" if kind == "failed" else "skipped" if kind == "skipped" else "ok"] += 1
                    s["changed"] += 1 if result.get("changed") else 0
                    if kind == "failed":
                        failed.add(host)
                    events.append({"_event": f"v2_runner_on_{kind}", "hosts": {
                                  host: result}, "task": {"name": task["name"]}})
            with open(os.path.join(self.dir, "runs.jsonl"), "a") as f:
                f.write(json.dumps({"playbook": os.path.basename(self.playbook), "hosts": hosts}) + "\n")
        events.append({"_event": "v2_playbook_on_stats", "stats": stats})
        for e in events:
            print(json.dumps(e))
        return 2 if any(s["failures"] for s in stats.values()) else 0


def main(argv):
    directory = os.environ.get("PW_GUEST_STAND_IN")
    if not directory or not argv or not argv[-1].endswith(".yml"):
        print("ERROR! guest_stand_in: usage: PW_GUEST_STAND_IN=DIR guest_stand_in.py [--inventory FILE]... PLAYBOOK",
              file=sys.stderr)
        return 5
    return Guest(directory, argv[-1]).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
