# SPDX-License-Identifier: GPL-3.0-or-later
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
image_tar when dockerd does not have it (no registry), removes what is left of the project
(containers, volumes: a volume keeps its driver_opts), runs `docker-compose -p PROJECT up -d`
and waits until the volume's Mountpoint is in /proc/mounts. The project is recorded in
COMPOSE_STATE so that reset and compose-file find it. reset never starts dockerd: the first
connection to its socket would (docker.socket), so it looks at `systemctl is-active
docker.service` first; an inactive dockerd holds no mount, and apply clears a stale volume anyway.

Everything but the Compose project itself (`docker-compose up`, what the tests are about) and
the one-time image import goes to dockerd's Engine API over its socket, as the docker CLI does:
under TCG each docker CLI start costs 1-2 CPU-s and `docker-compose` 3-6, and a scenario's
set-up and tear-down made a dozen such calls. http.client is imported only by the calls that
talk to dockerd: under TCG its import alone cost 0.75 CPU-s, more than the rest of a helper run.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse

MARK = "# pwlab scenario"
FSTAB = "/etc/fstab"
COMPOSE_STATE = "/var/lib/pwlab/compose.json"
COMPOSE_LABEL = "com.docker.compose.project"
DOCKER_SOCKET = "/var/run/docker.sock"
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


def _docker_connection():
    """HTTP over dockerd's Unix socket (connecting starts dockerd through docker.socket)."""
    import http.client

    class DockerConnection(http.client.HTTPConnection):
        def __init__(self):
            super().__init__("localhost", timeout=300)

        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(self.timeout)
            self.sock.connect(DOCKER_SOCKET)

    return DockerConnection()


def docker_api(method, path, query=None, ok=(200, 201, 204)):
    """One Engine API call; returns (status, decoded JSON body or None). A status outside `ok`
    fails the helper with dockerd's own message."""
    target = path + ("?" + urllib.parse.urlencode(query) if query else "")
    conn = _docker_connection()
    try:
        conn.request(method, target)
        resp = conn.getresponse()
        body = resp.read()
    except OSError as e:
        fail(f"docker API {method} {target}: {e}")
    finally:
        conn.close()
    doc = json.loads(body) if body and "json" in (resp.getheader("Content-Type") or "") else None
    if resp.status not in ok:
        fail(f"docker API {method} {target}: HTTP {resp.status}: {(doc or {}).get('message', body[:300])}")
    return resp.status, doc


def project_filter(project):
    return {"filters": json.dumps({"label": [f"{COMPOSE_LABEL}={project}"]})}


def compose_teardown(project):
    """Removes what dockerd holds of a project: every container (forced, so a running one stops
    and releases its volume's mount), then every volume and network labelled with the project,
    as `docker-compose down` plus `docker volume rm` would. Only when dockerd runs."""
    done = {"project": project, "docker_active": docker_active()}
    if not done["docker_active"]:
        return done
    query = project_filter(project)
    _, containers = docker_api("GET", "/containers/json", dict(query, all="1"))
    for c in containers:
        docker_api("DELETE", f"/containers/{c['Id']}", {"force": "1"}, ok=(204, 404))
    _, volumes = docker_api("GET", "/volumes", query)
    for v in volumes.get("Volumes") or []:
        docker_api("DELETE", f"/volumes/{urllib.parse.quote(v['Name'], safe='')}", {"force": "1"}, ok=(204, 404))
    _, networks = docker_api("GET", "/networks", query)
    for n in networks:
        docker_api("DELETE", f"/networks/{n['Id']}", ok=(204, 404))
    done.update(containers=[c["Id"][:12] for c in containers],
                volumes=[v["Name"] for v in volumes.get("Volumes") or []],
                networks=[n["Name"] for n in networks])
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
    # The first connection to dockerd's socket starts it (docker.socket) if it is not running yet.
    _, info = docker_api("GET", "/info")
    timings["dockerd_start_s" if not was_active else "docker_info_s"] = round(time.monotonic() - t0, 2)
    # What a previous run left (a stopped container, a volume with other driver_opts after a
    # reboot or an operator's edit): gone, so the scenario starts from the file it writes.
    leftover = compose_teardown(spec["project"])
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
    image = urllib.parse.quote(spec["image"], safe=":")
    if docker_api("GET", f"/images/{image}/json", ok=(200, 404))[0] == 404:
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
    _, volume = docker_api("GET", f"/volumes/{urllib.parse.quote(name, safe='')}")
    line = wait_mounted(volume["Mountpoint"])
    timings["total_s"] = round(time.monotonic() - t0, 2)
    _, networks = docker_api("GET", "/networks", project_filter(spec["project"]))
    return {"file": path, "storage_driver": info.get("Driver"), "image_imported": imported, "leftover": leftover,
            "volume": volume, "mount": line, "project_networks": [n["Name"] for n in networks], "timings": timings}


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
        docker = compose_teardown(state.get("project", LAB_COMPOSE_PROJECT))
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
