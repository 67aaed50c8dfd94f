#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The JSON Schemas of the files operators edit: src/policy/policy.schema.json (kind: StoragePath)
and src/settings/settings.schema.json (kind: Controller), generated here from what the decoders
accept (src/policy/storage_path_decoder.cpp, mount_options.cpp, time_window.cpp,
src/settings/loader.cpp), restated as JSON Schema. The C++ test schema_tables (tests/policy)
compares the schemas' keys, owners and mount options with the decoders' own tables, so a key
added to a decoder and not here fails the suite; this script's --check fails it when the
committed schemas are not what it writes.

usage: tests/docs/gen_config_schemas.py [--check]
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---- decimal ranges as regular expressions, as std::from_chars reads them (leading zeros, '-0')
def fixed(a, b):
    if a == b:
        return a
    if len(a) == 1:
        return f"[{a}-{b}]"
    if a[0] == b[0]:
        return a[0] + group(fixed(a[1:], b[1:]))
    n = len(a) - 1
    parts = []
    start = int(a[0])
    if a[1:] != "0" * n:
        parts.append(a[0] + group(fixed(a[1:], "9" * n)))
        start += 1
    end = int(b[0])
    upper = None
    if b[1:] != "9" * n:
        upper = b[0] + group(fixed("0" * n, b[1:]))
        end -= 1
    if start <= end:
        d = str(start) if start == end else f"[{start}-{end}]"
        parts.append(d + ("[0-9]" if n == 1 else "[0-9]{%d}" % n))
    if upper:
        parts.append(upper)
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def group(p):
    simple = len(p) == 1 or (p.startswith("[") and p.endswith("]") and p.count("[") == 1) or p.isdigit()
    return p if simple or (p.startswith("(?:") and balanced_outer(p)) else "(?:" + p + ")"


def balanced_outer(p):
    depth = 0
    for i, c in enumerate(p):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0 and i != len(p) - 1:
                return False
    return True


def range_regex(lo, hi):
    """Unanchored regex for the text of lo..hi (0 <= lo), leading zeros allowed, '-0' when lo == 0."""
    alts = []
    full = []  # lengths whose every number is in range
    for length in range(len(str(lo)), len(str(hi)) + 1):
        first = 10 ** (length - 1) if length > 1 else 1
        a = max(lo, first)
        b = min(hi, 10 ** length - 1)
        if a == first and b == 10 ** length - 1:
            full.append(length)
        elif a <= b:
            flush(full, alts)
            alts.append(fixed(str(a), str(b)))
    flush(full, alts)
    if lo == 0:
        alts.insert(0, "0")
    body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    out = "0*" + group(body)
    if lo == 0:
        out = "(?:-0+|" + out + ")"
    return out


def flush(full, alts):
    if not full:
        return
    lo, hi = full[0] - 1, full[-1] - 1
    if hi == 0:
        alts.append("[1-9]")
    elif lo == hi:
        alts.append("[1-9][0-9]" + ("" if lo == 1 else "{%d}" % lo))
    else:
        alts.append("[1-9][0-9]{%d,%d}" % (lo, hi))
    full.clear()


# ---- scalars -----------------------------------------------------------------------------------
# read_string: no control character but tab. A lookahead over [\s\S], not [^...]*$: Python's $ also matches
# before a final newline, ECMA 262's does not.
NO_CONTROL = "^(?![\\s\\S]*[\\u0000-\\u0008\\u000a-\\u001f])"
TEXT_TYPES = ["string", "number", "boolean"]


def text(description, pattern=NO_CONTROL, **more):
    return {"type": TEXT_TYPES, "pattern": pattern, "description": description, **more}


def ranged_int(lo, hi, description, **more):
    return {"type": ["integer", "string"], "minimum": lo, "maximum": hi,
            "pattern": "^" + range_regex(lo, hi) + "$", "description": description, **more}


BOOLEAN = {"enum": [True, False, "true", "false"]}


def boolean(description, default):
    return {"$ref": "#/$defs/boolean", "default": default, "description": description}


def obj(description, properties, required=(), **more):
    out = {"type": "object", "description": description}
    if required:
        out["required"] = list(required)
    out["additionalProperties"] = False
    out["properties"] = properties
    out.update(more)
    return out


# ---- shared pieces ------------------------------------------------------------------------
DURATION = {
    "type": "string",
    "pattern": "^[ \\t]*[0-9]+(?:\\.[0-9]+)?[ \\t]*(?:ms|s|m|min|h)[ \\t]*$",
    "description": "a duration: a number and its unit ms, s, m (or min) or h: 500ms, 30s, 5m, 1h (a bare "
                   "number is refused: it has no unit)",
}
DECIMAL = "^(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?$"
SIZE_UNITS = "(?:B|KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB)"
BYTE_SIZE = {
    "type": ["integer", "string"],
    "minimum": 1,
    "exclusiveMaximum": 18000000000000000000,
    "pattern": "^[ \\t]*(?=[0-9.]*[1-9])[0-9]+(?:\\.[0-9]+)?[ \\t]*" + SIZE_UNITS + "?[ \\t]*$",
    "description": "a size greater than 0: a number of bytes, or a number with a binary (B, KiB, MiB, GiB, TiB) or "
                   "decimal (kB, MB, GB, TB) unit: 256MiB, 1GiB, 1.5KiB; a whole number of bytes, below 18 EB",
}
LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
IPV4 = f"{OCTET}(?:\\.{OCTET}){{3}}"
IPV6 = "(?=[0-9A-Fa-f.]*:)[0-9A-Fa-f:.]+"  # a superset: inet_pton decides
HOST = f"(?![0-9.]+$)(?=.{{1,253}}$){LABEL}(?:\\.{LABEL})*"
ADDRESS = f"^(?:{IPV4}|{IPV6}|{HOST})$"
SEGMENT = "(?!\\.\\.?(?:/|$))[^/\\u0000-\\u001f\\u007f]+"
ABS_BODY = f"/(?:{SEGMENT}(?:/{SEGMENT})*)?"
ABS_PATH = f"^{ABS_BODY}$"
SYSTEM_TREES = ["/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root", "/run",
                "/sbin", "/sys", "/usr", "/var/lib/dpkg"]
SYSTEM_DIRS = ["/", "/home", "/tmp", "/var", "/var/lib", "/var/log", "/var/tmp", "/var/cache"]
MOUNT_PATH = (f"^(?!(?:{'|'.join(SYSTEM_TREES)})(?:/|$))(?!(?:{'|'.join(SYSTEM_DIRS)})$){ABS_BODY}$")
DOCKER_VOLUME_PATH = "^/var/lib/docker/|^(?=.*/docker/volumes/)(?=.*/_data(?:/|$))"

# ---- mount options (src/policy/mount_options.cpp kRules) ------------------------------------
RULES = []  # (name, kind, lo, hi, choices)


def read_rules():
    with open(f"{ROOT}/src/policy/mount_options.cpp") as f:
        src = f.read()
    table = src.split("constexpr OptionRule kRules[] = {", 1)[1].split("\n};", 1)[0]
    for m in re.finditer(r'\{"([^"]+)", ValueKind::(\w+)(?:, (\d+), (\d+)(?:, "([^"]*)")?)?\}', table):
        RULES.append((m.group(1), m.group(2), int(m.group(3) or 0), int(m.group(4) or 0), m.group(5)))
    assert len(RULES) == table.count("ValueKind::"), "unparsed rules"


read_rules()
FLAGS = [n for n, k, *_ in RULES if k == "flag"]
TEXT_VALUE = "[^ \\t,\"'\\\\]+"


def value_regex(kind, lo, hi, choices):
    if kind == "integer":
        return range_regex(lo, hi)
    if kind == "version":
        return "(?:3|4|4\\.0|4\\.1|4\\.2)"
    if kind == "choice":
        return "(?:" + "|".join(choices.split()) + ")"
    assert kind == "text"
    return TEXT_VALUE


VALUED = "(?:" + "|".join(f"{n}={value_regex(k, lo, hi, c)}" for n, k, lo, hi, c in RULES if k != "flag") + ")"
# mount(8)'s userspace options, which pass through: x-* and comment=.
EXTENSION_LIST = "(?:x-[^ \\t\"'\\\\=]*(?:=[^ \\t,\"'\\\\]*)?|comment=[^ \\t,\"'\\\\]*)"
EXTENSION_STRING = "(?:x-[^ \\t\"'\\\\=,]*(?:=[^ \\t,\"'\\\\]*)?|comment=[^ \\t,\"'\\\\]*)"
ITEM = "(?:" + "|".join(FLAGS) + "|" + VALUED + "|" + EXTENSION_STRING + ")"

MOUNT_OPTION = {
    "type": "string",
    "description": "one nfs(5) (nfs-utils 2.6) or mount(8) option: a flag (_netdev), name=value with its value "
                   "checked (vers=3, nconnect=8), or an x-… or comment=… option, which passes through "
                   "(x-systemd.automount). "
                   "No spaces, quotes, commas or backslashes: fstab cannot carry them",
    "anyOf": [
        {"description": "options without a value", "enum": FLAGS},
        {"description": "options with a value: vers/nfsvers 3, 4, 4.0, 4.1, 4.2; nconnect 1-16; max_connect 1-16; "
                        "rsize/wsize 1024-1048576; proto, sec, lookupcache, local_lock, write, xprtsec among "
                        "nfs(5)'s values; addr, clientaddr, mounthost any",
         "pattern": "^" + VALUED + "$"},
        {"description": "x-… and comment=… options pass through", "pattern": "^" + EXTENSION_LIST + "$"},
    ],
}
MOUNT_OPTIONS_STRING = {
    "type": "string",
    "description": "the options as one comma-separated string, as in fstab: \"vers=3,nconnect=8,_netdev\"",
    "pattern": "^" + ITEM + "(?:," + ITEM + ")*$",
}

CROSS_OPTIONS = ("Left to `pathwarden validate`: options that contradict each other (ro+rw, sync+async, soft+hard, "
                 "ac+noac, lock+nolock, vers= with another nfsvers=, minorversion with vers=4.N, max_connect below "
                 "NFSv4.1, nconnect over UDP), an option given twice with different values, addr= other than "
                 "server, and suid, dev or exec without spec.mount.allow.")

# ---- kind: StoragePath ----------------------------------------------------------------------
METADATA = obj(
    "the policy's name and labels",
    {
        "name": text("unique across all policies: 1-63 of a-z 0-9 - . _, starting and ending with a letter or digit "
                     "(uniqueness is checked by `pathwarden validate`)",
                     pattern="^[a-z0-9](?:[a-z0-9._-]{0,61}[a-z0-9])?$", examples=["movies-10g"]),
        "description": text("free text", examples=["Media VM over 10 GbE"]),
        "labels": {
            "type": "object",
            "description": "map of string to string, for selection: plan, reconcile and verify take --selector "
                           "team=media (repeatable, all must hold)",
            "additionalProperties": {"type": TEXT_TYPES},
            "examples": [{"team": "media"}],
        },
    },
    required=["name"])

GUEST = obj(
    "which guest",
    {
        "node": text("Proxmox node that owns the VM: its name as 'pvecm nodes' lists it (a host name without dots); "
                     "one node per VM id across all policies",
                     pattern="^(?![0-9]+$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$", examples=["pve1"]),
        "vmid": ranged_int(100, 999999999, "the VM id: 100-999999999 (Proxmox reserves 0-99)", examples=[101]),
        "host": text("the guest's name in the Ansible inventory; no spaces, commas or colons, not starting with '-'; "
                     "one VM per inventory host across all policies",
                     pattern="^(?!-)[^ \\t,:\\u0000-\\u001f]+$", examples=["media-vm"]),
    },
    required=["node", "vmid", "host"])

NIC = obj(
    "the Proxmox NIC that must carry the path",
    {
        "device": {"type": "string", "pattern": "^net(?:[0-9]|[12][0-9]|3[01])$",
                   "description": "Proxmox NIC key net0…net31 (as in 'qm config VMID'); the guest interface is found "
                                  "by this NIC's MAC address", "examples": ["net1"]},
        "queues": ranged_int(1, 64, "virtio queues, 1-64 (absent: not managed); all policies naming the same VM NIC "
                                    "must agree. Changing it re-plugs the NIC on a running VM (or waits for a "
                                    "restart), so it needs restart.allowed", examples=[8]),
        "mtu": ranged_int(576, 65520, "the MTU the guest interface and the path to the NAS must carry, 576-65520 "
                                      "(absent: the interface's own MTU is still probed along the path); checked, "
                                      "never set: a mismatch is a failed precondition naming the remedy. All "
                                      "policies naming the same VM NIC must agree", examples=[9000]),
    },
    required=["device"])

COMPOSE = obj(
    "which Compose volume (owner: compose only)",
    {
        "project": text("the Compose project's name as `docker compose ls` shows it: lower-case letters, digits, "
                        "'-' and '_', starting with a letter or digit",
                        pattern="^[a-z0-9][a-z0-9_-]*$", examples=["pg"]),
        "volume": text("the volume's key under volumes: in the Compose file (not Docker's name PROJECT_VOLUME): "
                       "letters, digits, '-', '_' and '.', starting with a letter or digit",
                       pattern="^[A-Za-z0-9][A-Za-z0-9_.-]*$", examples=["pgdata"]),
    },
    required=["project", "volume"])

MOUNT = obj(
    "the NFS mount. " + CROSS_OPTIONS,
    {
        "owner": {"enum": ["fstab", "compose", "systemd", "autofs"], "default": "fstab",
                  "description": "who makes the mount. fstab: pathwarden writes the guest's fstab entry, mounts it "
                                 "and rolls it back when unproven. compose, systemd, autofs: Docker (a Compose "
                                 "volume's driver_opts), a .mount unit of its own or an autofs map makes it; "
                                 "pathwarden only observes and proves it"},
        "compose": {"$ref": "#/$defs/compose",
                    "description": "required with owner: compose (and only then): {project: NAME, volume: NAME}"},
        "server": text("IPv4/IPv6 address or host name the mount must use; a name is resolved in the guest",
                       pattern=ADDRESS, examples=["198.51.100.2", "truenas.lan"]),
        "nas_addresses": {
            "type": "array", "uniqueItems": True,
            "items": text("an address or host name", pattern=ADDRESS),
            "description": "the same NAS's other addresses (other links), or names of them: with NFSv4.1+ the guest "
                           "may trunk the new mount onto such an old transport. Must not repeat server (left to "
                           "`pathwarden validate`)",
            "examples": [["192.0.2.2"]],
        },
        "export": {"type": "string", "pattern": ABS_PATH,
                   "description": "absolute path on the server, normalised (no ., .., // or trailing /)",
                   "examples": ["/volume1/movies"]},
        "path": {"type": "string", "pattern": MOUNT_PATH,
                 "description": "absolute mount point in the guest, normalised; required, except with owner: "
                                "compose (Docker's Mountpoint is used). Not a system directory: nothing under /bin, "
                                "/boot, /dev, /etc, /lib, /lib32, /lib64, /libx32, /proc, /root, /run, /sbin, /sys, "
                                "/usr, /var/lib/dpkg, and not /, /home, /tmp, /var, /var/lib, /var/log, /var/tmp, "
                                "/var/cache themselves. With owner: fstab not a Docker volume's mount point. One "
                                "policy per guest mount point (left to `pathwarden validate`)",
                 "examples": ["/mnt/movies"]},
        "options": {
            "description": "nfs(5) and mount(8) options: a list, or one comma-separated string. Default [] (kernel "
                           "defaults). " + CROSS_OPTIONS,
            "default": [],
            "anyOf": [
                {"type": "array", "uniqueItems": True, "items": {"$ref": "#/$defs/mount_option"}},
                {"$ref": "#/$defs/mount_options_string"},
            ],
            "examples": [["vers=3", "nconnect=8", "_netdev"]],
        },
        "reason": text("why the options are what they are; written as a comment above the fstab entry so the next "
                       "person does not 'upgrade' a deliberate vers=3 (one line: a literal block `|` ends in a "
                       "newline, use `>-`)"),
        "allow": {
            "type": "array",
            "items": {"enum": ["suid", "dev", "exec"]},
            "description": "the options that widen what the share may do in the guest, written on purpose: suid "
                           "(set-user-ID programs on the share run with their owner's rights), dev (device files on "
                           "it open the guest's devices), exec (programs on it run). One of them in options without "
                           "it here is refused by `pathwarden validate`",
            "examples": [["exec"]],
        },
        "trunking": {
            "enum": ["move-transport", "nfsv3", "refuse"],
            "description": "what to do when NFSv4.1+ trunking puts (or would put) this mount on the transport of "
                           "another address of the same NAS: move-transport keeps NFSv4 and moves the NAS client's "
                           "transports to this address (sunrpc sysfs, Linux 5.14+), with every fstab entry of the "
                           "NAS rewritten to it; nfsv3 records that vers=3 is pinned for this reason (vers=3 "
                           "required); refuse blocks any change that trunks. Not written: a warning, and the probe "
                           "decides. `pathwarden validate` checks it against the version, proto, owner and server",
            "examples": ["move-transport"],
        },
    },
    required=["server", "export"],
    allOf=[
        {"if": {"required": ["owner"], "properties": {"owner": {"const": "compose"}}},
         "then": {"required": ["compose"], "not": {"required": ["path"]}},
         "else": {"required": ["path"], "not": {"required": ["compose"]}}},
        {"if": {"properties": {"owner": {"const": "fstab"}}},
         "then": {"properties": {"path": {"not": {"pattern": DOCKER_VOLUME_PATH}}}}},
    ])

VERIFY = obj(
    "proof by byte counters. Left to `pathwarden validate`: max_probe_bytes below probe_bytes, the baseline's range, "
    "and direction: write, commit_cycles or min_commit_rate on a mount with the ro option",
    {
        "probe_file": text("file on the share, relative to mount.path, without . or .. parts; read with O_DIRECT",
                           pattern=f"^{SEGMENT}(?:/{SEGMENT})*$", examples=["probe-64MiB.bin"]),
        "probe_bytes": {"$ref": "#/$defs/byte_size", "default": "256MiB",
                        "description": "bytes read (or written) by the first probe; > 0", "examples": ["64MiB"]},
        "max_probe_bytes": {"$ref": "#/$defs/byte_size",
                            "description": "default 4 × probe_bytes; at least probe_bytes (left to `pathwarden "
                                           "validate`): when background traffic drowns the signal the probe grows up "
                                           "to this, then the verdict is inconclusive", "examples": ["1GiB"]},
        "min_share": {"type": ["number", "string"], "exclusiveMinimum": 0, "maximum": 1, "pattern": DECIMAL,
                      "default": 0.9,
                      "description": "greater than 0, at most 1: the share of the probe's bytes (background "
                                     "subtracted) that the intended interface must carry", "examples": [0.95]},
        "direction": {"enum": ["read", "write"], "default": "read",
                      "description": "read checks the interface's rx bytes, write its tx bytes; write is refused on "
                                     "an ro mount (left to `pathwarden validate`)"},
        "baseline": {"$ref": "#/$defs/duration", "default": "2s",
                     "description": "100ms-10m (the range is left to `pathwarden validate`): window for learning each "
                                    "interface's background rate before the probe", "examples": ["5s"]},
        "commit_cycles": ranged_int(1, 10000,
                                    "1-10000 (default none, 256 with min_commit_rate): after the probe, this many "
                                    "8 KiB O_DSYNC writes on the mount, reported as commits per second. A figure, "
                                    "not a verdict. Not on an ro mount", examples=[1000]),
        "min_commit_rate": {"type": ["number", "string"], "exclusiveMinimum": 0, "pattern": DECIMAL,
                            "description": "> 0 commits per second: a path proven by the counters that commits "
                                           "slower is inconclusive, not verified. Not on an ro mount",
                            "examples": [1000]},
        "probe_as": {"enum": ["user", "root"], "default": "user",
                     "description": "who reads a read probe's file: the SSH user (least privilege), or root through "
                                    "spec.ansible.become. Default user, root with owner: compose. A write probe "
                                    "always becomes root"},
    },
    required=["probe_file"])

RESTART = obj(
    "permission for disruptive steps",
    {
        "allowed": boolean("without it pathwarden never restarts the guest or re-plugs its NIC; such steps end "
                           "precondition-failed", False),
        "window": {
            "type": "string",
            "pattern": None,  # filled in below
            "description": "DAYS HH:MM-HH:MM [ZONE], e.g. 'Mon-Fri 22:00-02:00', 'Sun 02:00-04:00 Europe/Berlin'. "
                           "DAYS: Sun…Sat, ranges Mon-Fri, lists Sat,Sun, or daily. An end before the start wraps "
                           "midnight; 00:00-24:00 is the whole day; start and end differ. ZONE: an IANA time zone "
                           "(checked by `pathwarden validate`), else the controller's local zone. Default: any time",
        },
    })
DAY = "(?:" + "|".join("".join(f"[{c.upper()}{c.lower()}]" for c in d)
                       for d in ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]) + ")"
DAYS = f"(?:[Dd]aily|{DAY}(?:-{DAY})?(?:,{DAY}(?:-{DAY})?)*)"
CLOCK = "(?:[01][0-9]:[0-5][0-9]|2[0-3]:[0-5][0-9]|24:00)"
RESTART["properties"]["window"]["pattern"] = (
    f"^[ \\t]*{DAYS} [ \\t]*(?!([0-9]{{2}}:[0-9]{{2}})-\\1(?:[ \\t]|$)){CLOCK}-{CLOCK}(?:[ \\t]+[^ \\t]+)?[ \\t]*$")

ROLLBACK = obj(
    "what happens when a change is not proven",
    {
        "on_inconclusive": boolean("roll back when verification cannot decide. A wrong-path verdict always rolls "
                                   "back", True),
        "verify_restored": boolean("verify the restored state the same way after rolling back", True),
    })

SPEC = obj(
    "how the mount must reach its NAS",
    {
        "guest": {"$ref": "#/$defs/guest", "description": "which guest"},
        "nic": {"$ref": "#/$defs/nic", "description": "the Proxmox NIC that must carry the path"},
        "mount": {"$ref": "#/$defs/mount", "description": "the NFS mount"},
        "verify": {"$ref": "#/$defs/verify", "description": "proof by byte counters"},
        "restart": {"$ref": "#/$defs/restart", "description": "permission for disruptive steps"},
        "rollback": {"$ref": "#/$defs/rollback", "description": "what happens when a change is not proven"},
    },
    required=["guest", "nic", "mount", "verify"])

POLICY = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://pathwarden.invalid/schemas/policy-v1.json",
    "title": "pathwarden policy (kind: StoragePath, apiVersion pathwarden/v1)",
    "description": None,
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "pathwarden/v1", "description": "the format's version: pathwarden/v1"},
        "kind": {"const": "StoragePath",
                 "description": "StoragePath: one NFS mount of one Proxmox guest (controller settings, kind: "
                                "Controller, live in their own file: settings.schema.json)"},
        "metadata": {"$ref": "#/$defs/metadata", "description": "the policy's name and labels"},
        "spec": {"$ref": "#/$defs/spec", "description": "how the mount must reach its NAS"},
    },
    "$defs": {
        "metadata": METADATA, "spec": SPEC, "guest": GUEST, "nic": NIC, "mount": MOUNT, "compose": COMPOSE,
        "verify": VERIFY, "restart": RESTART, "rollback": ROLLBACK,
        "boolean": {**BOOLEAN, "description": "true or false (quoted \"true\" too: the decoder reads the text; "
                                              "yes/no/on/off are refused)"},
        "byte_size": BYTE_SIZE, "duration": DURATION,
        "mount_option": MOUNT_OPTION, "mount_options_string": MOUNT_OPTIONS_STRING,
    },
}
POLICY["description"] = (
    "One document of kind: StoragePath (policies/README.md, \"kind: StoragePath\"), for editors: a YAML language "
    "server validates a policy file as it is typed. It states what the decoder (src/policy/storage_path_decoder.cpp) "
    "checks on each field: the keys (any other key is refused), the required ones, types, ranges and formats, and "
    "which of spec.mount.path / spec.mount.compose the owner needs. The decoder reads a scalar's text, so numbers "
    "and booleans may be quoted (vmid: \"101\", allowed: \"true\") and a name that looks like a number is a name "
    "(host: 101). `pathwarden validate` remains the judge, and alone checks what a schema cannot: mount options "
    "against each other and against server, suid/dev/exec against spec.mount.allow, nas_addresses against server, "
    "max_probe_bytes against probe_bytes, the baseline's range, a write probe or commit cycles on an ro mount, "
    "the restart window's time zone, and across policies: unique names, one policy per guest mount, one queue count "
    "per NIC, one VM per inventory host, one node per vmid (and files over 1 MiB, invalid UTF-8, duplicate keys).")

# ---- kind: Controller -----------------------------------------------------------------------
FILE = "a file path; relative paths are resolved against the settings file's directory. "
SECRET = ("secrets are not accepted inline (settings files end up in git and logs); use {} instead")
PROXMOX = obj(
    "the Proxmox VE API: exactly one of token_id (API token, recommended) and user (ticket), each with exactly one "
    "of its secret's _file and _env forms",
    {
        "url": {"type": "string", "pattern": "^https://[^\\u0000-\\u0008\\u000a-\\u001f]+$",
                "description": "https://host[:port]; plain http:// is refused (it would send the token in clear)",
                "examples": ["https://pve1.example.org:8006"]},
        "token_id": {"type": "string",
                     "pattern": "^[^@!\\u0000-\\u0008\\u000a-\\u001f]+@[^!\\u0000-\\u0008\\u000a-\\u001f]*!"
                                "[^\\u0000-\\u0008\\u000a-\\u001f]+$",
                     "description": "API token USER@REALM!NAME; exactly one of token_id and user",
                     "examples": ["pathwarden@pve!reconcile"]},
        "token_secret_file": text(FILE + "The file holding the token secret; exactly one of token_secret_file and "
                                  "token_secret_env, with token_id", examples=["/etc/pathwarden/token"]),
        "token_secret_env": {"type": ["string", "boolean"], "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                             "description": "name of the environment variable holding the token secret; exactly one "
                                            "of token_secret_file and token_secret_env, with token_id",
                             "examples": ["PATHWARDEN_TOKEN"]},
        "user": {"type": "string", "pattern": "^[^\\u0000-\\u0008\\u000a-\\u001f]*@[^\\u0000-\\u0008\\u000a-\\u001f]*$",
                 "description": "ticket authentication USER@REALM; exactly one of token_id and user",
                 "examples": ["pathwarden@pve"]},
        "password_file": text(FILE + "The file holding the password; exactly one of password_file and password_env, "
                              "with user"),
        "password_env": {"type": ["string", "boolean"], "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                         "description": "name of the environment variable holding the password; exactly one of "
                                        "password_file and password_env, with user",
                         "examples": ["PATHWARDEN_PASSWORD"]},
        "ca_file": text(FILE + "PEM file of the CA that signed the node certificate (/etc/pve/pve-root-ca.pem); "
                        "default: the system CAs", examples=["pve-root-ca.pem"]),
        "fingerprint": {"type": "string", "pattern": "^[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){31}$",
                        "description": "pinned SHA-256 fingerprint of the server certificate, colon-hex as "
                                       "'pvenode cert info' prints it (32 pairs); when set only this certificate is "
                                       "trusted"},
        "insecure_skip_verify": boolean("turns TLS verification off; logged loudly at every run; contradicts ca_file "
                                        "and fingerprint", False),
        "max_in_flight": ranged_int(1, 256, "API requests in flight, 1-256", default=16),
        "timeout": {"$ref": "#/$defs/duration", "default": "30s", "description": "per API request",
                    "examples": ["10s"]},
        "token_secret": {"not": {}, "description": SECRET.format("token_secret_file or token_secret_env")},
        "password": {"not": {}, "description": SECRET.format("password_file or password_env")},
        "secret": {"not": {}, "description": SECRET.format("token_secret_file or token_secret_env")},
        "token": {"not": {}, "description": SECRET.format("token_secret_file or token_secret_env")},
    },
    required=["url"],
    oneOf=[{"required": ["token_id"]}, {"required": ["user"]}],
    dependentSchemas={
        "token_id": {"oneOf": [{"required": ["token_secret_file"]}, {"required": ["token_secret_env"]}]},
        "user": {"oneOf": [{"required": ["password_file"]}, {"required": ["password_env"]}]},
    },
    allOf=[{"if": {"required": ["insecure_skip_verify"],
                   "properties": {"insecure_skip_verify": {"enum": [True, "true"]}}},
            "then": {"not": {"anyOf": [{"required": ["ca_file"]}, {"required": ["fingerprint"]}]}}}])

BECOME_TRUE = {"required": ["become"], "properties": {"become": {"enum": [True, "true"]}}}
ANSIBLE = obj(
    "how guests are reached. Left to `pathwarden --config FILE validate`: guest_timeout against timeout, the files "
    "named exist and are readable, and every policy's guest.host is a host of the inventory",
    {
        "inventory": text(FILE + "Ansible inventory naming every policy's guest.host (a file, directory, script or "
                          "inventory plugin)", examples=["inventory.ini"]),
        "playbook_command": text("the executable to run", default="ansible-playbook",
                                 examples=["/usr/bin/ansible-playbook"]),
        "forks": ranged_int(1, 1000, "guests in parallel within one run, 1-1000", default=16),
        "timeout": {"$ref": "#/$defs/duration", "default": "10m", "description": "per ansible-playbook run",
                    "examples": ["15m"]},
        "guest_timeout": {"$ref": "#/$defs/duration",
                          "description": "per guest and task; default half of timeout; at least 1s and 30s below "
                                         "timeout (left to `pathwarden validate`), so one hung guest fails alone",
                          "examples": ["2m"]},
        "private_key_file": text(FILE + "SSH key for the guests; default: SSH's",
                                 examples=["/etc/pathwarden/id_ed25519"]),
        "known_hosts_file": text(FILE + "host keys are always checked; this names the file; default: SSH's",
                                 examples=["/etc/pathwarden/known_hosts"]),
        "vault_password_file": text(FILE + "the key of the inventory's Ansible Vault (ANSIBLE_VAULT_PASSWORD_FILE), "
                                    "a file (0600), never the value", examples=["/etc/pathwarden/vault-key"]),
        "remote_user": text("the SSH user; an inventory's ansible_user wins, as in Ansible; default: the "
                            "inventory's or SSH's", examples=["pathwarden"]),
        "become": boolean("become root (sudo) for the tasks that need it", False),
        "become_user": text("with become: true only; a user name (letters, digits, '_', '.', '-', at most 32, not "
                            "starting with '-' or '.'); default root",
                            pattern="^(?:[A-Za-z0-9_][A-Za-z0-9_.-]{0,31})?$"),
        "become_method": text("an Ansible become plugin (sudo, su, doas…), with become: true only; default sudo",
                              pattern="^(?:[a-z0-9_][a-z0-9_.]*)?$"),
        "share_connections": boolean("SSH connections shared within a run (ControlMaster, ControlPersist 60 s); "
                                     "false: one connection per task, for a jump host or an ssh wrapper that cannot "
                                     "multiplex", True),
    },
    required=["inventory"],
    dependentSchemas={"become_user": BECOME_TRUE, "become_method": BECOME_TRUE})

RETENTION = obj(
    "what is kept of past runs",
    {
        "journals": ranged_int(1, 1000000, "finished journals kept in the state directory after a run (the newest); "
                                           "unfinished ones are never removed", default=200),
        "guest_backups": ranged_int(1, 100000, "the fstab backups each guest keeps in /var/backups/pathwarden, the "
                                               "newest, pruned by each apply (never its own)", default=20),
        "days": ranged_int(1, 3650, "and none older than this many days (journals and guest backups)", default=30),
    })

OBSERVE = obj(
    "how the guests' facts are read (policies/README.md, \"Observing through the guest agent\")",
    {
        "via": {"enum": ["ansible", "agent", "auto"], "default": "ansible",
                "description": "ansible: SSH, an Ansible play per run; agent: the QEMU guest agent through the Proxmox "
                               "API (a guest it cannot read is unobserved, with the reason); auto: the agent where it "
                               "answers, else SSH, said per guest in the report. Changes always go over SSH"},
        "agent_access": {"enum": ["exec", "read"], "default": "exec",
                         "description": "exec: agent/exec runs the facts script (PVE 9 VM.GuestAgent.Unrestricted, "
                                        "PVE 8 VM.Monitor on /vms/VMID); read: agent/file-read and "
                                        "network-get-interfaces only (PVE 9 VM.GuestAgent.FileRead and "
                                        "VM.GuestAgent.Audit): no connection byte counters (the passive proof is an "
                                        "address check), no permanent MACs or channels, no names resolved by the "
                                        "guest; only with via agent or auto"},
        "agent_timeout": {"$ref": "#/$defs/duration", "default": "60s",
                          "description": "one guest's facts through the agent, 10s to 1h; the guest ends the script "
                                         "5 s before; only with via agent or auto", "examples": ["30s"]},
        "agent_per_node": ranged_int(1, 64, "agent calls at once per Proxmox node (pvedaemon has 3 workers by "
                                            "default); only with via agent or auto", default=3),
    })

CONTROLLER_SPEC = obj(
    "the controller's settings",
    {
        "proxmox": {"$ref": "#/$defs/proxmox", "description": "the Proxmox VE API"},
        "ansible": {"$ref": "#/$defs/ansible", "description": "how guests are reached"},
        "state_dir": text("journal, locks, last results (created 0700, files 0600); relative to the settings file's "
                          "directory", default="/var/lib/pathwarden"),
        "policies": text("policy directory used when a command is given no PATH; relative to the settings file's "
                         "directory", examples=["/etc/pathwarden/policies"]),
        "retention": {"$ref": "#/$defs/retention", "description": "what is kept of past runs"},
        "observe": {"$ref": "#/$defs/observe", "description": "how the guests' facts are read: SSH or the guest agent"},
    },
    required=["proxmox", "ansible"])

CONTROLLER_METADATA = obj(
    "optional, not read for kind: Controller (only its keys are checked)",
    {
        "name": {"description": "a name for these settings (not read)"},
        "description": {"description": "free text (not read)"},
        "labels": {"description": "labels (not read)"},
    })

SETTINGS = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://pathwarden.invalid/schemas/settings-v1.json",
    "title": "pathwarden controller settings (kind: Controller, apiVersion pathwarden/v1)",
    "description": (
        "The controller's own settings, one document of kind: Controller in a file of its own (by default "
        "/etc/pathwarden/pathwarden.yaml, or --config FILE, or $PATHWARDEN_CONFIG; policies/README.md, \"kind: "
        "Controller\"), for editors: a YAML language server validates it as it is typed. It states what the decoder "
        "(src/settings/loader.cpp) checks: the keys (any other key is refused, inline secrets with a pointer to the "
        "_file/_env forms), the required ones, types, ranges and formats, which authentication keys go together, "
        "become_user/become_method only with become: true, and insecure_skip_verify against ca_file/fingerprint. "
        "The decoder reads a scalar's text, so numbers and booleans may be quoted (forks: \"8\", become: \"true\"). "
        "`pathwarden --config FILE validate` remains the judge, and alone checks guest_timeout against timeout, that "
        "the files named exist and can be read, and that the inventory holds every policy's guest.host."),
    "type": "object",
    "required": ["apiVersion", "kind", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "pathwarden/v1", "description": "the format's version: pathwarden/v1"},
        "kind": {"const": "Controller",
                 "description": "Controller: the controller's settings (policies, kind: StoragePath, live in the "
                                "policy directory: policy.schema.json)"},
        "metadata": {"$ref": "#/$defs/metadata", "description": "optional, not read (only its keys are checked)"},
        "spec": {"$ref": "#/$defs/spec", "description": "the controller's settings"},
    },
    "$defs": {
        "metadata": CONTROLLER_METADATA, "spec": CONTROLLER_SPEC, "proxmox": PROXMOX, "ansible": ANSIBLE,
        "retention": RETENTION, "observe": OBSERVE,
        "boolean": {**BOOLEAN, "description": "true or false (quoted \"true\" too: the decoder reads the text; "
                                              "yes/no/on/off are refused)"},
        "duration": DURATION,
    },
}


def main(argv):
    if len(argv) > 2 or argv[1:] not in ([], ["--check"]):
        sys.exit(__doc__)
    check, stale = argv[1:] == ["--check"], []
    for path, schema in (("src/policy/policy.schema.json", POLICY), ("src/settings/settings.schema.json", SETTINGS)):
        text = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
        if check:
            with open(f"{ROOT}/{path}", encoding="utf-8") as f:
                if f.read() != text:
                    stale.append(path)
        else:
            with open(f"{ROOT}/{path}", "w", encoding="utf-8") as f:
                f.write(text)
    for path in stale:
        print(f"{path} is not what tests/docs/gen_config_schemas.py writes: run it", file=sys.stderr)
    if not stale:
        print(f"config schemas: {len(RULES)} mount option rules, {len(FLAGS)} flags; "
              + ("the committed schemas are current" if check else "written"))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
