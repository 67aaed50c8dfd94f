#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""pwtest.lab.qga against a fake agent on a Unix socket (no lab): what it writes is what
qemu-server's PVE::QMPClient writes (guest-sync-delimited with an integer id, then the command
with its arguments, in one write, on a new connection per command); a previous client's sync
reply and the bytes before the 0xFF are skipped; an agent error is returned, a silent agent is
`got timeout`, a missing socket says so."""
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time

# Set before the lab package is imported: pwtest.lab.topology reads PW_LAB_RUN once.
run_dir = tempfile.mkdtemp(prefix="pwlab-qga-")
os.environ["PW_LAB_RUN"] = run_dir
from pwtest.lab import qga, topology as topo  # noqa: E402
from pwtest.lab.common import LabError  # noqa: E402

failures = []
VMID = 101


def check(cond, msg):
    if not cond:
        failures.append(msg)


class FakeAgent:
    """Serves one connection: reply(requests) -> the parts of the answer, sent 0.1 s apart."""

    def __init__(self, reply):
        os.makedirs(topo.qga_dir(), exist_ok=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(topo.qga_socket(VMID))
        self.listener.listen(1)
        self.reply, self.requests, self.chunks = reply, [], []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn, _ = self.listener.accept()
        with conn:
            buf = b""
            while buf.count(b"\n") < 2:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                self.chunks.append(chunk)
                buf += chunk
            self.requests = [json.loads(line) for line in buf.splitlines()]
            for part in self.reply(self.requests):  # parts apart: the client reads each alone
                conn.sendall(part)
                time.sleep(0.1)
            conn.recv(1)  # until the client closes

    def close(self):
        self.thread.join(5)
        self.listener.close()
        os.unlink(topo.qga_socket(VMID))


def line(doc) -> bytes:
    return json.dumps(doc).encode() + b"\n"


def answered(requests):
    sync_id = requests[0]["arguments"]["id"]
    # A previous client's unread reply, then ours, as a real channel can hold.
    return [b"\x00stale bytes\xff" + line({"return": sync_id - 1}) + line({"return": {"stale": 1}}),
            b"\xff" + line({"return": sync_id}), line({"return": {"pid": 4242}})]


agent = FakeAgent(answered)
reply = qga.command("guest-exec", {"path": "/bin/true"}, vmid=VMID)
agent.close()
check(reply == {"return": {"pid": 4242}}, f"the reply after our sync: {reply}")
check(len(agent.chunks) == 1, f"one write, as QMPClient: {agent.chunks}")
sync, cmd = agent.requests
check(sync["execute"] == "guest-sync-delimited" and isinstance(sync["arguments"]["id"], int),
      f"first line: {sync}")
check(str(sync["arguments"]["id"]).startswith(f"{os.getpid()}0"), f"QMPClient's id: pid, 0, sequence: {sync}")
check(cmd == {"execute": "guest-exec", "arguments": {"path": "/bin/true"}}, f"second line: {cmd}")
check(agent.chunks[0].startswith(b"{") and b" " not in agent.chunks[0], f"compact JSON, no 0xFF: {agent.chunks}")

agent = FakeAgent(lambda r: [b"\xff" + line({"return": r[0]["arguments"]["id"]}) +
                             line({"error": {"class": "GenericError", "desc": "nope"}})])
reply = qga.command("guest-ping", vmid=VMID)
agent.close()
check(agent.requests[1] == {"execute": "guest-ping", "arguments": {}}, f"no arguments: {{}}: {agent.requests}")
check(reply == {"error": {"class": "GenericError", "desc": "nope"}}, f"an agent error is returned: {reply}")

agent = FakeAgent(lambda r: [b"\xff" + line({"return": r[0]["arguments"]["id"]}) + line({"error": {"desc": "x"}})])
try:
    qga.call("guest-info", vmid=VMID)
    failures.append("call() returned an agent error")
except LabError as e:
    check("x" in str(e), f"call(): {e}")
agent.close()

agent = FakeAgent(lambda r: [])
try:
    qga.command("guest-info", vmid=VMID, timeout=0.5)
    failures.append("a silent agent answered")
except LabError as e:
    check(str(e) == f"VM {VMID} qga command 'guest-info' failed - got timeout", f"timeout: {e}")
agent.close()

try:
    qga.command("guest-ping", vmid=VMID)
    failures.append("no socket, yet an answer")
except LabError as e:
    check("no agent socket" in str(e) and topo.qga_socket(VMID) in str(e), f"no socket: {e}")

shutil.rmtree(run_dir)
if failures:
    print("FAIL qga_client:\n  " + "\n  ".join(failures), file=sys.stderr)
    sys.exit(1)
print("PASS qga_client")
