"""The sim_cluster role: bad input refused before anything starts; a cluster on loopback only, idempotent,
its nodes surviving kwok's re-initialization, nothing left after absent."""

import json
import os
import re

import time

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
    done = run_playbook(dict(dict(sim_cluster_name="bad", sim_cluster_workdir=workdir, sim_cluster_node_runtime="kwok",
                                  sim_cluster_kubeconfig=str(tmp_path / "kubeconfig")), **variables))
    assert done.returncode != 0
    assert message in done.stdout, done.stdout[-3000:]
    assert not os.path.exists(workdir), "the role created its work dir before refusing the input"


def test_lifecycle_loopback_only_idempotent_and_nothing_left(tmp_path):
    workdir = str(tmp_path / "sim")
    # kwok's Stages as KAI's own e2e suites want them: all of kwok's defaults but pod-complete.
    variables = dict(sim_cluster_name="lifecycle", sim_cluster_workdir=workdir, sim_cluster_node_runtime="kwok",
                     sim_cluster_kubeconfig=os.path.join(workdir, "kubeconfig"), sim_cluster_pods_complete=False)
    up = run_playbook(variables)
    try:
        assert up.returncode == 0, up.stdout[-3000:]
        pids = cluster_pids(workdir, "lifecycle")
        listening = listeners_of(pids)
        print("listeners of the sim cluster: %s" % listening)
        assert len(listening) >= 5  # etcd (2), kube-apiserver, kube-controller-manager, kwok
        assert all(address.startswith("127.0.0.1:") for address, pid in listening), listening
        # every port the cluster listens on is one the role chose and remembered in its work dir
        # (kwokctl's own choice, counting down from 32766, is the same for every work dir: a cluster
        # whose processes died would find them taken by one made meanwhile elsewhere)
        with open(os.path.join(workdir, "ports.json")) as handle:
            chosen = json.load(handle)
        assert {int(address.rsplit(":", 1)[1]) for address, pid in listening} <= set(chosen.values()), (listening, chosen)
        # the agent's files, whose contents restart what runs them when they change, all exist: every
        # module of the agent's directory that the agent's files import
        with open(os.path.join(workdir, "made.json")) as handle:
            agent_files = json.load(handle)["agent_files"]
        assert agent_files and all(os.path.isfile(path) for path in agent_files), agent_files
        files_dir = os.path.dirname(agent_files[0])
        imported = set()
        for path in agent_files:
            with open(path) as handle:
                imported |= {name for name in re.findall(r"^from (\w+) import", handle.read(), re.M)
                             if os.path.isfile(os.path.join(files_dir, name + ".py"))}
        assert imported and {os.path.join(files_dir, name + ".py") for name in imported} <= set(agent_files), (imported, agent_files)

        # A node that was not Ready (as the node controller marks it when kwok-controller was gone
        # longer than the grace period) is initialized again by kwok: it keeps its addresses, or the
        # API server can read no pod log on it.
        node = "lifecycle-control-plane"
        before = node_addresses(variables["sim_cluster_kubeconfig"], node)
        assert before, "node %s has no addresses" % node
        mark_not_ready(variables["sim_cluster_kubeconfig"], node)
        assert wait_ready(variables["sim_cluster_kubeconfig"], node), "kwok did not make node %s Ready again" % node
        assert node_addresses(variables["sim_cluster_kubeconfig"], node) == before

        # Without pod-complete a Job's pod stays Running (on the shared cluster, with kwok's
        # defaults, it is Succeeded at once: test_a_jobs_pod_completes_at_once_with_kwoks_defaults).
        assert job_pod_phase(variables["sim_cluster_kubeconfig"], node) == "Running"

        again = run_playbook(variables)
        assert again.returncode == 0
        assert re.search(r"localhost\s*:.*changed=0\s", again.stdout), again.stdout[-1500:]
    finally:
        down = run_playbook(variables, dict(sim_cluster_state="absent"))
    assert down.returncode == 0, down.stdout[-3000:]
    assert not any(os.path.exists("/proc/%d" % pid) for pid in pids)
    assert listeners_of(pids) == []
    assert not os.path.exists(workdir)


def test_a_jobs_pod_completes_at_once_with_kwoks_defaults(sim_cluster):
    assert job_pod_phase(sim_cluster["sim_cluster_kubeconfig"], sim_cluster["gpu_node"]) == "Succeeded"


def job_pod_phase(kubeconfig, node, settle=5.0, timeout=60):
    """The phase of a Job's pod placed on node, settle seconds after kwok first made it Running or Succeeded."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=kubeconfig)
    name = "job-%d" % int(time.time() * 1000)
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
           "spec": {"backoffLimit": 0, "template": {"spec": {
               "nodeName": node, "restartPolicy": "Never",
               "tolerations": [{"operator": "Exists"}],
               "containers": [{"name": "sleep", "image": "busybox", "command": ["sleep", "3600"]}]}}}}
    client.BatchV1Api(api).create_namespaced_job("default", job)
    pods = client.CoreV1Api(api)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = pods.list_namespaced_pod("default", label_selector="job-name=%s" % name).items
            if found and found[0].status.phase in ("Running", "Succeeded"):
                time.sleep(settle)
                return pods.read_namespaced_pod(found[0].metadata.name, "default").status.phase
            time.sleep(0.5)
        return None
    finally:
        client.BatchV1Api(api).delete_namespaced_job(name, "default", propagation_policy="Background")


def nodes_api(kubeconfig):
    from kubernetes import config, dynamic

    return dynamic.DynamicClient(config.new_client_from_config(config_file=kubeconfig)).resources.get(api_version="v1", kind="Node")


def node_addresses(kubeconfig, name):
    return nodes_api(kubeconfig).get(name=name).to_dict()["status"].get("addresses") or []


def ready_status(kubeconfig, name):
    conditions = nodes_api(kubeconfig).get(name=name).to_dict()["status"].get("conditions") or []
    return [c["status"] for c in conditions if c["type"] == "Ready"]


def mark_not_ready(kubeconfig, name):
    """What the node controller writes when a node's lease was not renewed in time."""
    written = nodes_api(kubeconfig).status.patch(
        name=name, content_type="application/strategic-merge-patch+json",
        body={"status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                                         "message": "Kubelet stopped posting node status."}]}}).to_dict()
    assert [c["status"] for c in written["status"]["conditions"] if c["type"] == "Ready"] == ["Unknown"]


def wait_ready(kubeconfig, name, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready_status(kubeconfig, name) == ["True"]:
            return True
        time.sleep(0.5)
    return False
