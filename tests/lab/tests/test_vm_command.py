#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""vm-hook's QEMU command line from a Proxmox config, checked without starting QEMU: the
qemu-server shapes pathwarden relies on (multiqueue taps, vectors=2N+2, the config's MAC) and
clear messages for configs the lab cannot run."""
import os
import sys
import tempfile

# Set before the lab package is imported: pwtest.lab.topology reads PW_LAB_RUN once.
run_dir = tempfile.mkdtemp(prefix="pwlab-cmd-")
os.environ["PW_LAB_RUN"] = run_dir
from pwtest.lab import topology as topo  # noqa: E402
from pwtest.lab.common import LabError  # noqa: E402
from pwtest.lab.qemu import NetSpec, Vm  # noqa: E402

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def expect_error(fn, fragment):
    try:
        fn()
    except LabError as e:
        check(fragment in str(e), f"error '{e}' should mention '{fragment}'")
        return
    failures.append(f"no error; expected one mentioning '{fragment}'")


disk = os.path.join(topo.storage_root(), "images", "101", "vm-101-disk-0.qcow2")
os.makedirs(os.path.dirname(disk))
open(disk, "w").close()
state = {"accel": "tcg", "kernel": "/k/vmlinuz", "initrd": "/k/initrd", "append": "root=/dev/vda"}

config = topo.guest_vm_config() | {"cores": "2", "net1": "virtio=BC:24:11:A1:01:02,bridge=vmbr2,queues=4"}
cmd = Vm(101).command(config, state)
joined = " ".join(cmd)
check("-netdev tap,id=net1,ifname=tap101i1,script=no,downscript=no,queues=4" in joined,
      f"net1 netdev: {joined}")
check("-device virtio-net-pci,id=net1,netdev=net1,mac=BC:24:11:A1:01:02,mq=on,vectors=10,bus=rp-net1" in joined,
      f"net1 device: {joined}")
check("-netdev tap,id=net0,ifname=tap101i0,script=no,downscript=no -device" in joined,
      f"single-queue net0 must not ask for queues: {joined}")
check("mq=on" not in joined.split("id=net0,")[1].split(" ")[0], "net0 must not be multiqueue")
check(f"file={disk},if=none,id=drive-virtio0,format=qcow2" in joined, f"disk: {joined}")
check(cmd[cmd.index("-smp") + 1].startswith("2,"), "cores x sockets")
check(cmd[cmd.index("-accel") + 1] == "tcg" and "-cpu" not in cmd, "tcg without -cpu host")
check("-kernel /k/vmlinuz" in joined and "pcie-root-port,id=rp-net7" in joined, "direct boot, root ports")
kvm = Vm(101).command(config, state | {"accel": "kvm"})
check(kvm[kvm.index("-cpu") + 1] == "host", "kvm uses -cpu host")
args = Vm(900).command({"memory": "256", "args": "-kernel /a -append 'x y'"}, state)
check(args[-4:] == ["-kernel", "/a", "-append", "x y"] and "/k/vmlinuz" not in args, f"args: {args}")

spec = NetSpec("net3", "model=virtio,macaddr=BC:24:11:00:00:03,bridge=vmbr1,queues=2,rate=12.5,firewall=1")
check(spec.tap(101) == "tap101i3" and spec.queues == 2 and spec.rate == 12.5, "long netN form")
expect_error(lambda: NetSpec("net0", "virtio=BC:24:11:00:00:01,bridge=vmbr1,queues=99"), "queues=99")
expect_error(lambda: NetSpec("net0", "virtio=nope,bridge=vmbr1"), "MAC")
expect_error(lambda: NetSpec("net0", "virtio=BC:24:11:00:00:01"), "no bridge")
expect_error(lambda: NetSpec("net0", "virtio=BC:24:11:00:00:01,bridge=vmbr1,speed=10"), "unknown option 'speed'")
expect_error(lambda: NetSpec("net9", "virtio=BC:24:11:00:00:01,bridge=vmbr1"), "net0..net7")
expect_error(lambda: Vm(101).command(config | {"virtio1": "nas:vm-101-disk-1"}, state), "directory storage")
expect_error(lambda: Vm(101).command(config | {"virtio1": "local:101/missing.raw"}, state), "does not exist")

import shutil  # noqa: E402
shutil.rmtree(run_dir)
if failures:
    print("FAIL vm_command:\n  " + "\n  ".join(failures), file=sys.stderr)
    sys.exit(1)
print("PASS vm_command")
