# SPDX-License-Identifier: GPL-3.0-or-later
"""Traffic beside the probe, for the verification tests and the verification-cost benchmark.

- ping_background(): steady background the guest receives on both storage links, paced to a rate:
  `ping -I LINK -s 60000` to the NAS's address on that link from inside the guest (each 60 KB echo
  reply arrives on the link, whatever route NFS takes).
- Mirror: an adversary in the switch namespace that watches the NAS's link1 tap and, while the
  NAS sends the probe's bytes there, sends the same number of bytes to the guest on link2 (UDP
  from a namespace-only address, 198.51.100.250): background on the intended link that coincides
  with the probe exactly. Between probes it keeps link1 busy at `idle_rate`, and stops that as the
  probe starts, so link1's bytes during the probe look like its usual background. Triggered by the
  probe's own bytes (an event), never by a clock.
"""
import os
import signal
import subprocess
import sys
import time

from . import topology as topo
from .common import netns_cmd

# One 60 KB echo reply as received: payload, ICMP header, 41 fragments' IP + Ethernet headers.
REPLY_BYTES = 60000 + 8 + 41 * (20 + 14)


def ping_background(guest, rate_mb_s, links=(topo.LINK1, topo.LINK2)) -> list:
    """Starts the paced pings in the guest; returns their PIDs (for stop_ping_background)."""
    if rate_mb_s == 0:
        return []
    interval = REPLY_BYTES / (rate_mb_s * 1e6)
    pids = []
    for link in links:
        cmd = (f"nohup ping -q -n -I {link['name']} -s 60000 -i {interval:.4f} {link['nas']} "
               f">/dev/null 2>&1 </dev/null & echo $!")
        pids.append(guest.run(cmd).stdout.strip())
    return pids


def stop_ping_background(guest, pids) -> None:
    if pids:
        guest.run("kill " + " ".join(pids), check=False)


def rx_bytes(guest) -> tuple:
    out = guest.run("cat /sys/class/net/link1/statistics/rx_bytes /sys/class/net/link2/statistics/rx_bytes").stdout
    a, b = out.split()
    return int(a), int(b)


def measured_rate(guest, seconds=3.0) -> tuple:
    """MB/s received on link1 and link2 over `seconds` (a measurement of the background, not a test window)."""
    a1, b1 = rx_bytes(guest)
    t0 = time.monotonic()
    time.sleep(seconds)
    a2, b2 = rx_bytes(guest)
    dt = time.monotonic() - t0
    return (a2 - a1) / dt / 1e6, (b2 - b1) / dt / 1e6


# --- the mirror adversary (runs inside the switch namespace: python3 -m pwtest.lab.background) ---

MIRROR_ADDRS = {topo.BRIDGE_LINK1: "192.0.2.250/24", topo.BRIDGE_LINK2: "198.51.100.250/24"}
NAS_LINK1_TAP = f"tap{topo.NAS_VMID}i0"
GUEST_LINK1_TAP = f"tap{topo.GUEST_VMID}i0"
GUEST_LINK2_TAP = f"tap{topo.GUEST_VMID}i1"


def _counter(dev, name):
    with open(f"/sys/class/net/{dev}/statistics/{name}") as f:
        return int(f.read())


class Mirror:
    """Handle of a running mirror: stop() ends it and removes its addresses."""

    def __init__(self, idle_rate_mb_s: float):
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.proc = subprocess.Popen(netns_cmd(topo.NETNS, ["/usr/bin/python3", "-m", "pwtest.lab.background",
                                                            "mirror", str(idle_rate_mb_s)]),
                                     cwd=here, env=dict(os.environ, PYTHONPATH=here), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # "ready" once its addresses are up
        if line.strip() != "ready":
            self.stop()
            raise RuntimeError(f"the mirror did not start: {line!r}")

    def stop(self) -> dict:
        """Stops it; returns what it did ({"probes": N, "mirrored_bytes": B})."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=60)
        for line in reversed(out.splitlines()):
            if line.startswith("{"):
                import json
                return json.loads(line)
        return {}


def _mirror_main(idle_rate_mb_s: float) -> None:
    import json
    import socket
    added = []
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    try:
        for dev, addr in MIRROR_ADDRS.items():
            subprocess.run(["ip", "addr", "add", addr, "dev", dev], check=True)
            added.append((dev, addr))
        s1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s1.bind((MIRROR_ADDRS[topo.BRIDGE_LINK1].split("/")[0], 0))
        s2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s2.bind((MIRROR_ADDRS[topo.BRIDGE_LINK2].split("/")[0], 0))
        payload = b"\0" * 1472  # one full Ethernet frame each
        to1, to2 = (topo.LINK1["guest"], 9), (topo.LINK2["guest"], 9)
        print("ready", flush=True)
        probes, mirrored, idle_sent = 0, 0, 0
        probing = False
        last_nas = _counter(NAS_LINK1_TAP, "rx_bytes")
        quiet_since = time.monotonic()
        idle_t0, idle_base = time.monotonic(), _counter(GUEST_LINK1_TAP, "tx_bytes")
        while not stopping:
            nas = _counter(NAS_LINK1_TAP, "rx_bytes")
            moved = nas - last_nas
            now = time.monotonic()
            if not probing and moved > 256 * 1024:
                probing, probes = True, probes + 1
                start_nas, start_l2 = last_nas, _counter(GUEST_LINK2_TAP, "tx_bytes")
            if probing:
                if moved > 64 * 1024:
                    quiet_since = now
                # Keep link2's delivered bytes level with what the NAS has sent on link1 since the probe began.
                behind = (nas - start_nas) - (_counter(GUEST_LINK2_TAP, "tx_bytes") - start_l2)
                for _ in range(min(max(behind, 0) // 1514, 64)):
                    s2.sendto(payload, to2)
                if now - quiet_since > 0.5:
                    mirrored += _counter(GUEST_LINK2_TAP, "tx_bytes") - start_l2
                    probing = False
                    idle_t0, idle_base = now, _counter(GUEST_LINK1_TAP, "tx_bytes")
            elif idle_rate_mb_s > 0:
                want = (now - idle_t0) * idle_rate_mb_s * 1e6
                sent = _counter(GUEST_LINK1_TAP, "tx_bytes") - idle_base
                for _ in range(min(max(int(want - sent), 0) // 1514, 32)):
                    s1.sendto(payload, to1)
                    idle_sent += 1514
            last_nas = nas
            time.sleep(0.002)
        print(json.dumps({"probes": probes, "mirrored_bytes": mirrored, "idle_bytes": idle_sent}), flush=True)
    finally:
        for dev, addr in added:
            subprocess.run(["ip", "addr", "del", addr, "dev", dev], check=False)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "mirror":
        _mirror_main(float(sys.argv[2]))
    else:
        sys.exit("usage: python3 -m pwtest.lab.background mirror IDLE_RATE_MB_S")
