"""What the docs say about versions and scenarios is what the code builds and holds, and no text
speaks of the machine the collection was built on."""

import glob
import os
import re
import subprocess

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VERSIONS_ENV = os.path.join(ROOT, "roles", "sim_cluster", "files", "sim-bin", "versions.env")
NUMBERS = {2: "Two", 3: "Three", 4: "Four", 5: "Five"}


def tracked(*patterns):
    out = subprocess.run(["git", "ls-files", "--"] + list(patterns), cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [os.path.join(ROOT, path) for path in out.split()]


def kai_rows():
    """The KAI versions the sim's build tries, in its order (KAI_ROW_<n>)."""
    rows = {}
    with open(VERSIONS_ENV) as handle:
        for line in handle:
            match = re.match(r"KAI_ROW_(\d+)=(v[0-9.]+)\|", line)
            if match:
                rows[int(match.group(1))] = match.group(2)
    return [rows[n] for n in sorted(rows)]


def test_every_kai_version_statement_names_the_builds_order():
    """'vX where the Go module proxy serves it, else vY' is the build's first and second row."""
    rows = kai_rows()
    assert len(rows) >= 2
    pattern = re.compile(r"(v\d+\.\d+\.\d+) where (?:the Go module proxy serves it|served), else (v\d+\.\d+\.\d+)")
    found = []
    for path in tracked("*.md", "*.yml", "*.py", "*.sh", "*.env", "*.mod"):
        with open(path, errors="replace") as handle:
            text = " ".join(handle.read().split())
        for match in pattern.finditer(text):
            found.append((os.path.relpath(path, ROOT), match.group(1), match.group(2)))
    assert found, "no KAI version statement found"
    assert [f for f in found if (f[1], f[2]) != (rows[0], rows[1])] == []


def test_no_stale_kai_version_claims():
    stale = re.compile(r"the only KAI version|newest version served|v0\.\d+\.\d+ here", re.I)
    hits = []
    for path in tracked("*.md", "*.yml", "*.py"):
        if "/tests/" in path or "/changelogs/" in path:
            continue
        with open(path, errors="replace") as handle:
            hits += ["%s: %s" % (os.path.relpath(path, ROOT), m.group(0)) for m in stale.finditer(handle.read())]
    assert hits == []


def test_no_text_speaks_of_the_machine_it_was_built_on():
    """State the condition ("where the Go module proxy serves no v0.17.0"), not the place."""
    place = re.compile(r"\bhere\b|\bthis (network|machine)\b|\bnot reachable\b|\bunreachable\)", re.I)
    hits = []
    for path in tracked("*.md", "*.yml", "*.py", "*.j2", "*.sh", "*.env", "*.mod", "Makefile"):
        if "/changelogs/" in path or path == os.path.abspath(__file__):
            continue
        with open(path, errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                if place.search(line):
                    hits.append("%s:%d: %s" % (os.path.relpath(path, ROOT), number, line.strip()))
    assert hits == []


def test_the_molecule_readme_counts_the_scenarios():
    scenarios = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(ROOT, "molecule", "*", "molecule.yml")))
    with open(os.path.join(ROOT, "molecule", "README.md")) as handle:
        text = handle.read()
    assert text.split("\n\n")[1].startswith("%s scenarios" % NUMBERS[len(scenarios)])
    for scenario in scenarios:
        assert "| `%s` |" % scenario in text


def test_version_added_is_never_later_than_the_collection():
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        version = tuple(int(part) for part in yaml.safe_load(handle)["version"].split("."))
    later = []
    for path in tracked("plugins/*.py", "plugins/*.yml"):
        with open(path) as handle:
            for number, line in enumerate(handle, 1):
                match = re.search(r"version_added: ['\"]?(\d+)\.(\d+)\.(\d+)", line)
                if match and tuple(int(g) for g in match.groups()) > version:
                    later.append("%s:%d: %s" % (os.path.relpath(path, ROOT), number, line.strip()))
    assert later == []


def test_own_lab_names_every_module_of_the_kai_action_group():
    """docs/own-lab.md's list of the gpulab.kai_hami.kai action group is meta/runtime.yml's."""
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as handle:
        group = yaml.safe_load(handle)["action_groups"]["kai"]
    with open(os.path.join(ROOT, "docs", "own-lab.md")) as handle:
        text = " ".join(handle.read().split())
    listed = re.search(r"form the action group `gpulab\.kai_hami\.kai` \(([^)]*)\)", text)
    assert listed, "docs/own-lab.md no longer lists the kai action group"
    assert re.findall(r"`([a-z_]+)`", listed.group(1)) == group
