"""gpu_node_label against real Node objects kept alive by kwok."""

import time

MEMORY, PRODUCT, COUNT = "nvidia.com/gpu.memory", "nvidia.com/gpu.product", "nvidia.com/gpu.count"
EXTRA_SELECTOR = "gpulab.kai-hami/sim-node=extra"


def nodes_api(kube):
    return kube.resources.get(api_version="v1", kind="Node")


def labels_of(kube, name):
    return nodes_api(kube).get(name=name).to_dict()["metadata"].get("labels") or {}


def test_lab_node_labels_then_noop(module, kube, sim_cluster):
    node = sim_cluster["gpu_node"]
    allocatable = nodes_api(kube).get(name=node).to_dict()["status"]["allocatable"]["nvidia.com/gpu"]
    try:
        result = module("gpu_node_label", nodes=[node], memory_mib=40960, product="NVIDIA A100-SXM4-40GB")
        assert result["changed"] is True and result["matched"] == 1
        labels = labels_of(kube, node)
        assert labels[MEMORY] == "40960"
        assert labels[PRODUCT] == "NVIDIA-A100-SXM4-40GB"
        assert labels[COUNT] == allocatable  # count defaults to the node's allocatable nvidia.com/gpu
        assert labels["nvidia.com/gpu.present"] == "true"  # other labels untouched

        again = module("gpu_node_label", nodes=[node], memory_mib=40960, product="NVIDIA A100-SXM4-40GB")
        assert again["changed"] is False
    finally:
        module("gpu_node_label", nodes=[node], state="absent")
    assert not {MEMORY, PRODUCT, COUNT} & set(labels_of(kube, node))


def test_check_mode_changes_nothing_and_diff_shows_labels(module, kube, sim_cluster):
    node = sim_cluster["gpu_node"]
    try:
        module("gpu_node_label", nodes=[node], memory_mib=40960)
        checked = module("gpu_node_label", check=True, diff=True, nodes=[node], memory_mib=81920)
        assert checked["changed"] is True
        assert checked["nodes"][0]["changes"] == {MEMORY: ["40960", "81920"]}
        assert checked["nodes"][0]["labels"][MEMORY] == "81920"  # the server's dry-run answer
        (diff,) = checked["diff"]
        assert diff["before"]["labels"][MEMORY] == "40960" and diff["after"]["labels"][MEMORY] == "81920"
        assert labels_of(kube, node)[MEMORY] == "40960"
    finally:
        module("gpu_node_label", nodes=[node], state="absent")


def test_many_nodes_by_selector_in_one_task(module, kube, sim_cluster):
    expected = sim_cluster["extra_nodes"]
    try:
        start = time.monotonic()
        result = module("gpu_node_label", label_selector=EXTRA_SELECTOR, memory_mib=40960, count=8, min_nodes=expected)
        elapsed = time.monotonic() - start
        print("labelled %d nodes in one task: %.1f s" % (result["matched"], elapsed))
        assert result["changed"] is True and result["matched"] == expected
        labelled = nodes_api(kube).get(label_selector="%s,%s=40960,%s=8" % (EXTRA_SELECTOR, MEMORY, COUNT)).to_dict()["items"]
        assert len(labelled) == expected
        again = module("gpu_node_label", label_selector=EXTRA_SELECTOR, memory_mib=40960, count=8)
        assert again["changed"] is False and not any(n["changed"] for n in again["nodes"])
    finally:
        module("gpu_node_label", label_selector=EXTRA_SELECTOR, state="absent")
    assert nodes_api(kube).get(label_selector="%s,%s" % (EXTRA_SELECTOR, MEMORY)).to_dict()["items"] == []


def test_selector_matching_nothing_fails_clearly(module, kube):
    result = module("gpu_node_label", label_selector="nvidia.com/gpu.product=NO-SUCH-GPU", memory_mib=40960)
    assert result.get("failed") is True
    assert "matched 0 node(s), fewer than min_nodes=1" in result["msg"]


def test_missing_node_fails_naming_it(module):
    result = module("gpu_node_label", nodes=["no-such-node"], memory_mib=40960)
    assert result.get("failed") is True and "node(s) not found: no-such-node" in result["msg"]
