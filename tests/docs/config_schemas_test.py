#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The JSON Schemas of the files operators edit, for editors (yaml-language-server):
src/policy/policy.schema.json (kind: StoragePath) and src/settings/settings.schema.json (kind: Controller).

usage: config_schemas_test.py SOURCE_DIR
- both are valid JSON Schemas (draft 2020-12 metaschema, Debian's python3-jsonschema);
- never stricter than pathwarden: every document of every shipped example it accepts is valid against the
  schema of its kind: policies/*.yaml, every YAML file under examples/ (lab/trap/ too), tests/policy/good/
  (when there is one), the fuzz corpus tests/fuzz/corpus/policy_loader/ but its bad-* and regress-* files, and
  the complete StoragePath and Controller documents of README.md's and policies/README.md's ```yaml blocks (the
  fingerprint placeholder AB:CD:…:89 replaced by a well-formed one, as the README walkthrough does). A file
  whose documents are not mappings with a kind is no pathwarden file (the Ansible playbooks of examples/awx)
  and is skipped, so is a README block that is not a complete document (counted);
- as strict as a schema can be: each file of tests/policy/bad/ is either refused by the schema for the reason
  pathwarden gives (REFUSED: the errors must include the named places) or refused by pathwarden for a reason no
  schema can state (LEFT_TO_VALIDATE: the schema accepts its documents, so that list stays true); a new bad file
  must be put in one of them.
Files are read as YAML 1.2 (core schema), as yaml-language-server reads them: yes/no/on/off and dates are
strings, 0101 is 101.
"""
import glob
import json
import os
import re

import jsonschema  # Debian's python3-jsonschema
import yaml

from pwtest.script import check, test_main

SCHEMAS = {"StoragePath": "src/policy/policy.schema.json", "Controller": "src/settings/settings.schema.json"}
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```$", re.S | re.M)
# The README's placeholder, which the decoder refuses (32 colon-separated pairs are wanted).
FINGERPRINT = ('"AB:CD:…:89"', '"' + ":".join(["AB", "CD", "EF", "01", "23", "45", "67", "89"] * 4) + '"')

# Shipped files that are not valid on purpose, with the reason; each must be refused by the YAML parser.
NOT_ACCEPTED = {
    "tests/fuzz/corpus/policy_loader/anchors-and-flow.yaml":
        "a fuzz seed whose second document uses an anchor of the first: anchors do not cross documents, so "
        "yaml-cpp (and PyYAML) refuse the file",
}

# tests/policy/bad/ files the schema refuses, why, and where it must say so: "DOC:PATH:KEYWORD" (DOC the
# document's index, PATH the JSON pointer of the value without the leading '/', KEYWORD the failing keyword).
# A document listed in `valid` must stay valid (the file shows what is allowed next to what is not).
REFUSED = {
    "unknown-keys.yaml": {
        "why": "unknown keys: every object has additionalProperties false",
        "errors": ["0:spec/nic:additionalProperties", "0:spec/mount:additionalProperties",
                   "0:spec:additionalProperties"]},
    "wrong-types.yaml": {
        "why": "wrong types: a word for a number or a boolean, a list for a string, a string for a list",
        "errors": ["0:spec/guest/vmid:pattern", "0:spec/guest/host:type", "0:spec/nic/queues:pattern",
                   "0:spec/mount/nas_addresses:type", "0:spec/verify/min_share:pattern",
                   "0:spec/restart/allowed:enum"]},
    "unknown-kind.yaml": {
        "why": "an unknown kind: each schema's kind is a const (checked against both schemas)",
        "errors": ["0:kind:const"]},
    "inline-secret.yaml": {
        "why": "an inline secret: token_secret is `not: {}`; also plain http, a short fingerprint, forks 0, no "
               "inventory, no token secret file, insecure_skip_verify with a fingerprint",
        "errors": ["0:spec/proxmox/token_secret:not", "0:spec/proxmox/url:pattern",
                   "0:spec/proxmox/fingerprint:pattern",
                   "0:spec/ansible/forks:minimum", "0:spec/ansible:required", "0:spec/proxmox:oneOf",
                   "0:spec/proxmox:not"]},
    "out-of-range.yaml": {
        "why": "out of range: minimum/maximum, and the range patterns of net0..net31, nconnect=1..16, a size above 0",
        "errors": ["0:spec/guest/vmid:minimum", "0:spec/nic/device:pattern", "0:spec/nic/queues:maximum",
                   "0:spec/mount/options/1:anyOf", "0:spec/verify/probe_bytes:pattern",
                   "0:spec/verify/min_share:maximum"]},
    "missing-fields.yaml": {
        "why": "an unsupported apiVersion, missing required keys, a key without a value",
        "errors": ["0:apiVersion:const", "0:metadata:required", "0:spec:required", "0:spec/guest:required",
                   "0:spec/mount/server:type", "0:spec/mount:required"]},
    "malformed-values.yaml": {
        "why": "malformed values: the formats of names, addresses, paths, mount options, sizes, enums, the window",
        "errors": ["0:metadata/name:pattern", "0:spec/guest/node:pattern", "0:spec/guest/host:pattern",
                   "0:spec/nic/device:pattern", "0:spec/mount/server:pattern", "0:spec/mount/nas_addresses/1:pattern",
                   "0:spec/mount/export:pattern", "0:spec/mount/path:pattern", "0:spec/mount/options/0:anyOf",
                   "0:spec/mount/options/1:anyOf", "0:spec/verify/probe_file:pattern",
                   "0:spec/verify/probe_bytes:pattern", "0:spec/verify/direction:enum",
                   "0:spec/restart/window:pattern"]},
    "system-paths.yaml": {
        "why": "mount points under or at system directories (a path below /var/lib stays valid)",
        "errors": ["0:spec/mount/path:pattern", "1:spec/mount/path:pattern", "2:spec/mount/path:pattern"],
        "valid": [3]},
    "trunking-misspelt.yaml": {
        "why": "a trunking choice that is not move-transport, nfsv3 or refuse",
        "errors": ["0:spec/mount/trunking:enum"]},
    "privileged-options.yaml": {
        "why": "an allow entry that is not suid, dev or exec (suid and dev without allow: left to validate)",
        "errors": ["0:spec/mount/allow/1:enum"]},
}

# tests/policy/bad/ files pathwarden refuses for what no schema of one document can state: their documents are
# valid against the schema (or, for a YAML syntax error, the YAML parser refuses the file before any schema).
LEFT_TO_VALIDATE = {
    "contradictions.yaml": "mount options against each other and against server; nas_addresses repeating server",
    "write-probe-read-only.yaml": "direction: write on an ro mount (spec.verify against spec.mount.options)",
    "trunking.yaml": "spec.mount.trunking against the NFS version, the server's address family and the owner",
    "duplicate-claims": "checks across policies: names, mount points, queue counts, inventory hosts, VM nodes",
    "empty.yaml": "a file without any document: there is nothing to validate",
    "syntax-error.yaml": "a YAML syntax error: the editor's YAML parser reports it, before any schema",
}


class Yaml12Loader(yaml.SafeLoader):
    """YAML 1.2's core schema, as yaml-language-server reads a file (PyYAML implements YAML 1.1)."""


Yaml12Loader.yaml_implicit_resolvers = {}
for _tag, _regexp, _first in [
        ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
        ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
        ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
                  r"|\.(?:nan|NaN|NAN))$", "-+0123456789."),
        ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""])]:
    Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:" + _tag, re.compile(_regexp), list(_first))


def _int(loader, node):
    text = loader.construct_scalar(node)
    return int(text, 0) if text.startswith(("0o", "0x")) else int(text, 10)


def _float(loader, node):
    text = loader.construct_scalar(node).lower()
    if text.endswith(".inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    return float(text)


Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _int)
Yaml12Loader.add_constructor("tag:yaml.org,2002:float", _float)


def as_json(value):
    """What a language server validates: mapping keys are strings."""
    if isinstance(value, dict):
        return {json_key(k): as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    return value


def json_key(key):
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


def documents(text):
    return [as_json(d) for d in yaml.load_all(text, Loader=Yaml12Loader)]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def is_pathwarden(doc):
    return isinstance(doc, dict) and "kind" in doc


def all_errors(validator, doc):
    """Every error, those inside anyOf/oneOf too, as 'PATH:KEYWORD'."""
    out = set()
    pending = list(validator.iter_errors(doc))
    while pending:
        e = pending.pop()
        out.add("/".join(map(str, e.absolute_path)) + ":" + str(e.validator))
        pending.extend(e.context or [])
    return out


def explain(validator, doc):
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return "\n".join(f"  /{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors[:10])


def shipped_files(root):
    files = sorted(glob.glob(f"{root}/policies/*.yaml"))
    for top in ("examples", "tests/policy/good"):
        for d, _, names in os.walk(f"{root}/{top}"):  # links are not followed: examples/awx/collections
            files += sorted(os.path.join(d, n) for n in names if n.endswith((".yaml", ".yml")))
    corpus = f"{root}/tests/fuzz/corpus/policy_loader"
    files += sorted(os.path.join(corpus, n) for n in os.listdir(corpus) if not n.startswith(("bad-", "regress-")))
    return files


def main(root):
    validators = {}
    for kind, rel in SCHEMAS.items():
        schema = json.loads(read(f"{root}/{rel}"))
        jsonschema.Draft202012Validator.check_schema(schema)
        check(schema.get("$schema") == "https://json-schema.org/draft/2020-12/schema", f"{rel}: $schema")
        validators[kind] = jsonschema.Draft202012Validator(schema)
        check(not validators[kind].is_valid({}), f"{rel} accepts an empty mapping")

    # Never stricter than pathwarden: the shipped examples it accepts.
    valid_docs = 0
    for path in shipped_files(root):
        rel = os.path.relpath(path, root)
        try:
            docs = documents(read(path))
        except yaml.YAMLError as e:
            check(rel in NOT_ACCEPTED, f"{rel}: not YAML: {e}")
            continue
        check(rel not in NOT_ACCEPTED, f"{rel} is read now: take it out of NOT_ACCEPTED")
        for i, doc in enumerate(d for d in docs if is_pathwarden(d)):
            check(doc["kind"] in validators, f"{rel}: document {i} has an unknown kind {doc['kind']!r}")
            v = validators[doc["kind"]]
            check(v.is_valid(doc), f"{rel}: document {i} ({doc['kind']}) does not match its schema:\n"
                                   f"{explain(v, doc)}")
            valid_docs += 1

    skipped = 0
    for rel in ("README.md", "policies/README.md"):
        for n, m in enumerate(YAML_BLOCK.finditer(read(f"{root}/{rel}"))):
            block = m.group(1).replace(*FINGERPRINT)
            try:
                docs = [d for d in documents(block) if d is not None]
            except yaml.YAMLError:
                docs = []
            complete = (docs and is_pathwarden(docs[0]) and docs[0]["kind"] in validators
                        and not block.startswith("# refused:")
                        and all(is_pathwarden(d) and {"apiVersion", "spec"} <= d.keys() for d in docs))
            if not complete:
                skipped += 1
                continue
            for doc in docs:
                v = validators.get(doc["kind"])
                check(v is not None and v.is_valid(doc),
                      f"{rel}, yaml block {n + 1} (line {m.string.count(chr(10), 0, m.start()) + 2}): "
                      f"{doc['kind']} does not match its schema:\n{explain(v, doc) if v else ''}")
                valid_docs += 1

    # As strict as a schema can be: tests/policy/bad/.
    bad = f"{root}/tests/policy/bad"
    names = {n for n in os.listdir(bad) if not n.endswith(".expected")}
    listed = REFUSED.keys() | LEFT_TO_VALIDATE.keys()
    check(names == listed, f"tests/policy/bad/ and the test's lists differ: new {sorted(names - listed)}, "
                           f"gone {sorted(listed - names)}")
    for name, want in REFUSED.items():
        docs = documents(read(f"{bad}/{name}"))
        found = set()
        for i, doc in enumerate(docs):
            # An unknown kind must be refused by every schema; otherwise the schema of the document's kind.
            chosen = [validators[doc["kind"]]] if doc.get("kind") in validators else list(validators.values())
            errors = set.intersection(*(all_errors(v, doc) for v in chosen))
            found |= {f"{i}:{e}" for e in errors}
            if i in want.get("valid", []):
                check(not errors, f"bad/{name}: document {i} must stay valid, the schema says {sorted(errors)}")
        missing = set(want["errors"]) - found
        check(not missing, f"bad/{name} ({want['why']}): the schema does not refuse {sorted(missing)}; "
                           f"it says {sorted(found)}")
    for name, why in LEFT_TO_VALIDATE.items():
        files = sorted(glob.glob(f"{bad}/{name}/*.yaml")) if os.path.isdir(f"{bad}/{name}") else [f"{bad}/{name}"]
        for path in files:
            try:
                docs = documents(read(path))
            except yaml.YAMLError:
                check(name == "syntax-error.yaml", f"bad/{name}: not YAML")
                continue
            for i, doc in enumerate(d for d in docs if d is not None):
                v = validators[doc["kind"]]
                check(v.is_valid(doc), f"bad/{os.path.relpath(path, bad)}: document {i} is refused by the schema "
                                       f"now ({why}): move it to REFUSED\n{explain(v, doc)}")

    print(f"schemas: {len(validators)} valid; {valid_docs} documents valid (README yaml blocks that are no complete "
          f"document, skipped: {skipped}), {len(REFUSED)} bad files refused ({len(LEFT_TO_VALIDATE)} left to "
          f"pathwarden validate)")


if __name__ == "__main__":
    test_main(main, __doc__, 1)
