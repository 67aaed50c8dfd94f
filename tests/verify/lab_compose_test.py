#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The second field report as it really is (shared/seeds/002, issue 16) on the real lab: a Docker
Compose NFS volume made by Docker's local driver in the QEMU guest (Debian's docker.io and
docker-compose), the knfsd NAS VM, pvesim, and the real `pathwarden` over SSH as an operator
reaches the guest (the unprivileged pwadmin with `become: true`, a relative inventory).

usage: lab_compose_test.py PATHWARDEN CASE
  seed               the seed's volume on one connection (o: addr=<10 GbE>,rw,nfsvers=4.2):
                     `reconcile --check` finds drift (exit 3, nconnect) with the remedy and writes
                     nothing; the test changes the Compose file as the remedy says and re-creates
                     the project as an operator would; then `verify --probe` proves the volume
                     with a read probe and a write probe (bytes leave on net1's tx) with the
                     commit-latency figure, the probe's files gone and nothing else on the share
                     touched
  misrouted          the same volume with a host route through the old link: wrong-path
  unobserved         Docker that does not answer (dockerd stopped), and a guest reached without
                     become by a user outside the docker group: unobserved (exit 6), never drift
  systemd_unit       a mount made by a systemd .mount unit (the NAS named by host name, as the
                     unit names it) without nconnect: drift with the unit's remedy, the unit
                     edited as it says, then verified; the unit is never written by pathwarden
  backup_ro          the backup VM's read-only re-export (vers=3,ro,nolock over the 1 GbE link)
                     as a managed fstab policy: applied and verified, then nothing to do
  stale              the NAS re-creates the volume's export under the running project: drift
                     whose remedy is the project's down and up (no volume removal); followed, the
                     volume is proven
"""
import json
import re

from pwtest.lab import controller as ctl
from pwtest.lab import lab, nas as nas_channel, scenarios
from pwtest.lab import topology as topo
from pwtest.policies import NAS_1G, NAS_10G, storage_path
from pwtest.script import case_main, check

PROJECT, VOLUME = topo.COMPOSE_PROJECT, topo.COMPOSE_VOLUME
WRITE_PROBE = ".pathwarden-probe"  # a name of its own: the write probe makes it and removes it


def compose_policy(**fields):
    """The seed's volume as a verify-only policy: NFSv4.2 with nconnect=4 over the 10 GbE link."""
    fields.setdefault("probe_bytes", topo.TEST_PROBE)
    fields.setdefault("options", ["nfsvers=4.2", "nconnect=4"])
    fields.setdefault("reason", "nfsvers=4.2 with nconnect=4: one TCP connection capped the volume")
    return storage_path("postgres-data", topo.GUEST_VMID, topo.GUEST_NAME, server=NAS_10G,
                        export=topo.COMPOSE_EXPORT, path=None, owner="compose", compose=(PROJECT, VOLUME), **fields)


def show(report, err=""):
    return json.dumps(report, indent=1)[-6000:] + ("\n" + err[-2000:] if err else "")


def share_listing(guest):
    """Every file on the volume with its size and modification time (what 'touched' would change)."""
    out = guest.run(f"find {topo.COMPOSE_MOUNTPOINT} -mindepth 1 -printf '%P %s %T@\\n' | sort").stdout
    return out.splitlines()


def transports(guest):
    """nconnect as the kernel runs it: the xprt lines of the volume's mountstats entry."""
    stats = guest.run("cat /proc/self/mountstats").stdout
    entry = stats.split(f"mounted on {topo.COMPOSE_MOUNTPOINT} ", 1)
    check(len(entry) == 2, f"{topo.COMPOSE_MOUNTPOINT} not in mountstats")
    return sum(1 for line in entry[1].split("\ndevice ", 1)[0].splitlines() if line.strip().startswith("xprt:"))


def verify_probe(binary, config, text):
    rc, report, err = ctl.pathwarden(binary, config, "verify", ctl.policy_dir("compose", text), "--probe")
    return rc, report["policies"][0], err


def intended_tx_share(v):
    """The intended NIC's share of the probe's bytes, and that NIC's own entry."""
    intended = next((i for i in v.get("interfaces", []) if i.get("intended")), {})
    return v.get("intended_share"), intended


def test_compose_seed(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("apply", json.dumps(scenarios.scenario("compose-single")))
    check(transports(guest) == 1, "the seed's volume should run on one connection")
    config = ctl.operator_settings()
    compose_text = guest.run(f"cat {topo.COMPOSE_DIR}/docker-compose.yml").stdout

    # 1. Drift, with the remedy in the owner's words; nothing is written.
    rc, report, err = ctl.pathwarden(binary, config, "reconcile", "--check",
                                     ctl.policy_dir("compose", compose_policy()))
    p = report["policies"][0]
    check(rc == 3 and p["verdict"] == "drift", f"reconcile --check: exit {rc}\n{show(report, err)}")
    remedy = p.get("remedy") or []
    text = "\n".join(remedy)
    o = re.search(r'o: "([^"]+)"', text)
    check(o is not None and o.group(1) == f"addr={NAS_10G},nfsvers=4.2,nconnect=4", f"remedy's o: string:\n{text}")
    down_up = re.search(r"(docker compose down && docker volume rm \S+ && docker compose up -d)", text)
    check(down_up is not None and f"docker volume rm {topo.COMPOSE_VOLUME_NAME} " in down_up.group(1) + " ",
          f"remedy's re-creation:\n{text}")
    check("nconnect" in json.dumps(p), f"the drift should name nconnect:\n{show(report)}")
    check(guest.run(f"cat {topo.COMPOSE_DIR}/docker-compose.yml").stdout == compose_text,
          "pathwarden changed the Compose file")
    check(topo.COMPOSE_MOUNTPOINT not in guest.run("cat /etc/fstab").stdout, "pathwarden wrote an fstab entry")
    # A plain reconcile (not --check) on a mount it does not own writes nothing either: drift.
    rc, report, err = ctl.pathwarden(binary, config, "reconcile", ctl.policy_dir("compose", compose_policy()))
    check(rc == 3 and report["policies"][0]["verdict"] == "drift", f"reconcile: exit {rc}\n{show(report, err)}")
    check(transports(guest) == 1, "reconcile re-made the volume")

    # 2. The operator follows the remedy: the o: string into the Compose file, then the commands
    #    (the lab has Compose v1, which the remedy names: docker-compose).
    guest.compose_file(o.group(1))
    guest.run(f"cd {topo.COMPOSE_DIR} && " + down_up.group(1).replace("docker compose", "docker-compose"), timeout=300)
    live = guest.run(f"grep ' {topo.COMPOSE_MOUNTPOINT} ' /proc/mounts").stdout
    check("nconnect=4" in live and "vers=4.2" in live, f"the re-created volume: {live}")
    check(transports(guest) == 4, "nconnect=4 should give four transports")

    # 3. Proven: a read probe, then a write probe with the commit-latency figure.
    rc, report, err = ctl.pathwarden(binary, config, "reconcile", "--check",
                                     ctl.policy_dir("compose", compose_policy()))
    check(rc == 0 and report["policies"][0]["verdict"] == "converged",
          f"after the remedy: exit {rc}\n{show(report, err)}")
    rc, p, err = verify_probe(binary, config, compose_policy())
    v = p.get("verification") or {}
    check(v.get("verdict") == "verified" and v.get("carried_by") in (
        None, "net1"), f"read probe: exit {rc}\n{show(p, err)}")
    before = share_listing(guest)
    rc, p, err = verify_probe(binary, config, compose_policy(
        probe_file=WRITE_PROBE, direction="write", commit_cycles=64))
    v = p.get("verification") or {}
    check(v.get("verdict") == "verified", f"write probe: exit {rc}\n{show(p, err)}")
    check(v.get("direction") == "write", f"direction: {v.get('direction')}")
    share, intended = intended_tx_share(v)
    check(intended.get("name") == "link2" and (intended.get("tx_bytes") or 0) >= topo.TEST_PROBE_BYTES,
          f"the write's bytes should leave on link2's tx:\n{show(p)}")
    commit = v.get("commit") or {}
    check(commit.get("cycles") == 64 and (commit.get("commits_per_second") or 0) > 0, f"commit figure: {commit}")
    print(f"write probe: intended share {share}, commit figure {commit}")
    after = share_listing(guest)
    check(after == before, f"the share changed:\nbefore {before}\nafter {after}")
    check(all(WRITE_PROBE not in line for line in after), "the probe's file was left on the share")

    # 4. A file of that name that is not pathwarden's is never overwritten (nor removed).
    guest.run(f"echo keep > {topo.COMPOSE_MOUNTPOINT}/{WRITE_PROBE}")
    try:
        rc, p, err = verify_probe(binary, config, compose_policy(probe_file=WRITE_PROBE, direction="write"))
        v = p.get("verification") or {}
        check(v.get("verdict") != "verified" and "already exists" in json.dumps(
            p), f"existing file: exit {rc}\n{show(p, err)}")
        check(guest.run(f"cat {topo.COMPOSE_MOUNTPOINT}/{WRITE_PROBE}").stdout ==
              "keep\n", "the existing file was touched")
    finally:
        guest.run(f"rm -f {topo.COMPOSE_MOUNTPOINT}/{WRITE_PROBE}", check=False)


def test_compose_misrouted(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    # The volume as the remedy has it (made so from the start, as the seed case leaves it after
    # its down/up), so only the path is wrong.
    misrouted = scenarios.scenario("compose-misrouted")
    misrouted["compose"] = dict(misrouted["compose"], o=f"addr={NAS_10G},nfsvers=4.2,nconnect=4")
    applied = guest.helper("apply", json.dumps(misrouted))
    check("nconnect=4" in applied["compose"]["mount"] and transports(guest) == 4,
          f"the misrouted volume is not the remedy's: {applied['compose']['mount']}")
    rc, p, err = verify_probe(binary, ctl.operator_settings(), compose_policy())
    v = p.get("verification") or {}
    check(v.get("verdict") == "wrong-path", f"misrouted volume: exit {rc}\n{show(p, err)}")
    check(v.get("carried_by") in (None, "net0"), f"carried by: {v.get('carried_by')}")
    check(guest.run("grep -c ' nfs' /etc/fstab || true").stdout.strip() == "0", "pathwarden wrote an fstab entry")


def no_become_settings() -> str:
    """The operator's settings for pwadmin without `become`: Docker's socket is root's."""
    config = ctl.operator_settings("pw-lab-nobecome-")
    with open(config) as f:
        text = f.read()
    check("    become: true\n" in text, "operator settings without become: true")
    with open(config, "w") as f:
        f.write(text.replace("    become: true\n", ""))
    return config


def test_compose_unobserved(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("apply", json.dumps(scenarios.scenario("compose-single")))
    policy = ctl.policy_dir("compose", compose_policy())
    check("docker" not in guest.run(f"id -nG {topo.GUEST_OPERATOR}").stdout.split(),
          "pwadmin is in the docker group: the case would prove nothing")
    rc, report, err = ctl.pathwarden(binary, no_become_settings(), "reconcile", "--check", policy)
    p = report["policies"][0]
    check(rc == 6 and p["verdict"] == "unobserved", f"no become: exit {rc}\n{show(report, err)}")
    errors = "\n".join(p.get("errors") or [])
    check("Docker did not list its volumes" in errors and "become" in errors and "docker group" in errors,
          f"the reason should name Docker and the way out (become or the docker group):\n{show(report)}")
    try:
        guest.run("systemctl stop docker.socket docker.service", timeout=120)
        rc, report, err = ctl.pathwarden(binary, ctl.operator_settings(), "reconcile", "--check", policy)
        p = report["policies"][0]
        check(rc == 6 and p["verdict"] == "unobserved", f"dockerd stopped: exit {rc}\n{show(report, err)}")
        check("drift" not in json.dumps(p.get("verdict")), "reported as drift")
    finally:
        guest.run("systemctl start docker.socket docker.service", check=False, timeout=120)


def test_compose_stale(binary):
    """The NAS re-creates the volume's export under the running project (issue 44): drift whose
    remedy is the project's down and up, never a volume removal; followed, the volume is proven."""
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("apply", json.dumps(scenarios.scenario("compose-single")))
    as_configured = compose_policy(options=["nfsvers=4.2"], reason="the volume as the project configures it")
    policy = ctl.policy_dir("compose", as_configured)
    config = ctl.operator_settings()
    try:
        rc, report, err = ctl.pathwarden(binary, config, "reconcile", "--check", policy)
        check(rc == 0 and report["policies"][0]["verdict"] == "converged", f"before: exit {rc}\n{show(report, err)}")
        nas_channel.command("recreate", topo.COMPOSE_EXPORT)
        rc, report, err = ctl.pathwarden(binary, config, "reconcile", "--check", policy)
        p = report["policies"][0]
        check(rc == 3 and p["verdict"] == "drift" and "has stale file handles" in " ".join(p.get("notes") or []),
              f"stale: exit {rc}\n{show(report, err)}")
        remedy = p.get("remedy") or []
        check(remedy and remedy[0].startswith("in project pg's directory: docker compose down && docker compose up -d")
              and not any("docker volume rm" in r or "driver_opts" in r for r in remedy),
              f"the remedy should only make the mount anew: {remedy}")
        # The operator follows it (the lab's Compose is v1, as the remedy says).
        guest.run(f"cd {topo.COMPOSE_DIR} && docker-compose down && docker-compose up -d", timeout=300)
        rc, p, err = verify_probe(binary, config, as_configured)
        v = p.get("verification") or {}
        check(v.get("verdict") == "verified", f"after the remedy: exit {rc}\n{show(p, err)}")
    finally:
        guest.helper("reset")


UNIT = "mnt-movies.mount"


def unit_text(options):
    return (f"[Unit]\nDescription=movies share (lab: a mount pathwarden does not own)\n\n[Mount]\n"
            f"What={topo.LINK2['nas_name']}:{topo.MOVIES_EXPORT}\nWhere=/mnt/movies\nType=nfs\nOptions={options}\n")


def test_systemd_unit(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("reset")
    policy = ctl.policy_dir("movies", storage_path(
        "movies-unit", topo.GUEST_VMID, topo.GUEST_NAME, owner="systemd", server=topo.LINK2["nas_name"],
        export=topo.MOVIES_EXPORT, path="/mnt/movies", options=["vers=4.2", "nconnect=2"], probe_bytes=topo.TEST_PROBE))
    config = ctl.operator_settings()
    try:
        guest.run(f"mkdir -p /mnt/movies && cat > /etc/systemd/system/{UNIT}", input=unit_text("vers=4.2"))
        guest.run(f"systemctl daemon-reload && systemctl start {UNIT}", timeout=180)
        fstab = guest.run("cat /etc/fstab").stdout
        rc, report, err = ctl.pathwarden(binary, config, "reconcile", policy)
        p = report["policies"][0]
        check(rc == 3 and p["verdict"] == "drift", f"reconcile: exit {rc}\n{show(report, err)}")
        text = "\n".join(p.get("remedy") or [])
        want = f"What={topo.LINK2['nas_name']}:{topo.MOVIES_EXPORT}, Type=nfs and Options=vers=4.2,nconnect=2"
        check(f"in the unit {UNIT}" in text and want in text, f"the unit's remedy:\n{text}")
        check(f"systemctl daemon-reload && systemctl restart {UNIT}" in text, f"the restart:\n{text}")
        check(guest.run("cat /etc/fstab").stdout == fstab, "pathwarden changed the fstab")
        check(guest.run(f"cat /etc/systemd/system/{UNIT}").stdout ==
              unit_text("vers=4.2"), "pathwarden changed the unit")
        # The operator edits the unit as the remedy says.
        guest.run(f"cat > /etc/systemd/system/{UNIT}", input=unit_text("vers=4.2,nconnect=2"))
        guest.run(f"systemctl daemon-reload && systemctl restart {UNIT}", timeout=180)
        rc, report, err = ctl.pathwarden(binary, config, "verify", policy, "--probe")
        p = report["policies"][0]
        v = p.get("verification") or {}
        check(v.get("verdict") == "verified" and v.get("carried_by") in (None, "net1"),
              f"after the remedy: exit {rc}\n{show(report, err)}")
        check(v.get("server_address") == NAS_10G,
              f"the name was not resolved to link2's address: {v.get('server_address')}")
    finally:
        guest.run(f"systemctl stop {UNIT}; rm -f /etc/systemd/system/{UNIT}; systemctl daemon-reload", check=False,
                  timeout=180)


def test_backup_ro(binary):
    ctl.reset_nic()
    guest = lab.Guest()
    guest.helper("reset")
    policy = storage_path("postgres-backup", topo.GUEST_VMID, topo.GUEST_NAME, device="net0", server=NAS_1G,
                          export=topo.BACKUP_RO_EXPORT, path="/mnt/pg-backup",
                          options=["vers=3", "ro", "nolock", "_netdev"],
                          reason="read-only re-export for pgBackRest; vers=3, where nolock means something",
                          probe_bytes="16MiB")
    config = ctl.operator_settings()
    rc, report, err = ctl.pathwarden(binary, config, "reconcile", ctl.policy_dir("backup", policy))
    p = report["policies"][0]
    check(rc == 2 and p["verdict"] == "verified", f"backup mount: exit {rc}\n{show(report, err)}")
    line = guest.run("grep ' /mnt/pg-backup ' /proc/mounts").stdout
    check(" ro," in line and "vers=3" in line and "nolock" in line and f"addr={NAS_1G}" in line, f"live mount: {line}")
    check(guest.run("touch /mnt/pg-backup/x", check=False).returncode != 0, "the backup mount is writable")
    rc, report, err = ctl.pathwarden(binary, config, "reconcile", ctl.policy_dir("backup", policy))
    check(rc == 0 and report["policies"][0]["verdict"] == "converged", f"second run: exit {rc}\n{show(report, err)}")
    guest.helper("reset")


if __name__ == "__main__":
    lab.require_nas_server()
    case_main({"seed": test_compose_seed, "misrouted": test_compose_misrouted,
               "unobserved": test_compose_unobserved, "systemd_unit": test_systemd_unit,
               "backup_ro": test_backup_ro, "stale": test_compose_stale}, __doc__)
