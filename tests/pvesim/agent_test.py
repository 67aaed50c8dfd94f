#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""pvesim's guest agent endpoints (/nodes/{node}/qemu/{vmid}/agent/...) as qemu-server serves them
(PVE/API2/Qemu/Agent.pm, PVE/QemuServer/Agent.pm, PVE/QMPClient.pm; docs/guest-agent-upstream.md):
recorded agents for simulated VMs, real ones on a UNIX socket (a fake qemu-ga written here), the
check order, the PVE 9 privileges and pvedaemon's three workers per node.
Usage: agent_test.py PVESIM_BINARY CASE
(CASE: recorded, checks, privileges, socket, socket_timeouts, workers)
Over 400 lines: the six cases share the API helpers and the fake qemu-ga; apart, they would repeat them."""
import base64
import itertools
import json
import os
import shutil
import socket
import ssl
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request

from pwtest.pvesim_process import Pvesim
from pwtest.script import case_main, check, wait_for

TOKEN = "root@pam!agent=7a9e-secret"
AUDIT = "auditor@pve!agent=a0d1-secret"      # VM.GuestAgent.Audit only
READER = "reader@pve!agent=f11e-secret"      # VM.GuestAgent.FileRead only
PLAIN = "plain@pve!agent=9a1a-secret"        # VM.Audit only: no agent privilege
ADMIN = "admin@pve!agent=ad31-secret"        # VM.GuestAgent.Unrestricted only
TOKENS = ["--token", TOKEN, "--token", AUDIT + ":VM.GuestAgent.Audit", "--token", READER + ":VM.GuestAgent.FileRead",
          "--token", PLAIN + ":VM.Audit", "--token", ADMIN + ":VM.GuestAgent.Unrestricted"]
MAX_READ = 16 * 1024 * 1024


class Answer:
    def __init__(self, status, reason, body):
        self.status, self.reason, self.body = status, reason, body
        self.data = body.get("data") if isinstance(body, dict) else None
        self.message = body.get("message") if isinstance(body, dict) else None

    def __repr__(self):
        return f"HTTP {self.status} {self.reason!r} {json.dumps(self.body)[:400]}"


def api(sim, method, path, params=None, token=TOKEN):
    """One API call (form-encoded, repeated keys for lists); the status, reason phrase and body."""
    data = None
    headers = {"Authorization": "PVEAPIToken=" + token}
    if params is not None:
        data = urllib.parse.urlencode(params, doseq=True).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    req = urllib.request.Request(sim.url + "/api2/json" + path, data=data, method=method, headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(
        context=ssl.create_default_context(cafile=sim.ca_file)))
    try:
        with opener.open(req, timeout=120) as resp:
            return Answer(resp.status, resp.reason, json.load(resp))
    except urllib.error.HTTPError as e:
        text = e.read().decode()
        return Answer(e.code, e.reason, json.loads(text) if text else None)


def agent(sim, vmid, command, params=None, token=TOKEN, node="pve1"):
    method = "POST" if command in ("ping", "exec") else "GET"
    path = f"/nodes/{node}/qemu/{vmid}/agent/{command}"
    if method == "GET" and params:
        path += "?" + urllib.parse.urlencode(params)
        params = None
    return api(sim, method, path, params if method == "POST" else None, token)


def ok(answer, what):
    check(answer.status == 200, f"{what}: {answer}")
    return answer.data


def dies(answer, status, message, what):
    """A handler's die: the status, the message as the reason phrase and as "message" (with "\\n")."""
    check(answer.status == status and answer.reason == message and answer.message == message + "\n"
          and answer.data is None, f"{what}: expected {status} {message!r}, got {answer}")


def latin1_bytes(text):
    """pvedaemon writes each byte of decoded guest data as one character (README "Guest agent")."""
    return text.encode("latin-1")


# ---- recorded agents ---------------------------------------------------------------------------

INTERFACES = [{"name": "lo", "hardware-address": "00:00:00:00:00:00",
               "ip-addresses": [{"ip-address": "127.0.0.1", "ip-address-type": "ipv4", "prefix": 8}]},
              {"name": "eth0", "hardware-address": "bc:24:11:a1:01:02",
               "statistics": {"rx-bytes": 10, "rx-packets": 1, "rx-errs": 0, "rx-dropped": 0,
                              "tx-bytes": 20, "tx-packets": 2, "tx-errs": 0, "tx-dropped": 0}}]


def recorded_state(report):
    base = {"report": report, "interfaces": INTERFACES}
    guest = [
        (101, {**base, "substitute": {"media-vm": "vm101", "bc:24:11:a1:01:02": "bc:24:11:51:03:e8"}, "polls": 2,
               "exit_code": 3, "stderr": "warn\n", "files": {"/etc/fstab": "UUID=1 / ext4 defaults 0 1\n"}}),
        (102, {**base, "missing": ["guest-exec", "guest-get-osinfo", "guest-file-open"]}),
        (103, {**base, "state": "frozen"}),
        (104, {**base, "state": "hung"}),
        (105, {**base, "state": "not_running"}),
        (106, {"interfaces": []}),  # no report: every exec is "no recorded output"
    ]
    return {"nodes": ["pve1", "pve2"], "guests": [
        {"vmid": vmid, "node": "pve1", "running": True, "config": {"name": "media-vm", "agent": "1"}, "agent": a}
        for vmid, a in guest]}


def run_exec(sim, vmid, command):
    """exec, then exec-status until exited; returns (every status answer, the final one)."""
    pid = ok(agent(sim, vmid, "exec", {"command": command}), "exec")["pid"]
    answers = []
    while True:
        st = ok(agent(sim, vmid, "exec-status", {"pid": pid}), "exec-status")
        answers.append(st)
        if st["exited"] == 1:
            return pid, answers
        check(st == {"exited": 0} and len(answers) < 100, f"a running process says only exited 0: {st}")


def recorded(binary):
    work = tempfile.mkdtemp(prefix="pvesim-agent-")
    try:
        report = os.path.join(work, "report.txt")
        with open(report, "wb") as f:
            f.write("host media-vm\nmac bc:24:11:a1:01:02\nmedia-vm-2 ü\n".encode())
        dump = os.path.join(work, "dump.json")
        args = TOKENS + ["--agent-ping-timeout-ms", "200", "--dump-state", dump]
        with Pvesim(binary, recorded_state(report), args) as sim:
            check(ok(agent(sim, 101, "ping"), "ping") == {"result": {}}, "ping's shape")
            check(ok(agent(sim, 101, "network-get-interfaces"), "ifaces") == {"result": INTERFACES},
                  "network-get-interfaces returns the recorded list as is")
            osinfo = ok(agent(sim, 101, "get-osinfo"), "get-osinfo")["result"]
            check(osinfo["id"] == "debian" and "kernel-release" in osinfo, f"get-osinfo: {osinfo}")
            info = ok(agent(sim, 101, "info"), "info")["result"]
            names = {c["name"] for c in info["supported_commands"]}
            check(info["version"] == "7.2.22" and {"guest-exec", "guest-file-read", "guest-ping"} <= names,
                  f"info: {info}")

            # exec of the facts script: two polls, then the report with this VM's substitutions,
            # decoded, integers for booleans; the pid is forgotten after it reported.
            pid, answers = run_exec(sim, 101, ["/bin/sh", "-c", "facts"])
            check(len(answers) == 3, f"polls: 2 then the result: {answers}")
            final = answers[-1]
            check(set(final) == {"exited", "exitcode", "out-data", "err-data"}, f"keys only when present: {final}")
            check(final["exitcode"] == 3 and final["err-data"] == "warn\n", f"exit code and stderr: {final}")
            check(latin1_bytes(final["out-data"]).decode() == "host vm101\nmac bc:24:11:51:03:e8\nvm101-2 ü\n",
                  f"substituted, decoded output (bytes as characters): {final['out-data']!r}")
            dies(agent(sim, 101, "exec-status", {"pid": pid}), 500, "Agent error: Invalid parameter 'pid'",
                 "asked again")
            # Anything but /bin/sh has no recorded output.
            _, answers = run_exec(sim, 101, ["/usr/bin/env", "ls"])
            check(answers[-1] == {"exited": 1, "exitcode": 127,
                                  "err-data": "pvesim: no recorded output for /usr/bin/env"}, f"{answers[-1]}")
            _, answers = run_exec(sim, 106, ["/bin/sh", "-c", "facts"])
            check(answers[-1]["exitcode"] == 127 and "out-data" not in answers[-1], f"no report: {answers[-1]}")

            check(ok(agent(sim, 101, "file-read", {"file": "/etc/fstab"}), "file-read") ==
                  {"content": "UUID=1 / ext4 defaults 0 1\n", "bytes-read": 27}, "file-read's shape")
            dies(agent(sim, 101, "file-read", {"file": "/etc/nope"}), 500,
                 "Agent error: failed to open file '/etc/nope' (mode: 'r'): No such file or directory", "no file")

            # An agent without a command: 500 on exec and file-*, 200 with result.error on generic ones.
            dies(agent(sim, 102, "exec", {"command": ["/bin/sh"]}), 500,
                 "Agent error: The command guest-exec has not been found", "missing exec")
            dies(agent(sim, 102, "file-read", {"file": "/etc/fstab"}), 500,
                 "Agent error: The command guest-file-open has not been found", "missing file-open")
            check(ok(agent(sim, 102, "get-osinfo"), "missing get-osinfo") == {"result": {"error": {
                "class": "CommandNotFound", "desc": "The command guest-get-osinfo has not been found"}}},
                "a generic endpoint passes the QGA error on")

            # Frozen: ping and info still answer (QGA's freeze allow-list), the rest is disabled.
            check(ok(agent(sim, 103, "ping"), "frozen ping") == {"result": {}}, "a frozen agent answers ping")
            frozen = {c["name"]: c["enabled"] for c in ok(agent(sim, 103, "info"), "frozen info")["result"][
                "supported_commands"]}
            check(frozen["guest-ping"] is True and frozen["guest-exec"] is False, f"frozen info: {frozen}")
            check(ok(agent(sim, 103, "network-get-interfaces"), "frozen") == {"result": {"error": {
                "class": "CommandNotFound",
                "desc": "Command guest-network-get-interfaces has been disabled: the agent is in frozen state"}}},
                "frozen generic endpoint")
            dies(agent(sim, 103, "exec", {"command": ["/bin/sh"]}), 500,
                 "Agent error: Command guest-exec has been disabled: the agent is in frozen state", "frozen exec")

            # Hung: the ping's budget (200 ms here) passes; not running either way.
            dies(agent(sim, 104, "ping"), 500, "QEMU guest agent is not running", "hung")
            dies(agent(sim, 105, "exec", {"command": ["/bin/sh"]}), 500, "QEMU guest agent is not running",
                 "not_running")

            # The state shows the agent object; the admin API replaces or removes it.
            g = sim.guest(101)
            check(g["agent"]["report"] == report and g["agent"]["polls"] == 2 and g["agent"]["state"] == "answers",
                  f"state: {g['agent']}")
            sim.admin("PUT", "/pvesim/vms/106/guest", {"agent": {"state": "frozen"}})
            check(sim.guest(106)["agent"] == {"state": "frozen"}, "admin PUT agent")
            sim.admin("PUT", "/pvesim/vms/106/guest", {"agent": None})
            check("agent" not in sim.guest(106), "admin PUT agent null removes it")
            dies(agent(sim, 106, "ping"), 500, "QEMU guest agent is not running", "no recorded agent, no socket")

            # Parameters: the schema's texts (pve-common JSONSchema), after the permission check.
            bad = agent(sim, 101, "exec", {"input-data": "x"})
            check(bad.status == 400 and bad.body["errors"] == {"command": "property is missing and it is not optional"},
                  f"exec without command: {bad}")
            bad = agent(sim, 101, "exec-status", {"pid": "abc"})
            check(bad.status == 400 and bad.body["errors"] == {"pid": "type check ('integer') failed - got 'abc'"},
                  f"pid abc: {bad}")
            bad = agent(sim, 101, "file-read", {"file": "/x", "count": MAX_READ + 1})
            check(bad.status == 400 and "maximum value of 16777216" in bad.body["errors"]["count"], f"count: {bad}")
            check(agent(sim, 101, "get-time").status == 501, "endpoints pvesim does not serve: 501")
            stats = wait_for("the last call counted", lambda: (lambda st: st["active"] == 0 and st)(
                sim.admin("GET", "/pvesim/stats")["pvedaemon"]["pve1"]), [sim.proc], timeout=60)
            check(stats["waiting"] == 0 and stats["max_active"] == 1 and stats["handled"] > 20, f"stats: {stats}")
            shown = sim.guest(101)["agent"]
        with open(dump) as f:
            dumped = next(g for g in json.load(f)["guests"] if g["vmid"] == 101)["agent"]
        check(dumped == shown and dumped["substitute"]["media-vm"] == "vm101" and dumped["files"],
              f"--dump-state writes the agent object: {dumped}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---- check order, status/current -----------------------------------------------------------------

def checks(binary):
    def vm(vmid, config, running=True, agent_obj=None):
        g = {"vmid": vmid, "node": "pve1", "running": running, "config": config}
        if agent_obj is not None:
            g["agent"] = agent_obj
        return g
    state = {"nodes": ["pve1", "pve2"], "guests": [
        vm(101, {"name": "a", "agent": "1"}, agent_obj={}),
        vm(102, {"name": "no-agent-key"}),
        vm(103, {"name": "stopped", "agent": "1"}, running=False, agent_obj={}),
        vm(104, {"name": "disabled", "agent": "0"}, agent_obj={}),
        vm(105, {"name": "enabled-no-agent", "agent": "enabled=1,fstrim_cloned_disks=1"}),
        vm(106, {"name": "enabled-long", "agent": "enabled=1,type=virtio"}, agent_obj={}),
        vm(107, {"name": "enabled-0", "agent": "enabled=0"}, agent_obj={}),
        vm(108, {"name": "bad", "agent": "1,bogus=1"}, agent_obj={}),
    ]}
    with Pvesim(binary, state, TOKENS) as sim:
        dies(agent(sim, 999, "ping"), 500, "Configuration file 'nodes/pve1/qemu-server/999.conf' does not exist",
             "no such VM")
        dies(agent(sim, 101, "ping", node="pve2"), 500,
             "Configuration file 'nodes/pve2/qemu-server/101.conf' does not exist", "wrong node")
        dies(agent(sim, 102, "ping"), 500, "No QEMU guest agent configured", "no agent key")
        dies(agent(sim, 103, "exec", {"command": ["/bin/sh"]}), 500, "VM 103 is not running", "stopped")
        dies(agent(sim, 104, "ping"), 500, "QEMU guest agent is not running", "agent: 0")
        dies(agent(sim, 107, "ping"), 500, "QEMU guest agent is not running", "agent: enabled=0")
        dies(agent(sim, 108, "ping"), 500, "QEMU guest agent is not running", "an agent value that does not parse")
        dies(agent(sim, 105, "file-read", {"file": "/x"}), 500, "QEMU guest agent is not running",
             "enabled, no recorded agent, no --qga-dir")
        check(ok(agent(sim, 106, "ping"), "enabled=1,type=virtio") == {"result": {}}, "property-string form")
        # status/current: "agent": 1 exactly when the config in effect enables it.
        for vmid, want in ((101, True), (102, False), (103, True), (104, False), (105, True), (106, True),
                           (107, False), (108, False)):
            st = ok(api(sim, "GET", f"/nodes/pve1/qemu/{vmid}/status/current"), "status")
            check(("agent" in st) == want and st.get("agent", 1) == 1, f"VM {vmid} status agent: {st.get('agent')}")


def privileges(binary):
    state = {"nodes": ["pve1"], "guests": [
        {"vmid": 101, "node": "pve1", "running": True, "config": {"agent": "1"},
         "agent": {"files": {"/etc/hostname": "g\n"}}},
        {"vmid": 102, "node": "pve1", "running": False, "config": {"agent": "1"}}]}
    audit_or_u = "VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted"
    with Pvesim(binary, state, TOKENS) as sim:
        for command, params, privs in (("ping", None, audit_or_u), ("info", None, audit_or_u),
                                       ("get-osinfo", None, audit_or_u), ("network-get-interfaces", None, audit_or_u),
                                       ("file-read", {"file": "/etc/hostname"},
                                        "VM.GuestAgent.FileRead|VM.GuestAgent.Unrestricted"),
                                       ("exec", {"command": ["/bin/sh"]}, "VM.GuestAgent.Unrestricted"),
                                       ("exec-status", {"pid": 1}, "VM.GuestAgent.Unrestricted")):
            # any-of: the first privilege or Unrestricted (register_command); exec/-status only Unrestricted.
            for vmid in (101, 102, 999):  # before any VM check: a stopped VM and a missing one alike
                dies(agent(sim, vmid, command, params, token=PLAIN), 403,
                     f"Permission check failed (/vms/{vmid}, {privs})", f"{command} without privileges, VM {vmid}")
            allowed = {ADMIN} | ({AUDIT} if privs == audit_or_u else set()) | (
                {READER} if command == "file-read" else set())
            for token in (AUDIT, READER, ADMIN):
                answer = agent(sim, 101, command, params, token=token)
                if token in allowed:
                    check(answer.status in (200, 500) and answer.status != 403, f"{command} {token}: {answer}")
                else:
                    dies(answer, 403, f"Permission check failed (/vms/101, {privs})", f"{command} with {token}")
        dies(agent(sim, 102, "ping", token=AUDIT), 500, "VM 102 is not running", "with the privilege: the VM check")


# ---- a real agent on a UNIX socket: a fake qemu-ga ------------------------------------------------

class Gate:
    """Connections open at once over all fake agents, and a release for those that hold."""

    def __init__(self):
        self.cond = threading.Condition()
        self.open = 0
        self.max_open = 0
        self.released = threading.Event()

    def enter(self):
        with self.cond:
            self.open += 1
            self.max_open = max(self.max_open, self.open)
            self.cond.notify_all()

    def leave(self):
        with self.cond:
            self.open -= 1
            self.cond.notify_all()


class FakeQga:
    """qemu-ga behind QEMU's chardev at DIR/<vmid>.qga: one client at a time; reads
    guest-sync-delimited and the command, answers 0xFF, {"return": id}, the reply. `mode`: answer,
    hold (answer once the gate is released), silent (never answer), silent_after_ping."""

    def __init__(self, path, mode="answer", gate=None, stale=False):
        self.mode, self.gate, self.stale = mode, gate or Gate(), stale
        self.conversations = []  # (sync request, command request) per connection
        self.files = {"/etc/hostname": b"guest\n", "/big": bytes(range(256)) * 6144, "/exact": b"a" * MAX_READ}
        self.handles, self.processes, self.next_handle = {}, {}, itertools.count(1000)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(16)
        threading.Thread(target=self.serve, daemon=True).start()

    def close(self):
        self.sock.close()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.gate.enter()
                try:
                    self.converse(conn)
                finally:
                    self.gate.leave()

    def converse(self, conn):
        buf = b""
        while buf.count(b"\n") < 2:
            data = conn.recv(65536)
            if not data:
                return
            buf += data
        lines = buf.split(b"\n")
        sync, request = json.loads(lines[0]), json.loads(lines[1])
        self.conversations.append((sync, request))
        command = request["execute"]
        if self.mode == "silent" or (self.mode == "silent_after_ping" and command != "guest-ping"):
            while conn.recv(65536):  # until pvesim gives up and closes
                pass
            return
        if self.mode == "hold":
            self.gate.released.wait()
        sync_id = sync["arguments"]["id"]
        if self.stale:  # a late reply to an earlier command, still queued in the channel
            conn.sendall(b"\xff" + json.dumps({"return": sync_id - 1}).encode() + b"\n" +
                         json.dumps({"return": {"stale": True}}).encode() + b"\n")
        conn.sendall(b"\xff" + json.dumps({"return": sync_id}).encode() + b"\n" +
                     json.dumps(self.reply(command, request.get("arguments", {}))).encode() + b"\n")
        while conn.recv(65536):  # QEMU's chardev takes the next client once this one has gone
            pass

    def reply(self, command, args):
        def error(cls, desc):
            return {"error": {"class": cls, "desc": desc}}
        if command == "guest-ping":
            return {"return": {}}
        if command == "guest-info":
            return {"return": {"version": "7.2.22", "supported_commands": []}}
        if command == "guest-network-get-interfaces":
            return {"return": INTERFACES}
        if command == "guest-exec":
            self.processes[4242] = 0
            return {"return": {"pid": 4242}}
        if command == "guest-exec-status":
            if args["pid"] not in self.processes:
                return error("GenericError", "Invalid parameter 'pid'")
            self.processes[args["pid"]] += 1
            if self.processes[args["pid"]] == 1:
                return {"return": {"exited": False}}
            del self.processes[args["pid"]]
            return {"return": {"exited": True, "exitcode": 3, "out-data": base64.b64encode("hi é\n".encode()).decode(),
                               "err-data": base64.b64encode(b"warn\n").decode(), "out-truncated": True}}
        if command == "guest-file-open":
            if args["path"] not in self.files:
                return error("GenericError", f"failed to open file '{args['path']}' (mode: 'r'): "
                                             "No such file or directory")
            handle = next(self.next_handle)
            self.handles[handle] = [self.files[args["path"]], 0]
            return {"return": handle}
        if command == "guest-file-seek":
            self.handles[args["handle"]][1] = args["offset"]
            return {"return": {"position": args["offset"], "eof": False}}
        if command == "guest-file-read":
            data, pos = self.handles[args["handle"]]
            chunk = data[pos:pos + args["count"]]
            self.handles[args["handle"]][1] = pos + len(chunk)
            return {"return": {"count": len(chunk), "buf-b64": base64.b64encode(chunk).decode(),
                               "eof": len(chunk) < args["count"]}}
        if command == "guest-file-close":
            del self.handles[args["handle"]]
            return {"return": {}}
        return error("CommandNotFound", f"The command {command} has not been found")

    def commands(self):
        return [request["execute"] for _, request in self.conversations]


def socket_state(vmids, node="pve1"):
    return {"nodes": ["pve1", "pve2"], "guests": [
        {"vmid": v, "node": node, "running": True, "config": {"name": f"vm{v}", "agent": "1"}} for v in vmids]}


def socket_case(binary):
    work = tempfile.mkdtemp(prefix="pvesim-qga-")
    try:
        qga = FakeQga(os.path.join(work, "101.qga"), stale=True)
        with open(os.path.join(work, "103.qga"), "w"):
            pass  # a file, not a listening socket: connect fails at once
        args = TOKENS + ["--qga-dir", work, "--agent-command-timeout-ms", "120000",
                         "--agent-ping-timeout-ms", "120000"]
        with Pvesim(binary, socket_state([101, 102, 103]), args) as sim:
            check(ok(agent(sim, 101, "ping"), "ping") == {"result": {}}, "ping through the socket")
            check(qga.commands() == ["guest-ping", "guest-ping"], f"ping = the check's ping + the command's: "
                                                                  f"{qga.commands()}")
            check(ok(agent(sim, 101, "network-get-interfaces"), "ifaces") == {"result": INTERFACES}, "interfaces")
            check(ok(agent(sim, 101, "get-osinfo"), "osinfo") == {"result": {"error": {
                "class": "CommandNotFound", "desc": "The command guest-get-osinfo has not been found"}}},
                "an old agent's CommandNotFound: 200 with result.error")

            del qga.conversations[:]
            pid = ok(agent(sim, 101, "exec", {"command": ["/bin/sh", "-c", "echo hi"], "input-data": "in"}),
                     "exec")["pid"]
            check(pid == 4242, f"QGA's pid as is: {pid}")
            exec_request = qga.conversations[-1][1]
            check(exec_request == {"execute": "guest-exec", "arguments": {
                "path": "/bin/sh", "arg": ["-c", "echo hi"], "capture-output": True,
                "input-data": base64.b64encode(b"in").decode()}}, f"guest-exec's arguments: {exec_request}")
            check(ok(agent(sim, 101, "exec-status", {"pid": pid}), "running") == {"exited": 0}, "still running")
            final = ok(agent(sim, 101, "exec-status", {"pid": pid}), "exited")
            check(final == {"exited": 1, "exitcode": 3, "out-data": "hi é\n".encode().decode("latin-1"),
                            "err-data": "warn\n", "out-truncated": 1}, f"decoded, booleans 0/1: {final}")
            dies(agent(sim, 101, "exec-status", {"pid": pid}), 500, "Agent error: Invalid parameter 'pid'", "forgot")

            # The wire: one connection per command, guest-sync-delimited first, ids rising, "$$" . "0" . n.
            check(qga.commands() == ["guest-ping", "guest-exec"] + ["guest-ping", "guest-exec-status"] * 3,
                  f"one conversation per command: {qga.commands()}")
            ids = [sync["arguments"]["id"] for sync, _ in qga.conversations]
            check(all(sync == {"execute": "guest-sync-delimited", "arguments": {"id": i}}
                      for (sync, _), i in zip(qga.conversations, ids)), "guest-sync-delimited with the id")
            check(ids == sorted(set(ids)) and all(str(i).startswith(f"{sim.proc.pid}0") for i in ids),
                  f"sync ids: {ids}")

            del qga.conversations[:]
            read = ok(agent(sim, 101, "file-read", {"file": "/big"}), "file-read /big")
            check(read["bytes-read"] == 1572864 and "truncated" not in read and
                  latin1_bytes(read["content"]) == qga.files["/big"], "1.5 MiB read whole, bytes as characters")
            check(qga.commands() == ["guest-ping", "guest-file-open", "guest-file-read", "guest-file-read",
                                     "guest-file-close"], f"1 MiB chunks: {qga.commands()}")
            counts = [r["arguments"]["count"] for _, r in qga.conversations if r["execute"] == "guest-file-read"]
            check(counts == [1048576, 1048576], f"chunk sizes {counts}")
            read = ok(agent(sim, 101, "file-read", {"file": "/exact"}), "file-read 16 MiB")
            check(read["bytes-read"] == MAX_READ and read["truncated"] == 1, "16 MiB without eof: truncated 1")
            del qga.conversations[:]
            read = ok(agent(sim, 101, "file-read", {"file": "/etc/hostname", "offset": 2, "count": 2}), "offset")
            check(read == {"content": "es", "bytes-read": 2, "truncated": 1}, f"offset/count: {read}")
            check(qga.conversations[2][1] == {"execute": "guest-file-seek", "arguments": {
                "handle": 1002, "offset": 2, "whence": "set"}}, f"seek: {qga.conversations[2][1]}")
            dies(agent(sim, 101, "file-read", {"file": "/nope"}), 500,
                 "Agent error: failed to open file '/nope' (mode: 'r'): No such file or directory", "no such file")
            check(not qga.handles, f"every handle closed: {qga.handles}")

            dies(agent(sim, 102, "ping"), 500, "QEMU guest agent is not running", "no socket file")
            dies(agent(sim, 103, "ping"), 500, "QEMU guest agent is not running", "a socket nobody listens on")
        qga.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def socket_timeouts(binary):
    """Agents that accept and never answer: the ping's budget, then a command's."""
    work = tempfile.mkdtemp(prefix="pvesim-qga-")
    try:
        silent = FakeQga(os.path.join(work, "101.qga"), "silent")
        with Pvesim(binary, socket_state([101]), TOKENS + ["--qga-dir", work, "--agent-ping-timeout-ms", "200"]) as sim:
            dies(agent(sim, 101, "ping"), 500, "QEMU guest agent is not running", "a silent agent")
            check(silent.commands() == ["guest-ping"], f"only the ping was tried: {silent.commands()}")
        silent.close()
        os.unlink(os.path.join(work, "101.qga"))
        mute = FakeQga(os.path.join(work, "101.qga"), "silent_after_ping")
        args = TOKENS + ["--qga-dir", work, "--agent-ping-timeout-ms", "120000", "--agent-command-timeout-ms", "300"]
        with Pvesim(binary, socket_state([101]), args) as sim:
            dies(agent(sim, 101, "exec", {"command": ["/bin/true"]}), 500,
                 "VM 101 qga command 'guest-exec' failed - got timeout", "exec times out")
            dies(agent(sim, 101, "info"), 500, "VM 101 qga command 'guest-info' failed - got timeout", "info")
        mute.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---- pvedaemon: three workers per node -------------------------------------------------------------

def workers(binary):
    """Six agent calls on one node's VMs whose agents hold every answer: three run, three wait, other
    nodes and other requests go on; released, all six finish. Events only: the stats and the fake
    agents' connections say when."""
    work = tempfile.mkdtemp(prefix="pvesim-qga-")
    try:
        gate = Gate()
        vmids = [101, 102, 103, 104, 105, 106]
        agents = [FakeQga(os.path.join(work, f"{v}.qga"), "hold", gate) for v in vmids]
        state = socket_state(vmids)
        state["guests"].append({"vmid": 201, "node": "pve2", "running": True, "config": {"agent": "1"}, "agent": {}})
        args = TOKENS + ["--qga-dir", work, "--agent-ping-timeout-ms", "600000", "--agent-command-timeout-ms",
                         "600000", "--workers", "2"]
        with Pvesim(binary, state, args) as sim:
            results = {}

            def call(vmid):
                results[vmid] = agent(sim, vmid, "ping")
            threads = [threading.Thread(target=call, args=(v,)) for v in vmids]
            for t in threads:
                t.start()

            def pve1():
                return sim.admin("GET", "/pvesim/stats")["pvedaemon"].get("pve1", {})
            wait_for("six agent calls in pvesim", lambda: pve1().get("active", 0) + pve1().get("waiting", 0) == 6,
                     [sim.proc], timeout=120)
            with gate.cond:
                gate.cond.wait_for(lambda: gate.open == 3, timeout=120)
            st = pve1()
            check(st["active"] == 3 and st["waiting"] == 3 and st["max_active"] == 3, f"three at once: {st}")
            # Held, the three cannot finish and no fourth can start: the count is final here.
            check(gate.open == 3 and gate.max_open == 3, f"three agents are being asked: {gate.open}")
            # Waiting calls hold no request handler (--workers 2): another node's agent and the API answer.
            check(ok(agent(sim, 201, "ping", node="pve2"), "pve2 ping") == {"result": {}}, "pve2 is not blocked")
            check(ok(api(sim, "GET", "/version"), "version")["version"], "the API answers")
            gate.released.set()
            for t in threads:
                t.join(timeout=120)
            check(all(results[v].status == 200 and results[v].data == {"result": {}} for v in vmids),
                  f"all six answered: {results}")
            st = wait_for("the calls counted", lambda: (lambda s: s["handled"] == 6 and s)(pve1()), [sim.proc], 60)
            check(st == {"active": 0, "waiting": 0, "max_active": 3, "handled": 6}, f"after: {st}")
        for a in agents:
            a.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    case_main({"recorded": recorded, "checks": checks, "privileges": privileges, "socket": socket_case,
               "socket_timeouts": socket_timeouts, "workers": workers}, __doc__)
