"""GPU node labels: product sanitising, input checks, desired labels (no cluster)."""

import pytest

from ansible_collections.gpulab.kai_hami.plugins.module_utils.node_labels import (
    COUNT_LABEL,
    MEMORY_LABEL,
    PRODUCT_LABEL,
    NodeLabelError,
    desired_labels,
    label_changes,
    sanitise_product,
    validate_label_input,
)


def node(name="gpu-0", labels=None, gpus="8"):
    status = {"allocatable": {"nvidia.com/gpu": gpus}} if gpus is not None else {}
    return {"metadata": {"name": name, "labels": labels or {}}, "status": status}


def params(**kwargs):
    base = dict(state="present", nodes=None, memory_mib=40960, from_existing=False, product=None, count=None, min_nodes=1)
    base.update(kwargs)
    return base


@pytest.mark.parametrize(
    "product, expected",
    [
        ("NVIDIA A100-SXM4-40GB", "NVIDIA-A100-SXM4-40GB"),
        ("  Tesla   T4 ", "Tesla-T4"),
        ("NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-80GB-HBM3"),
        ("NVIDIA GeForce RTX 4090 (24GB)", "NVIDIA-GeForce-RTX-4090-24GB"),
    ],
)
def test_sanitise_product(product, expected):
    assert sanitise_product(product) == expected


@pytest.mark.parametrize("product, message", [("  (!) ", "empty label value"), ("A" * 64, "at most 63")])
def test_sanitise_product_refuses(product, message):
    with pytest.raises(NodeLabelError, match=message):
        sanitise_product(product)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(memory_mib=40), "memory_mib must be per-GPU memory in MiB, at least 100; 40 looks like GiB"),
        (dict(memory_mib=None), "memory_mib is required with state=present unless from_existing=true"),
        (dict(count=0), "count must be a positive number"),
        (dict(count=-2), "count must be a positive number"),
        (dict(nodes=[]), "nodes must list at least one node"),
        (dict(product="***"), "product '\\*\\*\\*' sanitises to an empty label value"),
        (dict(min_nodes=-1), "min_nodes must be >= 0"),
    ],
)
def test_bad_input(overrides, message):
    with pytest.raises(NodeLabelError, match=message):
        validate_label_input(params(**overrides))


def test_memory_not_required_for_absent_or_from_existing():
    validate_label_input(params(memory_mib=None, state="absent"))
    validate_label_input(params(memory_mib=None, from_existing=True))


def test_desired_labels_count_from_allocatable():
    labels, warnings = desired_labels(node(gpus="8"), params(product="NVIDIA A100-SXM4-40GB"))
    assert labels == {MEMORY_LABEL: "40960", PRODUCT_LABEL: "NVIDIA-A100-SXM4-40GB", COUNT_LABEL: "8"}
    assert warnings == []


def test_explicit_count_differing_from_allocatable_warns():
    labels, warnings = desired_labels(node(gpus="4"), params(count=8))
    assert labels[COUNT_LABEL] == "8"
    assert len(warnings) == 1 and "count 8 differs from its allocatable nvidia.com/gpu (4)" in warnings[0]


def test_no_allocatable_and_no_count_fails_naming_node():
    with pytest.raises(NodeLabelError, match="node gpu-9 has no allocatable nvidia.com/gpu"):
        desired_labels(node("gpu-9", gpus=None), params())


def test_from_existing_keeps_gfd_value_and_falls_back():
    kept, warnings = desired_labels(node(labels={MEMORY_LABEL: "81559"}), params(from_existing=True))
    assert kept[MEMORY_LABEL] == "81559"
    fallback, warnings = desired_labels(node(), params(from_existing=True, memory_mib=40960))
    assert fallback[MEMORY_LABEL] == "40960"
    with pytest.raises(NodeLabelError, match="has no nvidia.com/gpu.memory label to keep"):
        desired_labels(node(), params(from_existing=True, memory_mib=None))


def test_absent_removes_all_three():
    labels, warnings = desired_labels(node(labels={MEMORY_LABEL: "40960"}), params(state="absent"))
    assert warnings == []
    assert labels == {MEMORY_LABEL: None, PRODUCT_LABEL: None, COUNT_LABEL: None}
    assert label_changes(node(labels={MEMORY_LABEL: "40960"}), labels) == {MEMORY_LABEL: ["40960", None]}


def test_label_changes_only_differences():
    current = node(labels={MEMORY_LABEL: "40960", COUNT_LABEL: "4"})
    changes = label_changes(current, {MEMORY_LABEL: "40960", COUNT_LABEL: "8"})
    assert changes == {COUNT_LABEL: ["4", "8"]}


@pytest.mark.parametrize("memory, refused", [(100, False), (99, True), (40960, False)])
def test_memory_mib_boundary_is_100(memory, refused):
    if refused:
        with pytest.raises(NodeLabelError, match="at least 100"):
            validate_label_input(params(nodes=["n"], memory_mib=memory))
    else:
        validate_label_input(params(nodes=["n"], memory_mib=memory))
