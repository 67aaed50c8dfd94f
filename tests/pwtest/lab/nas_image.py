# SPDX-License-Identifier: GPL-3.0-or-later
"""What the lab NAS's initramfs carries besides busybox and the kernel's modules: two NFS servers,
one of which nas-init starts (kernel command line `pwnas.server=knfsd|ganesha`, lab.nas_config).

* knfsd: the kernel's server, driven by nfs-kernel-server's rpc.nfsd, rpc.mountd and exportfs.
* NFS-Ganesha 4.3 (bookworm's nfs-ganesha and nfs-ganesha-vfs): a user-space server, the one
  many appliances and Ceph/Gluster gateways run (issue 44, item 5: a second server). Its VFS FSAL
  exports a local file system, as knfsd does.

Both with rpcbind, and every shared library they load taken from the guest root (the same bookworm
user space), found by `ldd` run in that root; Ganesha's own libraries are put where its RUNPATH
expects them (/usr/lib/ganesha) and found through LD_LIBRARY_PATH while `ldd` runs."""
import glob
import os
import re
import shutil

from . import topology as topo
from .common import LabError, output, run

NAS_MODULES = ("virtio_pci", "virtio_net", "nfsd")
KNFSD_TOOLS = ("/usr/sbin/rpc.nfsd", "/usr/sbin/rpc.mountd", "/usr/sbin/exportfs")
# nfs-ganesha's Depends that the guest root (minbase + nfs-common) lacks, and the FSAL.
GANESHA_PACKAGES = ("nfs-ganesha", "nfs-ganesha-vfs", "libntirpc4.3", "liburcu8", "libwbclient0",
                    "libdbus-1-3")
# Loaded with dlopen, so no ldd finds them: the VFS FSAL (Plugins_Dir, compiled in) and
# libnfsidmap's plugins (Ganesha maps NFSv4 owner strings through libnfsidmap).
GANESHA_DLOPENED = ("usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so",)
NFSIDMAP_PLUGINS = "usr/lib/x86_64-linux-gnu/libnfsidmap"
SERVERS = ("knfsd", "ganesha")


def packages() -> list:
    """The packages the NAS needs from apt (downloaded with the kernel, busybox-static)."""
    return ["nfs-kernel-server", *GANESHA_PACKAGES]


def _copy_lib(root: str, lib: str, tree: str) -> None:
    target = os.path.join(tree, lib.lstrip("/"))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(os.path.realpath(os.path.join(root, lib.lstrip("/"))), target)
    os.chmod(target, 0o755)


def _needed_libs(root: str, binary_in_root: str, library_path: str = "") -> set:
    env = ["env", f"LD_LIBRARY_PATH={library_path}"] if library_path else []
    text = output(["chroot", root, *env, "ldd", binary_in_root], what=f"ldd {binary_in_root}")
    if "not found" in text:
        raise LabError(f"the NAS's {binary_in_root} needs a library the guest root lacks:\n{text}")
    return {m.group(1) for m in re.finditer(r"(?:=>\s*)?(/\S+)\s+\(0x", text)}


def payload(root: str, dl: str, work: str, deb):
    """The `extra` step of the NAS initramfs: both servers' files into its tree. `deb(dl, name)`
    finds a downloaded package."""
    nks = os.path.join(work, "nfs-kernel-server")
    run(["dpkg", "-x", deb(dl, "nfs-kernel-server"), nks])
    # Ganesha's packages unpacked inside the guest root (removed again below), so `ldd` there sees
    # them and the rest of its libraries come from the root as for knfsd.
    gan_rel = "tmp/pwlab-ganesha"
    gan = os.path.join(root, gan_rel)
    for pkg in GANESHA_PACKAGES:
        run(["dpkg", "-x", deb(dl, pkg), gan], what=f"dpkg -x {pkg}")

    def extra(tree: str) -> None:
        staging = os.path.join(root, "tmp", "pwlab-nas")
        os.makedirs(staging, exist_ok=True)
        libs = set()
        bins = {os.path.join(nks, p.lstrip("/")): p for p in KNFSD_TOOLS}
        bins[os.path.join(root, "usr/sbin/rpcbind")] = "/usr/sbin/rpcbind"
        for src, dst in bins.items():
            shutil.copy2(src, os.path.join(staging, os.path.basename(dst)))
            libs |= _needed_libs(root, "/tmp/pwlab-nas/" + os.path.basename(dst))
            target = os.path.join(tree, dst.lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(src, target)
        shutil.rmtree(staging)

        # Ganesha: its packages' files as they are (binaries, its libraries, the FSAL), then what
        # they load from the root.
        gan_libdirs = ["/" + gan_rel + d for d in ("/usr/lib/ganesha", "/usr/lib/x86_64-linux-gnu",
                                                   "/lib/x86_64-linux-gnu")]
        for rel in ["usr/bin/ganesha.nfsd", *GANESHA_DLOPENED]:
            libs |= _needed_libs(root, "/" + gan_rel + "/" + rel, ":".join(gan_libdirs))
        for src in glob.glob(os.path.join(gan, "**"), recursive=True):
            rel = os.path.relpath(src, gan)
            if os.path.isdir(src) or rel.startswith(("usr/share", "etc/", "lib/systemd")):
                continue
            target = os.path.join(tree, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(src, target, follow_symlinks=False)
        for plugin in glob.glob(os.path.join(root, NFSIDMAP_PLUGINS, "*.so")):
            libs |= _needed_libs(root, "/" + os.path.relpath(plugin, root))
            _copy_lib(root, "/" + os.path.relpath(plugin, root), tree)
        shutil.rmtree(gan)

        for lib in libs:
            if lib.startswith("/" + gan_rel + "/"):
                continue  # one of Ganesha's own: copied with its package above
            _copy_lib(root, lib, tree)
        for etc in ("netconfig", "services", "protocols", "rpc"):
            shutil.copy2(os.path.join(root, "etc", etc), os.path.join(tree, "etc", etc))
        files = {
            "etc/passwd": "root:x:0:0:root:/root:/bin/sh\n_rpc:x:100:65534::/run/rpcbind:/bin/false\n"
                          "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
            "etc/group": "root:x:0:\nnogroup:x:65534:\n",
            "etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
            "etc/hosts": f"127.0.0.1\tlocalhost\n127.0.1.1\t{topo.NAS_HOSTNAME}\n",
            # libnfsidmap (Ganesha's owner strings): the lab's domain, names from /etc/passwd.
            "etc/idmapd.conf": "[General]\nDomain = pwlab\n[Translation]\nMethod = nsswitch\n",
        }
        for rel, text in files.items():
            with open(os.path.join(tree, rel), "w") as f:
                f.write(text)
    return extra
