# SPDX-License-Identifier: GPL-3.0-or-later
"""StoragePath policies for the script tests, from one builder instead of YAML copied into each test.

storage_path() takes the fields a test sets and renders the policy with PyYAML (Debian's
python3-yaml, which ansible depends on) in the style of the shipped files under policies/: small
mappings and lists in flow style, `mount` as a block, a string quoted only where YAML needs it
(then with double quotes). seed_fix() is the seed scenario's fix (policies/movies-10g.yaml) as
the lab and benchmark tests run it: the reason on one line, no min_share or restart window, and
no queues change unless asked for (the lab runs without KVM).
"""
import os

import yaml

NAS_10G = "198.51.100.2"  # the NAS on the 10 GbE link (link2 in the lab)
NAS_1G = "192.0.2.2"      # the same NAS on the old 1 GbE link (link1): the trunking risk
SEED_REASON = "vers=3 on purpose: NFSv4.1 trunking reuses the 1 GbE transport"


class _Dumper(yaml.SafeDumper):
    def choose_scalar_style(self):
        style = super().choose_scalar_style()
        return '"' if style == "'" else style


def render(doc) -> str:
    """A policy document (a dict) as YAML text in the house style."""
    return yaml.dump(doc, Dumper=_Dumper, default_flow_style=None, sort_keys=False, width=1 << 16)


def storage_path(name, vmid, host, *, node="pve1", device="net1", queues=None, server=NAS_10G,
                 nas_addresses=None, export="/volume1/movies", path="/mnt/movies", options=("vers=3",),
                 reason=None, probe_file="probe-64m", probe_bytes=None, max_probe_bytes=None,
                 restart=None, verify_restored=None, owner=None, compose=None, direction=None,
                 commit_cycles=None, min_commit_rate=None, trunking=None, mtu=None) -> str:
    """One StoragePath policy as YAML text. A field left None is not written (the loader's
    default applies); restart=True/False writes `restart: {allowed: ...}`, verify_restored
    writes `rollback: {verify_restored: ...}`. A mount pathwarden does not own: owner="compose"
    with compose=(PROJECT, VOLUME) and path=None (Docker's Mountpoint is found, not given)."""
    nic = {"device": device}
    if queues:
        nic["queues"] = queues
    if mtu is not None:
        nic["mtu"] = mtu
    mount = {}
    if owner is not None:
        mount["owner"] = owner
    if compose is not None:
        mount["compose"] = {"project": compose[0], "volume": compose[1]}
    mount["server"] = server
    if nas_addresses:
        mount["nas_addresses"] = list(nas_addresses)
    mount["export"] = export
    if path is not None:
        mount["path"] = path
    mount["options"] = list(options)
    if reason is not None:
        mount["reason"] = reason
    if trunking is not None:
        mount["trunking"] = trunking
    verify = {"probe_file": probe_file}
    for key, value in (("probe_bytes", probe_bytes), ("max_probe_bytes", max_probe_bytes), ("direction", direction),
                       ("commit_cycles", commit_cycles), ("min_commit_rate", min_commit_rate)):
        if value is not None:
            verify[key] = value
    spec = {"guest": {"node": node, "vmid": vmid, "host": host}, "nic": nic, "mount": mount, "verify": verify}
    if restart is not None:
        spec["restart"] = {"allowed": restart}
    if verify_restored is not None:
        spec["rollback"] = {"verify_restored": verify_restored}
    return render({"apiVersion": "pathwarden/v1", "kind": "StoragePath", "metadata": {"name": name}, "spec": spec})


SEED_FIX = {"nas_addresses": [NAS_1G], "options": ["vers=3", "nconnect=8", "_netdev"], "reason": SEED_REASON,
            "probe_bytes": "64MiB", "restart": True}


def seed_fix(name="movies-10g", vmid=101, host="media-vm", **changes) -> str:
    """The seed's fix for the lab guest (VM 101 on pve1, media-vm): the movies share over the
    10 GbE address with vers=3 and nconnect=8, probed with 64 MiB; `changes` override fields."""
    return storage_path(name, vmid, host, **(SEED_FIX | changes))


def write(directory, filename, text) -> str:
    """Writes the policy text to DIRECTORY/FILENAME (the directory made if needed); returns the path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, filename)
    with open(path, "w") as f:
        f.write(text)
    return path
