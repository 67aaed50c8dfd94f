# SPDX-License-Identifier: GPL-3.0-or-later
"""A benchmark fleet (tests/bench): N QEMU VMs for pvesim (--state), one pathwarden policy per VM,
an Ansible inventory of them, and controller settings for the real `pathwarden` binary.

Every VM has net1 = virtio with queues=8 on vmbr1 and its policy is the seed scenario's fix (the
movies share over the 10 GbE link, vers=3, nconnect=8, queues=8): the state the lab guest is in
when its facts are recorded (tests/bench/recordings/lab-guest), so a replayed guest is converged.
"""
import base64
import json
import os

from . import policies

FIRST_VMID = 1000
NODES = ["pve1", "pve2", "pve3"]


def policy(name, node, vmid, host):
    """The seed's fix with queues=8 for one VM. It must match the policy the lab guest was converged
    with when its facts were recorded (tests/bench/verify_cost.py --record-facts): the reason is
    written into the fstab's pathwarden comment."""
    return policies.seed_fix(name, vmid, host, node=node, queues=8)


def mac(i, nic):
    """BC:24:11 (Proxmox's prefix), then 0x5N for NIC N and the VM's index: unique per fleet."""
    return "BC:24:11:%02X:%02X:%02X" % (0x50 + nic, (i >> 8) & 0xFF, i & 0xFF) if i < 65536 else None


class Fleet:
    def __init__(self, root, vms, nodes=None):
        """`nodes`: how many Proxmox nodes the VMs are spread over (default: NODES, three)."""
        self.root = root
        self.nodes = NODES if nodes is None else ["pve%d" % (i + 1) for i in range(nodes)]
        self.vms = []
        for i in range(vms):
            vmid = FIRST_VMID + i
            self.vms.append({"vmid": vmid, "node": self.nodes[i % len(self.nodes)], "host": "vm%d" % vmid,
                             "policy": "vm%d-movies" % vmid, "net0": "virtio=%s,bridge=vmbr0" % mac(i, 0),
                             "net1": "virtio=%s,bridge=vmbr1,queues=8" % mac(i, 1)})
        self.state_file = os.path.join(root, "state.json")
        self.policies = os.path.join(root, "policies")
        self.inventory = os.path.join(root, "inventory.ini")

    def write(self):
        os.makedirs(self.policies, exist_ok=True)
        guests = [{"vmid": v["vmid"], "node": v["node"], "type": "qemu", "running": True,
                   "config": {"name": v["host"], "cores": 2, "memory": 2048, "ostype": "l26",
                              "net0": v["net0"], "net1": v["net1"]}} for v in self.vms]
        with open(self.state_file, "w") as f:
            json.dump({"cluster": "bench", "nodes": self.nodes, "guests": guests}, f)
        for v in self.vms:
            with open(os.path.join(self.policies, v["policy"] + ".yaml"), "w") as f:
                f.write(policy(v["policy"], v["node"], v["vmid"], v["host"]))
        with open(self.inventory, "w") as f:
            f.write("[fleet]\n")
            for v in self.vms:
                net1_mac = v["net1"].split(",")[0].split("=")[1].lower()
                f.write("%s vmid=%d pw_mac=%s pw_policy=%s\n" % (v["host"], v["vmid"], net1_mac, v["policy"]))
        return self

    def agent_state(self, report_file, recorded_report, recording):
        """The fleet's pvesim state with every VM's guest agent answering the facts script with the
        recorded guest's report (`agent: 1` in the config, and a recorded agent, tests/pvesim
        README "Guest agent"), its identity put in as the replayed Ansible run puts it in
        (tests/bench/replay_playbook.cpp): the VM's net1 MAC for the recorded one, its policy's
        name in the fstab (whose bytes are base64 in the report: the whole block is replaced)."""
        with open(self.state_file) as f:
            state = json.load(f)
        old_block, fstab = fstab_block(recorded_report)
        for guest, v in zip(state["guests"], self.vms):
            net1_mac = v["net1"].split(",")[0].split("=")[1].lower()
            new_fstab = fstab.replace(recording["policy"].encode(), v["policy"].encode())
            guest["config"]["agent"] = "1"
            guest["agent"] = {"report": report_file,
                              "substitute": {old_block: base64_lines(new_fstab), recording["mac"]: net1_mac}}
        return state

    def settings(self, sim, token_id, secret, playbook_command, state_dir, max_in_flight=16, observe=None):
        """Controller settings for the real binary against this pvesim; returns the file's path."""
        token_file = os.path.join(self.root, "token")
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(secret + "\n")
        path = os.path.join(self.root, "pathwarden.yaml")
        with open(path, "w") as f:
            f.write(f"""apiVersion: pathwarden/v1
kind: Controller
spec:
  proxmox:
    url: {sim.url}
    token_id: "{token_id}"
    token_secret_file: {token_file}
    fingerprint: "{sim.fingerprint}"
    max_in_flight: {max_in_flight}
  ansible:
    inventory: {self.inventory}
    playbook_command: {playbook_command}
    forks: 16
  state_dir: {state_dir}
  policies: {self.policies}
""")
            if observe:
                f.write(f"  observe:\n    via: {observe}\n")
        return path


def fstab_block(report):
    """The facts report's fstab section as printed (base64 lines) and its bytes."""
    lines = report.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("@@") and line.endswith(" fstab"))
    token = lines[start].split(" ", 1)[0]
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(token + " "))
    block = "\n".join(lines[start + 1:end]) + "\n"
    return block, base64.b64decode("".join(lines[start + 1:end]))


def base64_lines(data):
    """As coreutils' base64 prints it: 76 characters a line."""
    text = base64.b64encode(data).decode()
    return "".join(text[i:i + 76] + "\n" for i in range(0, len(text), 76))
