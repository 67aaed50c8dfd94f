# SPDX-License-Identifier: GPL-3.0-or-later
"""A pathwarden controller set-up whose Proxmox is pvesim on loopback and whose one guest cannot be
reached (its SSH port on 127.0.0.1 has no listener): runs fail fast on the guest side, stay on
loopback, and still produce full reports (the policy ends unobserved: could not observe, exit 6).
Run with Debian's /usr/bin/python3."""
import os
import socket
import subprocess

from . import policies
from .pvesim_process import local_env

SECRET = "4c0ffee0-offline-secret"
TOKEN_ID = "root@pam!offline"
PVESIM_ARGS = ["--token", f"{TOKEN_ID}={SECRET}"]
STATE = {
    "nodes": ["pve1"],
    "guests": [{"vmid": 301, "node": "pve1", "running": True,
                "config": {"name": "media-vm", "net0": "virtio=BC:24:11:00:03:00,bridge=vmbr0",
                           "net1": "virtio=BC:24:11:00:03:01,bridge=vmbr1"}}],
}
POLICY = policies.storage_path("movies", 301, "media-vm", queues=4)


def closed_loopback_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


class OfflineController:
    """Settings (token, inventory, empty known_hosts, state dir) in `work` for pvesim `sim`."""

    def __init__(self, binary, sim, work, policies_dir=None):
        self.binary = binary
        # git never looks above the work directory, wherever the temporary directory is.
        self.env = dict(local_env(), GIT_CEILING_DIRECTORIES=work)
        token = os.path.join(work, "token")
        with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(SECRET + "\n")
        inventory = os.path.join(work, "inventory.ini")
        with open(inventory, "w") as f:
            f.write(f"media-vm ansible_host=127.0.0.1 ansible_port={closed_loopback_port()}\n")
        known_hosts = os.path.join(work, "known_hosts")
        open(known_hosts, "w").close()
        self.state_dir = os.path.join(work, "state")
        self.settings = os.path.join(work, "pathwarden.yaml")
        with open(self.settings, "w") as f:
            f.write(f"""apiVersion: pathwarden/v1
kind: Controller
spec:
  proxmox:
    url: {sim.url}
    token_id: "{TOKEN_ID}"
    token_secret_file: {token}
    fingerprint: "{sim.fingerprint}"
  ansible:
    inventory: {inventory}
    known_hosts_file: {known_hosts}
    timeout: 2m
  state_dir: {self.state_dir}
""")
            if policies_dir:
                f.write(f"  policies: {policies_dir}\n")

    def run(self, *args, env=None, timeout=600):
        return subprocess.run([self.binary, "--config", self.settings, *args], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout, env=dict(self.env, **(env or {})))


def write_policy(directory, name="movies.yaml"):
    return policies.write(directory, name, POLICY)
