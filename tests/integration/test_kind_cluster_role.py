"""The kind_cluster role's refusals before anything is created: no engine, bad input."""

import os
import sys

import pytest

from conftest import run_playbook

PLAYBOOK = os.path.join(os.path.dirname(__file__), "playbooks", "kind_cluster.yml")


@pytest.fixture(scope="module")
def without_podman(tmp_path_factory):
    """An environment whose PATH has every command of the host's but podman (links to them)."""
    farm = tmp_path_factory.mktemp("path-without-podman")
    for folder in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", os.path.dirname(sys.executable)):
        for name in os.listdir(folder) if os.path.isdir(folder) else []:
            if name != "podman" and not (farm / name).exists():
                (farm / name).symlink_to(os.path.join(folder, name))
    env = dict(os.environ)
    env["PATH"] = str(farm)
    return env


def paths(tmp_path):
    return dict(kind_cluster_docker_socket=str(tmp_path / "docker.sock"),  # a socket path nothing listens on
                kind_cluster_bin_dir=str(tmp_path / "kind-bin"), kind_cluster_kubeconfig=str(tmp_path / "kind" / "kubeconfig"),
                kind_cluster_podman_dir=str(tmp_path / "podman"))


def nothing_made(tmp_path):
    return not (tmp_path / "kind-bin").exists() and not (tmp_path / "kind").exists() and not (tmp_path / "podman").exists()


def test_docker_asked_for_and_no_docker_engine_fails_first_and_clearly(tmp_path):
    done = run_playbook(dict(paths(tmp_path), kind_cluster_provider="docker"), playbook=PLAYBOOK)
    assert done.returncode != 0
    assert "No Docker engine answers on %s" % (tmp_path / "docker.sock") in done.stdout, done.stdout[-3000:]
    assert "podman is not installed" not in done.stdout
    assert "use the sim platform" in done.stdout and "Nothing was created" in done.stdout
    assert nothing_made(tmp_path)


def test_auto_without_a_docker_engine_and_without_podman_names_both(tmp_path, without_podman):
    done = run_playbook(dict(paths(tmp_path), kind_cluster_provider="auto"), playbook=PLAYBOOK, env=without_podman)
    assert done.returncode != 0
    assert "No Docker engine answers on %s" % (tmp_path / "docker.sock") in done.stdout, done.stdout[-3000:]
    assert "and podman is not installed" in done.stdout
    assert "make kind-packages" in done.stdout
    assert nothing_made(tmp_path)


def test_podman_asked_for_and_not_installed_fails_clearly(tmp_path, without_podman):
    done = run_playbook(dict(paths(tmp_path), kind_cluster_provider="podman"), playbook=PLAYBOOK, env=without_podman)
    assert done.returncode != 0
    assert "podman is not installed" in done.stdout, done.stdout[-3000:]
    assert "No Docker engine answers" not in done.stdout
    assert nothing_made(tmp_path)


def test_bad_state_is_refused_by_the_argument_spec(tmp_path):
    done = run_playbook(dict(kind_cluster_state="started"), playbook=PLAYBOOK)
    assert done.returncode != 0
    assert "kind_cluster_state" in done.stdout and "present, absent" in done.stdout


def test_bad_provider_and_image_source_are_refused_by_the_argument_spec(tmp_path):
    for name, value, accepted in (("kind_cluster_provider", "containerd", "auto, docker, podman"),
                                  ("kind_cluster_image_source", "mirror", "auto, local, upstream")):
        done = run_playbook(dict(paths(tmp_path), **{name: value}), playbook=PLAYBOOK)
        assert done.returncode != 0
        assert name in done.stdout and accepted in done.stdout, done.stdout[-3000:]
        assert nothing_made(tmp_path)
