"""build.sh --print-bin-dir: which bin dir the lab uses, from the table's versions, never from the network.

The lab asks on every run (every tag): the answer is the directory keyed by versions.env's versions,
whatever the Go module proxy serves (one that never answers changes nothing), and SIM_BIN_DIR or
SIM_BIN_ROOT move it.
"""

import os
import subprocess

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.versions import read

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.path.join(ROOT, "roles", "local_build", "files", "build.sh")


def print_bin_dir(**env):
    run_env = dict(os.environ, GOPROXY="http://127.0.0.1:9")  # a proxy that never answers
    run_env.pop("SIM_BIN_DIR", None)
    run_env.pop("SIM_BIN_ROOT", None)
    run_env.update(env)
    done = subprocess.run([BUILD, "--print-bin-dir"], capture_output=True, text=True, env=run_env, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_bin_dir_is_keyed_by_the_tables_versions(tmp_path):
    table = read()
    key = "k8s-%s_etcd-%s_kwok-%s_kai-%s" % (table["K8S_VERSION"], table["ETCD_VERSION"], table["KWOK_VERSION"], table["KAI_BUILD_VERSION"])
    assert print_bin_dir(SIM_BIN_ROOT=str(tmp_path)) == os.path.join(str(tmp_path), key, "bin")
    # nothing is made to answer
    assert list(tmp_path.iterdir()) == []


def test_sim_bin_dir_wins(tmp_path):
    assert print_bin_dir(SIM_BIN_ROOT=str(tmp_path / "root"), SIM_BIN_DIR=str(tmp_path / "mine")) == str(tmp_path / "mine")


def test_a_checkout_builds_into_its_own_cache():
    assert print_bin_dir().startswith(os.path.join(ROOT, ".cache", "sim-bin") + os.sep)
