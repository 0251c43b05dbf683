"""What KAI's scale suite stands on, on the shared sim cluster: run.ai's kwok-operator scaling a NodePool up and
down, and the gpu-operator stand-in giving each of its nodes the GPUs of the topology (make kai-scale's small gate).

The test's topology gives 3 GPUs a node (KAI's setup gives 8), so the count the nodes show can only come from it.
"""

import os
import subprocess
import sys
import time

import pytest
import yaml

from conftest import sim_process_pids

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, "roles", "local_build", "files", "build.sh")
BIN_DIR = os.environ.get("SIM_BIN_DIR") or subprocess.run([BUILD, "--print-bin-dir"], capture_output=True, text=True, check=True).stdout.strip()
AGENT = os.path.join(ROOT, "roles", "sim_agent", "files", "sim_agent.py")
POOL = "gate-pool"
POOL_LABEL = "run.ai/simulated-gpu-node-pool"
TOPOLOGY = {"nodePools": {"default": {"gpuCount": 3, "gpuMemory": 24576, "gpuProduct": "Gate-GPU"}},
            "nodePoolLabelKey": POOL_LABEL, "migStrategy": "none"}


def resource(kube, api_version, kind):
    return kube.resources.get(api_version=api_version, kind=kind)


def pool_nodes(kube):
    return resource(kube, "v1", "Node").get(label_selector="kwok.x-k8s.io/controller=%s" % POOL).to_dict()["items"]


def wait_for(what, check, timeout=90):
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError("%s: not within %d s" % (what, timeout))
        time.sleep(1)


def ready(node):
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (node.get("status") or {}).get("conditions") or [])


def nodepool(count):
    return {"apiVersion": "kwok.sigs.run-ai.com/v1beta1", "kind": "NodePool", "metadata": {"name": POOL},
            "spec": {"nodeCount": count, "nodeTemplate": {
                "apiVersion": "v1",
                "metadata": {"labels": {POOL_LABEL: "default", "type": "kwok", "gpulab.kai-hami/gate": POOL}},
                "spec": {},
                "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                           "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"}}}}}


@pytest.fixture
def operators(sim_cluster, kube, module, tmp_path):
    """kwok-operator's CRDs and program, the topology ConfigMap and the stand-in; all removed afterwards."""
    kubeconfig = sim_cluster["sim_cluster_kubeconfig"]
    crds = sorted(os.path.join(BIN_DIR, "kwok-operator-crds", name) for name in os.listdir(os.path.join(BIN_DIR, "kwok-operator-crds"))
                  if name.endswith(".yaml"))
    for path in crds:
        with open(path) as handle:
            resource(kube, "apiextensions.k8s.io/v1", "CustomResourceDefinition").server_side_apply(
                body=yaml.safe_load(handle), field_manager="gpulab-test", force_conflicts=True)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-operator"}}
    resource(kube, "v1", "Namespace").server_side_apply(body=namespace, field_manager="gpulab-test")
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "topology", "namespace": "gpu-operator"},
                 "data": {"topology.yml": yaml.safe_dump(TOPOLOGY)}}
    resource(kube, "v1", "ConfigMap").server_side_apply(body=configmap, field_manager="gpulab-test")
    ports = module("sim_ports", path=str(tmp_path / "ports.json"), names=["metrics", "health", "stand-in"])["ports"]
    started = module("sim_process", state_dir=str(tmp_path), processes=[
        {"name": "kwok-operator", "argv": [os.path.join(BIN_DIR, "kwok-operator"), "--kubeconfig=" + kubeconfig,
                                           "--metrics-bind-address=127.0.0.1:%d" % ports["metrics"],
                                           "--health-probe-bind-address=127.0.0.1:%d" % ports["health"]],
         "log_file": str(tmp_path / "kwok-operator.log"), "health_url": "http://127.0.0.1:%d/healthz" % ports["health"]},
        {"name": "gpu-operator-stand-in", "argv": [sys.executable, AGENT, "gpu-operator-stand-in", "--kubeconfig=" + kubeconfig,
                                                   "--health-address=127.0.0.1:%d" % ports["stand-in"]],
         "log_file": str(tmp_path / "stand-in.log"), "health_url": "http://127.0.0.1:%d/healthz" % ports["stand-in"]},
    ])
    assert started.get("failed") is not True, started
    try:
        yield tmp_path
    finally:
        pools = resource(kube, "kwok.sigs.run-ai.com/v1beta1", "NodePool")
        if pools.get().to_dict()["items"]:
            pools.delete(name=POOL)
            # kwok-operator 1.0.1 (the version KAI's go.mod requires) never finishes deleting a NodePool at nodeCount 0:
            # the deletion raises its generation, and its "NodeTemplate has changed" path then updates the status of
            # an object without a resourceVersion, which the API server refuses, on every retry. Nodes it has none.
            if not pool_nodes(kube):
                pools.patch(name=POOL, body={"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
            try:
                wait_for("the NodePool and its nodes gone (the operator removes its finalizer)",
                         lambda: not pools.get().to_dict()["items"] and not pool_nodes(kube))
            except AssertionError as error:
                with open(str(tmp_path / "kwok-operator.log"), errors="replace") as handle:
                    raise AssertionError("%s\nNodePools: %s\nkwok-operator's log ends:\n%s" % (
                        error, pools.get().to_dict()["items"], "".join(handle.readlines()[-30:])))
        module("sim_process", state_dir=str(tmp_path), state="absent", processes=[{"name": "kwok-operator"}, {"name": "gpu-operator-stand-in"}])
        resource(kube, "v1", "Namespace").delete(name="gpu-operator")
        for path in crds:
            with open(path) as handle:
                resource(kube, "apiextensions.k8s.io/v1", "CustomResourceDefinition").delete(name=yaml.safe_load(handle)["metadata"]["name"])


def test_a_nodepool_scaled_up_gets_the_topologys_gpus_and_scaled_down_leaves_none(kube, operators):
    pools = resource(kube, "kwok.sigs.run-ai.com/v1beta1", "NodePool")
    pools.create(body=nodepool(3))
    gpus = TOPOLOGY["nodePools"]["default"]["gpuCount"]

    def scaled_to(count):
        nodes = pool_nodes(kube)
        right = len(nodes) == count and all(ready(n) and n["status"]["capacity"].get("nvidia.com/gpu") == str(gpus) for n in nodes)
        return nodes if right else None

    nodes = wait_for("3 Ready nodes with %d GPUs each" % gpus, lambda: scaled_to(3))
    for node in nodes:
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == str(gpus)
        assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
        labels = node["metadata"]["labels"]
        assert labels["nvidia.com/gpu.count"] == str(gpus) and labels["nvidia.com/gpu.product"] == "Gate-GPU"
        assert labels["nvidia.com/gpu.memory"] == "24576" and labels["run.ai/fake.gpu"] == "true"
    available = pools.get(name=POOL).to_dict()["status"]["conditions"]
    assert any(c["type"] == "Available" and c["status"] == "True" for c in available), available

    pools.patch(name=POOL, body={"spec": {"nodeCount": 1}}, content_type="application/merge-patch+json")
    wait_for("1 node left", lambda: scaled_to(1))
    pools.patch(name=POOL, body={"spec": {"nodeCount": 0}}, content_type="application/merge-patch+json")
    wait_for("no node left", lambda: pool_nodes(kube) == [] or None)
    # the shared cluster's own GPU nodes were not the operator's: none of them got its labels
    assert resource(kube, "v1", "Node").get(label_selector="run.ai/fake.gpu=true").to_dict()["items"] == []
    assert len(sim_process_pids(str(operators))) == 2


def test_the_stand_in_refuses_to_start_without_the_topology(sim_cluster, module, tmp_path):
    result = module("sim_process", name="gpu-operator-stand-in", state_dir=str(tmp_path), wait_timeout=20,
                    argv=[sys.executable, AGENT, "gpu-operator-stand-in", "--kubeconfig=" + sim_cluster["sim_cluster_kubeconfig"],
                          "--namespace=no-gpu-operator", "--health-address=127.0.0.1:9"],
                    log_file=str(tmp_path / "stand-in.log"), health_url="http://127.0.0.1:9/healthz")
    assert result.get("failed") is True
    assert "no ConfigMap no-gpu-operator/topology" in result["msg"], result["msg"]
    assert sim_process_pids(str(tmp_path)) == []
