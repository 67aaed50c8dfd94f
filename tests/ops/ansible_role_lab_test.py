# SPDX-License-Identifier: GPL-3.0-or-later
"""The role pathwarden_reconcile of the collection pathwarden.pathwarden (playbooks/collections/)
with real ansible-playbook against the real lab: the
engine's trap and seed-fix cases on the lab, run through the role that operators schedule.

usage: ansible_role_lab_test.py PATHWARDEN
The lab (tests/lab: QEMU guest, knfsd NAS, pvesim) must be up; the guest starts in the seed's
trap (an NFSv4.2 mount through the NAS's old 1 GbE address). Then, with
examples/lab/controller-settings for pvesim and the guest (pathwarden at log level trace):
1. the trap policy (examples/lab/trap: move the mount to the 10 GbE address with NFSv4.2, with
   the second probe of the restored state) fails the play: pathwarden exits 4, rolled-back with
   cause wrong-path, the probe's bytes on link1 and ≈ 0 on link2, the trunking diagnosis; the
   failure names the policy, verdict, diagnosis and remedies; fstab byte-identical, the same
   mounts, pvesim's config unchanged;
2. check mode with the seed's fix (policies/, --policy movies-10g) and --diff reports changed
   (drift) and changes nothing: fstab bytes, mounts and the Proxmox config digest are the same; the
   diff (from the report's planned[]) shows the mount's fstab line as it is and with vers=3, and
   net1 without and with queues=8;
3. a real run converges: changed, not failed, exit 2, verified with the probe's bytes on link2 and
   ≈ 0 on link1; the fstab has vers=3 with its reason, the mount vers=3 and nconnect=8, net1
   queues=8 and the guest's link2 8 combined channels;
4. a second run reports not changed (converged, exit 0), writes nothing to Proxmox and leaves the
   fstab as it was.
After every run the API token's secret is in no output and no file of the run.
(One run per case: this test also stands for the engine's trunking_trap and seed_fix cases on
the lab, which used to repeat the same runs through the CLI.)
"""
import json
import os
import time

from pwtest.lab import controller as ctl
from pwtest.lab import lab, pvesim
from pwtest.lab import topology as topo
from pwtest.paths import ROOT
from pwtest.role_run import run_role
from pwtest.script import check, test_main

FIX = {"pathwarden_reconcile_policy_paths": [os.path.join(ROOT, "policies")],
       "pathwarden_reconcile_policy_names": ["movies-10g"]}
TRAP = {"pathwarden_reconcile_policy_paths": [os.path.join(ROOT, "examples", "lab", "trap")]}
PROBE = topo.PROBE_BYTES
NOISE = PROBE // 50


def step(name, started=[time.monotonic()]):
    """Progress on stdout (CTest keeps it): what runs, and the time since the test began."""
    print(f"[{time.monotonic() - started[0]:6.0f}s] {name}", flush=True)


def only_policy(step, run):
    report = run.report
    check(report.get("format") == "pathwarden-report" and len(report.get("policies", [])) == 1,
          f"{step}: the role exposed no report of one policy: {json.dumps(report)[:1500]}\n{run}")
    return report["policies"][0]


def main(binary):
    binary = os.path.abspath(binary)
    step("reset the lab to the seed's trap")
    ctl.reset_to_trap()
    config = ctl.settings(prefix="pw-role-lab-")

    def role(variables, check_mode=False, diff=False):
        r = run_role(binary, config, dict(variables, pathwarden_reconcile_log_level="trace"), check=check_mode,
                     diff=diff)
        ctl.secret_never_leaks(config, r.stdout + r.stderr)
        return r

    try:
        # 1. A change that fails verification fails the play, with the policy's story. Under
        # NFS-Ganesha the same change is right (no trunking: the mount has its own client at
        # link2), and the counters say so.
        if lab.nas_trunks():
            _trap_trunked(role)
        else:
            _trap_not_trunked(role)
        _rest(role, ctl.guest_state())
    finally:
        step("reset the lab")
        ctl.reset_to_trap()
    step("ok ansible role on the lab")


def _trap_trunked(role):
    """Step 1 where the NAS trunks (knfsd): the trap policy is rolled back."""
    before, conf_before = ctl.guest_state(), pvesim.api().config()
    step("1. the trap policy: rolled back")
    r = role(TRAP)
    check(r.rc != 0 and r.stats.get("failures") == 1, f"trap: the play did not fail: {r}")
    p = only_policy("trap", r)
    check(p["verdict"] == "rolled-back" and p["cause"] == "wrong-path" and r.report["exit_code"] == 4,
          f"trap: {json.dumps(p)[:1500]}")
    l1, l2 = ctl.interface(r.report, ctl.LINK1_MAC), ctl.interface(r.report, ctl.LINK2_MAC)
    check(l1 and l1["rx_bytes"] >= PROBE, f"trap: link1 carried {l1}: expected ≈ the probe")
    check(l2 and l2["rx_bytes"] < NOISE, f"trap: link2 carried {l2}: expected ≈ 0")
    check("trunk" in (p["verification"]["diagnosis"] or ""), f"diagnosis: {p['verification']['diagnosis']}")
    msg = r.failure
    check(isinstance(msg, list) and msg[0].startswith("pathwarden exited 4"), f"trap failure message: {msg}")
    line = next((m for m in msg if m.startswith("movies-10g: rolled-back (verification: wrong-path)")), None)
    # move-transport first (NFSv4 kept), then vers=3 (issue 44)
    check(line is not None and "diagnosis: trunked" in line
          and "remedies: keep NFSv4: set spec.mount.trunking: move-transport" in line and "; pin vers=3" in line,
          f"trap failure names the policy, verdict, diagnosis and remedies: {msg}")
    after = ctl.guest_state()
    check(after["fstab_sha256"] == before["fstab_sha256"],
          f"trap: fstab not byte-identical:\n--- before\n{before['fstab']}\n--- after\n{after['fstab']}")
    check(after["mounts"] == before["mounts"], f"trap: the mounts differ:\n{before['mounts']}\n{after['mounts']}")
    conf_after = pvesim.api().config()
    check(conf_after == conf_before, f"trap: pvesim's config changed:\n{conf_before}\n{conf_after}")


def _trap_not_trunked(role):
    """Step 1 where the NAS gives each address its own client (NFS-Ganesha): the trap's link2 mount
    already is what the trap policy asks, on a client of its own, so the policy adopts its entry
    (converged, changed: the comment) and warns of no trunking; its bytes take link2."""
    step(f"1. the trap policy on {lab.nas_server()}: converged, no trunking")
    r = role(TRAP)
    p = only_policy("trap", r)
    check(r.rc == 0 and r.stats.get("failures") == 0 and p["verdict"] == "converged" and p["changed"]
          and r.report["exit_code"] == 2 and any("adopt" in n for n in p["notes"]),
          f"trap on {lab.nas_server()}: {r}\n{json.dumps(p)[:1500]}")
    check(not any("trunk" in w for w in p["warnings"]),
          f"warned of trunking beside the evidence of two clients: {p['warnings']}")
    read = lab.Guest().helper("read", "/mnt/movies", topo.PROBE_FILE, str(topo.TEST_PROBE_BYTES))
    check(read["deltas"]["link2"]["rx"] >= topo.TEST_PROBE_BYTES and read["deltas"]["link1"]["rx"] < NOISE,
          f"trap on {lab.nas_server()}: the bytes: {read}")


def _rest(role, before):
    """Steps 2 to 4, from the guest state `before`."""
    # 2. Check mode: drift is "changed", nothing changes.
    digest = pvesim.api().config()["digest"]
    step("2. check mode: drift, nothing changed")
    r = role(FIX, check_mode=True, diff=True)
    # changed=1: the module's task; the lines that report each policy never count.
    check(r.rc == 0 and r.stats.get("failures") == 0 and r.stats.get("changed") == 1,
          f"check mode: want changed=1 and not failed: {r}")
    # --diff: the module shows the seed fix's fstab line and net1 string, before and after, from the
    # report's planned[] (the mount's line only; empty before when the fstab had no entry).
    fstab = [d for d in r.diff or [] if d["before_header"].endswith(":/etc/fstab (policy movies-10g)")]
    movies = [[line for line in text.splitlines() if " /mnt/movies " in line and not line.startswith("#")]
              for text in (fstab[0]["before"], fstab[0]["after"])] if len(fstab) == 1 else [[], []]
    check(len(fstab) == 1
          and (fstab[0]["before"] == "" or fstab[0]["before"].rstrip("\n") in before["fstab"].splitlines())
          and len(movies[0]) <= 1 and len(movies[1]) == 1
          and "vers=3" in movies[1][0] and all("vers=3" not in line for line in movies[0]),
          f"check mode diff of the fstab: {r.diff}")
    net1 = [d for d in r.diff or [] if "net1" in d["before_header"]]
    check(len(net1) == 1 and net1[0]["before"].startswith("net1: ") and "queues=8" in net1[0]["after"]
          and "queues=8" not in net1[0]["before"], f"check mode diff of net1: {r.diff}")
    p = only_policy("check mode", r)
    check(r.report["mode"] == "check" and p["verdict"] == "drift" and p["planned"] and not p["changes"],
          f"check mode report: {json.dumps(p)[:1500]}")
    now = ctl.guest_state()
    check(now["fstab_sha256"] == before["fstab_sha256"] and now["mounts"] == before["mounts"],
          f"check mode changed the guest:\n{before}\n{now}")
    check(pvesim.api().config()["digest"] == digest, "check mode wrote to Proxmox")

    # 3. A real run converges, proven by the counters.
    step("3. real run: converges")
    r = role(FIX)
    check(r.rc == 0 and r.stats.get("failures") == 0 and r.stats.get("changed") == 1,
          f"real run: want changed=1 and not failed: {r}")
    p = only_policy("real run", r)
    check(p["verdict"] == "verified" and p["changed"]
          and r.report["exit_code"] == 2, f"real run: {json.dumps(p)[:1500]}")
    l1, l2 = ctl.interface(r.report, ctl.LINK1_MAC), ctl.interface(r.report, ctl.LINK2_MAC)
    check(l2 and l2["rx_bytes"] >= PROBE, f"real run: link2 carried {l2}: expected ≈ the probe")
    check(l1 and l1["rx_bytes"] < NOISE, f"real run: link1 carried {l1}: expected ≈ 0")
    state = ctl.guest_state()
    check("vers=3 on purpose" in state["fstab"], f"no reason comment in fstab:\n{state['fstab']}")
    check(any(" /mnt/movies " in m and "vers=3" in m and "nconnect=8" in m for m in state["mounts"]),
          f"mounts after the real run: {state['mounts']}")
    check("queues=8" in pvesim.api().config()["net1"], "net1 has no queues=8")
    g = lab.Guest()
    name = g.run(f"ip -o link | awk -F': ' '/{ctl.LINK2_MAC}/ {{print $2}}'").stdout.strip()
    channels = g.run(f"ethtool -l {name}").stdout
    current = channels.split("Current hardware settings:")[1]
    check("Combined:\t8" in current or "Combined: 8" in current.replace("\t", " ").replace("  ", " "),
          f"ethtool -l {name}:\n{channels}")

    # 4. Converged: not changed, nothing written.
    digest = pvesim.api().config()["digest"]
    step("4. again: converged, not changed")
    r = role(FIX)
    check(r.rc == 0 and r.stats.get("failures") == 0 and r.stats.get("changed") == 0,
          f"second run: want ok and not changed: {r}")
    check(only_policy("second run", r)["verdict"] == "converged" and r.report["exit_code"] == 0,
          f"second run: {json.dumps(r.report)[:1500]}")
    check(pvesim.api().config()["digest"] == digest, "the second run wrote to Proxmox")
    check(ctl.guest_state()["fstab_sha256"] == state["fstab_sha256"], "the second run changed the fstab")


if __name__ == "__main__":
    test_main(main, __doc__, 1)
