"""Runs inside the lab guest (sent over SSH to python3 on stdin): prints one JSON document.

  counters                               byte counters of every interface
  read PATH FILE BYTES                   O_DIRECT read of FILE under PATH, counter deltas around it
  apply SCENARIO_JSON                    reset, then the scenario's routes, fstab entries, mounts
  reset                                  unmount all NFS, drop NFS fstab entries and static routes
  set-mount PATH SERVER EXPORT OPTIONS   rewrite PATH's lab fstab entry and mount it anew
"""
import json
import os
import subprocess
import sys
import time

MARK = "# pwlab scenario"
FSTAB = "/etc/fstab"


def sh(*cmd, check=True):
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, text=True, capture_output=True)
    if check and proc.returncode != 0:
        fail(f"{' '.join(cmd)}: {proc.stderr.strip() or 'exit ' + str(proc.returncode)}")
    return proc


def fail(msg):
    print(json.dumps({"error": msg}))
    sys.exit(1)


def counters():
    out = {}
    for ifname in sorted(os.listdir("/sys/class/net")):
        stats = f"/sys/class/net/{ifname}/statistics"
        with open(f"{stats}/rx_bytes") as rx, open(f"{stats}/tx_bytes") as tx:
            out[ifname] = {"rx": int(rx.read()), "tx": int(tx.read())}
    return out


def mount_line(path):
    with open("/proc/mounts") as f:
        for line in f:
            if line.split()[1] == path:
                return line.strip()
    return None


def nfs_connections():
    proc = sh("ss", "-Htn", "state", "established", "( dport = :2049 )", check=False)
    return [" ".join(line.split()) for line in proc.stdout.splitlines() if line.strip()]


def read_probe(path, name, nbytes):
    if mount_line(path) is None:
        fail(f"{path} is not mounted")
    blocks = max(1, nbytes // (1024 * 1024))
    before = counters()
    t0 = time.monotonic()
    proc = sh("dd", f"if={os.path.join(path, name)}", "of=/dev/null", "bs=1M", f"count={blocks}",
              "iflag=direct", check=False)
    elapsed = time.monotonic() - t0
    after = counters()
    if proc.returncode != 0:
        fail(f"dd {path}/{name}: {proc.stderr.strip()}")
    deltas = {i: {"rx": after[i]["rx"] - before[i]["rx"], "tx": after[i]["tx"] - before[i]["tx"]}
              for i in after if i in before}
    return {"path": path, "file": name, "bytes": blocks * 1024 * 1024, "elapsed_s": round(elapsed, 3),
            "deltas": deltas, "mount": mount_line(path), "connections": nfs_connections()}


def lab_entries():
    with open(FSTAB) as f:
        lines = f.read().splitlines()
    keep, ours = [], []
    skip_next = False
    for line in lines:
        if skip_next:
            ours.append(line)
            skip_next = False
        elif line.startswith(MARK):
            skip_next = True
        else:
            keep.append(line)
    return keep, ours


def write_fstab(lines):
    tmp = FSTAB + ".pwlab-tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, FSTAB)


def without_nfs_entries(lines):
    """fstab lines minus every NFS entry and the comment lines right above it (a scenario's
    marker, or the reason a reconcile wrote): the lab guest's only NFS entries are test ones."""
    out = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 3 and not line.lstrip().startswith("#") and fields[2] in ("nfs", "nfs4"):
            while out and out[-1].lstrip().startswith("#") and not out[-1].startswith("# <file system>"):
                out.pop()
            continue
        out.append(line)
    return out


def reset():
    with open("/proc/mounts") as f:
        nfs = [line.split()[1] for line in f if line.split()[2] in ("nfs", "nfs4")]
    for path in reversed(nfs):
        sh("umount", "-f", path, check=False)
        if mount_line(path):
            sh("umount", "-l", path, check=False)
    with open(FSTAB) as f:
        write_fstab(without_nfs_entries(f.read().splitlines()))
    for line in sh("ip", "-4", "route", "show", "proto", "static").stdout.splitlines():
        sh("ip", "route", "del", *line.split(), check=False)
    return {"reset": True, "nfs_unmounted": nfs}


def apply(scenario):
    reset()
    for route in scenario.get("routes", []):
        sh("ip", "route", "add", *route.split(), "proto", "static")
    keep, _ = lab_entries()
    for m in scenario.get("mounts", []):
        keep.append(f"{MARK} {scenario['name']}")
        keep.append(f"{m['server']}:{m['export']} {m['path']} nfs {m['options']},_netdev 0 0")
    write_fstab(keep)
    for m in scenario.get("mounts", []):
        os.makedirs(m["path"], exist_ok=True)
        sh("mount", m["path"])
    return {"applied": scenario["name"], "mounts": {m["path"]: mount_line(m["path"]) for m in scenario.get("mounts", [])},
            "connections": nfs_connections()}


def set_mount(path, server, export, options):
    with open(FSTAB) as f:
        lines = f.read().splitlines()
    out, replaced, i = [], False, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(MARK) and i + 1 < len(lines) and lines[i + 1].split()[1:2] == [path]:
            out += [line, f"{server}:{export} {path} nfs {options},_netdev 0 0"]
            replaced, i = True, i + 2
            continue
        out.append(line)
        i += 1
    if not replaced:
        fail(f"no lab fstab entry for {path}")
    if mount_line(path):
        sh("umount", path)
    write_fstab(out)
    sh("mount", path)
    return {"path": path, "mount": mount_line(path), "connections": nfs_connections()}


def main(argv):
    if not argv:
        fail("no command")
    cmd = argv[0]
    if cmd == "counters":
        result = counters()
    elif cmd == "read" and len(argv) == 4:
        result = read_probe(argv[1], argv[2], int(argv[3]))
    elif cmd == "apply" and len(argv) == 2:
        result = apply(json.loads(argv[1]))
    elif cmd == "reset":
        result = reset()
    elif cmd == "set-mount" and len(argv) == 5:
        result = set_mount(*argv[1:])
    else:
        fail(f"bad command: {' '.join(argv)}")
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
