"""The kind_cluster role, as far as it can run without a Docker engine."""

import os

from conftest import run_playbook

PLAYBOOK = os.path.join(os.path.dirname(__file__), "playbooks", "kind_cluster.yml")


def test_no_docker_engine_fails_first_and_clearly(tmp_path):
    socket = tmp_path / "docker.sock"  # a socket path nothing listens on
    bin_dir = tmp_path / "kind-bin"
    kubeconfig = tmp_path / "kind" / "kubeconfig"
    done = run_playbook(
        dict(kind_cluster_docker_socket=str(socket), kind_cluster_bin_dir=str(bin_dir), kind_cluster_kubeconfig=str(kubeconfig)),
        playbook=PLAYBOOK,
    )
    assert done.returncode != 0
    assert "No Docker engine answers on %s" % socket in done.stdout, done.stdout[-3000:]
    assert "use the sim platform" in done.stdout
    assert not bin_dir.exists() and not kubeconfig.parent.exists()


def test_bad_state_is_refused_by_the_argument_spec(tmp_path):
    done = run_playbook(dict(kind_cluster_state="started"), playbook=PLAYBOOK)
    assert done.returncode != 0
    assert "kind_cluster_state" in done.stdout and "present, absent" in done.stdout
