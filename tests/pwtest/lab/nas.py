# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab NAS's command channel: its second serial port, a socket QEMU listens on
(lab.nas_config), read by the loop at the end of tests/lab/initramfs/nas-init. The NAS has no
login and no SSH: a fixed set of verbs changes it the way a NAS's operator would (re-create an
export, set a link's MTU), each answered with "PWNAS-DONE VERB STATUS"."""
import os
import socket

from . import topology as topo
from .common import LabError

# Generous: a command answers in well under a second even under emulation; the cap only turns a
# NAS that is gone into a failed test instead of a hung one. The answer itself ends the wait.
ANSWER_CAP_S = 300


def socket_path() -> str:
    return os.path.join(topo.vm_dir(topo.NAS_VMID), "cmd.sock")


def qemu_args() -> str:
    """QEMU arguments of the channel: ttyS1 in the NAS (ttyS0 is the console log)."""
    return (f"-chardev socket,id=pwcmd,path={socket_path()},server=on,wait=off "
            "-device isa-serial,chardev=pwcmd")


def command(verb: str, *args: str) -> None:
    """Runs one verb on the NAS; raises LabError unless it answers with status 0."""
    for word in (verb, *args):
        if not word or any(c.isspace() for c in word):
            raise LabError(f"NAS command word {word!r}: one word each, no blanks")
    line = " ".join((verb, *args)) + "\n"
    want = f"PWNAS-DONE {verb} "
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(ANSWER_CAP_S)
        try:
            s.connect(socket_path())
            s.sendall(line.encode())
            got = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    raise LabError(f"NAS closed its command channel before answering {line.strip()!r}")
                got += chunk
                # Whole lines only: a serial port delivers its bytes as they come, and the answer
                # can arrive split anywhere ("PWNAS-DONE recreate " now, "0\n" a moment later).
                while b"\n" in got:
                    answer, got = got.split(b"\n", 1)
                    answer = answer.decode(errors="replace").strip()
                    if answer.startswith(want):
                        status = answer[len(want):].strip()
                        if status != "0":
                            raise LabError(f"NAS command {line.strip()!r} failed (status {status}); "
                                           "its console log says why")
                        return
        except (OSError, socket.timeout) as e:
            raise LabError(f"NAS command {line.strip()!r}: {e} (is the lab up? `tests/lab/lab status`)")
