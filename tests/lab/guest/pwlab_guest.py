"""Runs inside the lab guest (sent over SSH to python3 on stdin): prints one JSON document.

  counters                               byte counters of every interface
  read PATH FILE BYTES                   O_DIRECT read of FILE under PATH, counter deltas around it
  apply SCENARIO_JSON                    reset, then the scenario's routes, fstab entries, mounts
                                         and Compose project ("compose": see below)
  reset                                  tear down the lab's Compose projects (only when dockerd
                                         runs), unmount all NFS, drop NFS fstab entries and
                                         static routes, remove the Compose directories
  set-mount PATH SERVER EXPORT OPTIONS   rewrite PATH's lab fstab entry and mount it anew
  compose-file O [DEVICE]                rewrite only the lab Compose file's volume `o:` (and
                                         `device:`); nothing else: the caller runs docker-compose

A scenario's "compose" {dir, project, service, image, image_tar, volume, target, o, device}:
DIR/docker-compose.yml as the field report writes it (one service, network_mode none, a named
volume with driver local, driver_opts type nfs, o, device). apply imports the image from
image_tar when `docker image inspect` misses it (no registry), removes what is left of the
project (containers, volumes: a volume keeps its driver_opts), runs `docker-compose -p PROJECT
up -d` and waits until the volume's Mountpoint is in /proc/mounts. The project is recorded in
COMPOSE_STATE so that reset and compose-file find it. reset never starts dockerd: the first
`docker` command would (docker.socket), so it looks at `systemctl is-active docker.service`
first; an inactive dockerd holds no mount, and apply clears a stale volume anyway.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

MARK = "# pwlab scenario"
FSTAB = "/etc/fstab"
COMPOSE_STATE = "/var/lib/pwlab/compose.json"
COMPOSE_LABEL = "com.docker.compose.project"
# The lab's Compose project (topology.COMPOSE_DIR/COMPOSE_PROJECT), for a reset without state.
LAB_COMPOSE_DIR, LAB_COMPOSE_PROJECT = "/srv/pg", "pg"


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


# ---------------------------------------------------------------------------------------------
# Docker Compose (Compose v1, `docker-compose`)

def docker_active():
    """dockerd runs (checked without touching docker.socket, which would start it)."""
    return sh("systemctl", "is-active", "--quiet", "docker.service", check=False).returncode == 0


def compose_state():
    try:
        with open(COMPOSE_STATE) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def compose_yaml(spec, scenario_name):
    return (f"# pwlab scenario {scenario_name}: the field report's Compose project (shared/seeds/002)\n"
            "services:\n"
            f"  {spec['service']}:\n"
            f"    image: {spec['image']}\n"
            # sleep "forever"; as PID 1 it would ignore SIGTERM (no handler) and every
            # `docker-compose down` would wait its 10 s stop timeout: exit on TERM, as postgres does.
            """    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 2147483647 & wait"]\n"""
            "    network_mode: none\n"
            '    restart: "no"\n'
            "    volumes:\n"
            f"      - {spec['volume']}:{spec['target']}\n"
            "\n"
            "volumes:\n"
            f"  {spec['volume']}:\n"
            "    driver: local\n"
            "    driver_opts:\n"
            "      type: nfs\n"
            f"      o: {yaml_scalar(spec['o'])}\n"
            f"      device: {json.dumps(spec['device'])}\n")


def yaml_scalar(text):
    """Plain, as an operator writes `o: addr=...,rw,nfsvers=4.2`; quoted when YAML needs it."""
    return text if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9=,._/+-]*", text) else json.dumps(text)


def compose_teardown(project, directory):
    """Removes what dockerd holds of a project: `docker-compose down` (when its file is there),
    then every container, volume and network labelled with the project. Only when dockerd runs."""
    done = {"project": project, "docker_active": docker_active()}
    if not done["docker_active"]:
        return done
    compose_file = os.path.join(directory or "", "docker-compose.yml")
    if directory and os.path.exists(compose_file):
        proc = subprocess.run(["docker-compose", "-p", project, "down", "--remove-orphans"], cwd=directory,
                              stdin=subprocess.DEVNULL, text=True, capture_output=True)
        done["down"] = proc.returncode == 0 or proc.stderr.strip()[-300:]
    label = f"label={COMPOSE_LABEL}={project}"
    for kind, ls, rm in (("containers", ["ps", "-aq"], ["rm", "-f"]),
                         ("volumes", ["volume", "ls", "-q"], ["volume", "rm", "-f"]),
                         ("networks", ["network", "ls", "-q"], ["network", "rm"])):
        ids = sh("docker", *ls, "--filter", label, check=False).stdout.split()
        if ids:
            sh("docker", *rm, *ids, check=False)
        done[kind] = ids
    return done


def wait_mounted(path, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if mount_line(path):
            return mount_line(path)
        time.sleep(0.2)
    fail(f"{path} not in /proc/mounts {timeout} s after docker-compose up")


def compose_up(spec, scenario_name):
    timings = {}
    t0 = time.monotonic()
    was_active = docker_active()
    # The first docker command: dockerd starts through docker.socket (if it is not running yet).
    driver = sh("docker", "info", "--format", "{{.Driver}}").stdout.strip()
    timings["dockerd_start_s" if not was_active else "docker_info_s"] = round(time.monotonic() - t0, 2)
    # What a previous run left (a stopped container, a volume with other driver_opts after a
    # reboot or an operator's edit): gone, so the scenario starts from the file it writes.
    leftover = compose_teardown(spec["project"], spec["dir"] if os.path.isdir(spec["dir"]) else None)
    os.makedirs(spec["dir"], exist_ok=True)
    path = os.path.join(spec["dir"], "docker-compose.yml")
    with open(path + ".pwlab-tmp", "w") as f:
        f.write(compose_yaml(spec, scenario_name))
    os.replace(path + ".pwlab-tmp", path)
    os.makedirs(os.path.dirname(COMPOSE_STATE), exist_ok=True)
    with open(COMPOSE_STATE, "w") as f:
        json.dump({"dir": spec["dir"], "project": spec["project"], "volume": spec["volume"]}, f)
    t1 = time.monotonic()
    imported = False
    if sh("docker", "image", "inspect", spec["image"], check=False).returncode != 0:
        sh("docker", "import", spec["image_tar"], spec["image"])
        imported = True
        timings["image_import_s"] = round(time.monotonic() - t1, 2)
    t2 = time.monotonic()
    proc = subprocess.run(["docker-compose", "-p", spec["project"], "up", "-d"], cwd=spec["dir"],
                          stdin=subprocess.DEVNULL, text=True, capture_output=True)
    if proc.returncode != 0:
        fail(f"docker-compose up -d: {proc.stderr.strip()[-600:]}")
    timings["compose_up_s"] = round(time.monotonic() - t2, 2)
    name = f"{spec['project']}_{spec['volume']}"
    volume = json.loads(sh("docker", "volume", "inspect", name).stdout)[0]
    line = wait_mounted(volume["Mountpoint"])
    timings["total_s"] = round(time.monotonic() - t0, 2)
    networks = sh("docker", "network", "ls", "--filter", f"label={COMPOSE_LABEL}={spec['project']}",
                  "--format", "{{.Name}}").stdout.split()
    return {"file": path, "storage_driver": driver, "image_imported": imported, "leftover": leftover,
            "volume": volume, "mount": line, "project_networks": networks, "timings": timings}


def compose_file(options, device=None):
    """Rewrites only the volume's `o:` (and `device:`) lines of the lab's Compose file."""
    state = compose_state()
    path = os.path.join(state.get("dir", LAB_COMPOSE_DIR), "docker-compose.yml")
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        fail(f"no lab Compose file {path}: apply a compose scenario first")
    old = re.search(r"^(\s+)o: (.*)$", text, re.M)
    if not old:
        fail(f"{path} has no `o:` line")
    text = text[:old.start()] + f"{old.group(1)}o: {yaml_scalar(options)}" + text[old.end():]
    result = {"file": path, "old_o": old.group(2)}
    if device is not None:
        dev = re.search(r"^(\s+)device: (.*)$", text, re.M)
        if not dev:
            fail(f"{path} has no `device:` line")
        text = text[:dev.start()] + f"{dev.group(1)}device: {json.dumps(device)}" + text[dev.end():]
        result["old_device"] = dev.group(2)
    with open(path + ".pwlab-tmp", "w") as f:
        f.write(text)
    os.replace(path + ".pwlab-tmp", path)
    return result | {"content": text}


# ---------------------------------------------------------------------------------------------

def reset():
    # Docker first: dockerd holds its volumes' NFS mounts (and would mount them again).
    state = compose_state()
    docker = None
    if state.get("project") or docker_active():
        docker = compose_teardown(state.get("project", LAB_COMPOSE_PROJECT), state.get("dir", LAB_COMPOSE_DIR))
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
    for directory in {state.get("dir", LAB_COMPOSE_DIR), LAB_COMPOSE_DIR}:
        shutil.rmtree(directory, ignore_errors=True)
    if state:
        os.unlink(COMPOSE_STATE)
    return {"reset": True, "nfs_unmounted": nfs, "docker": docker}


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
    result = {"applied": scenario["name"],
              "mounts": {m["path"]: mount_line(m["path"]) for m in scenario.get("mounts", [])}}
    if scenario.get("compose"):
        result["compose"] = compose_up(scenario["compose"], scenario["name"])
        result["mounts"][result["compose"]["volume"]["Mountpoint"]] = result["compose"]["mount"]
    return result | {"connections": nfs_connections()}


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
    elif cmd == "compose-file" and len(argv) in (2, 3):
        result = compose_file(*argv[1:])
    else:
        fail(f"bad command: {' '.join(argv)}")
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
