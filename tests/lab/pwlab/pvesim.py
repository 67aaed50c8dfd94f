"""pvesim (tests/pvesim, the Proxmox API emulator) driving the lab guest through vm-hook.

Until pvesim exists in the tree, the lab calls the hook itself exactly as pvesim would
(`vm-hook start VMID CONFIG_JSON_FILE`), so the launch path is the same.
"""
import json
import os
import subprocess

from . import topology as topo
from .common import LabError, log

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _hook_config_file() -> str:
    path = os.path.join(topo.vm_dir(topo.GUEST_VMID), "hook-config.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"vmid": topo.GUEST_VMID, "node": topo.GUEST_NODE, "config": topo.guest_vm_config()}, f)
    return path


def call_hook(hook: str, event: str, extra=None) -> None:
    cmd = [hook, event, str(topo.GUEST_VMID), _hook_config_file()] + ([extra] if extra else [])
    proc = subprocess.run(cmd, text=True, capture_output=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise LabError(f"vm-hook {event}: {last}")


def start_and_boot_guest(hook: str) -> dict:
    log("pvesim not in the tree yet: starting the guest through vm-hook directly")
    call_hook(hook, "start")
    return {"mode": "direct-hook"}


def healthy(state: dict) -> bool:
    return True


def stop(state: dict) -> None:
    pass


def leftover_pids() -> list:
    return []
