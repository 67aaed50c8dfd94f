#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Verification from three sides on the real lab (issue 19): QEMU guest, NFS NAS, pvesim serving
the taps' real counters, the real `pathwarden` over SSH. Each case is one way the guest's
interface counters alone were fooled (or stuck), and the verdict pathwarden must reach instead.

usage: lab_verify_test.py PATHWARDEN CASE
  swapped_macs      misrouted (bytes on link1) with link1 and link2 wearing each other's MACs:
                    `verify --probe` is wrong-path, the host saw net0 carry the probe; a reconcile
                    rolls its change back
  coinciding        the trap (trunked onto link1; on NFS-Ganesha, which does not trunk, link2's
                    address routed through link1) while an adversary in the switch namespace sends
                    link2 exactly the probe's bytes during the probe and keeps link1 busy between
                    probes: never verified; the NFS connections' own bytes name link1
  bridge            link2's address on a bridge over link2: the bridge is followed to net1, verified
  background_5mbps  the correct path with 5 MB/s received on both links: verified within 64 MiB
"""
import json
import time

from pwtest.lab import controller as ctl
from pwtest.lab import lab, scenarios
from pwtest.lab import topology as topo
from pwtest.lab.background import Mirror, measured_rate, ping_background, stop_ping_background
from pwtest.policies import NAS_1G, seed_fix, storage_path
from pwtest.script import Failure, case_main, check

L1, L2 = topo.LINK1, topo.LINK2


def movies_policy(options, **fields):
    fields.setdefault("probe_bytes", topo.TEST_PROBE)
    return storage_path("movies-verify", topo.GUEST_VMID, topo.GUEST_NAME, nas_addresses=[NAS_1G], options=options,
                        reason="lab: verification", **fields)


def verify_probe(binary, config, policy_text):
    rc, report, err = ctl.pathwarden(binary, config, "verify", ctl.policy_dir("movies", policy_text), "--probe")
    p = report["policies"][0]
    v = p.get("verification") or {}
    return rc, p, v, err


def signal(v, name):
    return next((s for s in v.get("signals", []) if s["signal"] == name), {})


def show(p, err=""):
    return json.dumps(p, indent=1) + ("\n" + err[-1500:] if err else "")


def nfs_answers(guest, path="/mnt/movies"):
    """Waits until the mount answers a 1 MiB O_DIRECT read (after a link change); each try is
    bounded by the kernel's own retransmission, not by a test clock."""
    for _ in range(30):
        r = guest.run(f"timeout 60 dd if={path}/{topo.PROBE_FILE} of=/dev/null bs=1M count=1 iflag=direct status=none",
                      check=False, timeout=120)
        if r.returncode == 0:
            return
        time.sleep(2)
    raise Failure(f"{path} does not answer after the change")


def test_swapped_macs(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("apply", json.dumps(scenarios.scenario("misrouted-link2")))
    m1, m2 = topo.GUEST_MACS["link1"].lower(), topo.GUEST_MACS["link2"].lower()
    # arp_notify: the guest announces its new MAC, so the NAS's ARP entries follow the swap.
    guest.run("sysctl -q -w net.ipv4.conf.all.arp_notify=1 net.ipv4.conf.link1.arp_notify=1 "
              "net.ipv4.conf.link2.arp_notify=1")
    try:
        guest.run(f"ip link set link1 address {m2} && ip link set link2 address {m1}")
        nfs_answers(guest)
        check(guest.run("cat /sys/class/net/link1/address").stdout.strip() == m2, "the swap did not take")
        config = ctl.settings()
        rc, p, v, err = verify_probe(binary, config, movies_policy(["vers=3"]))
        check(v.get("verdict") == "wrong-path", f"verify --probe: exit {rc}\n{show(p, err)}")
        check(v.get("carried_by") == "net0", f"the host's side should name net0:\n{show(p)}")
        check(signal(v, "host-taps").get("state") == "contradicted", f"host taps:\n{show(p)}")
        # The guest side follows the permanent address: link2 (by ethtool -P) is the intended NIC.
        intended = [i for i in v.get("interfaces", []) if i["intended"]]
        check(intended and intended[0]["name"] == "link2", f"intended interface:\n{show(p)}")

        before = ctl.guest_state()
        rc, report, err = ctl.pathwarden(
            binary, config, "reconcile",
            ctl.policy_dir("movies", seed_fix(verify_restored=False, probe_bytes=topo.TEST_PROBE)))
        p = report["policies"][0]
        check(rc == 4 and p["verdict"] == "rolled-back" and p["cause"]
              == "wrong-path", f"reconcile: exit {rc}\n{show(p, err)}")
        check(ctl.guest_state()["fstab_sha256"] == before["fstab_sha256"], "fstab not restored")
    finally:
        guest.run(f"ip link set link1 address {m1}; ip link set link2 address {m2}; "
                  "sysctl -q -w net.ipv4.conf.all.arp_notify=0 net.ipv4.conf.link1.arp_notify=0 "
                  "net.ipv4.conf.link2.arp_notify=0", check=False)


def test_coinciding(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    # A probe on the wrong link for the adversary to hide: the seed's trap where the NAS trunks;
    # under NFS-Ganesha (no trunking) a host route that sends link2's address through link1.
    wrong, vers = ("trunk-trap", "vers=4.2") if lab.nas_trunks() else ("misrouted-link2", "vers=3")
    guest.helper("apply", json.dumps(scenarios.scenario(wrong)))
    config = ctl.settings()
    mirror = Mirror(idle_rate_mb_s=15)
    try:
        # The whole probe file: the adversary mirrors within the probe's window, so it gets the
        # longest window the lab offers.
        rc, p, v, err = verify_probe(binary, config, movies_policy(
            [vers], probe_bytes=f"{topo.PROBE_BYTES >> 20}MiB"))
    finally:
        did = mirror.stop()
    # What each signal said (the guest's counters alone are what the adversary aims at).
    print(f"adversary {did}; " + "; ".join(f"{s['signal']} {s['state']}" for s in v.get("signals", [])))
    check(did.get("probes", 0) >= 1 and did.get("mirrored_bytes", 0) > 0, f"the adversary never fired: {did}")
    check(v.get("verdict") != "verified", f"a {wrong} probe was verified:\n{show(p, err)}")
    # The connections' bytes see through the mirror whatever it achieved; they decide when the
    # mirror fooled the counters. How much it mirrors in the probe's window depends on the
    # machine's speed, so a mirror that fell short (the counters then see it too) is no failure.
    check(v.get("verdict") == "wrong-path", f"a {wrong} probe under a mirror is not wrong-path:\n{show(p, err)}")
    check(signal(v, "connection-bytes").get("state") == "contradicted",
          f"the connections' bytes did not see the probe on the old link (adversary {did}):\n{show(p, err)}")
    fooled = signal(v, "guest-counters").get("state") == "agreed" and \
        signal(v, "host-taps").get("state") in ("agreed", "undecided", "unavailable")
    check(not fooled or v.get("decided_by") == "connection-bytes",
          f"the counters were fooled, so the connections' bytes should decide (adversary {did}):\n{show(p, err)}")
    # The old link by its guest name (link1) or its Proxmox NIC (net0), as the deciding signal words it.
    check(any(n in v.get("summary", "") for n in ("link1", "net0")),
          f"summary should name link1/net0: {v.get('summary')}")
    check(signal(v, "connection-interface").get("state") == "contradicted", f"connection → interface:\n{show(p)}")


def test_bridge(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("reset")
    addr = f"{L2['guest']}/{L2['prefix']}"
    guest.run(f"ip link add pwbr0 type bridge && ip link set pwbr0 address {topo.GUEST_MACS['link2'].lower()} && "
              f"ip link set link2 master pwbr0 && ip addr del {addr} dev link2 && ip addr add {addr} dev pwbr0 && "
              "ip link set pwbr0 up")
    try:
        guest.helper("apply", json.dumps(scenarios.scenario("clean-link2")))
        rc, p, v, err = verify_probe(binary, ctl.settings(), movies_policy(["vers=4.2"]))
        check(v.get("verdict") == "verified", f"exit {rc}\n{show(p, err)}")
        iface = signal(v, "connection-interface")
        check(iface.get("state") == "agreed" and "pwbr0" in iface.get(
            "detail", ""), f"connection → interface:\n{show(p)}")
        intended = [i for i in v.get("interfaces", []) if i["intended"]]
        check(intended and intended[0]["name"] == "link2", f"intended interface:\n{show(p)}")
        check(all(i["name"] != "pwbr0" for i in v.get("interfaces", [])), "the bridge's bytes were counted as a NIC's")
    finally:
        guest.helper("reset")
        guest.run(f"ip link set link2 nomaster; ip link del pwbr0; ip addr replace {addr} dev link2", check=False)


def test_background_5mbps(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("apply", json.dumps(scenarios.scenario("clean-link2")))
    pids = ping_background(guest, 5)
    try:
        l1, l2 = measured_rate(guest)
        rc, p, v, err = verify_probe(binary, ctl.settings(),
                                     movies_policy(["vers=4.2"], probe_bytes="4MiB", max_probe_bytes="64MiB"))
    finally:
        stop_ping_background(guest, pids)
    # The pings are paced by the guest, which runs under TCG: on a loaded machine they reach 2-5
    # MB/s (2.47 seen in a fresh-clone run). What the test needs is that they ran at all, at a
    # rate that is a real share of the first 4 MiB probe's window; not the machine's speed.
    check(l2 > 1.0, f"the background was not running (link1 {l1:.2f}, link2 {l2:.2f} MB/s)")
    check(v.get("verdict") == "verified", f"background {l1:.1f}/{l2:.1f} MB/s: exit {rc}\n{show(p, err)}")
    check(v.get("probe_bytes", 0) <= topo.PROBE_BYTES, f"probe grew past 64 MiB:\n{show(p)}")


if __name__ == "__main__":
    lab.require_nas_server()
    case_main({"swapped_macs": test_swapped_macs, "coinciding": test_coinciding, "bridge": test_bridge,
               "background_5mbps": test_background_5mbps}, __doc__)
