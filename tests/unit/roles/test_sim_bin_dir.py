"""build.sh --print-bin-dir: which bin dir the lab uses, without the network when a KAI is built.

The lab asks on every run (every tag): it must name the newest KAI of versions.env's table that
is already built, without asking the Go module proxy (one that never answers), and fall back to the
proxy's choice only when none is built.
"""

import os
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.path.join(ROOT, "roles", "sim_cluster", "files", "sim-bin", "build.sh")
VERSIONS = os.path.join(ROOT, "roles", "sim_cluster", "files", "sim-bin", "versions.env")


def versions():
    """versions.env's settings and its KAI rows' versions, in table order."""
    settings = {}
    with open(VERSIONS) as handle:
        for line in handle:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                key, value = line.split("=", 1)
                settings[key] = value
    rows = [settings[k].split("|")[0] for k in sorted(k for k in settings if k.startswith("KAI_ROW_"))]
    return settings, rows


def bin_dir(root, kai):
    settings, _rows = versions()
    key = "k8s-%s_etcd-%s_kwok-%s_kai-%s" % (settings["K8S_VERSION"], settings["ETCD_VERSION"], settings["KWOK_VERSION"], kai)
    return os.path.join(str(root), key, "bin")


def built(root, kai):
    """A bin dir whose KAI build finished (its last program, kai-resourcereservation, is there)."""
    directory = bin_dir(root, kai)
    os.makedirs(directory)
    program = os.path.join(directory, "kai-resourcereservation")
    with open(program, "w") as handle:
        handle.write("#!/bin/sh\n")
    os.chmod(program, 0o755)


def print_bin_dir(root):
    env = dict(os.environ, SIM_BIN_ROOT=str(root), GOPROXY="http://127.0.0.1:9")  # a proxy that never answers
    env.pop("SIM_BIN_DIR", None)
    env.pop("KAI_VERSION", None)
    done = subprocess.run([BUILD, "--print-bin-dir"], capture_output=True, text=True, env=env, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_newest_built_kai_is_named_without_the_proxy(tmp_path):
    _settings, rows = versions()
    assert len(rows) >= 2, "the table has a newest and an older KAI"
    built(tmp_path, rows[-1])
    assert print_bin_dir(tmp_path) == bin_dir(tmp_path, rows[-1])
    built(tmp_path, rows[0])
    assert print_bin_dir(tmp_path) == bin_dir(tmp_path, rows[0])


def test_a_started_but_unfinished_build_does_not_count(tmp_path):
    _settings, rows = versions()
    os.makedirs(bin_dir(tmp_path, rows[-1]))  # a bin dir without its last KAI program
    # no KAI built: the proxy's choice; it does not answer, so the table's first row
    assert print_bin_dir(tmp_path) == bin_dir(tmp_path, rows[0])
