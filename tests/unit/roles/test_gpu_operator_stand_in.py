"""The gpu-operator stand-in, rule by rule (its docstring numbers them), against fake-gpu-operator 0.0.73's KWOK path.

The tests write the expected patches out from the rules; the code under test does not produce them.
"""

import importlib.util
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "roles", "sim_agent", "files"))  # the agent's modules import each other
_spec = importlib.util.spec_from_file_location("gpu_operator_stand_in", os.path.join(ROOT, "roles", "sim_agent", "files", "gpu_operator_stand_in.py"))
standin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(standin)

# the topology KAI v0.16.0's scale setup gives the operator (its chart's defaults, gpuCount set to 8)
TOPOLOGY = """
nodePools:
  default:
    gpuCount: 8
    gpuMemory: 11441
    gpuProduct: Tesla-K80
  small:
    gpuCount: 2
    gpuMemory: 40960
    gpuProduct: NVIDIA-A100-SXM4-40GB
    otherDevices:
      - {name: rdma/ib, count: 4}
nodePoolLabelKey: run.ai/simulated-gpu-node-pool
migStrategy: mixed
"""


def node(name, pool="default", kwok=True, uid=None, capacity=None, labels=None):
    meta = {"name": name, "uid": uid or name, "labels": dict(labels or {}), "annotations": {}}
    if pool is not None:
        meta["labels"]["run.ai/simulated-gpu-node-pool"] = pool
    if kwok:
        meta["annotations"]["kwok.x-k8s.io/node"] = "fake"
    return {"metadata": meta, "status": {"capacity": dict(capacity or {"cpu": "32", "pods": "110"})}}


class Recorder(object):
    """The node API as a list of the patches asked for."""

    def __init__(self):
        self.patches = []

    def patch(self, name, body, status):
        self.patches.append((name, "status" if status else "node", body))


def test_rule_1_reads_the_flat_topology_and_refuses_another_format():
    topology = standin.read_topology(TOPOLOGY)
    assert topology["label_key"] == "run.ai/simulated-gpu-node-pool" and topology["mig_strategy"] == "mixed"
    assert topology["pools"]["default"] == {"gpu_count": 8, "gpu_memory": 11441, "gpu_product": "Tesla-K80", "other_devices": []}
    assert topology["pools"]["small"]["other_devices"] == [("rdma/ib", 4)]
    with pytest.raises(standin.TopologyError, match="flat format"):
        standin.read_topology("nodePools: {default: {gpu: {backend: fake}}}\nnodePoolLabelKey: k\n")
    with pytest.raises(standin.TopologyError, match="nodePools"):
        standin.read_topology("nodePoolLabelKey: k\n")
    with pytest.raises(standin.TopologyError, match="nodePoolLabelKey"):
        standin.read_topology("nodePools: {default: {gpuCount: 8}}\n")
    with pytest.raises(standin.TopologyError, match="gpuCount"):
        standin.read_topology("nodePools: {default: {gpuCount: eight}}\nnodePoolLabelKey: k\n")


def test_rule_2_only_a_node_kwok_plays_with_the_pool_label_of_a_known_pool_is_the_operators():
    topology = standin.read_topology(TOPOLOGY)
    assert standin.pool_of(node("a"), topology) is topology["pools"]["default"]
    assert standin.pool_of(node("b", pool="small"), topology) is topology["pools"]["small"]
    assert standin.pool_of(node("c", pool=None), topology) is None          # no pool label
    assert standin.pool_of(node("d", kwok=False), topology) is None         # a node kwok does not play
    assert standin.pool_of(node("e", pool="no-such-pool"), topology) is None  # a pool the topology does not name


def test_rules_3_and_4_a_node_of_a_pool_gets_its_gpus_in_capacity_and_allocatable_and_the_operators_labels():
    topology = standin.read_topology(TOPOLOGY)
    api = Recorder()
    assert standin.apply_rules(api, node("n1", pool="small"), topology, set())
    assert api.patches == [
        ("n1", "status", {"status": {"capacity": {"nvidia.com/gpu": "2", "rdma/ib": "4"},
                                     "allocatable": {"nvidia.com/gpu": "2", "rdma/ib": "4"}}}),
        ("n1", "node", {"metadata": {"labels": {
            "nvidia.com/gpu.memory": "40960", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/gpu.count": "2", "nvidia.com/gpu.present": "true", "run.ai/fake.gpu": "true",
            "nvidia.com/gpu.deploy.dcgm-exporter": "true"}}}),
    ]


def test_a_node_is_given_its_gpus_once_and_a_node_that_shows_them_already_is_not_patched_again():
    topology = standin.read_topology(TOPOLOGY)
    api, seen = Recorder(), set()
    assert standin.apply_rules(api, node("n1"), topology, seen)
    assert not standin.apply_rules(api, node("n1"), topology, seen)  # the same node again (a watch event)
    assert len(api.patches) == 2
    # a restarted stand-in: the node already shows the GPUs and the labels
    shown = node("n2", capacity={"nvidia.com/gpu": "8"})
    shown["status"]["allocatable"] = {"nvidia.com/gpu": "8"}
    shown["metadata"]["labels"].update(standin.label_patch(topology["pools"]["default"], topology)["metadata"]["labels"])
    again = Recorder()
    assert standin.apply_rules(again, shown, topology, set()) and again.patches == []
    # the same name, a new node (deleted and created again): patched again
    assert standin.apply_rules(api, node("n1", uid="n1-second"), topology, seen)
    assert len(api.patches) == 4


def test_nodes_outside_the_rules_get_nothing():
    topology = standin.read_topology(TOPOLOGY)
    api = Recorder()
    for other in (node("c", pool=None), node("d", kwok=False), node("e", pool="no-such-pool")):
        assert not standin.apply_rules(api, other, topology, set())
    assert api.patches == []


def test_rule_1_without_the_configmap_the_stand_in_exits_as_the_operator_does():
    class NoTopology(object):
        def topology_text(self, namespace):
            raise standin.TopologyError("no ConfigMap %s/topology" % namespace)

    args = type("Args", (), {"namespace": "gpu-operator", "health_address": "127.0.0.1:0"})()
    with pytest.raises(standin.TopologyError, match="no ConfigMap gpu-operator/topology"):
        standin.gpu_operator_stand_in(args, nodes=NoTopology())
