"""pvesim (tests/pvesim, the Proxmox API emulator) driving the lab guest through vm-hook.

Until pvesim exists in the tree, the lab calls the hook itself exactly as pvesim would
(`vm-hook EVENT VMID CONFIG_JSON_FILE [netN]`), keeping the guest's config in RUN_DIR.
"""
import json
import os
import re
import subprocess

from . import topology as topo
from .common import LabError, log

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB_DIR = os.path.join(TESTS_DIR, "lab")
HOOK = os.path.join(LAB_DIR, "vm-hook")


def _config_path() -> str:
    return topo.run_path("guest-config.json")


def _load_config() -> dict:
    try:
        with open(_config_path()) as f:
            return json.load(f)
    except OSError:
        raise LabError("the lab is not up (no guest config): run tests/lab/lab up")


def _hook(event: str, config: dict, extra=None) -> None:
    path = os.path.join(topo.vm_dir(topo.GUEST_VMID), "hook-config.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"vmid": topo.GUEST_VMID, "node": topo.GUEST_NODE, "config": config}, f)
    cmd = [HOOK, event, str(topo.GUEST_VMID), path] + ([extra] if extra else [])
    proc = subprocess.run(cmd, text=True, capture_output=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise LabError(f"vm-hook {event}: {last}")


def _save_config(config: dict) -> None:
    with open(_config_path(), "w") as f:
        json.dump(config, f, indent=1)


def start_and_boot_guest() -> dict:
    log("pvesim not in the tree yet: starting the guest through vm-hook directly")
    config = topo.guest_vm_config()
    _save_config(config)
    _hook("start", config)
    return {"mode": "direct-hook"}


def set_net_queues(key: str, queues: int, hotplug: bool) -> None:
    """Sets queues= on netN; with hotplug the running VM's NIC is re-plugged (else pending
    until a reboot)."""
    config = _load_config()
    if key not in config:
        raise LabError(f"the guest has no {key}")
    value = re.sub(r",queues=\d+", "", config[key]) + (f",queues={queues}" if queues else "")
    config[key] = value
    _save_config(config)
    if hotplug:
        _hook("hotplug-nic", config, key)


def reboot_guest() -> None:
    config = _load_config()
    _hook("shutdown", config)
    _hook("start", config)


def healthy(state: dict) -> bool:
    return True


def stop(state: dict) -> None:
    pass


def leftover_pids() -> list:
    return []
