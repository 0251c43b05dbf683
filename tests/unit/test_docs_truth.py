"""What the docs say about versions and scenarios is what the code builds and holds, and no text
speaks of the machine the collection was built on."""

import glob
import os
import re
import subprocess

import yaml

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.versions import read as read_versions

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NUMBERS = {2: "Two", 3: "Three", 4: "Four", 5: "Five"}


def tracked(*patterns):
    out = subprocess.run(["git", "ls-files", "--"] + list(patterns), cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [os.path.join(ROOT, path) for path in out.split()]


# What the docs name with a version, and the keys of versions.env that version must be one of.
VERSIONED = [
    (r"KAI(?: Scheduler)?(?:'s)? (v\d+\.\d+\.\d+)", ("KAI_BUILD_VERSION", "KAI_CHART_VERSION")),
    (r"containerd (v?\d+\.\d+\.\d+)", ("CONTAINERD_VERSION",)),
    (r"\brunc (v?\d+\.\d+\.\d+)", ("RUNC_VERSION",)),
    (r"\bkind (v\d+\.\d+\.\d+)", ("KIND_VERSION",)),
    (r"\b[Hh]elm (v\d+\.\d+\.\d+)", ("HELM_VERSION",)),
    (r"\betcd (v?\d+\.\d+\.\d+)", ("ETCD_VERSION",)),
    (r"\bkwok (v\d+\.\d+\.\d+)", ("KWOK_VERSION",)),
    (r"\b(?:kubelet|Kubernetes|kubeadm|kube-proxy) (v?\d+\.\d+\.\d+)", ("K8S_VERSION",)),
    (r"device plugin (v\d+\.\d+\.\d+)", ("DEVICE_PLUGIN_VERSION",)),
    (r"\b(?:crictl|cri-tools) (v\d+\.\d+\.\d+)", ("CRI_TOOLS_VERSION",)),
    (r"CNI plugins (v\d+\.\d+\.\d+)", ("CNI_PLUGINS_VERSION",)),
    (r"\b(?:CoreDNS|coredns) (v\d+\.\d+\.\d+)", ("COREDNS_VERSION",)),
]
DOCS = ("README.md", "docs/*.md", "roles/*/README.md", "molecule/README.md")


def test_every_version_the_docs_state_is_the_tables():
    """'containerd v2.4.2' in a doc is versions.env's CONTAINERD_VERSION (with or without its v)."""
    table = read_versions()
    wrong = []
    for path in tracked(*DOCS):
        with open(path) as handle:
            text = " ".join(handle.read().split())
        for pattern, keys in VERSIONED:
            for match in re.finditer(pattern, text):
                if match.group(1).lstrip("v") not in [table[key].lstrip("v") for key in keys]:
                    wrong.append("%s: %r is not %s" % (os.path.relpath(path, ROOT), match.group(0), " or ".join(
                        "%s (%s)" % (key, table[key]) for key in keys)))
    assert wrong == []


def test_every_path_the_docs_name_exists():
    """A file or directory of the collection a doc names in backquotes (`roles/...`, `plugins/...`) is there."""
    missing = []
    # (docs/porting.md names the paths that are gone, and what replaces them)
    for path in [p for p in tracked(*DOCS) if not p.endswith("/docs/porting.md")]:
        with open(path) as handle:
            text = handle.read()
        for named in re.findall(r"`((?:roles|plugins|playbooks|tools|tests|molecule|docs|changelogs)/[^`\s<>*{}$]+)`", text):
            if not os.path.exists(os.path.join(ROOT, named.rstrip("/").split(":")[0])):
                missing.append("%s: %s" % (os.path.relpath(path, ROOT), named))
    assert missing == []


def test_the_one_file_that_imports_the_kubernetes_client_is_the_one_the_docs_name():
    """architecture.md and client.py say which module_utils file imports kubernetes.core's client: it is so."""
    def imports(path):
        with open(path) as handle:
            return re.search(r"^\s*(from|import) (ansible_collections\.kubernetes\.core|kubernetes)\b", handle.read(), re.M)

    importers = sorted(os.path.relpath(path, ROOT) for path in tracked("plugins/*.py") if imports(path))
    assert importers == ["plugins/module_utils/client.py"]
    with open(os.path.join(ROOT, "plugins", "module_utils", "client.py")) as handle:
        assert "The one place this collection imports kubernetes.core (and the kubernetes client)" in handle.read()
    with open(os.path.join(ROOT, "docs", "architecture.md")) as handle:
        assert "client.py     (kubernetes.core and the kubernetes client: the one file that imports them)" in handle.read()


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


def test_the_readmes_grep_finds_each_claims_row_decision_and_reader():
    """The README's one search for a claim id finds its CLAIMS row, its cN_ function and ClaimDecider.cN."""
    with open(os.path.join(ROOT, "README.md")) as handle:
        readme = " ".join(handle.read().split())
    command = re.search(r"`grep -n -i -E '(\"c6\"\|def c6)' (plugins/module_utils/claims\.py) (plugins/modules/lab_claim\.py)`", readme)
    assert command, "the README no longer shows the search"
    for number in range(1, 10):
        pattern = command.group(1).replace("c6", "c%d" % number)
        done = subprocess.run(["grep", "-n", "-i", "-E", pattern, command.group(2), command.group(3)], cwd=ROOT,
                              capture_output=True, text=True, check=True)
        lines = done.stdout.splitlines()
        assert any('"C%d": Claim(' % number in line for line in lines), lines
        assert any(re.search(r"claims\.py:\d+:def c%d_\w+\(" % number, line) for line in lines), lines
        assert any(re.search(r"lab_claim\.py:\d+: +def c%d\(self\)" % number, line) for line in lines), lines
