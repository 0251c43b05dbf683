"""The list of KAI's e2e suites against the KAI module the sim was built from, and kwok-stages."""

import importlib.util
import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPEC = importlib.util.spec_from_file_location("kai_e2e", os.path.join(ROOT, "tools", "kai_e2e.py"))
kai_e2e = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(kai_e2e)
BIN_DIR = os.environ.get("SIM_BIN_DIR") or subprocess.run(
    [kai_e2e.BUILD, "--print-bin-dir"], capture_output=True, text=True, check=True).stdout.strip()


def test_the_list_of_the_kai_version_built_names_every_suite_of_its_module():
    version = kai_e2e.kai_version()
    module = kai_e2e.module_dir(version)
    assert os.path.isdir(module), "KAI %s's module is not in Go's module cache (build.sh downloads it)" % version
    suites = kai_e2e.report.module_suites(module)
    assert "allocate/quota" in suites and "scale" in suites and len(suites) > 20
    kai_e2e.report.check_covers(kai_e2e.report.load(kai_e2e.report.list_path(version)), module)


def stages(*argv):
    return subprocess.run([os.path.join(BIN_DIR, "kwok-stages")] + list(argv), capture_output=True, text=True, check=False)


def test_kwok_stages_prints_kwoks_defaults_but_the_ones_left_out():
    every = stages()
    assert every.returncode == 0, every.stderr
    names = [line.split(":", 1)[1].strip() for line in every.stdout.splitlines() if line.startswith("  name:")]
    assert names == ["node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-complete", "pod-delete"]
    without = stages("--without", "pod-complete")
    assert without.returncode == 0 and "name: pod-complete" not in without.stdout
    assert without.stdout.count("kind: Stage") == len(names) - 1


@pytest.mark.parametrize("name", ["bogus", "pod-complete,bogus"])
def test_kwok_stages_refuses_a_name_that_is_no_default_and_prints_nothing(name):
    done = stages("--without", name)
    assert done.returncode == 1 and done.stdout == ""
    assert "--without names no default Stage: bogus (the defaults: node-initialize," in done.stderr
