# SPDX-License-Identifier: GPL-3.0-or-later
"""Lab images, built from Debian packages only and cached outside the repo.

The cache key hashes this recipe (this file, the initramfs scripts, the values baked into the
guest) and the versions of the packages taken from apt, so a changed recipe or a new kernel in the
mirror builds a new set; a missing set is rebuilt. Layout of CACHE_ROOT/<key>/:
  vmlinuz, initrd-boot.img (guest: storage drivers, then systemd from the disk),
  initrd-nas.img (the NAS, whole system in RAM: knfsd or NFS-Ganesha, see nas_image.py),
  guest-root.img (raw ext4, debootstrap),
  ssh/id_ed25519{,.pub} (lab key), ssh/guest_host_ed25519.pub (pinned host key), manifest.json.

Docker in the guest (the Compose scenarios, shared/seeds/002): Debian's docker.io and
docker-compose (Compose v1, `docker-compose`), the overlay module for the overlay2 storage driver,
and /etc/docker/daemon.json with no iptables, no ip6tables and no default bridge (no docker0: an
idle lab link must move 0 bytes). apparmor: Debian's kernel has AppArmor on, and dockerd starts
no container without loading its docker-default profile with apparmor_parser. docker.service,
containerd.service and apparmor.service are disabled: the first `docker` command starts dockerd
through docker.socket (docker.service Wants= containerd), so an unused Docker costs no boot time. \
COMPOSE_IMAGE_TAR is a busybox root file system (busybox-static's
binary and its applet links) for `docker import`: nothing is ever pulled from a registry.

The QEMU guest agent (qemu-guest-agent, Debian's qemu-ga 7.2), as on a Proxmox guest: nothing to
enable. udev starts qemu-guest-agent.service (60-qemu-guest-agent.rules, SYSTEMD_WANTS) when the
virtio-serial port org.qemu.guest_agent.0 appears, i.e. only in a VM whose config has `agent: 1`
(qemu.py adds the channel), and the unit is bound to that port's device. qemu-ga opens no network
socket: the links stay silent.
"""
import fcntl
import glob
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import subprocess
import tarfile
import time

from ..paths import LAB as LAB_DIR
from . import nas_image
from . import topology as topo
from .common import LabError, log, output, run

SUITE = "bookworm"
# The kernel's suite (guest and NAS boot the same kernel): bookworm's (Debian 12, Linux 6.1) unless
# PW_LAB_KERNEL_SUITE names another suite on the same mirror, read with an apt state of the lab's
# own (trixie: Debian 13's 6.12; issue 44, a second kernel). The user space stays bookworm's.
KERNEL_SUITE = os.environ.get("PW_LAB_KERNEL_SUITE", SUITE)
GUEST_PACKAGES = ("systemd-sysv", "udev", "dbus", "openssh-server", "python3", "nfs-common",
                  "ethtool", "iproute2", "netbase", "kmod", "procps", "iputils-ping", "sudo",
                  "docker.io", "docker-compose", "apparmor", "qemu-guest-agent")
# The unprivileged operator account (the lab's key may log in as it too) and the sudoers entry
# policies/README.md documents for spec.ansible.become.
OPERATOR = topo.GUEST_OPERATOR
# inet_diag/tcp_diag: `ss -tin` shows tcp_info (bytes_received, bytes_acked) only through
# sock_diag, as on any Debian guest; without them it falls back to /proc/net/tcp, which has no
# byte counters. bridge/8021q: the verification tests stack a bridge or VLAN on a NIC.
# overlay: dockerd's overlay2 storage driver. Nothing else Docker needs is a module in Debian's
# kernel with daemon.json below (namespaces, cgroups, seccomp are built in; veth, br_netfilter,
# nf_nat, iptables matches are only for networks and iptables, which the lab's dockerd has not).
# virtio_console: virtio-serial, the guest agent's port (udev loads it by the device's modalias).
GUEST_MODULES = ("virtio_pci", "virtio_blk", "virtio_net", "ext4", "nfs", "nfsv3", "nfsv4",
                 "button", "evdev", "virtio_rng", "inet_diag", "tcp_diag", "bridge", "8021q",
                 "overlay", "virtio_console")
BOOT_MODULES = ("virtio_pci", "virtio_blk", "ext4")
QGA_UDEV_RULES = "60-qemu-guest-agent.rules"
GUEST_DISK_SIZE = "2G"
ARTIFACTS = ("vmlinuz", "initrd-boot.img", "initrd-nas.img", "guest-root.img",
             "ssh/id_ed25519", "ssh/id_ed25519.pub", "ssh/guest_host_ed25519.pub", "manifest.json")


class ImageSet:
    def __init__(self, directory: str):
        self.dir = directory
        with open(os.path.join(directory, "manifest.json")) as f:
            self.manifest = json.load(f)

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    @property
    def kernel(self): return self.path("vmlinuz")
    @property
    def initrd_boot(self): return self.path("initrd-boot.img")
    @property
    def initrd_nas(self): return self.path("initrd-nas.img")
    @property
    def guest_root(self): return self.path("guest-root.img")
    @property
    def ssh_key(self): return self.path("ssh/id_ed25519")

    def guest_host_key(self) -> str:
        with open(self.path("ssh/guest_host_ed25519.pub")) as f:
            return " ".join(f.read().split()[:2])


# ---------------------------------------------------------------------------------------------
# What apt already uses

def debian_mirror() -> str:
    """The Debian mirror apt on this machine uses for SUITE (deb822 or one-line sources)."""
    files = sorted(glob.glob("/etc/apt/sources.list.d/*.sources")) + \
        sorted(glob.glob("/etc/apt/sources.list.d/*.list")) + ["/etc/apt/sources.list"]
    for path in files:
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        if path.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                fields = {}
                for line in stanza.splitlines():
                    m = re.match(r"^([A-Za-z-]+):\s*(.*)$", line)
                    if m and not line.startswith("#"):
                        fields[m.group(1).lower()] = m.group(2).split()
                if (SUITE in fields.get("suites", []) and "main" in fields.get("components", [])
                        and "deb" in fields.get("types", []) and fields.get("uris")
                        and fields.get("enabled", ["yes"])[0] != "no"):
                    return fields["uris"][0]
        else:
            for line in text.splitlines():
                parts = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
                if len(parts) >= 4 and parts[0] == "deb" and parts[2] == SUITE and "main" in parts[3:]:
                    return parts[1]
    raise LabError(f"no apt source for Debian {SUITE} main in /etc/apt/sources.list(.d): "
                   "the lab builds its images from the mirror apt uses")


def _apt_cache(args: list) -> str:
    return output(["apt-cache"] + args, check=False)


def _ensure_apt_lists() -> None:
    if not _apt_cache(["show", "--no-all-versions", "nfs-kernel-server"]).strip():
        log("apt lists are empty: apt-get update")
        run(["apt-get", "update", "-qq"], what="apt-get update")


def _package_version(pkg: str, apt_options: list = ()) -> str:
    text = _apt_cache(list(apt_options) + ["show", "--no-all-versions", pkg])
    m = re.search(r"^Version: (\S+)", text, re.M)
    if not m:
        raise LabError(f"apt knows no package {pkg}: run apt-get update")
    return m.group(1)


def _suite_apt(suite: str) -> list:
    """apt options reading only SUITE of the host's mirror, in a state of the lab's own (the host's
    /etc/apt and lists are never touched); [] for the host's own suite."""
    if suite == SUITE:
        return []
    if not re.fullmatch(r"[a-z]+", suite):
        raise LabError(f"PW_LAB_KERNEL_SUITE={suite!r} is not a Debian suite name")
    base = os.path.join(topo.CACHE_ROOT, f"apt-{suite}")
    for d in ("lists/partial", "cache/archives/partial", "etc"):
        os.makedirs(os.path.join(base, d), exist_ok=True)
    with open(os.path.join(base, "etc", "sources.list"), "w") as f:
        f.write(f"deb {debian_mirror()} {suite} main\n")
    opts = ["-o", f"Dir::State::Lists={base}/lists", "-o", f"Dir::Cache={base}/cache",
            "-o", f"Dir::Etc::sourcelist={base}/etc/sources.list", "-o", "Dir::Etc::sourceparts=-",
            "-o", "APT::Sandbox::User=root"]
    if not glob.glob(os.path.join(base, "lists", "*_InRelease")):
        run(["apt-get", *opts, "update", "-qq"], what=f"apt-get update ({suite}, the lab's own state)")
    return opts


def _kernel_package() -> str:
    text = _apt_cache(_suite_apt(KERNEL_SUITE) + ["depends", "linux-image-amd64"])
    m = re.search(r"Depends: (linux-image-\S+-amd64)", text)
    if not m:
        raise LabError("apt cannot resolve linux-image-amd64 to a kernel package: run apt-get update")
    return m.group(1)


def package_pins() -> dict:
    _ensure_apt_lists()
    kernel = _kernel_package()
    pins = {pkg: _package_version(pkg) for pkg in (*nas_image.packages(), "busybox-static", "docker.io",
                                                   "docker-compose", "apparmor", "qemu-guest-agent")}
    pins[kernel] = _package_version(kernel, _suite_apt(KERNEL_SUITE))
    return pins | {"_kernel": kernel, "_kernel_suite": KERNEL_SUITE}


# ---------------------------------------------------------------------------------------------
# The recipe key

def _guest_files() -> dict:
    """Files written into the guest root (path -> content); part of the recipe key."""
    files = {
        "/etc/hostname": f"{topo.GUEST_HOSTNAME}\n",
        # The NAS by name, as a guest's resolver gives it (a real site: DNS or this file).
        "/etc/hosts": f"127.0.0.1\tlocalhost\n127.0.1.1\t{topo.GUEST_HOSTNAME}\n" +
                      "".join(f"{link['nas']}\t{link['nas_name']}\n" for link in topo.LINKS),
        "/etc/sudoers.d/pathwarden": f"{OPERATOR} ALL=(root) NOPASSWD: ALL\n",
        "/var/lib/systemd/linger/" + OPERATOR: "",
        "/etc/fstab": "# <file system> <mount point> <type> <options> <dump> <pass>\n"
                      "/dev/vda / ext4 errors=remount-ro 0 0\n",
        "/etc/resolv.conf": "# the lab has no DNS\n",
        "/etc/ssh/sshd_config.d/pwlab.conf":
            "# pathwarden lab: key-only root login, one pinned host key, no DNS lookups\n"
            "HostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUseDNS no\n"
            # Every pathwarden run opens a new SSH connection per guest, and under TCG a login cost
            # 0.6 CPU-s of emulated CPU on an idle host (more when loaded): 0.25 of it pam_motd
            # (run-parts /etc/update-motd.d and uname forked from sshd), 0.05 the lastlog, 0.13 the
            # post-quantum key exchange OpenSSH 9.2 prefers. Nothing pathwarden does reads a
            # motd or a lastlog; curve25519 is what a guest with OpenSSH before 9.0 offers anyway.
            "PrintLastLog no\nKexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org\n",
        "/etc/systemd/journald.conf.d/pwlab.conf": "[Journal]\nStorage=volatile\n",
        # A login costs seconds under TCG on a loaded machine: sshd without its re-exec per
        # connection (Debian's ssh.service passes SSHD_OPTS), and root's user manager kept
        # running (linger) instead of started and stopped around every SSH session.
        "/etc/default/ssh": 'SSHD_OPTS="-r"\n',
        "/var/lib/systemd/linger/root": "",
        # Scenario routes (proto static) must survive a NIC being re-plugged.
        "/etc/systemd/networkd.conf.d/pwlab.conf":
            "[Network]\nManageForeignRoutes=no\nManageForeignRoutingPolicyRules=no\n",
        # dockerd that stays off the lab's links: no docker0 (containers use network_mode none),
        # no iptables/ip6tables rules (nothing NATed or filtered on the guest's links).
        "/etc/docker/daemon.json": json.dumps({"iptables": False, "ip6tables": False, "bridge": "none",
                                               "storage-driver": "overlay2"}, indent=2) + "\n",
    }
    for name, mac in topo.GUEST_MACS.items():
        files[f"/etc/systemd/network/10-{name}.link"] = \
            f"[Match]\nMACAddress={mac.lower()}\n\n[Link]\nName={name}\n"
    nets = [(link["name"], f"{link['guest']}/{link['prefix']}") for link in topo.LINKS]
    nets.append(("mgmt", f"{topo.GUEST_MGMT_ADDR}/{topo.MGMT_PREFIX}"))
    for name, addr in nets:
        # No link-local, LLDP or IPv6: an idle link must show 0 bytes.
        files[f"/etc/systemd/network/20-{name}.network"] = (
            f"[Match]\nName={name}\n\n[Link]\nRequiredForOnline=no\n\n[Network]\nAddress={addr}\n"
            "LinkLocalAddressing=no\nIPv6AcceptRA=no\nLLDP=no\nEmitLLDP=no\nConfigureWithoutCarrier=yes\n")
    return files


def recipe_key(pins: dict, mirror: str) -> str:
    h = hashlib.sha256()
    for path in [__file__, nas_image.__file__] + sorted(glob.glob(os.path.join(LAB_DIR, "initramfs", "*"))):
        with open(path, "rb") as f:
            h.update(os.path.basename(path).encode() + b"\0" + f.read())
    h.update(json.dumps({"pins": pins, "mirror": mirror, "suite": SUITE,
                         "guest_files": _guest_files(), "packages": GUEST_PACKAGES},
                        sort_keys=True).encode())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------------------------------------
# Building

def _apt_download(pkgs: list, dest: str, apt_options: list = ()) -> None:
    cmd = ["apt-get", *apt_options, "download", "-q", "-o", "APT::Sandbox::User=root"] + pkgs
    if run(cmd, cwd=dest, check=False, capture=True).returncode != 0:
        log("apt-get download failed; apt-get update and retry")
        run(["apt-get", "update", "-qq"], what="apt-get update")
        run(cmd, cwd=dest, capture=True, what="apt-get download " + " ".join(pkgs))


def _deb(dl: str, pkg: str) -> str:
    found = glob.glob(os.path.join(dl, f"{pkg}_*.deb"))
    if len(found) != 1:
        raise LabError(f"expected one downloaded {pkg} package in {dl}, found {len(found)}")
    return found[0]


def _module_closure(kernel_root: str, kver: str, modules) -> list:
    """insmod order (paths relative to kernel_root) for modules and their dependencies."""
    order = []
    for mod in modules:
        text = output(["modprobe", "-d", kernel_root, "-S", kver, "--show-depends", mod],
                      what=f"modprobe --show-depends {mod}")
        for line in text.splitlines():
            parts = line.split()
            if parts and parts[0] == "insmod":
                rel = os.path.relpath(parts[1], kernel_root)
                if rel not in order:
                    order.append(rel)
    return order


def _copy_modules(kernel_root: str, rels: list, dest_root: str) -> None:
    for rel in rels:
        dst = os.path.join(dest_root, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(kernel_root, rel), dst)


def _busybox_tree(dl: str, tree: str) -> None:
    bb = os.path.join(tree, "..", "busybox-pkg")
    run(["dpkg", "-x", _deb(dl, "busybox-static"), bb])
    os.makedirs(os.path.join(tree, "bin"), exist_ok=True)
    shutil.copy2(os.path.join(bb, "bin", "busybox"), os.path.join(tree, "bin", "busybox"))
    for d in ("dev", "proc", "sys", "run", "tmp", "etc"):
        os.makedirs(os.path.join(tree, d), exist_ok=True)


def _write_cpio(tree: str, out_path: str) -> None:
    with open(out_path, "wb") as out:
        find = subprocess.Popen(["find", ".", "-print0"], stdin=subprocess.DEVNULL, cwd=tree, stdout=subprocess.PIPE)
        cpio = subprocess.Popen(["cpio", "--null", "-o", "-H", "newc", "-R", "0:0", "--quiet"],
                                cwd=tree, stdin=find.stdout, stdout=subprocess.PIPE)
        gz = subprocess.Popen(["gzip", "-1"], stdin=cpio.stdout, stdout=out)
        find.stdout.close()
        cpio.stdout.close()
        if gz.wait() or cpio.wait() or find.wait():
            raise LabError(f"packing {out_path} failed")


def _initramfs(kernel_root: str, kver: str, dl: str, work: str, name: str, init_script: str,
               modules, extra=None) -> str:
    tree = os.path.join(work, name + "-tree")
    os.makedirs(tree)
    _busybox_tree(dl, tree)
    order = _module_closure(kernel_root, kver, modules)
    _copy_modules(kernel_root, order, tree)
    with open(os.path.join(tree, "modules.list"), "w") as f:
        f.write("".join(rel + "\n" for rel in order))
    shutil.copy2(os.path.join(LAB_DIR, "initramfs", init_script), os.path.join(tree, "init"))
    os.chmod(os.path.join(tree, "init"), 0o755)
    if extra:
        extra(tree)
    out = os.path.join(work, "out", name + ".img")
    _write_cpio(tree, out)
    return out


def _configure_guest_root(root: str, kernel_root: str, kver: str, ssh_dir: str) -> None:
    for path, text in _guest_files().items():
        full = os.path.join(root, path.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if os.path.islink(full):
            os.unlink(full)
        with open(full, "w") as f:
            f.write(text)
    # sshd's PAM stack as the installed openssh-server ships it, without pam_motd (see
    # sshd_config.d/pwlab.conf): filtered, not a copy of Debian's file that could fall behind it.
    pam_sshd = os.path.join(root, "etc/pam.d/sshd")
    with open(pam_sshd) as f:
        lines = f.readlines()
    kept = [line for line in lines if not re.match(r"session\s+optional\s+pam_motd\.so", line)]
    if len(kept) == len(lines):
        raise LabError(f"{pam_sshd} has no pam_motd line to drop: has openssh-server's PAM file changed?")
    with open(pam_sshd, "w") as f:
        f.writelines(kept)
    # The guest agent starts from udev when its port appears (nothing to enable): fail the build,
    # not a lab test, if Debian's package stops doing it that way.
    try:
        with open(os.path.join(root, "lib/udev/rules.d", QGA_UDEV_RULES)) as f:
            rule = f.read()
    except OSError:
        rule = ""
    if topo.QGA_PORT not in rule or "qemu-guest-agent.service" not in rule:
        raise LabError(f"{QGA_UDEV_RULES}: no rule starting qemu-guest-agent.service for the port "
                       f"{topo.QGA_PORT}: has the qemu-guest-agent package changed?")
    # A fixed machine-id: no first-boot presets re-enabling what the lab turned off.
    with open(os.path.join(root, "etc/machine-id"), "w") as f:
        f.write(secrets.token_hex(16) + "\n")
    run(["chroot", root, "systemctl", "enable", "systemd-networkd.service"], what="enable networkd")
    run(["chroot", root, "systemctl", "mask", "systemd-networkd-wait-online.service",
         "apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "e2scrub_reap.service",
         "fstrim.timer",
         "getty@tty1.service"], what="mask units")
    # debootstrap leaves every .deb it installed (≈ 120 MB with Docker) in apt's cache.
    for deb in glob.glob(os.path.join(root, "var/cache/apt/archives/*.deb")):
        os.unlink(deb)
    # Docker only when used: docker.socket (enabled) starts docker.service, which Wants= containerd.
    # Debian's kernel has AppArmor on: dockerd refuses to start a container unless it can load its
    # docker-default profile with apparmor_parser (package apparmor, which docker.io recommends).
    # apparmor.service would compile the package's profiles at every boot (a fresh overlay each
    # `lab up`); dockerd loads the one profile it needs itself.
    run(["chroot", root, "systemctl", "disable", "docker.service", "containerd.service", "apparmor.service"],
        what="disable docker/containerd/apparmor")
    # Modules the guest loads itself (udev, mount.nfs): the closure of GUEST_MODULES.
    mods_root = os.path.join(root, "usr/lib/modules", kver)
    _copy_modules(kernel_root, _module_closure(kernel_root, kver, GUEST_MODULES), os.path.join(root, "usr"))
    for meta in ("modules.builtin", "modules.builtin.modinfo", "modules.order"):
        shutil.copy2(os.path.join(kernel_root, "lib/modules", kver, meta), os.path.join(mods_root, meta))
    run(["depmod", "-b", os.path.join(root, "usr"), kver], what="depmod (guest)")
    # SSH: the lab key may log in as root; one ed25519 host key, pinned by the controller.
    for old in glob.glob(os.path.join(root, "etc/ssh/ssh_host_*")):
        os.unlink(old)
    host_key = os.path.join(root, "etc/ssh/ssh_host_ed25519_key")
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"root@{topo.GUEST_HOSTNAME}", "-f", host_key])
    shutil.copy2(host_key + ".pub", os.path.join(ssh_dir, "guest_host_ed25519.pub"))
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pathwarden-lab",
         "-f", os.path.join(ssh_dir, "id_ed25519")])
    auth = os.path.join(root, "root/.ssh")
    os.makedirs(auth, mode=0o700, exist_ok=True)
    shutil.copy2(os.path.join(ssh_dir, "id_ed25519.pub"), os.path.join(auth, "authorized_keys"))
    os.chmod(os.path.join(auth, "authorized_keys"), 0o600)
    os.chmod(os.path.join(root, "etc/sudoers.d/pathwarden"), 0o440)
    run(["chroot", root, "useradd", "--create-home", "--uid", "1000", "--shell", "/bin/sh", OPERATOR],
        what="useradd " + OPERATOR)
    home = os.path.join(root, "home", OPERATOR, ".ssh")
    os.makedirs(home, mode=0o700)
    shutil.copy2(os.path.join(ssh_dir, "id_ed25519.pub"), os.path.join(home, "authorized_keys"))
    os.chmod(os.path.join(home, "authorized_keys"), 0o600)
    for path in (home, os.path.join(home, "authorized_keys")):
        os.chown(path, 1000, 1000)


def _busybox_rootfs(dl: str, work: str, root: str) -> None:
    """COMPOSE_IMAGE_TAR in the guest root: busybox-static's binary and a link per applet, for
    `docker import` (a root file system tarball: no registry, no Dockerfile)."""
    pkg = os.path.join(work, "busybox-rootfs-pkg")
    run(["dpkg", "-x", _deb(dl, "busybox-static"), pkg])
    busybox = os.path.join(pkg, "bin", "busybox")
    applets = sorted(set(output([busybox, "--list"], what="busybox --list").split()) - {"busybox"})
    for needed in ("sh", "sleep", "cat", "ls", "dd", "sync"):
        if needed not in applets:
            raise LabError(f"busybox-static has no applet {needed}")
    tar_path = os.path.join(root, topo.COMPOSE_IMAGE_TAR.lstrip("/"))
    os.makedirs(os.path.dirname(tar_path), exist_ok=True)

    def entry(name, kind=tarfile.DIRTYPE, mode=0o755, data=None, link=""):
        info = tarfile.TarInfo(name)
        info.type, info.mode, info.mtime, info.linkname = kind, mode, 0, link
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        if data is not None:
            info.size = len(data)
        return info
    with tarfile.open(tar_path, "w", format=tarfile.GNU_FORMAT) as tar:
        for d in ("bin", "dev", "etc", "proc", "root", "sys", "var", "var/lib"):
            tar.addfile(entry(d))
        tar.addfile(entry("tmp", mode=0o1777))
        with open(busybox, "rb") as f:
            data = f.read()
        tar.addfile(entry("bin/busybox", tarfile.REGTYPE, data=data), io.BytesIO(data))
        for applet in applets:
            tar.addfile(entry(f"bin/{applet}", tarfile.SYMTYPE, mode=0o777, link="busybox"))
        for name, text in (("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
                           ("etc/group", "root:x:0:\n")):
            raw = text.encode()
            tar.addfile(entry(name, tarfile.REGTYPE, mode=0o644, data=raw), io.BytesIO(raw))


def _build(key: str, pins: dict, mirror: str, final_dir: str) -> None:
    work = os.path.join(topo.CACHE_ROOT, f".build-{key}-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    out = os.path.join(work, "out")
    dl = os.path.join(work, "dl")
    for d in (out, dl, os.path.join(out, "ssh")):
        os.makedirs(d)
    os.chmod(os.path.join(out, "ssh"), 0o700)
    timings = {}
    t0 = time.monotonic()
    try:
        kernel_pkg = pins["_kernel"]
        kver = kernel_pkg[len("linux-image-"):]
        log(f"downloading {kernel_pkg} ({KERNEL_SUITE}), the NAS's servers, busybox-static with apt-get download")
        _apt_download([kernel_pkg], dl, _suite_apt(KERNEL_SUITE))
        _apt_download([*nas_image.packages(), "busybox-static"], dl)
        kernel_root = os.path.join(work, "kernel")
        run(["dpkg", "-x", _deb(dl, kernel_pkg), kernel_root], what=f"dpkg -x {kernel_pkg}")
        # Merged /usr in bookworm: modules may sit under lib/ or usr/lib/.
        if not os.path.isdir(os.path.join(kernel_root, "lib/modules", kver)):
            os.symlink("usr/lib", os.path.join(kernel_root, "lib"))
        # Debian 13 compresses its modules (.ko.xz), which busybox's insmod in the initramfs
        # cannot load: stored plain, as 6.1's are.
        run(["find", os.path.join(kernel_root, "lib/modules", kver) + "/", "-name", "*.ko.xz",
             "-exec", "xz", "-d", "-q", "{}", "+"], what="xz -d (the kernel's modules)")
        run(["depmod", "-b", kernel_root, kver], what="depmod (kernel)")
        shutil.copy2(os.path.join(kernel_root, "boot", f"vmlinuz-{kver}"), os.path.join(out, "vmlinuz"))
        timings["kernel_s"] = round(time.monotonic() - t0, 1)

        t1 = time.monotonic()
        root = os.path.join(work, "root")
        log(f"debootstrap {SUITE} from {mirror} (about a minute or two)")
        proc = run(["debootstrap", "--variant=minbase", "--include=" + ",".join(GUEST_PACKAGES),
                    SUITE, root, mirror], check=False, capture=True)
        if proc.returncode != 0:
            tail = ""
            try:
                with open(os.path.join(root, "debootstrap/debootstrap.log")) as f:
                    tail = "".join(f.readlines()[-5:])
            except OSError:
                tail = proc.stderr[-800:]
            raise LabError(f"debootstrap failed (exit {proc.returncode}):\n{tail}")
        timings["debootstrap_s"] = round(time.monotonic() - t1, 1)

        t2 = time.monotonic()
        _configure_guest_root(root, kernel_root, kver, os.path.join(out, "ssh"))
        _busybox_rootfs(dl, work, root)
        _initramfs(kernel_root, kver, dl, work, "initrd-boot", "boot-init", BOOT_MODULES)
        _initramfs(kernel_root, kver, dl, work, "initrd-nas", "nas-init", nas_image.NAS_MODULES,
                   nas_image.payload(root, dl, work, _deb))
        img = os.path.join(out, "guest-root.img")
        run(["truncate", "-s", GUEST_DISK_SIZE, img])
        run(["mkfs.ext4", "-q", "-F", "-L", "pwlab-root", "-d", root, img], what="mkfs.ext4 -d")
        timings["images_s"] = round(time.monotonic() - t2, 1)
        root_mib = int(output(["du", "-sxm", root], what="du guest root").split()[0])
        timings["total_s"] = round(time.monotonic() - t0, 1)
        manifest = {"key": key, "kernel_release": kver, "packages": pins, "mirror": mirror,
                    "suite": SUITE, "kernel_suite": KERNEL_SUITE, "guest_packages": list(GUEST_PACKAGES),
                    "guest_root_mib": root_mib,
                    "guest_disk_size": GUEST_DISK_SIZE,
                    "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "timings": timings}
        with open(os.path.join(out, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=2)
        os.rename(out, final_dir)
        log(f"images built in {timings['total_s']} s: {final_dir}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _complete(directory: str) -> bool:
    return all(os.path.exists(os.path.join(directory, a)) for a in ARTIFACTS)


def ensure_images(rebuild: bool = False) -> ImageSet:
    """The image set for the current recipe, built when missing (serialised by a lock)."""
    os.makedirs(topo.CACHE_ROOT, mode=0o700, exist_ok=True)
    mirror = debian_mirror()
    pins = package_pins()
    key = recipe_key(pins, mirror)
    final_dir = os.path.join(topo.CACHE_ROOT, key)
    with open(os.path.join(topo.CACHE_ROOT, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if rebuild or not _complete(final_dir):
            shutil.rmtree(final_dir, ignore_errors=True)
            log(f"building lab images (recipe {key}) into {final_dir}")
            _build(key, pins, mirror, final_dir)
        os.utime(final_dir)
        _prune(keep=final_dir)
    return ImageSet(final_dir)


def _prune(keep: str, max_age_days: float = 14) -> None:
    """Removes image sets of other recipes unused for max_age_days (and stale build dirs)."""
    now = time.time()
    for d in glob.glob(os.path.join(topo.CACHE_ROOT, "*")) + glob.glob(os.path.join(topo.CACHE_ROOT, ".build-*")):
        if d == keep or not os.path.isdir(d):
            continue
        if now - os.path.getmtime(d) > max_age_days * 86400 or os.path.basename(d).startswith(".build-"):
            if os.path.basename(d).startswith(".build-"):
                pid = d.rsplit("-", 1)[-1]
                if pid.isdigit() and os.path.exists(f"/proc/{pid}"):
                    continue
            shutil.rmtree(d, ignore_errors=True)
