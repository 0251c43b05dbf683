"""The sim_cluster role refuses bad input before it starts anything."""

import os
import re

import pytest

from conftest import cluster_pids, listeners_of, run_playbook


@pytest.mark.parametrize(
    "variables, message",
    [
        (dict(sim_cluster_gpu_profile="h200"), "sim_cluster_gpu_profile must be one of a100, or a dict with name, product, memory_mib, count"),
        (dict(sim_cluster_gpu_profile=dict(name="a100", count=0)), "sim_cluster_gpu_profile.count must be 1 to 64, got 0"),
        (dict(sim_cluster_nodes=[]), "sim_cluster_nodes must be a non-empty list of nodes"),
        (dict(sim_cluster_nodes=["bad-control-plane", "bad-control-plane"]), "sim_cluster_nodes names bad-control-plane more than once"),
        (dict(sim_cluster_nodes=[dict(name="n1", gpu_profile=dict(name="a100", memory_mib=40))]),
         "sim_cluster_nodes[0].gpu_profile.memory_mib must be at least 100, got 40"),
        (dict(sim_cluster_node_shape=dict(cpu="1")), "sim_cluster_node_shape needs cpu, memory and pods"),
        (dict(sim_cluster_name="Bad_Name"), "sim_cluster_name must be a DNS label of at most 32 characters"),
        (dict(sim_cluster_kubeconfig="/nonexistent-dir/kubeconfig"), "directory /nonexistent-dir does not exist"),
        (dict(sim_cluster_state="paused"), "sim_cluster_state"),
    ],
)
def test_bad_input_fails_before_anything_starts(tmp_path, variables, message):
    workdir = str(tmp_path / "sim")
    done = run_playbook(dict(dict(sim_cluster_name="bad", sim_cluster_workdir=workdir,
                                  sim_cluster_kubeconfig=str(tmp_path / "kubeconfig")), **variables))
    assert done.returncode != 0
    assert message in done.stdout, done.stdout[-3000:]
    assert not os.path.exists(workdir), "the role created its work dir before refusing the input"


def test_lifecycle_loopback_only_idempotent_and_nothing_left(tmp_path):
    workdir = str(tmp_path / "sim")
    variables = dict(sim_cluster_name="lifecycle", sim_cluster_workdir=workdir,
                     sim_cluster_kubeconfig=os.path.join(workdir, "kubeconfig"))
    up = run_playbook(variables)
    try:
        assert up.returncode == 0, up.stdout[-3000:]
        pids = cluster_pids(workdir, "lifecycle")
        listening = listeners_of(pids)
        print("listeners of the sim cluster: %s" % listening)
        assert len(listening) >= 5  # etcd (2), kube-apiserver, kube-controller-manager, kwok
        assert all(address.startswith("127.0.0.1:") for address, pid in listening), listening

        again = run_playbook(variables)
        assert again.returncode == 0
        assert re.search(r"localhost\s*:.*changed=0\s", again.stdout), again.stdout[-1500:]
    finally:
        down = run_playbook(variables, dict(sim_cluster_state="absent"))
    assert down.returncode == 0, down.stdout[-3000:]
    assert not any(os.path.exists("/proc/%d" % pid) for pid in pids)
    assert listeners_of(pids) == []
    assert not os.path.exists(workdir)
