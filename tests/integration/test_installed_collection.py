"""The collection as users get it: built, installed with ansible-galaxy, playbooks run by FQCN."""

import os
import subprocess

import pytest

from conftest import BIN

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build the collection tarball and install it (no dependencies fetched: Galaxy is offline)."""
    build = tmp_path_factory.mktemp("build")
    done = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", ROOT, "--output-path", str(build)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (tarball,) = [p for p in os.listdir(build) if p.endswith(".tar.gz")]
    target = tmp_path_factory.mktemp("collections")
    done = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--no-deps", "--force", "-p", str(target),
                           str(build / tarball)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    # kubernetes.core (a dependency; Galaxy is not reachable) from the checkout's unpacked copy
    (target / "ansible_collections" / "kubernetes").symlink_to(os.path.join(ROOT, ".cache", "collections", "ansible_collections", "kubernetes"))
    return target


def run_fqcn(installed, playbook, *args):
    """ansible-playbook by FQCN, with only the installed collections on the path, run from elsewhere."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(installed))
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", playbook] + list(args),
                          capture_output=True, text=True, check=False, env=env, cwd=str(installed))


def test_installed_collection_has_the_playbooks_and_roles(installed):
    root = installed / "ansible_collections" / "gpulab" / "kai_hami"
    for path in ("playbooks/lab11.yml", "playbooks/cleanup.yml", "playbooks/vars/lab11.yml", "playbooks/tasks/lab11_setup.yml",
                 "roles/sim_cluster/files/sim-bin/build.sh", "roles/kai_scheduler/meta/argument_specs.yml"):
        assert (root / path).exists(), path
    assert not (root / ".cache").exists() and not (root / ".venv").exists()


def test_lab11_by_fqcn_checks_its_inputs(installed):
    done = run_fqcn(installed, "gpulab.kai_hami.lab11", "-e", "lab11_platform=docker")
    assert done.returncode != 0
    assert "value of lab11_platform must be one of: auto, kind, sim, existing, got: docker" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def test_lab11_and_cleanup_by_fqcn_pass_a_syntax_check(installed):
    for playbook in ("gpulab.kai_hami.lab11", "gpulab.kai_hami.cleanup"):
        done = run_fqcn(installed, playbook, "--syntax-check")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
