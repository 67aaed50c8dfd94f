#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""vm-hook's QEMU command line from a Proxmox config, checked without starting QEMU: the
qemu-server shapes pathwarden relies on (multiqueue taps, vectors=2N+2, the config's MAC, the
guest agent's channel exactly when `agent` enables it) and clear messages for configs the lab
cannot run."""
import os
import sys
import tempfile

# Set before the lab package is imported: pwtest.lab.topology reads PW_LAB_RUN once.
run_dir = tempfile.mkdtemp(prefix="pwlab-cmd-")
os.environ["PW_LAB_RUN"] = run_dir
from pwtest.lab import topology as topo  # noqa: E402
from pwtest.lab.common import LabError  # noqa: E402
from pwtest.lab.qemu import NetSpec, Vm, parse_guest_agent  # noqa: E402

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

# The guest agent (qemu-server's config_to_command; parse_guest_agent).
qga_sock = os.path.join(run_dir, "qemu-server", "101.qga")
qga_chardev = f"-chardev socket,path={qga_sock},server=on,wait=off,id=qga0"
qga_port = "-device virtserialport,chardev=qga0,name=org.qemu.guest_agent.0"
check(config["agent"] == "1", "the lab guest's config enables the agent")
check(joined.endswith(f"{qga_chardev} -device virtio-serial,id=qga0 {qga_port}"),
      f"q35 guest: the agent channel without bus/addr: {joined}")
pc = " ".join(Vm(101).command(config | {"machine": "pc"}, state))
check(f"{qga_chardev} -device virtio-serial,id=qga0,bus=pci.0,addr=0x8 {qga_port}" in pc, f"pc: {pc}")
check(joined.count("qga0") == 3, f"one channel: {joined}")
check(" ".join(kvm).endswith(f"{qga_chardev} -device virtio-serial,id=qga0 {qga_port}"), "the same channel with KVM")
for value in ("1", "enabled=1", "on", "enabled=yes,fstrim_cloned_disks=1", "1,type=virtio,freeze-fs=0",
              "enabled=TRUE,freeze-fs-on-backup=0"):
    line = " ".join(Vm(101).command(config | {"agent": value}, state))
    check(qga_chardev in line and qga_port in line, f"agent: {value} enables the channel: {line}")
for value in ("0", "enabled=0,type=virtio", "off", "1,bogus=1", "enabled=maybe", "1,enabled=1", "1,type=vsock", ""):
    line = " ".join(Vm(101).command(config | {"agent": value}, state))
    check("qga0" not in line, f"agent: {value} must not add the channel: {line}")
no_agent = {k: v for k, v in config.items() if k != "agent"}
check("qga0" not in " ".join(Vm(101).command(no_agent, state)), "no agent key: no channel")
isa = " ".join(Vm(101).command(config | {"agent": "1,type=isa"}, state))
check(f"{qga_chardev} -device isa-serial,chardev=qga0" in isa and "virtio-serial" not in isa, f"type=isa: {isa}")
check(parse_guest_agent("enabled=1,fstrim_cloned_disks=on,type=isa") ==
      {"enabled": True, "fstrim_cloned_disks": True, "type": "isa"}, "parse_guest_agent values")
check(parse_guest_agent(None) == {} and parse_guest_agent("0,type=isa") == {}, "disabled: {}")

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
