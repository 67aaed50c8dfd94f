#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The built .deb and the built collection, installed as a user would install them, and the
module run with its defaults.

usage: install_test.py PACKAGE_DIR PVESIM      (as root: a mount namespace, overlayfs, chroot)

A clean root: this machine's root file system under a copy-on-write overlay (upper layer on a
tmpfs) in a mount namespace of its own, with empty /run and /tmp, its own /proc, and no trace of
pathwarden: no /usr/local/bin/pathwarden, no installed collection (both removed in the overlay
should the machine have them). The machine's Debian packages are the root's, so apt resolves the
package's Depends against them offline. (A debootstrap root would need the network and minutes,
and the lab's guest image has no Ansible.) In it:
1. `apt-get install ./pathwarden_*.deb` installs the package: its postinst creates the pathwarden
   user and records the timer with deb-systemd-helper; `pathwarden --version` runs from PATH.
2. `ansible-galaxy collection build` (outside) and `ansible-galaxy collection install` (inside,
   to root's default collections path) install the collection.
3. `ansible-playbook` runs the module with no argument at all and then the role with its
   defaults: pathwarden is found on PATH (/usr/bin/pathwarden), its settings are the default
   /etc/pathwarden/pathwarden.yaml (written for pvesim on loopback, the guest answered by the
   stand-in tests/ops/guest_stand_in.py), so the module's run changes and verifies the seed's fix
   (changed) and the role's run finds it converged (ok): changed=1 in the recap.
4. `apt-get purge pathwarden` removes it cleanly (prerm, postrm with deb-systemd-helper).
Before the collection's 1.1.0 the module failed here with "[Errno 2] No such file or directory:
/usr/local/bin/pathwarden".
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

from pwtest import policies
from pwtest.offline_controller import PVESIM_ARGS
from pwtest.paths import ROOT
from pwtest.pvesim_process import Pvesim
from pwtest.script import check, test_main
from pwtest.stand_in import STAND_IN_STATE, stand_in_controller

COLLECTION = os.path.join(ROOT, "playbooks", "collections", "ansible_collections", "pathwarden", "pathwarden")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PLAYBOOK = """\
- name: The module and the role with their defaults
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Run the module with no argument
      pathwarden.pathwarden.reconcile:
      register: module_run
    - name: Run the role with its defaults
      ansible.builtin.include_role:
        name: pathwarden.pathwarden.pathwarden_reconcile
"""


def run(argv, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(argv, **kw)


def inside(work, deb, tarball, settings, env_file):
    """Runs in the chroot: each step's outcome into work/inside.json (the outer test checks)."""
    out = {}

    def step(name, argv, env=None):
        try:
            r = run(argv, env=env)
            out[name] = {"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr[-3000:]}
        except OSError as e:  # not installed: said as a shell says it
            out[name] = {"rc": 127, "stdout": "", "stderr": str(e)}

    for stale in ["/usr/local/bin/pathwarden"] + glob.glob("/root/.ansible/collections/ansible_collections/pathwarden"):
        if os.path.isdir(stale):
            shutil.rmtree(stale)
        elif os.path.lexists(stale):
            os.remove(stale)
    base = {"PATH": PATH, "HOME": "/root", "LC_ALL": "C.UTF-8"}
    step("before", ["sh", "-c", "command -v pathwarden; ansible-galaxy collection list pathwarden.pathwarden"],
         env=base)
    step("apt_install", ["apt-get", "install", "-y", "--no-install-recommends", deb],
         env=dict(base, DEBIAN_FRONTEND="noninteractive"))
    step("version", ["pathwarden", "--version"], env=base)
    step("user", ["getent", "passwd", "pathwarden"], env=base)
    # What deb-systemd-helper update-state recorded (it refuses to answer outside dpkg).
    step("timer_state", ["sh", "-c", "ls /var/lib/systemd/deb-systemd-helper-enabled/ | grep -x "
                                     "pathwarden.timer.dsh-also"], env=base)
    step("galaxy_install", ["ansible-galaxy", "collection", "install", tarball], env=base)
    os.makedirs("/etc/pathwarden", exist_ok=True)
    shutil.copy(settings, "/etc/pathwarden/pathwarden.yaml")
    os.chmod("/etc/pathwarden/pathwarden.yaml", 0o644)
    playbook = os.path.join(work, "play.yml")
    with open(playbook, "w") as f:
        f.write(PLAYBOOK)
    with open(env_file) as f:
        controller_env = json.load(f)
    step("playbook", ["ansible-playbook", "-i", "localhost,", playbook],
         env=dict(base, **controller_env, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_NOCOLOR="1",
                  ANSIBLE_PYTHON_INTERPRETER="/usr/bin/python3", ANSIBLE_RETRY_FILES_ENABLED="0"))
    step("purge", ["apt-get", "purge", "-y", "pathwarden"], env=dict(base, DEBIAN_FRONTEND="noninteractive"))
    step("after", ["sh", "-c", "test ! -e /usr/bin/pathwarden && ! dpkg -s pathwarden 2>/dev/null"], env=base)
    with open(os.path.join(work, "inside.json"), "w") as f:
        json.dump(out, f)


def enter(work, args):
    """The clean root and the chroot into it, in a mount namespace of its own."""
    script = f"""set -e
w={work}/root
mkdir -p "$w"
mount -t tmpfs -o mode=0755 pw-install "$w"
mkdir "$w/upper" "$w/work" "$w/merged"
mount -t overlay overlay -o "lowerdir=/,upperdir=$w/upper,workdir=$w/work" "$w/merged"
m="$w/merged"
mount -t proc proc "$m/proc"
mount --rbind /dev "$m/dev"
mount -t tmpfs -o mode=0755 run "$m/run"
mount -t tmpfs -o mode=1777 tmp "$m/tmp"
mkdir -p "$m{work}" "$m{ROOT}"
mount --bind {work} "$m{work}"
mount --bind -o ro {ROOT} "$m{ROOT}"
exec chroot "$m" /usr/bin/python3 {os.path.abspath(__file__)} --inside {" ".join(args)}
"""
    return run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
               env=dict(PATH=PATH, PYTHONPATH=os.path.join(ROOT, "tests")))


def task(result, name):
    for play in result["plays"]:
        for t in play["tasks"]:
            if t["task"]["name"].split(" : ", 1)[-1] == name:
                return t["hosts"].get("localhost", {})
    return {}


def main(package_dir, pvesim):
    check(os.geteuid() == 0, "install_test.py needs root (mount namespace, overlayfs, chroot)")
    debs = glob.glob(os.path.join(os.path.abspath(package_dir), "pathwarden_*.deb"))
    check(len(debs) == 1, f"no single .deb in {package_dir} (packaging_deb makes it): {debs}")
    # Under /var/tmp, the root file system's own (the clean root bind-mounts it at the same path).
    work = tempfile.mkdtemp(prefix="pw-install-", dir="/var/tmp")
    try:
        built = run(["ansible-galaxy", "collection", "build", COLLECTION, "--output-path", work])
        check(built.returncode == 0, f"ansible-galaxy collection build: {built.stdout}{built.stderr}")
        tarball = glob.glob(os.path.join(work, "pathwarden-pathwarden-*.tar.gz"))[0]
        deb = shutil.copy(debs[0], work)
        with Pvesim(pvesim, STAND_IN_STATE, PVESIM_ARGS) as sim:
            ctl = stand_in_controller("/usr/bin/pathwarden", sim, work)
            # The seed's fix for the stand-in's guest, in the settings' policies directory (what
            # the module reconciles when it is given no path).
            policy_dir = os.path.join(work, "policies")
            policies.write(policy_dir, "movies-10g.yaml", policies.seed_fix("movies-10g", 101, "media-vm", queues=8))
            with open(ctl.settings, "a") as f:
                f.write(f"  policies: {policy_dir}\n")
            env_file = os.path.join(work, "env.json")
            with open(env_file, "w") as f:
                json.dump({k: v for k, v in ctl.env.items() if k.startswith(("PW_", "GIT_")) or k in (
                    "no_proxy", "NO_PROXY")}, f)
            r = enter(work, [work, deb, tarball, ctl.settings, env_file])
            check(r.returncode == 0 and os.path.exists(os.path.join(work, "inside.json")),
                  f"the clean root failed (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        with open(os.path.join(work, "inside.json")) as f:
            steps = json.load(f)
        assess(steps)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def assess(steps):
    def ok(name):
        s = steps[name]
        check(s["rc"] == 0, f"{name}: exit {s['rc']}\n{s['stdout']}\n{s['stderr']}")
        return s["stdout"]

    before = steps["before"]
    check("/pathwarden" not in before["stdout"] and "pathwarden.pathwarden" not in before["stdout"],
          f"the root was not clean of pathwarden: {before}")
    ok("apt_install")
    version = ok("version")
    check(version.startswith("pathwarden "), f"--version: {version}")
    check(ok("user").split(":")[5] == "/var/lib/pathwarden", "no pathwarden user from the postinst")
    ok("timer_state")
    ok("galaxy_install")
    print(f"ok   apt installed the .deb in a clean root ({version.strip()}); the collection installed")
    play = steps["playbook"]
    check(play["stdout"].lstrip().startswith("{"),
          f"ansible-playbook printed no JSON:\n{play['stdout'][-3000:]}\n{play['stderr']}")
    result = json.loads(play["stdout"])
    module = task(result, "Run the module with no argument")
    check(play["rc"] == 0 and not module.get("failed"),
          f"the module with its defaults failed: {json.dumps(module)[:3000]}\n{play['stderr']}")
    check(module.get("cmd", [None])[0] == "/usr/bin/pathwarden"
          and "--config=/etc/pathwarden/pathwarden.yaml" in module.get("cmd", []),
          f"the module ran {module.get('cmd')}")
    verdicts = [p["verdict"] for p in module["report"]["policies"]]
    check(module.get("changed") is True and module["rc"] == 2 and verdicts == ["verified"],
          f"the module's run: changed {module.get('changed')}, rc {module.get('rc')}, {verdicts}")
    role = task(result, "Run pathwarden reconcile")
    check(role.get("changed") is False and [p["verdict"] for p in role["report"]["policies"]] == ["converged"],
          f"the role's run: {json.dumps(role)[:2000]}")
    stats = result["stats"]["localhost"]
    check(stats.get("changed") == 1 and stats.get("failures") == 0, f"recap: {stats}")
    print(f"ok   module with no argument: {module['cmd'][0]}, exit 2, verified; the role with its defaults: "
          f"converged; recap changed={stats['changed']}")
    ok("purge")
    ok("after")
    print("ok   apt-get purge pathwarden: removed")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        inside(*sys.argv[2:])
    else:
        test_main(main, __doc__, 2)
