#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Debian package: built by cpack from this build directory, installed into a throw-away root.

usage: deb_package_test.py BUILD_DIR
1. `cpack -G DEB` makes exactly one pathwarden_VERSION-1_ARCH.deb (in a temporary directory).
2. Its control file: Depends names the package of every shared library the binary needs (as
   dpkg-shlibdeps found them, e.g. libyaml-cpp0.7, libboost-json1.81.0, libssl3) plus ansible and
   openssh-client; /etc/default/pathwarden is a conffile; the maintainer scripts are valid sh.
3. `dpkg -x` into a temporary root: the files are where Debian puts them, owned by root; the
   binary runs from there: `--version` prints the package's version, `validate` accepts the
   shipped example policies.
4. The shipped units name the shipped binary (ExecStart) and docs (Documentation=); the sysusers
   file creates the pathwarden user in the root (`systemd-sysusers --root`, as the postinst does).
5. pathwarden(1) renders with no warning from groff (-wall) or man (--warnings); every command of
   `pathwarden --help` has its section there, with exactly the options its --help lists, and the
   global options are those of `pathwarden --help`.
6. The bash completion completes commands, options and option values.
"""
import gzip
import os
import re
import shutil
import subprocess
import tempfile

from pwtest.script import check, test_main

DOC = "usr/share/doc/pathwarden"


def run(argv, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run(argv, **kw)


def control_fields(deb):
    out = run(["dpkg-deb", "-f", deb]).stdout
    fields = {}
    for line in out.splitlines():
        if line[:1].isspace():
            continue
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def depends_names(depends):
    """'libc6 (>= 2.34), ansible, a | b' -> {'libc6', 'ansible', 'a', 'b'}"""
    names = set()
    for alternative in re.split(r"[,|]", depends):
        name = alternative.strip().split(" ")[0].split(":")[0]
        if name:
            names.add(name)
    return names


def needed_packages(binary):
    """{soname: names satisfying it}: the Debian package of every shared library the binary needs,
    from this machine's dpkg, and what that package provides."""
    dynamic = run(["objdump", "-p", binary]).stdout
    multiarch = run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip()
    packages = {}
    for soname in re.findall(r"^\s*NEEDED\s+(\S+)", dynamic, re.M):
        # 'libyaml-cpp0.7:amd64: /usr/lib/x86_64-linux-gnu/libyaml-cpp.so.0.7', of this architecture
        # (libc6-i386 ships a libm.so.6 too)
        found = [line for line in run(["dpkg", "-S", f"*/{soname}"]).stdout.splitlines()
                 if line.endswith(f"/{multiarch}/{soname}")]
        check(found, f"no package of {multiarch} ships {soname}")
        package = found[0].split(":")[0].split(",")[0]
        # a dependency may name a virtual package it provides (libspdlog1.10 provides libspdlog1.10-fmt9)
        provides = run(["dpkg-query", "-W", "-f=${Provides}", package]).stdout
        packages[soname] = {package} | depends_names(provides)
    return packages


def help_commands(text):
    block = text.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines() if line.strip()]


def help_options(text, heading):
    block = text.split(f"\n{heading}\n", 1)[1].split("\n\n", 1)[0]
    return sorted(re.findall(r"^  (--[a-z0-9-]+)", block, re.M))


def man_options(section):
    return sorted(o.replace("\\-", "-") for o in re.findall(r'^\.BI? "?(\\-\\-[a-z0-9\\-]+)', section, re.M))


def complete(script, words):
    """COMPREPLY of the completion function for the command line `words` (the last is the word
    under the cursor)."""
    line = " ".join(f"'{w}'" for w in words)
    probe = (f"source '{script}'\nCOMP_WORDS=({line})\nCOMP_CWORD={len(words) - 1}\n"
             "_pathwarden\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    out = run(["bash", "--norc", "-c", probe])
    check(out.returncode == 0, f"completion of {words} failed: {out.stderr}")
    return out.stdout.split()


def main(build_dir):
    tmp = tempfile.mkdtemp(prefix="pw-deb-")
    try:
        # 1. the package
        made = run(["cpack", "-G", "DEB", "--config", os.path.join(build_dir, "CPackConfig.cmake"), "-B",
                    os.path.join(tmp, "out")])
        check(made.returncode == 0, f"cpack failed ({made.returncode}):\n{made.stdout[-3000:]}\n{made.stderr[-3000:]}")
        debs = [f for f in os.listdir(os.path.join(tmp, "out")) if f.endswith(".deb")]
        check(len(debs) == 1, f"cpack made {debs}")
        deb = os.path.join(tmp, "out", debs[0])
        fields = control_fields(deb)
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        check(fields.get("Package") == "pathwarden" and fields.get("Architecture") == arch,
              f"control: {fields}")
        version = fields.get("Version", "")
        check(re.fullmatch(r"\d+\.\d+\.\d+-1", version), f"Version: {version}")
        check(debs[0] == f"pathwarden_{version}_{arch}.deb", f"file name {debs[0]}")
        print(f"ok   package {debs[0]}")

        # 2. the control file
        depends = depends_names(fields.get("Depends", ""))
        for wanted in ("ansible", "openssh-client", "libc6", "libstdc++6", "libyaml-cpp0.7",
                       "libboost-json1.81.0", "libssl3"):
            check(wanted in depends, f"Depends lacks {wanted}: {fields.get('Depends')}")
        root = os.path.join(tmp, "root")
        x = run(["dpkg", "-x", deb, root])
        check(x.returncode == 0, f"dpkg -x: {x.stderr}")
        binary = os.path.join(root, "usr/bin/pathwarden")
        for soname, names in needed_packages(binary).items():
            check(names & depends, f"{soname} is in {names}, none of which Depends names: {fields.get('Depends')}")
        control = os.path.join(tmp, "control")
        run(["dpkg-deb", "-e", deb, control], check=True)
        with open(os.path.join(control, "conffiles")) as f:
            check(f.read().split() == ["/etc/default/pathwarden"], "conffiles is not /etc/default/pathwarden")
        for script in ("postinst", "prerm", "postrm"):
            path = os.path.join(control, script)
            check(os.access(path, os.X_OK), f"{script} is not executable")
            check(run(["sh", "-n", path]).returncode == 0, f"{script} is not valid sh")
        print(f"ok   control: Depends {fields['Depends']}")

        # 3. the files, and the binary run from the throw-away root
        listing = run(["dpkg-deb", "-c", deb]).stdout.splitlines()
        paths = {line.split()[-1].lstrip(".") for line in listing}
        for wanted in ("/usr/bin/pathwarden", "/lib/systemd/system/pathwarden.service",
                       "/lib/systemd/system/pathwarden.timer", "/usr/lib/sysusers.d/pathwarden.conf",
                       "/etc/default/pathwarden", "/usr/share/man/man1/pathwarden.1.gz",
                       "/usr/share/bash-completion/completions/pathwarden", f"/{DOC}/README.md",
                       f"/{DOC}/policies/README.md", f"/{DOC}/systemd/README.md",
                       f"/{DOC}/examples/policies/movies-10g.yaml"):
            check(wanted in paths, f"the package lacks {wanted}")
        check(all(line.split()[1] == "root/root" for line in listing), "files not owned by root/root")
        check(any(line.startswith("-rwxr-xr-x") and line.endswith("./usr/bin/pathwarden") for line in listing),
              "usr/bin/pathwarden is not -rwxr-xr-x")
        env = {k: v for k, v in os.environ.items() if k != "PATHWARDEN_CONFIG"}
        env["ASAN_OPTIONS"] = "detect_leaks=0"  # when the build packaged is the asan one
        out = run([binary, "--version"], env=env, cwd=tmp)
        check(out.returncode == 0 and re.match(rf"pathwarden {re.escape(version.rsplit('-', 1)[0])}\b", out.stdout),
              f"--version: {out.returncode} {out.stdout!r} {out.stderr!r}")
        examples = os.path.join(root, DOC, "examples/policies")
        shipped = sorted(os.listdir(examples))
        check(len(shipped) >= 3, f"example policies: {shipped}")
        out = run([binary, "validate", examples], env=env, cwd=tmp)
        check(out.returncode == 0 and f"ok: {len(shipped)} storage path policies" in out.stdout,
              f"validate of the shipped examples: {out.returncode}\n{out.stdout}\n{out.stderr}")
        print(f"ok   installed binary: {out.stdout.strip()} ({', '.join(shipped)})")

        # 4. the units name what the package ships; the sysusers file makes the user
        for unit in ("pathwarden.service", "pathwarden.timer"):
            with open(os.path.join(root, "lib/systemd/system", unit)) as f:
                text = f.read()
            check("/usr/local" not in text, f"{unit} still names /usr/local")
            docs = " ".join(re.findall(r"^Documentation=(.*)$", text, re.M)).split()
            check("man:pathwarden(1)" in docs, f"{unit}: Documentation= lacks man:pathwarden(1): {docs}")
            for uri in docs:
                if uri.startswith("file://"):
                    check(os.path.isfile(root + uri[len("file://"):]), f"{unit}: Documentation= {uri} is not shipped")
            if unit == "pathwarden.service":
                exec_start = re.search(r"^ExecStart=(\S+)", text, re.M).group(1)
                check(exec_start == "/usr/bin/pathwarden" and os.access(root + exec_start, os.X_OK),
                      f"ExecStart runs {exec_start}")
        made = run(["systemd-sysusers", f"--root={root}"])
        check(made.returncode == 0, f"systemd-sysusers --root: {made.stderr}")
        with open(os.path.join(root, "etc/passwd")) as f:
            user = [line for line in f if line.startswith("pathwarden:")]
        check(len(user) == 1 and user[0].split(":")[5] == "/var/lib/pathwarden", f"pathwarden user: {user}")
        print("ok   units and sysusers")

        # 5. the manual
        man = os.path.join(root, "usr/share/man/man1/pathwarden.1.gz")
        with gzip.open(man, "rt") as f:
            source = f.read()
        plain = os.path.join(tmp, "pathwarden.1")
        with open(plain, "w") as f:
            f.write(source)
        out = run(["groff", "-z", "-wall", "-man", plain])
        check(out.returncode == 0 and out.stderr == "", f"groff -wall: {out.stderr}")
        man_env = dict(env, LC_ALL="C.UTF-8", MANWIDTH="80", MAN_KEEP_FORMATTING="")
        out = run(["man", "--warnings", "-l", man], env=man_env)
        check(out.returncode == 0 and out.stderr == "", f"man --warnings: {out.returncode} {out.stderr}")
        check("GLOBAL OPTIONS" in out.stdout and "COMMANDS" in out.stdout, "man rendered no sections")
        check(f"pathwarden {version.rsplit('-', 1)[0]}" in source.split("\n.SH", 1)
              [0], "the .TH line lacks the version")
        overview = run([binary, "--help"], env=env).stdout
        commands = help_commands(overview)
        check(len(commands) >= 9, f"commands in --help: {commands}")
        sections = re.split(r'^(?=\.S[SH] )', source, flags=re.M)
        by_title = {}
        for s in sections:
            m = re.match(r'^\.S[SH] "?([^"\n]+)"?\n', s)
            if m:
                by_title[m.group(1)] = s
        for name in commands:
            section = by_title.get(f"pathwarden {name}")
            check(section is not None, f"the man page has no section for {name}")
            own = help_options(run([binary, name, "--help"], env=env).stdout, "Options:")
            check(man_options(section) == own, f"{name}: man {man_options(section)} != --help {own}")
        globals_help = sorted(help_options(overview, "Global options:") + ["--help"])
        check(man_options(by_title["GLOBAL OPTIONS"]) == globals_help,
              f"global options: man {man_options(by_title['GLOBAL OPTIONS'])} != --help {globals_help}")
        print(f"ok   pathwarden(1): no warnings; sections for {', '.join(commands)} with their --help options")

        # 6. bash completion
        script = os.path.join(root, "usr/share/bash-completion/completions/pathwarden")
        check(sorted(complete(script, ["pathwarden", ""])) == sorted(commands + ["help"]), "commands not completed")
        check(complete(script, ["pathwarden", "val"]) == ["validate"], "'val' does not complete to validate")
        check(complete(script, ["pathwarden", "--log-level", "debug", "reconcile", "--ch"]) == ["--check"],
              "'reconcile --ch' does not complete to --check after a global option")
        check(sorted(complete(script, ["pathwarden", "plan", "--output", ""])) == ["json", "text"],
              "--output values not completed")
        check("warn" in complete(script, ["pathwarden", "--log-level", ""]), "--log-level values not completed")
        print("ok   bash completion")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    test_main(main, __doc__, 1)
