# SPDX-License-Identifier: GPL-3.0-or-later
"""The seed's situations as lab scenarios: data that later tests (reconcile) reuse.

Each scenario resets the guest (no NFS mounts, no lab fstab entries, no lab routes, no lab
Compose project), then sets up routes, fstab entries (each under a `# pwlab scenario NAME` line),
mounts and, with a "compose" key, the field report's Compose project (shared/seeds/002):
COMPOSE_DIR/docker-compose.yml with one service whose named volume is an NFS mount made by
Docker's local driver from driver_opts {type: nfs, o: O, device: DEVICE}; the guest helper
imports the image offline, runs `docker-compose -p PROJECT up -d` and waits for the mount.
`probe` says which mount to read (for Compose: the volume's Mountpoint), which link the
operator intends, and which link the bytes really take.
"""
from . import topology as topo

L1, L2 = topo.LINK1, topo.LINK2
MOVIES, BACKUP = topo.MOVIES_EXPORT, topo.BACKUP_EXPORT


def _mount(link, export, path, options):
    return {"server": link["nas"], "export": export, "path": path, "options": options}


def _compose(link, options):
    """The seed's Compose project: volume pgdata through link's NAS address (o: as written by an
    operator; `lab compose-file` rewrites it later)."""
    return {"dir": topo.COMPOSE_DIR, "project": topo.COMPOSE_PROJECT, "service": topo.COMPOSE_SERVICE,
            "image": topo.COMPOSE_IMAGE, "image_tar": topo.COMPOSE_IMAGE_TAR, "volume": topo.COMPOSE_VOLUME,
            "target": topo.COMPOSE_TARGET, "o": f"addr={link['nas']},{options}",
            "device": f":{topo.COMPOSE_EXPORT}"}


SCENARIOS = {
    "trunk-trap": {
        "summary": "a v4.2 mount through link1 exists; /mnt/movies mounted through link2's address "
                   "rides link1 (NFSv4.1+ trunking reuses the known server's transport)",
        "routes": [],
        "mounts": [_mount(L1, BACKUP, "/mnt/backup", "vers=4.2"),
                   _mount(L2, MOVIES, "/mnt/movies", "vers=4.2")],
        "probe": {"path": "/mnt/movies", "intended_link": "link2", "actual_link": "link1",
                  "mount_addr": L1["nas"]},
    },
    "clean-link2": {
        "summary": "only /mnt/movies, through link2's address: the bytes take link2",
        "routes": [],
        "mounts": [_mount(L2, MOVIES, "/mnt/movies", "vers=4.2")],
        "probe": {"path": "/mnt/movies", "intended_link": "link2", "actual_link": "link2",
                  "mount_addr": L2["nas"]},
    },
    "misrouted-link2": {
        "summary": "a host route sends link2's NAS address through link1: vers=3 mount of "
                   "link2's address, every byte on link1",
        "routes": [f"{L2['nas']}/32 dev link1 src {L1['guest']}"],
        "mounts": [_mount(L2, MOVIES, "/mnt/movies", "vers=3")],
        "probe": {"path": "/mnt/movies", "intended_link": "link2", "actual_link": "link1",
                  "mount_addr": L2["nas"]},
    },
    "compose-single": {
        "summary": "only the field report's Compose project: volume pgdata, local driver, type nfs, "
                   "o: addr=<link2>,rw,nfsvers=4.2 (one connection, no nconnect): the bytes take link2",
        "routes": [],
        "mounts": [],
        "compose": _compose(L2, "rw,nfsvers=4.2"),
        "probe": {"path": topo.COMPOSE_MOUNTPOINT, "intended_link": "link2", "actual_link": "link2",
                  "mount_addr": L2["nas"]},
    },
    "compose-misrouted": {
        "summary": "a host route sends link2's NAS address through link1, then the same Compose "
                   "project: the volume names link2's address, every byte crosses link1",
        "routes": [f"{L2['nas']}/32 dev link1 src {L1['guest']}"],
        "mounts": [],
        "compose": _compose(L2, "rw,nfsvers=4.2"),
        "probe": {"path": topo.COMPOSE_MOUNTPOINT, "intended_link": "link2", "actual_link": "link1",
                  "mount_addr": L2["nas"]},
    },
}


def scenario(name: str) -> dict:
    from .common import LabError
    if name not in SCENARIOS:
        raise LabError(f"unknown scenario '{name}' (one of: {', '.join(SCENARIOS)})")
    return {"name": name} | SCENARIOS[name]
