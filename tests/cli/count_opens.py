#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs a command and prints how many times it opened FILE (inotify IN_OPEN on FILE itself).

    count_opens.py FILE -- COMMAND [ARG...]

The command's own output is discarded; its exit status is printed after the count
("opens=N exit=M"). Reads events until the command has exited and the queue is empty. Closes are watched too:
inotify merges an event into an identical one still unread, so two opens in a row would count
once; open, close, open, close never do."""
import ctypes
import os
import struct
import subprocess
import sys

IN_OPEN = 0x20
IN_CLOSE_NOWRITE = 0x10
IN_NONBLOCK = 0o4000


def main(argv):
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(IN_NONBLOCK)
    if fd < 0 or libc.inotify_add_watch(fd, argv[0].encode(), IN_OPEN | IN_CLOSE_NOWRITE) < 0:
        print(f"inotify: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 2
    proc = subprocess.run(argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    opens = 0
    while True:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            break
        at = 0
        while at < len(data):
            _wd, mask, _cookie, length = struct.unpack_from("iIII", data, at)
            opens += bool(mask & IN_OPEN)
            at += 16 + length
    print(f"opens={opens} exit={proc.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
