#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Integration tests that prove the lab itself (CTest runs one per invocation, sharing the lab
fixture): `test_lab.py NAME`. Each test sets up the guest state it needs through a scenario."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from pwtest.lab import topology as topo
from pwtest.lab import lab, pvesim, qga, scenarios
from pwtest.lab.common import LabError
from pwtest.script import Failure, check

PROBE = topo.TEST_PROBE_BYTES
NOISE = PROBE // 100  # "≈ 0": under 1 % of the probe (ARP, a lease renewal)


def show(doc) -> str:
    return json.dumps(doc, indent=1)


def apply(name: str) -> dict:
    guest = lab.Guest()
    return guest.helper("apply", json.dumps(scenarios.scenario(name)))


def read(path: str) -> dict:
    return lab.Guest().helper("read", path, topo.PROBE_FILE, str(PROBE))


def mount_addr(line: str) -> str:
    opts = line.split()[3].split(",")
    return next((o[5:] for o in opts if o.startswith("addr=")), "")


def expect_bytes_on(result: dict, link: str, other: str, direction="rx") -> None:
    on, off = result["deltas"][link][direction], result["deltas"][other][direction]
    check(PROBE <= on <= PROBE * 1.1,
          f"{link} {direction} moved {on} B for a {PROBE} B read (expected ≈ the probe):\n{show(result)}")
    check(off < NOISE, f"{other} {direction} moved {off} B (expected ≈ 0):\n{show(result)}")


# ---------------------------------------------------------------------------------------------

def test_trunking_trap():
    """(a) link2's address mounted while a link1 mount exists: bytes ride link1; vers=3 fixes it.
    Under NFS-Ganesha there is no trap: the link2 mount gets a client of its own (Ganesha answers
    each server address with its own client ID) and its bytes take link2."""
    applied = apply("trunk-trap")
    movies = applied["mounts"]["/mnt/movies"]
    check(movies.startswith(f"{topo.LINK2['nas']}:"), f"/mnt/movies device is not link2's address: {movies}")
    if not lab.nas_trunks():
        check(mount_addr(movies) == topo.LINK2["nas"] and mount_addr(applied["mounts"]["/mnt/backup"]) ==
              topo.LINK1["nas"], f"{lab.nas_server()}: each mount should keep its own address: {applied['mounts']}")
        result = read("/mnt/movies")
        expect_bytes_on(result, "link2", "link1")
        check(any(f"{topo.LINK2['nas']}:2049" in c for c in result["connections"]) and
              any(f"{topo.LINK1['nas']}:2049" in c for c in result["connections"]),
              f"one connection per address (two clients): {result['connections']}")
        return
    check(mount_addr(movies) == topo.LINK1["nas"],
          f"/proc/mounts should show addr={topo.LINK1['nas']} for the trunked mount: {movies}")
    result = read("/mnt/movies")
    expect_bytes_on(result, "link1", "link2")
    check(all(f"{topo.LINK1['nas']}:2049" in c for c in result["connections"]),
          f"trunked: every NFS connection should go to link1's address: {result['connections']}")

    fixed = lab.Guest().helper("set-mount", "/mnt/movies", topo.LINK2["nas"], "/volume1/movies", "vers=3")
    check(mount_addr(fixed["mount"]) == topo.LINK2["nas"], f"vers=3 mount: {fixed['mount']}")
    result = read("/mnt/movies")
    expect_bytes_on(result, "link2", "link1")


def test_clean_link2():
    """(b) only a link2 mount: bytes take link2."""
    apply("clean-link2")
    result = read("/mnt/movies")
    check(mount_addr(result["mount"]) == topo.LINK2["nas"], f"mount: {result['mount']}")
    expect_bytes_on(result, "link2", "link1")


def test_misrouted_link2():
    """(c) a host route through link1: the mount looks right, the counters do not."""
    apply("misrouted-link2")
    route = lab.Guest().run(f"ip route get {topo.LINK2['nas']}").stdout
    check("dev link1" in route, f"the scenario's route is missing: {route}")
    result = read("/mnt/movies")
    check(mount_addr(result["mount"]) == topo.LINK2["nas"], f"mount: {result['mount']}")
    expect_bytes_on(result, "link1", "link2")
    check(result["deltas"]["link1"]["tx"] > 0 and result["deltas"]["link2"]["tx"] == 0,
          f"requests should leave on link1 too:\n{show(result)}")


def test_idle_links():
    """No NFS traffic: link1 and link2 move exactly 0 bytes (no IPv6 or other noise)."""
    guest = lab.Guest()
    guest.helper("reset")
    time.sleep(2)
    before = guest.helper("counters")
    time.sleep(10)
    after = guest.helper("counters")
    for link in ("link1", "link2"):
        for d in ("rx", "tx"):
            check(after[link][d] == before[link][d],
                  f"idle {link} {d} moved {after[link][d] - before[link][d]} B in 10 s")


def test_host_taps():
    """The hypervisor's view (pvesim reading the switch namespace's taps, as Proxmox reads its node's
    /proc/net/dev): a read over link2 moves net1's tap netin by the probe, net0's by ≈ 0; and every
    "nics" value agrees with the kernel's tap counters, direction swapped."""
    apply("clean-link2")
    api = pvesim.api()
    tap = {key: f"tap{topo.GUEST_VMID}i{key[3:]}" for key in ("net0", "net1", "net2")}
    consistent = pvesim.check_taps()
    check(sorted(consistent["nics"]) == sorted(tap.values()), f"one tap per NIC: {show(consistent)}")
    before = api.nics()
    read("/mnt/movies")
    after = api.nics()
    moved = {key: after[t]["netin"] - before[t]["netin"] for key, t in tap.items()}
    check(PROBE <= moved["net1"] <= PROBE * 1.1, f"net1's tap netin moved {moved['net1']} B for a {PROBE} B read")
    check(moved["net0"] < NOISE, f"net0's tap netin moved {moved['net0']} B (expected ≈ 0)")
    pvesim.check_taps()


def test_ansible_modules():
    """Real ansible-playbook over SSH with the pinned host key: facts and ansible.posix.mount."""
    state = lab.read_state()
    check(state is not None, "lab state missing")
    lab.Guest().helper("reset")
    playbook = f"""
- hosts: {topo.GUEST_NAME}
  gather_facts: true
  gather_subset: ["!all", "network"]   # the minimum (hostname) and the interfaces: all this checks
  tasks:
    - name: facts come from the lab guest
      ansible.builtin.assert:
        that: ["ansible_facts.hostname == '{topo.GUEST_HOSTNAME}'",
               "'link2' in ansible_facts.interfaces"]
    - name: mount through link2
      ansible.posix.mount:
        src: "{topo.LINK2['nas']}:/volume1/backup"
        path: /mnt/ansible-probe
        fstype: nfs
        opts: vers=3,_netdev
        state: mounted
    - name: the probe file is there
      ansible.builtin.stat:
        path: /mnt/ansible-probe/{topo.PROBE_FILE}
      register: probe
    - ansible.builtin.assert:
        that: ["probe.stat.exists", "probe.stat.size == {topo.PROBE_BYTES}"]
    - name: and gone again
      ansible.posix.mount:
        path: /mnt/ansible-probe
        state: absent
"""
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        f.write(playbook)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0")
    try:
        proc = subprocess.run(["ansible-playbook", "-i", state["inventory"], f.name], stdin=subprocess.DEVNULL,
                              text=True, capture_output=True, env=env, timeout=600)
    finally:
        os.unlink(f.name)
    check(proc.returncode == 0,
          f"ansible-playbook failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-1000:]}")
    fstab = lab.Guest().run("cat /etc/fstab").stdout
    check("/mnt/ansible-probe" not in fstab, f"state=absent left the entry:\n{fstab}")


def test_host_key_pinned():
    """A wrong pinned host key makes SSH refuse the guest (host-key checking stays on)."""
    with tempfile.TemporaryDirectory() as d:
        key = os.path.join(d, "k")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], stdin=subprocess.DEVNULL, check=True)
        with open(os.path.join(d, "known_hosts"), "w") as f, open(key + ".pub") as pub:
            f.write(f"{topo.GUEST_NAME} {' '.join(pub.read().split()[:2])}\n")
        # Its own connection, never the harness's shared one (which checked the real key).
        proc = subprocess.run(["ssh", "-F", topo.run_path("ssh", "config"), "-o", "ControlMaster=no",
                               "-o", "ControlPath=none",
                               "-o", f"UserKnownHostsFile={os.path.join(d, 'known_hosts')}",
                               topo.GUEST_NAME, "true"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        check(proc.returncode != 0 and "HOST IDENTIFICATION HAS CHANGED" in proc.stderr,
              f"ssh accepted a guest whose host key does not match the pin: {proc.returncode} {proc.stderr}")
    check(lab.Guest().run("hostname").stdout.strip() == topo.GUEST_HOSTNAME, "the pinned key must work")


def _proc_net_dev(guest) -> dict:
    """{ifname: (rx_bytes, tx_bytes)} from the guest's /proc/net/dev, read over SSH (on mgmt)."""
    counters = {}
    for line in guest.run("cat /proc/net/dev").stdout.splitlines()[2:]:
        name, _, fields = line.partition(":")
        values = fields.split()
        counters[name.strip()] = (int(values[0]), int(values[8]))
    return counters


def test_guest_agent():
    """Debian's qemu-guest-agent on the guest's virtio-serial channel (`agent: 1`), spoken to as
    qemu-server does (pwtest.lab.qga): ping, guest-info 7.2.x, guest-exec's output equal to SSH's,
    the interfaces and MACs of the topology, guest-file-read equal to SSH's; and the agent's
    commands move 0 bytes on link1/link2 (guest and tap counters)."""
    guest = lab.Guest()
    guest.helper("reset")  # no NFS mount left by an earlier test: its lease renewals cross link2
    time.sleep(2)
    sock = topo.qga_socket(topo.GUEST_VMID)
    check(os.path.exists(sock), f"no agent socket {sock}")
    boot_id = guest.run("cat /proc/sys/kernel/random/boot_id").stdout
    fstab = guest.run("cat /etc/fstab").stdout.encode()
    before, taps_before = _proc_net_dev(guest), pvesim.check_taps()["taps"]

    check(qga.command("guest-ping") == {"return": {}}, "guest-ping did not answer {}")
    info = qga.call("guest-info")
    version = info.get("version", "")
    check(re.fullmatch(r"7\.2\.\d+", version), f"guest-info version {version!r}: not Debian bookworm's 7.2.x")
    enabled = {c["name"] for c in info.get("supported_commands", []) if c.get("enabled")}
    check({"guest-exec", "guest-exec-status", "guest-file-open", "guest-file-read"} <= enabled,
          f"commands qemu-server's endpoints send are not enabled: {sorted(enabled)}")
    interfaces = {i["name"]: i for i in qga.call("guest-network-get-interfaces")}
    for name, mac in topo.GUEST_MACS.items():
        got = interfaces.get(name, {})
        check(got.get("hardware-address", "").lower() == mac.lower(),
              f"{name}: hardware-address {got.get('hardware-address')}, expected {mac}: {sorted(interfaces)}")
    addrs = {link["name"]: link["guest"] for link in topo.LINKS} | {"mgmt": topo.GUEST_MGMT_ADDR}
    for name, addr in addrs.items():
        ips = [a["ip-address"] for a in interfaces[name].get("ip-addresses", [])]
        check(addr in ips, f"{name}: ip-addresses {ips}, expected {addr}")
    status = qga.exec_capture(["/bin/cat", "/proc/sys/kernel/random/boot_id"])
    check(status.get("exitcode") == 0 and status.get("out-data") == boot_id,
          f"guest-exec cat boot_id: {status}, SSH said {boot_id!r}")
    data, file_commands = qga.file_read("/etc/fstab")
    check(data == fstab, f"guest-file-read /etc/fstab:\n{data!r}\nSSH:\n{fstab!r}")
    commands = 3 + status["commands"] + file_commands  # ping, info, interfaces, exec..., file...

    after, taps_after = _proc_net_dev(guest), pvesim.check_taps()["taps"]
    for link in ("link1", "link2"):
        check(after[link] == before[link], f"{commands} agent commands moved bytes on {link} (rx, tx): "
                                           f"{before[link]} -> {after[link]}")
    for tap in (f"tap{topo.GUEST_VMID}i0", f"tap{topo.GUEST_VMID}i1"):
        check(taps_after[tap] == taps_before[tap], f"{tap}: {taps_before[tap]} -> {taps_after[tap]}")
    print(f"guest agent {version}: {commands} commands, 0 bytes on link1/link2")


def _combined(text: str) -> tuple:
    nums = [line.split()[-1] for line in text.splitlines() if line.startswith("Combined:")]
    check(len(nums) == 2, f"unexpected ethtool -l output:\n{text}")
    return tuple(int(n) for n in nums)


def _wait_combined_max(expected: int, tries: int = 60) -> None:
    """Waits (bounded, polling) until the guest's link2 shows the expected Combined maximum and,
    re-plugged or not, has its address again: networkd configures a new device some time after
    udev named it, so the address is waited for, never assumed."""
    guest = lab.Guest()
    seen, addr = None, ""
    for _ in range(tries):
        proc = guest.run("ethtool -l link2", check=False)
        if proc.returncode == 0:
            seen = _combined(proc.stdout)
            if seen[0] == expected:
                addr = guest.run("ip -4 -br addr show link2", check=False).stdout
                if topo.LINK2["guest"] in addr:
                    break
        time.sleep(1)
    check(seen and seen[0] == expected, f"link2 shows Combined {seen}, expected maximum {expected}")
    check(seen[1] == min(expected, topo.GUEST_VCPUS), f"current Combined {seen[1]}, expected min(queues, vCPUs)")
    check(topo.LINK2["guest"] in addr, f"link2 lost its address: {addr}")


def test_queues_hotplug():
    """A queues change through the Proxmox API on the running VM re-plugs net1 (a real
    device_del/device_add): the guest's link2 shows the new Combined maximum; back to 1 after."""
    lab.Guest().helper("reset")
    for queues, expected in ((4, 4), (0, 1)):
        pvesim.set_net_queues("net1", queues)
        _wait_combined_max(expected)


def test_queues_reboot():
    """Needs a fresh guest (reboots it). With network hot-plug off, a queues change stays
    pending; a reboot through the API applies it and the guest shows the new Combined count."""
    api = pvesim.api()
    pvesim.set_net_queues("net1", 0)  # whatever an earlier test left
    _wait_combined_max(1)
    hotplug = api.config().get("hotplug", "network,disk,usb")
    api.set_config({"hotplug": "disk,usb"})
    try:
        pvesim.set_net_queues("net1", 4)
        pending = [p for p in api.pending() if p.get("key") == "net1"]
        check(pending and "queues=4" in pending[0].get("pending", ""), f"net1 change not pending: {pending}")
        _wait_combined_max(1, tries=1)
        pvesim.reboot_guest()
        check(lab.wait_for_guest(), "the guest did not come back over SSH after the reboot")
        _wait_combined_max(4)
        check("queues=4" in api.config()["net1"], "the reboot did not apply the pending change")
    finally:
        api.set_config({"hotplug": hotplug})
        pvesim.set_net_queues("net1", 0)
    _wait_combined_max(1)


TESTS = {name[5:]: fn for name, fn in globals().items() if name.startswith("test_")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in TESTS:
        print(f"usage: test_lab.py {{{'|'.join(TESTS)}}}", file=sys.stderr)
        sys.exit(2)
    try:
        lab.require_nas_server()
        TESTS[sys.argv[1]]()
    except (Failure, LabError) as e:
        print(f"FAIL {sys.argv[1]}: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"PASS {sys.argv[1]}")
