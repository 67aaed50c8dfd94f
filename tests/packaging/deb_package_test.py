#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Debian package as it is shipped: built with the release preset, checked by lintian,
installed into a throw-away root.

usage: deb_package_test.py SOURCE_DIR OUT_DIR
0. `cmake --preset release -B OUT_DIR -DBUILD_TESTING=OFF` (RelWithDebInfo, dpkg-buildflags'
   hardening: fortify, stack protector, relro, bindnow) builds the binary, its man page and
   completion with no compiler warning and no #pragma message.
1. `cpack -G DEB` makes exactly one pathwarden_VERSION-REVISION_ARCH.deb, left in OUT_DIR/package
   for packaging_install; its version and revision are packaging/debian/changelog's.
2. lintian (--pedantic --display-info) reports no error, warning, info or pedantic tag; the tags
   the package overrides (/usr/share/lintian/overrides/pathwarden) are the explained ones, and a
   "spelling error" lintian reads out of the binary is no word of the sources.
3. Its control file: Depends names the package of every shared library the binary needs (as
   dpkg-shlibdeps found them, e.g. libyaml-cpp0.7, libboost-json1.81.0, libssl3) plus ansible,
   openssh-client and init-system-helpers; Recommends bash-completion; the Maintainer is the
   changelog's; /etc/default/pathwarden is a conffile; the maintainer scripts are valid sh and use
   deb-systemd-helper / deb-systemd-invoke, never systemctl but for daemon-reload.
4. `dpkg -x` into a temporary root: the files are where Debian puts them, owned by root
   (copyright in DEP-5, changelog.Debian.gz); the binary runs from there: `--version` prints the
   package's version, `validate` accepts the shipped example policies.
5. The shipped units name the shipped binary (ExecStart) and docs (Documentation=); the sysusers
   file creates the pathwarden user in the root (`systemd-sysusers --root`, as the postinst does).
6. pathwarden(1) renders with no warning from groff (-wall) or man (--warnings); it is dated as
   the changelog; every command of `pathwarden --help` has its section there, with exactly the
   options its --help lists; the global options are those of `pathwarden --help`; EXIT STATUS,
   EXAMPLES, FILES and ENVIRONMENT are there, and every example names a command and options it has.
7. The bash completion completes commands, options, option values, `proxmox`'s action and policy
   names (from the paths typed, or the settings' policies directory of --config).
"""
import datetime
import gzip
import os
import re
import shlex
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


def release_build(source_dir, out_dir):
    """0. The release preset's binary and generated docs, without the tests: no warning at all."""
    made = run(["cmake", "--preset", "release", "-B", out_dir, "-DBUILD_TESTING=OFF"], cwd=source_dir)
    check(made.returncode == 0, f"cmake --preset release: {made.stdout[-2000:]}\n{made.stderr[-2000:]}")
    built = run(["cmake", "--build", out_dir, "--target", "pathwarden", "pw_generated_docs", "-j",
                 str(os.cpu_count() or 2)], cwd=source_dir)
    log = built.stdout + built.stderr
    check(built.returncode == 0, f"release build failed:\n{log[-4000:]}")
    noise = [line for line in log.splitlines() if "warning:" in line or "#pragma message" in line]
    check(not noise, "the release build is not warning-free:\n" + "\n".join(noise[:40]))
    print("ok   release build (dpkg-buildflags hardening): no warning")


def changelog_top(source_dir):
    """(version, maintainer, YYYY-MM-DD) of packaging/debian/changelog's newest entry."""
    with open(os.path.join(source_dir, "packaging", "debian", "changelog")) as f:
        text = f.read()
    version = re.match(r"pathwarden \(([^)]+)\) ", text).group(1)
    who, day = re.search(r"^ -- (.+ <[^>]+>)  (.+)$", text, re.M).groups()
    date = datetime.datetime.strptime(day, "%a, %d %b %Y %H:%M:%S %z").strftime("%Y-%m-%d")
    return version, who, date


def make_package(out_dir, changelog):
    """1. cpack: one .deb, named and versioned as the changelog says."""
    package_dir = os.path.join(out_dir, "package")
    shutil.rmtree(package_dir, ignore_errors=True)
    made = run(["cpack", "-G", "DEB", "--config", os.path.join(out_dir, "CPackConfig.cmake"), "-B", package_dir])
    check(made.returncode == 0, f"cpack failed ({made.returncode}):\n{made.stdout[-3000:]}\n{made.stderr[-3000:]}")
    debs = [f for f in os.listdir(package_dir) if f.endswith(".deb")]
    check(len(debs) == 1, f"cpack made {debs}")
    deb = os.path.join(package_dir, debs[0])
    fields = control_fields(deb)
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    check(fields.get("Package") == "pathwarden" and fields.get("Architecture") == arch, f"control: {fields}")
    check(fields.get("Version") == changelog[0], f"Version {fields.get('Version')}, the changelog's {changelog[0]}")
    check(debs[0] == f"pathwarden_{changelog[0]}_{arch}.deb", f"file name {debs[0]}")
    print(f"ok   package {debs[0]}")
    return deb, fields


def lintian_check(deb, source_dir):
    """2. lintian: nothing but the explained overrides; an overridden spelling is no word of ours."""
    out = run(["lintian", "--pedantic", "--display-info", "--show-overrides", "--no-tag-display-limit", deb])
    tags = [line for line in out.stdout.splitlines() if re.match(r"^[EWIPXO]: ", line)]
    reported = [t for t in tags if not t.startswith("O: ")]
    check(out.returncode == 0 and not reported,
          f"lintian (exit {out.returncode}):\n" + "\n".join(reported) + f"\n{out.stderr[-1500:]}")
    overridden = sorted({t.split()[2] for t in tags if t.startswith("O: ")})
    check(set(overridden) <= {"initial-upload-closes-no-bugs", "uses-dpkg-database-directly",
                              "spelling-error-in-binary"}, f"unexpected overrides: {overridden}")
    sources = ""
    for tree in ("src", "controller"):
        for dirpath, _, files in os.walk(os.path.join(source_dir, tree)):
            for name in files:
                if name.endswith((".cpp", ".hpp")):
                    with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                        sources += f.read()
    for t in tags:
        if t.startswith("O: ") and t.split()[2] == "spelling-error-in-binary":
            word = t.split()[3]
            check(not re.search(rf"\b{re.escape(word)}\b", sources, re.I),
                  f"lintian's spelling error '{word}' is in the sources: fix it there")
    print(f"ok   lintian: no error, warning, info or pedantic tag (overridden, explained: {', '.join(overridden)})")


def control_checks(deb, fields, changelog, tmp):
    """3. Depends, Recommends, Maintainer, conffiles, maintainer scripts."""
    depends = depends_names(fields.get("Depends", ""))
    for wanted in ("ansible", "openssh-client", "init-system-helpers", "libc6", "libstdc++6", "libyaml-cpp0.7",
                   "libboost-json1.81.0", "libssl3"):
        check(wanted in depends, f"Depends lacks {wanted}: {fields.get('Depends')}")
    check("bash-completion" in depends_names(fields.get("Recommends", "")), f"Recommends: {fields.get('Recommends')}")
    check(fields.get("Maintainer") == changelog[1], f"Maintainer {fields.get('Maintainer')}, changelog {changelog[1]}")
    control = os.path.join(tmp, "control")
    run(["dpkg-deb", "-e", deb, control], check=True)
    with open(os.path.join(control, "conffiles")) as f:
        check(f.read().split() == ["/etc/default/pathwarden"], "conffiles is not /etc/default/pathwarden")
    for script in ("postinst", "prerm", "postrm"):
        path = os.path.join(control, script)
        check(os.access(path, os.X_OK), f"{script} is not executable")
        check(run(["sh", "-n", path]).returncode == 0, f"{script} is not valid sh")
        with open(path) as f:
            code = [line for line in f if not line.lstrip().startswith("#")]
        check(all("daemon-reload" in line for line in code if re.search(r"\bsystemctl\b", line)),
              f"{script} calls systemctl for more than daemon-reload")
    with open(os.path.join(control, "postinst")) as f:
        check("deb-systemd-helper update-state pathwarden.timer" in f.read(), "postinst: no deb-systemd-helper")
    with open(os.path.join(control, "prerm")) as f:
        check("deb-systemd-invoke stop pathwarden.timer pathwarden.service" in f.read(), "prerm: no deb-systemd-invoke")
    print(f"ok   control: Depends {fields['Depends']}; Recommends {fields['Recommends']}")


def file_checks(deb, fields, changelog, tmp):
    """4. The files, and the binary run from the throw-away root. Returns (root, binary, env)."""
    version = changelog[0]
    root = os.path.join(tmp, "root")
    x = run(["dpkg", "-x", deb, root])
    check(x.returncode == 0, f"dpkg -x: {x.stderr}")
    binary = os.path.join(root, "usr/bin/pathwarden")
    depends = depends_names(fields.get("Depends", ""))
    for soname, names in needed_packages(binary).items():
        check(names & depends, f"{soname} is in {names}, none of which Depends names: {fields.get('Depends')}")
    listing = run(["dpkg-deb", "-c", deb]).stdout.splitlines()
    paths = {line.split()[-1].lstrip(".") for line in listing}
    for wanted in ("/usr/bin/pathwarden", "/lib/systemd/system/pathwarden.service",
                   "/lib/systemd/system/pathwarden.timer", "/usr/lib/sysusers.d/pathwarden.conf",
                   "/etc/default/pathwarden", "/usr/share/man/man1/pathwarden.1.gz",
                   "/usr/share/bash-completion/completions/pathwarden", f"/{DOC}/README.md", f"/{DOC}/copyright",
                   f"/{DOC}/changelog.Debian.gz", "/usr/share/lintian/overrides/pathwarden",
                   "/usr/share/pathwarden/schemas/policy.schema.json",
                   "/usr/share/pathwarden/schemas/settings.schema.json",
                   f"/{DOC}/policies/README.md", f"/{DOC}/systemd/README.md",
                   f"/{DOC}/examples/policies/movies-10g.yaml"):
        check(wanted in paths, f"the package lacks {wanted}")
    check(all(line.split()[1] == "root/root" for line in listing), "files not owned by root/root")
    check(any(line.startswith("-rwxr-xr-x") and line.endswith("./usr/bin/pathwarden") for line in listing),
          "usr/bin/pathwarden is not -rwxr-xr-x")
    with open(os.path.join(root, DOC, "copyright")) as f:
        copyright_text = f.read()
    check(copyright_text.startswith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
          and "License: GPL-3+" in copyright_text, "copyright is not DEP-5 with GPL-3+")
    with gzip.open(os.path.join(root, DOC, "changelog.Debian.gz"), "rt") as f:
        check(f.read().startswith(f"pathwarden ({version}) "), "changelog.Debian.gz is not the package's")
    env = {k: v for k, v in os.environ.items() if k != "PATHWARDEN_CONFIG"}
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
    return root, binary, env


def unit_checks(root):
    """5. The units name what the package ships; the sysusers file makes the user."""
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


def man_sections(source):
    by_title = {}
    for s in re.split(r'^(?=\.S[SH] )', source, flags=re.M):
        m = re.match(r'^\.S[SH] "?([^"\n]+)"?\n', s)
        if m:
            by_title[m.group(1)] = s
    return by_title


def example_checks(section, commands, options_of, global_options):
    """Every EXAMPLES line is `pathwarden [GLOBAL...] COMMAND ...` with options that command has."""
    lines = [line.replace("\\-", "-") for line in re.findall(r"^(pathwarden .*)$", section, re.M)]
    check(len(lines) >= 8, f"EXAMPLES: {lines}")
    for line in lines:
        words = shlex.split(line)[1:]
        while words and words[0].startswith("--"):
            check(words[0] in global_options, f"example '{line}': no global option {words[0]}")
            words = words[2:] if words[0] in ("--log-level", "--log-format", "--config") else words[1:]
        check(words and words[0] in commands, f"example '{line}' names no command")
        for w in words[1:]:
            if w.startswith("--"):
                check(w.split("=", 1)[0] in options_of(words[0]), f"example '{line}': {words[0]} has no {w}")
    return len(lines)


def man_checks(root, binary, env, changelog, tmp):
    """6. The manual."""
    version = changelog[0]
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
    th = re.search(r'^\.TH PATHWARDEN 1 "([^"]*)" "([^"]*)"', source.replace("\\-", "-"), re.M)
    check(th and th.group(1) == changelog[2] and th.group(2) == f"pathwarden {version.rsplit('-', 1)[0]}",
          f".TH: {th and th.groups()}, want the changelog's date {changelog[2]} and the version")
    overview = run([binary, "--help"], env=env).stdout
    commands = help_commands(overview)
    check(len(commands) >= 9, f"commands in --help: {commands}")
    by_title = man_sections(source)
    own_options = {}
    for name in commands:
        section = by_title.get(f"pathwarden {name}")
        check(section is not None, f"the man page has no section for {name}")
        own_options[name] = help_options(run([binary, name, "--help"], env=env).stdout, "Options:")
        check(man_options(section) == own_options[name],
              f"{name}: man {man_options(section)} != --help {own_options[name]}")
    globals_help = sorted(help_options(overview, "Global options:") + ["--help"])
    check(man_options(by_title["GLOBAL OPTIONS"]) == globals_help,
          f"global options: man {man_options(by_title['GLOBAL OPTIONS'])} != --help {globals_help}")
    for title in ("EXIT STATUS", "EXAMPLES", "FILES", "ENVIRONMENT", "SEE ALSO"):
        check(title in by_title, f"the man page has no {title}")
    n = example_checks(by_title["EXAMPLES"], commands, lambda c: own_options[c], globals_help)
    print(f"ok   pathwarden(1) of {changelog[2]}: no warnings; sections for {', '.join(commands)} with their --help "
          f"options; {n} examples with options their commands have")
    return commands


def completion_checks(root, binary, commands, tmp):
    """7. The bash completion, with the shipped binary as the command typed."""
    script = os.path.join(root, "usr/share/bash-completion/completions/pathwarden")
    check(sorted(complete(script, [binary, ""])) == sorted(commands + ["help"]), "commands not completed")
    check(complete(script, [binary, "val"]) == ["validate"], "'val' does not complete to validate")
    check(complete(script, [binary, "--log-level", "debug", "reconcile", "--ch"]) == ["--check"],
          "'reconcile --ch' does not complete to --check after a global option")
    check(sorted(complete(script, [binary, "plan", "--output", ""])) == ["json", "text"],
          "--output values not completed")
    check("warn" in complete(script, [binary, "--log-level", ""]), "--log-level values not completed")
    check(complete(script, [binary, "proxmox", ""]) == ["nics"], "proxmox's action not completed")
    check(complete(script, [binary, "proxmox", "nics", "--node", "pve1", ""]) == [],
          "proxmox completes a second action")
    examples = os.path.join(root, DOC, "examples/policies")
    check(complete(script, [binary, "plan", examples, "--policy", "movies"]) == ["movies-10g"],
          "--policy does not complete from the path typed")
    check(sorted(complete(script, [binary, "reconcile", "--output", "json", examples, "--exclude", "post"]))
          == ["postgres-backup", "postgres-data"], "--exclude does not complete from the path typed")
    settings = os.path.join(tmp, "pathwarden.yaml")
    with open(settings, "w") as f:
        f.write("apiVersion: pathwarden/v1\nkind: Controller\nspec:\n  proxmox:\n    url: https://pve1.invalid:8006\n"
                "    token_id: 'root@pam!pw'\n    token_secret_env: PW_TOKEN\n  ansible:\n    inventory: /dev/null\n"
                f"  policies: {examples}\n")
    check(complete(script, [binary, "--config", settings, "status", "--policy", ""])
          == ["movies-10g", "postgres-backup", "postgres-data"], "--policy does not complete from --config's policies")
    check(complete(script, [binary, "--config", os.path.join(tmp, "none.yaml"), "status", "--policy", ""]) == [],
          "a missing settings file completes something")
    print("ok   bash completion: commands, options, values, proxmox's action, policy names")


def main(source_dir, out_dir):
    source_dir, out_dir = os.path.abspath(source_dir), os.path.abspath(out_dir)
    tmp = tempfile.mkdtemp(prefix="pw-deb-")
    try:
        release_build(source_dir, out_dir)
        changelog = changelog_top(source_dir)
        deb, fields = make_package(out_dir, changelog)
        lintian_check(deb, source_dir)
        control_checks(deb, fields, changelog, tmp)
        root, binary, env = file_checks(deb, fields, changelog, tmp)
        unit_checks(root)
        commands = man_checks(root, binary, env, changelog, tmp)
        completion_checks(root, binary, commands, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    test_main(main, __doc__, 2)
