#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The reconcile engine on the real lab (QEMU guest, knfsd NAS, pvesim): the misrouted case, on
an operator's ground, and several policies on the one guest (issue 38).

usage: lab_reconcile_test.py PATHWARDEN CASE
CASE: misrouted|many|many_one_trunks|adopt|import|drift|agent|move_transport|transports|stale|mtu
Runs the real `pathwarden` binary against pvesim and the lab guest over SSH, and checks the
outcome in the guest (fstab bytes) and in the report. The guest is reached as the unprivileged
pwadmin with `become: true` (the settings name a relative inventory), and the policy names the
NAS by host name, which only the guest's resolver knows: every phase (facts, apply, probe,
rollback) runs the way most shops run it, not as root with addresses. The trap (trunked, rolled back) and the
seed's fix (verified, then converged) run once each in tests/ops/ansible_role_lab_test.py,
through the role operators schedule, with the assertions that used to be here.
"""
import json
import os
import re
import subprocess
import tempfile
import time

from pwtest.lab import controller as ctl
from pwtest.lab import lab, nas as nas_channel, pvesim, scenarios
from pwtest.lab import topology as topo
from pwtest.policies import NAS_10G, NAS_1G, seed_fix, storage_path, write
from pwtest.script import case_main, check


# The seed's fix without the queues change: the route, not the NIC, is what is wrong here. No
# second probe of the restored state (ops_ansible_role_lab's trap case runs that one).
MISROUTED = seed_fix(verify_restored=False, server=topo.LINK2["nas_name"], nas_addresses=[topo.LINK1["nas_name"]],
                     probe_bytes=topo.TEST_PROBE)


def test_misrouted(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("apply", json.dumps(scenarios.scenario("misrouted-link2")))
    before = ctl.guest_state()
    since = guest.run("date +%s").stdout.strip()
    rc, report, err = ctl.pathwarden(binary, ctl.operator_settings(), "reconcile", ctl.policy_dir("movies", MISROUTED))
    p = report["policies"][0]
    check(rc == 4 and p["verdict"] == "rolled-back" and p["cause"] == "wrong-path",
          f"exit {rc}:\n{json.dumps(report, indent=1)}\n{err[-1500:]}")
    check("misrouted" in (p["verification"]["diagnosis"] or ""), f"diagnosis: {p['verification']['diagnosis']}")
    check(ctl.guest_state()["fstab_sha256"] == before["fstab_sha256"], "fstab not restored")
    # The name was resolved by the guest and the address it gave is what was compared.
    check(p["verification"].get("server_address") == topo.LINK2["nas"],
          f"server address: {p['verification'].get('server_address')}")
    # Logged in as pwadmin only, and became root with sudo for what needs it.
    logins = guest.run(f"journalctl -q -o cat --since=@{since} _COMM=sshd | grep 'Accepted publickey' || true").stdout
    users = {line.split(" for ", 1)[1].split(" ", 1)[0] for line in logins.splitlines() if " for " in line}
    check(topo.GUEST_OPERATOR in users, f"pathwarden's logins: {logins}")
    sudo = guest.run(f"journalctl -q -o cat --since=@{since} _COMM=sudo || true").stdout
    check(f"{topo.GUEST_OPERATOR} : " in sudo and "USER=root" in sudo,
          f"no sudo to root by {topo.GUEST_OPERATOR}:\n{sudo}")


# Several policies of the lab guest, in file order (the order the plan takes them, and so the
# order the one fstab write mounts them): backup over link1 (net0) with NFSv4.2, the movies over
# link2 (net1) with NFSv3, and a third share over link2 with NFSv4.2, which joins backup's v4.2
# client of the same NAS and so rides link1 (NFSv4.1 trunking): its own probe must catch it.
def _policy(name, device, server, nas, export, path, options):
    return storage_path(name, topo.GUEST_VMID, topo.GUEST_NAME, device=device, server=server, nas_addresses=[nas],
                        export=export, path=path, options=options, reason=f"{name}: issue 38's lab case",
                        probe_file=topo.PROBE_FILE, probe_bytes=topo.TEST_PROBE)


BACKUP = _policy("backup", "net0", NAS_1G, NAS_10G, topo.BACKUP_EXPORT, "/mnt/backup", ["vers=4.2", "_netdev"])
MOVIES = _policy("movies", "net1", NAS_10G, NAS_1G, topo.MOVIES_EXPORT, "/mnt/movies", ["vers=3", "_netdev"])
TRUNKED = _policy("pg", "net1", NAS_10G, NAS_1G, topo.COMPOSE_EXPORT, "/mnt/pg", ["vers=4.2", "_netdev"])


def _policies(*texts):
    d = tempfile.mkdtemp(prefix="pw-many-")
    for i, text in enumerate(texts):
        write(d, f"{i + 1}.yaml", text)
    return d


def _entries(fstab):
    """Mount point -> the pathwarden policy named in the comment right above its entry."""
    lines = fstab.splitlines()
    out = {}
    for i, line in enumerate(lines):
        fields = line.split()
        if len(fields) >= 3 and not line.startswith("#") and fields[2] == "nfs":
            above = lines[i - 1] if i > 0 else ""
            out[fields[1]] = above.split("(policy ", 1)[1].split(")", 1)[0] if "(policy " in above else None
    return out


def _verdicts(report):
    return {p["policy"]: (p["verdict"], p.get("cause")) for p in report["policies"]}


def test_many(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("reset")
    before = ctl.guest_state()
    rc, report, err = ctl.pathwarden(binary, ctl.settings(), "reconcile", _policies(BACKUP, MOVIES))
    verdicts = _verdicts(report)
    check(rc == 2 and verdicts == {"backup": ("verified", None), "movies": ("verified", None)},
          f"exit {rc}, {verdicts}:\n{json.dumps(report, indent=1)[-4000:]}\n{err[-1500:]}")
    after = ctl.guest_state()
    check(_entries(after["fstab"]) == {"/mnt/backup": "backup", "/mnt/movies": "movies"}, after["fstab"])
    check(after["fstab"].startswith(before["fstab"]), "the lines before pathwarden's entries changed")
    # One write: one backup of the fstab as it was, for both policies.
    names = guest.run("ls /var/backups/pathwarden/").stdout.split()
    backups = [n for n in names if n.startswith(f"fstab.{report['plan_id']}.")]
    check(len(backups) == 1, f"backups of this plan: {backups}")


def test_many_one_trunks(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("reset")
    before = ctl.guest_state()
    rc, report, err = ctl.pathwarden(binary, ctl.operator_settings(), "reconcile", _policies(BACKUP, MOVIES, TRUNKED))
    verdicts = _verdicts(report)
    if not lab.nas_trunks():
        # NFS-Ganesha: pg's mount through link2's address gets a client of its own, and the
        # probe proves its bytes on link2. All three verified, all three entries kept.
        check(rc == 2 and verdicts == {p: ("verified", None) for p in ("backup", "movies", "pg")},
              f"{lab.nas_server()}: exit {rc}, {verdicts}:\n{json.dumps(report, indent=1)[-4000:]}\n{err[-1500:]}")
        after = ctl.guest_state()
        check(_entries(after["fstab"]) == {"/mnt/backup": "backup", "/mnt/movies": "movies", "/mnt/pg": "pg"},
              after["fstab"])
        pg = next(line for line in after["mounts"] if " /mnt/pg " in line)
        check(f"addr={NAS_10G}" in pg, f"pg rides its own address's client: {pg}")
        return
    check(rc == 4 and verdicts == {"backup": ("verified", None), "movies": ("verified", None),
                                   "pg": ("rolled-back", "wrong-path")},
          f"exit {rc}, {verdicts}:\n{json.dumps(report, indent=1)[-4000:]}\n{err[-1500:]}")
    pg = next(p for p in report["policies"] if p["policy"] == "pg")
    check("trunk" in (pg["verification"]["diagnosis"] or ""), f"diagnosis: {pg['verification']['diagnosis']}")
    after = ctl.guest_state()
    # Exactly the two verified entries: pg's put back alone (it had none), the others kept.
    check(_entries(after["fstab"]) == {"/mnt/backup": "backup", "/mnt/movies": "movies"}, after["fstab"])
    check(after["fstab"].startswith(before["fstab"]), "the lines before pathwarden's entries changed")
    mounted = {line.split()[1] for line in after["mounts"]}
    check(mounted == {"/mnt/backup", "/mnt/movies"}, f"mounted: {mounted}")
    check(not report["journal_left"], "a journal was left")


def _local_ports(connections):
    """The local address:port of each NFS connection (ss -Htn lines: state, queues, local, peer)."""
    return sorted(c.split()[-2] for c in connections)


def test_adopt(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    # A hand-written entry, mounted as it says: exactly what the policy below would write.
    applied = guest.helper("apply", json.dumps(scenarios.scenario("clean-link2")))
    ports = _local_ports(applied["connections"])
    check(ports, f"no NFS connection before: {applied}")
    policy = _policy("movies", "net1", NAS_10G, NAS_1G, topo.MOVIES_EXPORT, "/mnt/movies", ["vers=4.2", "_netdev"])
    rc, report, err = ctl.pathwarden(binary, ctl.settings(), "reconcile", _policies(policy))
    p = report["policies"][0]
    check(rc == 2 and p["verdict"] == "converged" and p["changes"],
          f"exit {rc}:\n{json.dumps(report, indent=1)[-4000:]}\n{err[-1500:]}")
    check(any("adopted" in n for n in p["notes"]), f"notes: {p['notes']}")
    check(p["verification"] is None, "a probe ran for a comment")
    after = ctl.guest_state()
    check(_entries(after["fstab"]) == {"/mnt/movies": "movies"}, after["fstab"])
    now = guest.run("ss -Htn state established '( dport = :2049 )'").stdout.splitlines()
    check(_local_ports(now) == ports, f"the mount's NFS connections changed: {ports} -> {_local_ports(now)}")


def test_import(binary):
    """`pathwarden import` on the real guest (issue 41 item 12): its hand-written entry of /mnt/movies
    over link2 becomes a policy (net1 found from the NFS connection's interface by its permanent
    address), validate passes on it, and reconcile adopts it without re-making the mount."""
    ctl.reset_nic()
    guest = lab.Guest()
    applied = guest.helper("apply", json.dumps(scenarios.scenario("clean-link2")))
    ports = _local_ports(applied["connections"])
    out_dir = tempfile.mkdtemp(prefix="pw-import-")
    settings = ctl.operator_settings()
    rc, imported, err = ctl.pathwarden(binary, settings, "import", out_dir, "--host", topo.GUEST_NAME)
    written = imported["written"]
    check(rc == 0 and len(written) == 1, f"exit {rc}:\n{json.dumps(imported, indent=1)}\n{err[-1500:]}")
    w = written[0]
    check((w["path"], w["nic"], w["interface"], w["owner"], w["server"]) ==
          ("/mnt/movies", "net1", "link2", "fstab", topo.LINK2["nas"]), f"imported: {w}")
    r = subprocess.run([binary, "--config", settings, "validate", out_dir], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"validate on what import wrote: {r.returncode}\n{r.stdout}{r.stderr}")
    rc, report, err = ctl.pathwarden(binary, settings, "reconcile", out_dir)
    p = report["policies"][0]
    check(rc == 2 and p["verdict"] == "converged" and [c["action"] for c in p["changes"]] == ["change-fstab"],
          f"exit {rc}:\n{json.dumps(report, indent=1)[-4000:]}\n{err[-1500:]}")
    check(_entries(ctl.guest_state()["fstab"]) == {"/mnt/movies": w["policy"]}, "pathwarden's comment above the entry")
    now = guest.run("ss -Htn state established '( dport = :2049 )'").stdout.splitlines()
    check(_local_ports(now) == ports, f"the mount's NFS connections changed: {ports} -> {_local_ports(now)}")
    rc, report, err = ctl.pathwarden(binary, settings, "reconcile", out_dir)
    check(rc == 0 and report["policies"][0]["verdict"] == "converged", f"then converged: exit {rc}")


def test_drift(binary):
    """A path that drifts between runs: converged, then a /32 host route sends the NAS's link2
    address through link1 and the mount's connection is made again through it (a reconnect, a
    reboot): the scheduled reconcile is not converged but wrong-path (exit 4) from the facts
    alone, with no probe and nothing changed; the route removed, converged again, and the next run
    after 32 MiB read through the mount says how much NFS traffic net1 carried since the last."""
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("reset")
    settings = ctl.settings()
    policies = _policies(MOVIES)
    rc, report, err = ctl.pathwarden(binary, settings, "reconcile", policies)
    check(rc == 2, f"the first run: exit {rc}:\n{json.dumps(report, indent=1)[-3000:]}\n{err[-1500:]}")
    rc, report, err = ctl.pathwarden(binary, settings, "reconcile", policies)
    p = report["policies"][0]
    check(rc == 0 and p["verdict"] == "converged", f"exit {rc}: {p}")
    check(any(n.startswith("path checked from the guest's facts") for n in p["notes"]), f"notes: {p['notes']}")

    route = f"{topo.LINK2['nas']}/32 dev link1 src {topo.LINK1['guest']}"
    guest.run(f"ip route add {route} proto static && umount /mnt/movies && mount /mnt/movies")
    fstab = ctl.guest_state()["fstab"]
    rc, report, err = ctl.pathwarden(binary, settings, "reconcile", policies)
    p = report["policies"][0]
    check(rc == 4 and p["verdict"] == "wrong-path", f"exit {rc}:\n{json.dumps(p, indent=1)}\n{err[-1500:]}")
    check("misrouted" in (p["verification"]["diagnosis"] or ""), f"diagnosis: {p['verification']['diagnosis']}")
    check(p["verification"]["probes"] == 0 and not p["changes"], f"a probe or a change: {p}")
    check(ctl.guest_state()["fstab"] == fstab, "the fstab changed")

    guest.run(f"ip route del {route} && umount /mnt/movies && mount /mnt/movies")
    rc, report, err = ctl.pathwarden(binary, settings, "reconcile", policies)
    check(rc == 0 and report["policies"][0]["verdict"] == "converged", f"exit {rc}: {report['policies'][0]}")

    # Traffic between two scheduled runs, on the same connections: the next run rests on it, read
    # from the real kernel's tcp_info counters and pvesim's taps of the QEMU guest.
    guest.run(f"dd if=/mnt/movies/{topo.PROBE_FILE} of=/dev/null bs=1M count=32 iflag=direct status=none")
    rc, report, err = ctl.pathwarden(binary, settings, "reconcile", policies)
    p = report["policies"][0]
    check(rc == 0 and p["verdict"] == "converged", f"exit {rc}: {json.dumps(p, indent=1)}\n{err[-1500:]}")
    rests = p.get("rests_on") or ""
    check(" of NFS traffic on net1 since the last run (" in rests and "none elsewhere" in rests, f"rests on: {rests}")
    status = subprocess.run([binary, "--config", settings, "status"], stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, timeout=60)
    check(status.returncode == 0 and f"  rests on: {rests}" in status.stdout,
          f"status:\n{status.stdout}{status.stderr}")


# ---- observed through the QEMU guest agent (issue 43) ----------------------------------------------

TRAP_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "examples", "lab", "trap")


def _observe_via(config, via, access="exec"):
    """A copy of the settings, beside them, with spec.observe set."""
    with open(config) as f:
        text = f.read()
    out = os.path.join(os.path.dirname(config), f"pathwarden-{via}-{access}.yaml")
    with open(out, "w") as f:
        f.write(text.rstrip("\n") + f"\n  observe:\n    via: {via}\n    agent_access: {access}\n")
    return out


def _read_access_view(facts):
    """The facts the agent's read access can see (no program in the guest): without the
    connections' tcp_info, the NICs' permanent MACs, queues and channels, the mounts' statfs
    answers, the path-MTU probes and sunrpc's transports (a directory a file read cannot list);
    interfaces, addresses and connections in a fixed order (the agent lists interfaces as
    getifaddrs does, the script by name)."""
    out = dict(facts)
    out["mounts"] = [{k: v for k, v in m.items() if k not in ("answer", "answer_error")} for m in facts["mounts"]]
    out["path_mtu"] = {}
    out["sunrpc"] = {"tree": "unknown", "transports": []}
    out["interfaces"] = sorted(({k: v for k, v in i.items()
                                 if k not in ("permanent_mac", "channels", "rx_queues", "tx_queues",
                                              "queues_unknown")} for i in facts["interfaces"]),
                               key=lambda i: i["name"])
    out["nfs_connections"] = sorted(({k: v for k, v in c.items()
                                      if k not in ("bytes_acked", "bytes_received", "bytes_sent", "info")}
                                     for c in facts["nfs_connections"]), key=lambda c: c["local_port"])
    out["addresses"] = sorted(facts["addresses"], key=lambda a: (a["interface"], a["address"]))
    return out


# What differs between two reads of the same guest by nature, not by channel: counters that only
# grow (the NFS lease renewals move a few bytes between the reads), tcp_info's live values, a
# mount's age, a transport's idle time (sends and receives, its counters, are compared by name).
# Everything else must be equal, field by field.
GROWING = {"rx_bytes", "rx_packets", "tx_bytes", "tx_packets", "sends", "receives", "bytes_acked",
           "bytes_received", "bytes_sent", "normal_read", "normal_write", "direct_read", "direct_write",
           "server_read", "server_write", "read_pages", "write_pages"}


def _same_facts(ssh, agent, path="facts"):
    """Field by field: equal, or (GROWING) not smaller in the later read, the agent's."""
    if isinstance(ssh, dict):
        check(isinstance(agent, dict) and set(ssh) == set(agent),
              f"{path}: keys {sorted(ssh)} vs {sorted(agent or {})}")
        for k in ssh:
            if k == "info":  # tcp_info: rtt, cwnd, lastsnd... change by the millisecond; the keys stay
                check(set(ssh[k]) == set(agent[k]), f"{path}.info keys: {sorted(ssh[k])} vs {sorted(agent[k])}")
            elif k == "age_seconds":
                check((ssh[k] is None) == (agent[k] is None), f"{path}.age_seconds: {ssh[k]} vs {agent[k]}")
            elif k == "fields":  # a transport's numbers as printed: counters, but also its idle time
                check(len(ssh[k]) == len(agent[k]), f"{path}.fields: {ssh[k]} vs {agent[k]}")
            elif k in GROWING and isinstance(ssh[k], int):
                check(agent[k] is not None and agent[k] >= ssh[k], f"{path}.{k}: {ssh[k]} then {agent[k]}")
            else:
                _same_facts(ssh[k], agent[k], f"{path}.{k}")
    elif isinstance(ssh, list):
        check(isinstance(agent, list) and len(ssh) == len(agent), f"{path}: {len(ssh)} vs {len(agent or [])} entries")
        for i, (a, b) in enumerate(zip(ssh, agent)):
            _same_facts(a, b, f"{path}[{i}]")
    else:
        check(ssh == agent, f"{path}: {ssh!r} over SSH, {agent!r} through the agent")


def _facts(binary, config, policies):
    out = os.path.join(tempfile.mkdtemp(prefix="pw-facts-"), "facts.json")
    proc = subprocess.run([binary, "--config", config, "plan", "--facts-out", out, policies], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=600)
    check(proc.returncode in (0, 3), f"plan exit {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    with open(out) as f:
        return json.load(f)[topo.GUEST_NAME]


def _ssh_logins(guest, since):
    logins = guest.run(f"journalctl -q -o cat --since=@{since} _COMM=sshd | grep 'Accepted publickey' || true").stdout
    return [line for line in logins.splitlines() if line.strip()]


def test_agent(binary):
    """The guest read through its QEMU guest agent (spec.observe.via: agent): the same facts as over
    SSH, field by field, and the same verdicts — the trunked trap rolled back, the seed's fix
    verified, the next run converged without a single SSH login."""
    ctl.reset_to_trap()
    guest = lab.Guest()
    ssh_cfg = ctl.operator_settings()
    agent_cfg = _observe_via(ssh_cfg, "agent")
    # The seed's fix with queues=8 (as policies/movies-10g): the NIC change and the guest's
    # channels go through the run as well.
    fix = ctl.policy_dir("movies", seed_fix(probe_bytes=topo.TEST_PROBE, queues=8))
    over_ssh = _facts(binary, ssh_cfg, fix)
    through_agent = _facts(binary, agent_cfg, fix)
    check(over_ssh["observed_via"] == "ansible" and through_agent["observed_via"] == "agent",
          f"channels: {over_ssh['observed_via']}, {through_agent['observed_via']}")
    # The sudo check is the SSH user's (sudo -n true as pwadmin): the agent runs as root, so it has
    # none. Everything else, field by field.
    check(over_ssh.pop("sudo") is not None and through_agent.pop("sudo") is None, "sudo check")
    for k in ("observed_via", "agent_unused"):
        over_ssh.pop(k), through_agent.pop(k)
    check(any(m["fstype"].startswith("nfs") for m in over_ssh["mounts"]) and over_ssh["nfs_connections"]
          and len(over_ssh["interfaces"]) >= 4, f"the trap's facts are not what this test needs: {over_ssh}")
    _same_facts(over_ssh, through_agent)
    # Read access (file-read and the interface list, no program): the same, but for what only a
    # program can tell, which it reports as unknown.
    reader_cfg = _observe_via(ssh_cfg, "agent", "read")
    read_only = _facts(binary, reader_cfg, fix)
    check(read_only.pop("observed_via") == "agent" and read_only.pop("sudo") is None, "read access: channel")
    read_only.pop("agent_unused")
    check(all(i["queues_unknown"] and i["permanent_mac"] == "" for i in read_only["interfaces"])
          and all(c["bytes_acked"] is None for c in read_only["nfs_connections"]),
          f"read access claims what it cannot see: {read_only['interfaces']} {read_only['nfs_connections']}")
    _same_facts(_read_access_view(over_ssh), _read_access_view(read_only))

    rc, report, err = ctl.pathwarden(binary, agent_cfg, "reconcile", TRAP_DIR)
    p = report["policies"][0]
    if lab.nas_trunks():
        check(rc == 4 and p["verdict"] == "rolled-back" and p["cause"] == "wrong-path" and p["observed_via"] == "agent",
              f"trap: exit {rc}:\n{json.dumps(p, indent=1)[-3000:]}\n{err[-1500:]}")
        check("trunk" in (p["verification"]["diagnosis"] or ""), f"diagnosis: {p['verification']['diagnosis']}")
    else:
        # NFS-Ganesha: the trap's link2 mount has a client of its own, as the policy asks: adopted.
        check(rc == 2 and p["verdict"] == "converged" and p["changed"] and p["observed_via"] == "agent"
              and not any("trunk" in w for w in p["warnings"]),
              f"trap on {lab.nas_server()}: exit {rc}:\n{json.dumps(p, indent=1)[-3000:]}\n{err[-1500:]}")

    rc, report, err = ctl.pathwarden(binary, agent_cfg, "reconcile", fix)
    p = report["policies"][0]
    check(rc == 2 and p["verdict"] == "verified" and p["observed_via"] == "agent",
          f"fix: exit {rc}:\n{json.dumps(p, indent=1)[-3000:]}\n{err[-1500:]}")

    since = guest.run("date +%s").stdout.strip()
    rc, report, err = ctl.pathwarden(binary, agent_cfg, "reconcile", fix)
    p = report["policies"][0]
    check(rc == 0 and p["verdict"] == "converged" and p["observed_via"] == "agent" and p["agent_unused"] is None,
          f"rerun: exit {rc}:\n{json.dumps(p, indent=1)[-3000:]}\n{err[-1500:]}")
    check(not _ssh_logins(guest, since), f"a converged run through the agent logged in over SSH: "
                                         f"{_ssh_logins(guest, since)}")
    # And with read access: converged on the address check, the channels said unchecked.
    rc, report, err = ctl.pathwarden(binary, reader_cfg, "reconcile", fix)
    p = report["policies"][0]
    check(rc == 0 and p["verdict"] == "converged" and p["observed_via"] == "agent"
          and any("not checked against queues=8" in n for n in p["notes"])
          and "read access reads none" in (p["rests_on"] or "") and "address check only" in p["rests_on"],
          f"read access rerun: exit {rc}:\n{json.dumps(p, indent=1)[-3000:]}\n{err[-1500:]}")
    check(not _ssh_logins(guest, since), f"a run through the agent's read access logged in over SSH: "
                                         f"{_ssh_logins(guest, since)}")
    ctl.reset_to_trap()


# The seed's trap fixed with NFSv4.2 kept (issue 44): the policy chooses trunking:
# move-transport. The trap's hand-written entries: /mnt/backup (link1's address, v4.2) and
# /mnt/movies (link2's address, v4.2, trunked onto backup's client). The NAS is named as the
# guest's resolver knows it, so the mount is re-made by that name and trunks again; the move
# then takes the client (both mounts) to link2 without unmounting /mnt/backup.
MOVE = seed_fix(options=["vers=4.2", "_netdev"], server=topo.LINK2["nas_name"],
                nas_addresses=[topo.LINK1["nas_name"]], trunking="move-transport", probe_bytes=topo.TEST_PROBE,
                reason="NFSv4.2 kept: the NAS's client is moved to the 10 GbE address (trunking)")


def _mount_ids(guest):
    """Mount point -> the kernel's mount ID (/proc/self/mountinfo): a re-made mount gets a new one."""
    out = {}
    for line in guest.run("cat /proc/self/mountinfo").stdout.splitlines():
        fields = line.split()
        out[fields[4]] = fields[0]
    return out


def _mount_age(guest, path):
    """Seconds since the mount at PATH was made (its /proc/self/mountstats "age:")."""
    stats = guest.run("cat /proc/self/mountstats").stdout.split(f" mounted on {path} with fstype ", 1)
    check(len(stats) == 2, f"{path} is not in mountstats")
    age = re.search(r"\n\s*age:\s*(\d+)", stats[1].split("\ndevice ", 1)[0])
    check(age is not None, f"{path} has no age in mountstats")
    return int(age.group(1))


def test_move_transport(binary):
    ctl.reset_to_trap()
    guest = lab.Guest()
    if not lab.nas_trunks():
        return _move_transport_not_trunked(binary, guest)
    trapped = guest.helper("read", "/mnt/movies", topo.PROBE_FILE, str(topo.TEST_PROBE_BYTES))
    check(trapped["deltas"][topo.LINK1["name"]]["rx"] > topo.TEST_PROBE_BYTES * 0.9,
          f"the trap does not ride link1 before: {trapped}")
    backup_id = _mount_ids(guest)["/mnt/backup"]
    before = ctl.guest_state()
    rc, report, err = ctl.pathwarden(binary, ctl.operator_settings(), "reconcile", ctl.policy_dir("movies", MOVE))
    p = report["policies"][0]
    check(rc == 2 and p["verdict"] == "verified",
          f"exit {rc}:\n{json.dumps(report, indent=1)[-5000:]}\n{err[-2000:]}")
    after = ctl.guest_state()
    mounts = {line.split()[1]: line for line in after["mounts"]}
    check("vers=4.2" in mounts["/mnt/movies"] and f"addr={topo.LINK2['nas']}" in mounts["/mnt/movies"],
          f"/mnt/movies after: {mounts['/mnt/movies']}")
    # /mnt/backup was not unmounted: same mount, same device, now riding link2's address too.
    check(_mount_ids(guest)["/mnt/backup"] == backup_id, "/mnt/backup was re-made")
    check(mounts["/mnt/backup"].startswith(f"{topo.LINK1['nas']}:") and f"addr={topo.LINK2['nas']}" in
          mounts["/mnt/backup"], f"/mnt/backup after: {mounts['/mnt/backup']}")
    # Its hand-written entry names link2's NAS now, the rest of its line as it was.
    old_backup = next(line for line in before["fstab"].splitlines() if " /mnt/backup " in line)
    new_backup = next(line for line in after["fstab"].splitlines() if " /mnt/backup " in line)
    check(new_backup == old_backup.replace(topo.LINK1["nas"], topo.LINK2["nas_name"], 1),
          f"/mnt/backup's entry: {old_backup!r} -> {new_backup!r}")
    moved = guest.helper("read", "/mnt/movies", topo.PROBE_FILE, str(topo.TEST_PROBE_BYTES))
    check(moved["deltas"][topo.LINK2["name"]]["rx"] > topo.TEST_PROBE_BYTES * 0.9
          and moved["deltas"][topo.LINK1["name"]]["rx"] < topo.TEST_PROBE_BYTES * 0.05,
          f"the bytes after the move: {moved}")
    rc, report, err = ctl.pathwarden(binary, ctl.operator_settings(), "reconcile", ctl.policy_dir("movies", MOVE))
    p = report["policies"][0]
    check(rc == 0 and p["verdict"] == "converged", f"rerun: exit {rc}:\n{json.dumps(p, indent=1)[-3000:]}")
    # The move is the kernel's memory only; the fstab makes it hold: after a reboot both mounts
    # are made by the 10 GbE name, one client at link2's address, and the next run is converged.
    pvesim.reboot_guest()
    check(lab.wait_for_guest(), "the guest did not answer over SSH after the reboot")
    # The lab image masks systemd-networkd-wait-online (boot time), so its _netdev mounts race
    # the links' addresses at boot and fail "Network is unreachable"; a stock guest waits for
    # network-online.target. So the fstab's units are started as that target would start them.
    guest.run("systemctl reset-failed; systemctl start remote-fs.target", timeout=180)
    booted = {line.split()[1]: line for line in ctl.guest_state()["mounts"]}
    for path in ("/mnt/backup", "/mnt/movies"):
        check(path in booted and booted[path].startswith(topo.LINK2["nas_name"] + ":")
              and f"addr={topo.LINK2['nas']}" in booted[path], f"{path} after the reboot: {booted.get(path)}")
    rebooted = guest.helper("read", "/mnt/movies", topo.PROBE_FILE, str(topo.TEST_PROBE_BYTES))
    check(rebooted["deltas"][topo.LINK2["name"]]["rx"] > topo.TEST_PROBE_BYTES * 0.9,
          f"the bytes after the reboot: {rebooted}")
    rc, report, err = ctl.pathwarden(binary, ctl.operator_settings(), "reconcile", ctl.policy_dir("movies", MOVE))
    check(rc == 0 and report["policies"][0]["verdict"] == "converged",
          f"after the reboot: exit {rc}:\n{json.dumps(report['policies'][0], indent=1)[-3000:]}")
    ctl.reset_to_trap()


def _move_transport_not_trunked(binary, guest):
    """NFS-Ganesha: the trap's two mounts ride their own addresses side by side (one client each),
    which a trunking server cannot show, so the planner foresees no trunking: /mnt/movies is
    re-made by the name, no move step, /mnt/backup and its hand-written entry are left alone."""
    before = ctl.guest_state()
    backup_id = _mount_ids(guest)["/mnt/backup"]
    rc, report, err = ctl.pathwarden(binary, ctl.operator_settings(), "reconcile", ctl.policy_dir("movies", MOVE))
    p = report["policies"][0]
    check(rc == 2 and p["verdict"] == "verified" and not any(c["action"] == "move-transport" for c in p["changes"])
          and not any("trunk" in w for w in p["warnings"]),
          f"{lab.nas_server()}: exit {rc}:\n{json.dumps(report, indent=1)[-5000:]}\n{err[-2000:]}")
    after = ctl.guest_state()
    mounts = {line.split()[1]: line for line in after["mounts"]}
    check(f"addr={topo.LINK2['nas']}" in mounts["/mnt/movies"] and f"addr={topo.LINK1['nas']}" in mounts["/mnt/backup"]
          and _mount_ids(guest)["/mnt/backup"] == backup_id, f"mounts after: {mounts}")
    line = {ln for ln in before["fstab"].splitlines() if " /mnt/backup " in ln}
    check(line == {ln for ln in after["fstab"].splitlines() if " /mnt/backup " in ln},
          f"/mnt/backup's entry changed:\n{before['fstab']}\n{after['fstab']}")
    rc, report, err = ctl.pathwarden(binary, ctl.operator_settings(), "reconcile", ctl.policy_dir("movies", MOVE))
    check(rc == 0 and report["policies"][0]["verdict"] == "converged",
          f"rerun: exit {rc}:\n{json.dumps(report['policies'][0], indent=1)[-3000:]}")
    ctl.reset_to_trap()


# Effective, not asked (issue 44): a mount asking nconnect=4 of an address and version the guest
# already has a client for (made by hand with one connection) gets that client's one connection.
# `verify` reports the kernel's count beside the asked one and names the mount that made the
# client; reconcile re-makes both, and the kernel's client then has four transports.
NCONNECT = seed_fix(options=["vers=4.2", "nconnect=4", "_netdev"], nas_addresses=[], probe_bytes=topo.TEST_PROBE,
                    reason="four connections to the NAS", restart=None)


def test_transports(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("reset")
    nas = topo.LINK2["nas"]
    guest.run(f"mkdir -p /mnt/first /mnt/movies && mount -t nfs -o vers=4.2 {nas}:{topo.BACKUP_EXPORT} /mnt/first"
              f" && mount -t nfs -o vers=4.2,nconnect=4 {nas}:{topo.MOVIES_EXPORT} /mnt/movies")
    try:
        policies = ctl.policy_dir("movies", NCONNECT)
        rc, report, err = ctl.pathwarden(binary, ctl.operator_settings(), "verify", policies)
        v = report["policies"][0]["verification"]
        check(v and v["verdict"] == "precondition-failed" and "that /mnt/first made first" in v["summary"],
              f"verify: exit {rc}:\n{json.dumps(report, indent=1)[-3000:]}\n{err[-1500:]}")
        check(v["transports"] == {"asked": 4, "nconnect": 1, "mountstats": 1, "kernel": 1, "addresses": [nas]},
              f"transports as verified: {v['transports']}")
        rc, report, err = ctl.pathwarden(binary, ctl.operator_settings(), "reconcile", policies)
        p = report["policies"][0]
        check(rc == 2 and p["verdict"] == "verified",
              f"reconcile: exit {rc}:\n{json.dumps(report, indent=1)[-4000:]}\n{err[-1500:]}")
        t = p["verification"]["transports"]
        check(t == {"asked": 4, "nconnect": 4, "mountstats": 4, "kernel": 4, "addresses": [nas]},
              f"transports after the change: {t}")
    finally:
        guest.run("umount -f /mnt/first; rmdir /mnt/first", check=False)
        guest.helper("reset")


# Stale file handles (issue 44): the NAS re-creates the export under a mount pathwarden owns (a
# dataset destroyed and made again: same path, same files, a new fsid). Every handle the guest
# holds, the mount's root too, is unknown to the NAS now: the facts' statfs meets ESTALE, the plan
# re-makes the mount (its fstab line untouched) and proves it; the next run is converged.
STALE = seed_fix(options=["vers=4.2", "_netdev"], nas_addresses=[], probe_bytes=topo.TEST_PROBE,
                 reason="a mount the NAS forgot is made anew", restart=None)


def _clean_guest(policy):
    """net1 as the lab made it, the guest without NFS mounts or entries, the policy in a directory
    of its own and the operator's settings: (guest, policy directory, settings)."""
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("reset")
    return guest, ctl.policy_dir("movies", policy), ctl.operator_settings()


def test_stale(binary):
    guest, policies, settings = _clean_guest(STALE)
    try:
        rc, report, err = ctl.pathwarden(binary, settings, "reconcile", policies)
        check(rc == 2 and report["policies"][0]["verdict"] == "verified",
              f"first reconcile: exit {rc}:\n{json.dumps(report, indent=1)[-3000:]}\n{err[-1500:]}")
        made_age, made_at = _mount_age(guest, "/mnt/movies"), time.monotonic()
        fstab = ctl.guest_state()["fstab"]
        nas_channel.command("recreate", topo.MOVIES_EXPORT)
        st = guest.run("stat -f /mnt/movies", check=False)
        check(st.returncode != 0 and "Stale file handle" in st.stderr,
              f"the re-created export did not make the mount stale: exit {st.returncode}: {st.stderr}")
        # A scheduled `reconcile --check` says it (drift, exit 3), and what a run will do.
        rc, report, err = ctl.pathwarden(binary, settings, "reconcile", "--check", policies)
        p = report["policies"][0]
        planned = [s["text"] for s in p["planned"]]
        check(rc == 3 and p["verdict"] == "drift" and any("stale file handles" in t for t in planned),
              f"reconcile --check: exit {rc}:\n{json.dumps(p, indent=1)[-3000:]}")
        rc, report, err = ctl.pathwarden(binary, settings, "reconcile", policies)
        p = report["policies"][0]
        check(rc == 2 and p["verdict"] == "verified",
              f"reconcile: exit {rc}:\n{json.dumps(report, indent=1)[-4000:]}\n{err[-1500:]}")
        # Made anew: younger than the first mount would be by now (its mount ID and device number
        # are the lowest free ones, which the old mount just gave back: equal, so no proof).
        age = _mount_age(guest, "/mnt/movies")
        check(age < made_age + (time.monotonic() - made_at), f"/mnt/movies was not made anew (age {age} s)")
        check(ctl.guest_state()["fstab"] == fstab, "the fstab changed, though only the mount was stale")
        check(guest.run("stat -f /mnt/movies", check=False).returncode == 0, "/mnt/movies is still stale")
        rc, report, err = ctl.pathwarden(binary, settings, "reconcile", policies)
        check(rc == 0 and report["policies"][0]["verdict"] == "converged",
              f"rerun: exit {rc}:\n{json.dumps(report['policies'][0], indent=1)[-3000:]}")
    finally:
        guest.helper("reset")


# MTU along the path (issue 44): the policy asks jumbo frames to the NAS over link2. At 1500 the
# guest interface is a named precondition; with every hop at 9000 the mount is made and proven;
# then the NAS's port on the lab's switch (its tap on vmbr2) drops to 1500, a hop that forwards
# nothing bigger and says nothing (a Linux bridge drops an oversized frame silently): the
# don't-fragment probe finds the black hole and the run stops on it.
JUMBO = seed_fix(options=["vers=4.2", "_netdev"], nas_addresses=[], probe_bytes=topo.TEST_PROBE, mtu=9000,
                 reason="jumbo frames to the NAS", restart=None)
LINK2_TAPS = (f"tap{topo.GUEST_VMID}i1", f"tap{topo.NAS_VMID}i1")


def _link2_mtu(guest, mtu, nas_tap=None):
    """link2 at MTU on every hop: the guest's interface, the switch's ports and bridge, the NAS's
    interface; nas_tap, when given, is the NAS's port's own (the hop that carries less)."""
    sw = ["ip", "-n", topo.NETNS, "link", "set"]
    for tap in LINK2_TAPS:
        subprocess.run(sw + [tap, "mtu", str(mtu)], check=True)
    subprocess.run(sw + [topo.BRIDGE_LINK2, "mtu", str(mtu)], check=True)
    if nas_tap is not None:
        subprocess.run(sw + [LINK2_TAPS[1], "mtu", str(nas_tap)], check=True)
    guest.run(f"ip link set {topo.LINK2['name']} mtu {mtu}")
    nas_channel.command("mtu", topo.LINK2["name"], str(mtu))


def test_mtu(binary):
    guest, policies, settings = _clean_guest(JUMBO)
    try:
        rc, report, err = ctl.pathwarden(binary, settings, "reconcile", policies)
        p = report["policies"][0]
        errors = " ".join(p.get("errors") or [])
        check(p["verdict"] == "precondition-failed" and "runs MTU 1500, the policy asks 9000" in errors,
              f"link2 at 1500: exit {rc}:\n{json.dumps(p, indent=1)[-3000:]}\n{err[-1500:]}")
        check("/mnt/movies" not in guest.run("cat /proc/mounts").stdout, "mounted although the MTU is wrong")

        _link2_mtu(guest, 9000)
        rc, report, err = ctl.pathwarden(binary, settings, "reconcile", policies)
        p = report["policies"][0]
        check(rc == 2 and p["verdict"] == "verified", f"jumbo: exit {rc}:\n{json.dumps(p, indent=1)[-4000:]}")
        rc, report, err = ctl.pathwarden(binary, settings, "reconcile", policies)
        p = report["policies"][0]
        check(rc == 0 and p["verdict"] == "converged" and
              any("a don't-fragment ping of MTU 9000 crossed" in n for n in p.get("notes") or []),
              f"jumbo, rerun: exit {rc}:\n{json.dumps(p, indent=1)[-3000:]}")

        _link2_mtu(guest, 9000, nas_tap=1500)
        rc, report, err = ctl.pathwarden(binary, settings, "reconcile", policies)
        p = report["policies"][0]
        errors = " ".join(p.get("errors") or [])
        check(p["verdict"] == "precondition-failed" and
              f"the path to {topo.LINK2['nas']} drops packets of MTU 9000 ({topo.LINK2['name']}'s) without a word"
              in errors, f"the 1500 hop: exit {rc}:\n{json.dumps(p, indent=1)[-3000:]}\n{err[-1500:]}")
    finally:
        guest.helper("reset")
        _link2_mtu(guest, 1500)


if __name__ == "__main__":
    lab.require_nas_server()
    case_main({"misrouted": test_misrouted, "many": test_many, "many_one_trunks": test_many_one_trunks,
               "adopt": test_adopt, "import": test_import, "drift": test_drift, "agent": test_agent,
               "move_transport": test_move_transport, "transports": test_transports, "stale": test_stale,
               "mtu": test_mtu}, __doc__)
