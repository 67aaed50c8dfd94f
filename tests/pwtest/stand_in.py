# SPDX-License-Identifier: GPL-3.0-or-later
"""A controller whose guest is tests/ops/guest_stand_in.py (settings: spec.ansible.playbook_command):
the lab guest as recorded after the seed's fix (tests/bench/recordings/lab-guest), its NICs' MACs,
net1 without queues, so the seed's fix with queues=8 plans set-nic, set-channels, re-make the
mount, verify — and a whole plan, apply or reconcile runs on one machine, against pvesim, with no
guest and no network namespace. Run with Debian's /usr/bin/python3."""
import json
import os

import yaml  # Debian's python3-yaml

from .offline_controller import OfflineController
from .paths import TESTS

STAND_IN = os.path.join(TESTS, "ops", "guest_stand_in.py")
NET1 = "virtio=BC:24:11:A1:01:02,bridge=vmbr1"
STAND_IN_STATE = {"nodes": ["pve1"], "guests": [{"vmid": 101, "node": "pve1", "running": True, "config": {
    "name": "media-vm", "net0": "virtio=BC:24:11:A1:01:00,bridge=vmbr0", "net1": NET1}}]}
PLANNED = ["set-nic", "set-channels", "change-fstab", "prove-path"]


def stand_in_controller(binary, sim, work):
    """The offline controller's settings with the guest stand-in as ansible-playbook."""
    ctl = OfflineController(binary, sim, work)
    with open(ctl.settings) as f:
        settings = yaml.safe_load(f)
    settings["spec"]["ansible"]["playbook_command"] = STAND_IN
    with open(ctl.settings, "w") as f:
        yaml.safe_dump(settings, f)
    ctl.guest = os.path.join(work, "guest")
    os.makedirs(ctl.guest)
    ctl.env["PW_GUEST_STAND_IN"] = ctl.guest
    return ctl


def one_host_shards(binary, sim_a, sim_b, work):
    """Two controllers of one host sharing one state directory, as two shards do: `a` with the
    guest stand-in (pvesim `sim_a` with STAND_IN_STATE), `b` whose guest does not answer (pvesim
    `sim_b` with offline_controller.STATE). Returns (a, b)."""
    a_dir, b_dir = os.path.join(work, "a"), os.path.join(work, "b")
    os.makedirs(a_dir)
    os.makedirs(b_dir)
    ctl_a = stand_in_controller(binary, sim_a, a_dir)
    ctl_b = OfflineController(binary, sim_b, b_dir)
    with open(ctl_b.settings) as f:
        settings = yaml.safe_load(f)
    settings["spec"]["state_dir"] = ctl_a.state_dir
    with open(ctl_b.settings, "w") as f:
        yaml.safe_dump(settings, f)
    return ctl_a, ctl_b


def guest_runs(ctl):
    """The playbooks the stand-in answered, in order."""
    path = os.path.join(ctl.guest, "runs.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line)["playbook"] for line in f]
