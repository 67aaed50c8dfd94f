# SPDX-License-Identifier: GPL-3.0-or-later
"""Names, addresses and MACs of the lab: the one place they are defined.

Addresses come only from the documentation ranges and exist only inside the lab's namespace and
VMs, except the controller's management address (see README.md, "Management access").
"""
import os

CACHE_ROOT = os.environ.get("PW_LAB_CACHE", "/var/cache/pathwarden-lab")
RUN_DIR = os.environ.get("PW_LAB_RUN", "/run/pathwarden-lab")

NETNS = "pwlab-sw"
MGMT_VETH_HOST = "pwlab-mgmt"   # in the root namespace
MGMT_VETH_SWITCH = "mgmt-uplink"  # its peer, in the switch namespace

# Proxmox-style bridges inside the switch namespace.
BRIDGE_MGMT = "vmbr0"
BRIDGE_LINK1 = "vmbr1"
BRIDGE_LINK2 = "vmbr2"
BRIDGES = (BRIDGE_MGMT, BRIDGE_LINK1, BRIDGE_LINK2)

MGMT_PREFIX = 28
MGMT_HOST_ADDR = "203.0.113.1"
MGMT_NET = "203.0.113.0/28"

LINK1 = {"name": "link1", "bridge": BRIDGE_LINK1, "prefix": 24,
         "nas": "192.0.2.2", "guest": "192.0.2.10", "label": "old 1 GbE", "nas_name": "nas-1g.lab.example"}
LINK2 = {"name": "link2", "bridge": BRIDGE_LINK2, "prefix": 24,
         "nas": "198.51.100.2", "guest": "198.51.100.10", "label": "new 10 GbE", "nas_name": "nas-10g.lab.example"}
LINKS = (LINK1, LINK2)

# The guest, as registered in pvesim (same identity as the seed policy: vmid 101 on pve1).
GUEST_VMID = 101
GUEST_NODE = "pve1"
GUEST_NAME = "media-vm"          # also its Ansible inventory name
GUEST_MGMT_ADDR = "203.0.113.10"
GUEST_HOSTNAME = "media-vm"
GUEST_OPERATOR = "pwadmin"       # the unprivileged account that may sudo (spec.ansible.become)
GUEST_MACS = {"link1": "BC:24:11:A1:01:01", "link2": "BC:24:11:A1:01:02", "mgmt": "BC:24:11:A1:01:00"}
# "old 1 GbE" link1 is rate limited the way Proxmox does it (netN rate=, MB/s).
LINK1_RATE_MBPS = 30
GUEST_VCPUS = 1
GUEST_DISK_VOLUME = f"local:{GUEST_VMID}/vm-{GUEST_VMID}-disk-0.qcow2"
# The QEMU guest agent's virtio-serial port, as qemu-server names it (`agent: 1`).
QGA_PORT = "org.qemu.guest_agent.0"


def guest_vm_config() -> dict:
    """The guest's Proxmox VM config (net0 = old link1, net1 = new link2, net2 = management)."""
    return {
        "name": GUEST_NAME,
        "ostype": "l26",
        "machine": "q35",
        "memory": "1024",
        # One vCPU: under TCG on a loaded 2-core host, a 2-vCPU guest's threads are preempted
        # while the other waits on them, and the same 64 MiB probe read cost 3.8-4.5 CPU-s of
        # emulation against 2.3-2.6 with one vCPU (the suite's load beside it); the guest's two
        # vCPU threads were a third of the whole suite's CPU. Queues above the vCPU count stay
        # valid on Proxmox and in the guest (`ethtool -L` up to the device's maximum).
        "cores": str(GUEST_VCPUS),
        "sockets": "1",
        "boot": "order=virtio0",
        "virtio0": f"{GUEST_DISK_VOLUME},size=2G",
        "net0": f"virtio={GUEST_MACS['link1']},bridge={BRIDGE_LINK1},rate={LINK1_RATE_MBPS}",
        "net1": f"virtio={GUEST_MACS['link2']},bridge={BRIDGE_LINK2}",
        "net2": f"virtio={GUEST_MACS['mgmt']},bridge={BRIDGE_MGMT}",
        "hotplug": "network,disk,usb",
        # The guest agent's channel (qemu.py, as qemu-server's config_to_command adds it); Debian's
        # qemu-guest-agent in the guest answers on it (lab qga, pwtest.lab.qga).
        "agent": "1",
    }


# The NAS is not a Proxmox guest; the lab launches it with the same QEMU builder.
NAS_VMID = 900
NAS_HOSTNAME = "pwlab-nas"
# Its NFS server, chosen at `lab up` (issue 44, a second server): Linux knfsd, or NFS-Ganesha with
# PW_LAB_NAS=ganesha. Both are in every image set (nas_image.py); the lab's state says which runs.
NAS_SERVER = os.environ.get("PW_LAB_NAS", "knfsd")
NAS_MACS = {"link1": "BC:24:11:A9:00:01", "link2": "BC:24:11:A9:00:02"}
MOVIES_EXPORT = "/volume1/movies"
BACKUP_EXPORT = "/volume1/backup"
# The field report's Compose volume (shared/seeds/002): a share of its own for the database
# volume, and a read-only export of the same data for the backup VM (TrueNAS: a second share of
# the same dataset; the lab NAS: a bind mount of the directory, exported `ro`).
COMPOSE_EXPORT = "/volume1/docker/pg14"
BACKUP_RO_EXPORT = "/volume1/pg14-ro"
# Every rw export is a tmpfs of its own with the probe files; each ro export is a bind mount of
# a rw export (target -> source).
NAS_EXPORTS = (MOVIES_EXPORT, BACKUP_EXPORT, COMPOSE_EXPORT)
NAS_RO_EXPORTS = {BACKUP_RO_EXPORT: COMPOSE_EXPORT}
PROBE_FILE = "probe-64m"
PROBE_BYTES = 64 * 1024 * 1024
# What a lab test reads from it (probe_bytes) unless its case is about the probe's size or an
# adversary sized against it (lab_verify coinciding, background_5mbps) or it runs the shipped
# policies (ops_ansible_role_lab): a quarter of the file. 16 MiB still dwarfs every other byte
# on the links (idle ones move 0 B, test_lab idle_links) and gives the same verdicts, at a
# third of a 64 MiB read's emulated CPU (1.3 against 2.5-2.9 TCG CPU-s idle, twice that under load).
TEST_PROBE_BYTES = 16 * 1024 * 1024
TEST_PROBE = f"{TEST_PROBE_BYTES >> 20}MiB"  # as a policy's probe_bytes


# The Compose project in the guest (scenarios compose-*): Docker's local volume driver mounts the
# NFS export itself (mount(2) with the driver_opts), at the volume's Mountpoint.
COMPOSE_DIR = "/srv/pg"
COMPOSE_PROJECT = "pg"           # = the directory's name, as `cd /srv/pg && docker-compose ...` uses
COMPOSE_SERVICE = "db"
COMPOSE_VOLUME = "pgdata"
COMPOSE_IMAGE = "pwlab/busybox:1"  # `docker import` of the guest's busybox tarball: never pulled
COMPOSE_IMAGE_TAR = "/usr/local/share/pwlab/busybox-rootfs.tar"
COMPOSE_TARGET = "/var/lib/postgresql/data"
COMPOSE_VOLUME_NAME = f"{COMPOSE_PROJECT}_{COMPOSE_VOLUME}"
COMPOSE_MOUNTPOINT = f"/var/lib/docker/volumes/{COMPOSE_VOLUME_NAME}/_data"


def run_path(*parts: str) -> str:
    return os.path.join(RUN_DIR, *parts)


def vm_dir(vmid: int) -> str:
    return run_path("vms", str(vmid))


def qga_dir() -> str:
    """The guest agents' sockets, <vmid>.qga, as qemu-server's /var/run/qemu-server (pvesim --qga-dir)."""
    return run_path("qemu-server")


def qga_socket(vmid: int) -> str:
    return os.path.join(qga_dir(), f"{vmid}.qga")


def storage_root() -> str:
    """Where the lab's "local" directory storage keeps disk images (images/<vmid>/<volume>)."""
    return run_path("storage")
