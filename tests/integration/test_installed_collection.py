"""The collection as users get it: built, installed with ansible-galaxy, playbooks run by FQCN."""

import os
import re
import subprocess

import pytest

from conftest import BIN
from simtools import processes_under

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
    # kubernetes.core (a dependency, installed without Ansible Galaxy) from the checkout's unpacked copy
    (target / "ansible_collections" / "kubernetes").symlink_to(os.path.join(ROOT, ".cache", "collections", "ansible_collections", "kubernetes"))
    return target


def run_fqcn(installed, playbook, *args):
    """ansible-playbook by FQCN, with only the installed collections on the path, run from elsewhere (no
    inventory: the implicit localhost, whose modules run in ansible-playbook's own Python)."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(installed))
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), playbook] + list(args),
                          capture_output=True, text=True, check=False, env=env, cwd=str(installed))


def test_installed_collection_has_the_playbooks_and_roles(installed):
    root = installed / "ansible_collections" / "gpulab" / "kai_hami"
    for path in ("playbooks/lab11.yml", "playbooks/cleanup.yml", "playbooks/vars/lab11.yml", "playbooks/tasks/lab11_setup.yml",
                 "playbooks/example_team_queues.yml", "roles/sim_cluster/files/sim-bin/build.sh", "roles/kai_scheduler/meta/argument_specs.yml",
                 "roles/sim_kai/meta/argument_specs.yml", "roles/sim_isolator/files/isolator_standin.py",
                 "roles/sim_isolator/files/python_image_files.py", "roles/sim_node/files/oci_image.py",
                 "tools/install_kubernetes_core.py", "versions.env", "requirements.txt"):
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


def test_the_example_lab_from_the_tarball_runs_twice_and_is_cleaned_up_by_name(installed):
    """A lab of one's own from the docs: the example playbook by FQCN, twice (nothing changes the
    second time), then cleanup by the cluster's name leaves no process and no work dir."""
    workdir = os.path.join(os.path.expanduser("~"), ".cache", "gpulab-kai-hami", "sim", "teamlab")
    try:
        first = run_fqcn(installed, "gpulab.kai_hami.example_team_queues")
        assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-2000:]
        placed = re.search(r"team-a-trainer \(team-a\) runs on (teamlab-gpu-[12]); team-b-notebook-1 \(team-b\) runs on "
                           r"(teamlab-gpu-[12]); team-b-notebook-2 \(team-b\) runs on (teamlab-gpu-[12])", first.stdout)
        assert placed and placed.group(2) == placed.group(3), first.stdout[-3000:]
        second = run_fqcn(installed, "gpulab.kai_hami.example_team_queues")
        assert second.returncode == 0 and re.search(r"localhost\s*:.*changed=0\s", second.stdout), second.stdout[-3000:]
    finally:
        down = run_fqcn(installed, "gpulab.kai_hami.cleanup", "-e", "cleanup_cluster_name=teamlab")
    assert down.returncode == 0, down.stdout[-4000:]
    assert "Removed sim cluster teamlab" in down.stdout and "Lab 11" not in down.stdout
    assert processes_under(workdir) == [] and not os.path.exists(workdir)
