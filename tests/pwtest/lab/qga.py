# SPDX-License-Identifier: GPL-3.0-or-later
"""The QEMU guest agent of a lab VM, spoken to the way qemu-server's PVE::QMPClient does.

One new connection to the VM's socket (topology.qga_socket) per command, as QMPClient ("qemu can
only handle 1 connection, so we close connections asap"): write
`{"execute":"guest-sync-delimited","arguments":{"id":N}}\\n{"execute":CMD,"arguments":{...}}\\n` in
one go (no qmp_capabilities, no leading 0xFF), then read up to the agent's 0xFF, `{"return":N}`
and the command's reply; a sync reply with an older id is a previous client's and is skipped. The
whole exchange has QMPClient's timeout for the command (5 s, longer for fsfreeze, fstrim and
shutdown); on expiry the message is qemu-server's `VM <vmid> qga command '<cmd>' failed - got
timeout`.

command() returns the reply as the agent sent it ({"return": ...} or {"error": {class, desc}});
call() its "return" or raises LabError; exec_capture() and file_read() are the sequences
qemu-server's exec/exec-status and file-read endpoints send.
"""
import base64
import itertools
import json
import os
import socket
import time

from . import topology as topo
from .common import LabError

# PVE::QMPClient::cmd's timeouts for guest commands (s); everything else 5.
TIMEOUTS = {"guest-fsfreeze-freeze": 3600, "guest-fsfreeze-thaw": 180, "guest-fstrim": 600, "guest-shutdown": 600}
DEFAULT_TIMEOUT = 5
# Commands after which the agent may close the connection without a reply (QMPClient's
# $qga_allow_close_cmds): the sync reply alone is success.
CLOSE_OK = ("guest-shutdown", "guest-suspend-ram", "guest-suspend-disk", "guest-suspend-hybrid")

_seq = itertools.count(1)


def _next_id() -> int:
    """QMPClient's qga ids: the process id, "0", a per-process sequence number (increasing)."""
    return int(f"{os.getpid()}0{next(_seq)}")


def _compact(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def command(execute: str, arguments: dict = None, *, vmid: int = topo.GUEST_VMID, timeout: float = None) -> dict:
    """Sends one command on a new connection; returns the agent's reply object."""
    path = topo.qga_socket(vmid)
    timeout = timeout or TIMEOUTS.get(execute, DEFAULT_TIMEOUT)
    deadline = time.monotonic() + timeout
    sync_id = _next_id()
    failed = f"VM {vmid} qga command '{execute}' failed"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except FileNotFoundError:
            raise LabError(f"{failed} - no agent socket {path} (is VM {vmid} running, with `agent: 1`?)")
        except OSError as e:
            raise LabError(f"unable to connect to VM {vmid} qga socket - {e.strerror}")
        sock.sendall(_compact({"execute": "guest-sync-delimited", "arguments": {"id": sync_id}}) +
                     _compact({"execute": execute, "arguments": arguments or {}}))
        buf = b""
        while True:
            reply = _parse(buf, sync_id, failed)
            if reply is not None:
                return reply
            left = deadline - time.monotonic()
            if left <= 0:
                raise LabError(f"{failed} - got timeout")
            sock.settimeout(left)
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                raise LabError(f"{failed} - got timeout")
            if not chunk:
                if execute in CLOSE_OK and _synced(buf, sync_id):
                    return {"return": {}}
                raise LabError(f"{failed} - the agent closed the connection")
            buf += chunk
            # Everything before the last 0xFF is from before our sync (QMPClient's /^.*\xff/).
            buf = buf[buf.rfind(b"\xff"):] if b"\xff" in buf else b""
    finally:
        sock.close()


def _parse(buf: bytes, sync_id: int, failed: str):
    """The reply once buf (starting at a 0xFF) holds our sync line and one more line; None before."""
    lines = buf[1:].split(b"\n")
    if not buf or len(lines) < 3:
        return None
    try:
        got = json.loads(lines[0]).get("return")
        reply = json.loads(lines[1])
    except (ValueError, AttributeError) as e:
        raise LabError(f"{failed} - unreadable reply: {e}: {buf[:300]!r}")
    if not isinstance(got, int) or got < sync_id:
        return None  # a previous client's sync: QMPClient skips it
    if got != sync_id:
        raise LabError(f"{failed} - got wrong command id '{got}' (expected {sync_id})")
    return reply


def _synced(buf: bytes, sync_id: int) -> bool:
    try:
        return json.loads(buf[1:].split(b"\n")[0]).get("return") == sync_id
    except (ValueError, AttributeError):
        return False


def call(execute: str, arguments: dict = None, **kw):
    """The command's "return" value; LabError with the agent's error class and text otherwise."""
    reply = command(execute, arguments, **kw)
    if "return" not in reply:
        err = reply.get("error", {})
        raise LabError(f"qga {execute}: {err.get('class', 'error')}: {err.get('desc', reply)}")
    return reply["return"]


def exec_capture(argv: list, timeout: float = 60, interval: float = 0.2, **kw) -> dict:
    """qemu-server's exec (guest-exec with capture-output) and exec-status polled until the
    process exited: the status with out-data/err-data decoded to text; "commands" counts the
    agent commands sent."""
    pid = call("guest-exec", {"path": argv[0], "arg": list(argv[1:]), "capture-output": True}, **kw)["pid"]
    deadline = time.monotonic() + timeout
    sent = 1
    while True:
        status = call("guest-exec-status", {"pid": pid}, **kw)
        sent += 1
        if status.get("exited"):
            break
        if time.monotonic() >= deadline:
            raise LabError(f"qga guest-exec {argv}: not exited within {timeout} s")
        time.sleep(interval)
    for key in ("out-data", "err-data"):
        if key in status:
            status[key] = base64.b64decode(status[key]).decode(errors="replace")
    return status | {"commands": sent}


def file_read(path: str, count: int = 1024 * 1024, **kw) -> tuple:
    """qemu-server's file-read: guest-file-open (mode r), guest-file-read until eof, close.
    Returns (the bytes, the number of agent commands sent)."""
    handle = call("guest-file-open", {"path": path, "mode": "r"}, **kw)
    data, sent = b"", 1
    try:
        while True:
            chunk = call("guest-file-read", {"handle": handle, "count": count}, **kw)
            sent += 1
            data += base64.b64decode(chunk.get("buf-b64", ""))
            if chunk.get("eof") or not chunk.get("count"):
                break
    finally:
        call("guest-file-close", {"handle": handle}, **kw)
        sent += 1
    return data, sent
