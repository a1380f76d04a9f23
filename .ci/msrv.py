#!/usr/bin/env python3
"""Each workspace crate's `rust-version` is at least what its locked dependency tree needs.

For every crate of the workspace, the largest `rust-version` among the packages in its normal
and build dependency tree on this target (as Cargo.lock resolves them, with the crate's default
features: what a user of it builds; the core's optional `zstd` needs more, as its Cargo.toml
says) is a floor the crate's own `rust-version` must not be below: a toolchain
older than that cannot build it from this lock file. What the crate's own code needs beyond
its tree is clippy's `incompatible_msrv` lint's job (CI runs it). Prints each crate's declared
and needed versions; exits 1 naming any crate that declares less than it needs.
"""
import json
import subprocess
import sys

TARGET = "x86_64-unknown-linux-gnu"


def ver(s):
    v = [int(x) for x in (s or "0").split(".")]
    return tuple(v + [0] * (3 - len(v)))


meta = json.loads(subprocess.check_output(["cargo", "metadata", "--format-version", "1", "--locked"]))
rv = {(p["name"], p["version"]): p.get("rust_version") for p in meta["packages"]}
members = [p for p in meta["packages"] if p["id"] in meta["workspace_members"]]
bad = []
for p in members:
    if p["name"] == "loom-tests":
        continue
    tree = subprocess.check_output(
        ["cargo", "tree", "-q", "--locked", "-e", "normal,build", "-p", p["name"], "--target", TARGET,
         "--prefix", "none"], text=True)
    need, who = (0, 0, 0), "-"
    for line in tree.splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[0] == p["name"]:
            continue
        key = (parts[0], parts[1].lstrip("v"))
        if ver(rv.get(key)) > need:
            need, who = ver(rv.get(key)), f"{key[0]} {key[1]}"
    declared = ver(p.get("rust_version"))
    status = "ok" if declared >= need else "TOO LOW"
    print(f"{p['name']:<16} rust-version {p.get('rust_version')!s:<6} needs >= {'.'.join(map(str, need)):<7} ({who}) {status}")
    if declared < need:
        bad.append(p["name"])
if bad:
    print("rust-version below what the locked tree needs: " + ", ".join(bad))
    sys.exit(1)
