"""GPU profiles and node lists (the gpu_profile and gpu_nodes filters) and the sim's placeholder Deployments."""

import os
import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.kai_hami.plugins.filter.gpu import gpulab_gpu_nodes, gpulab_gpu_profile, gpulab_mock_gpu_uuids
from ansible_collections.gpulab.kai_hami.plugins.filter.sim import sim_placeholder

A100 = {"name": "a100", "product": "NVIDIA A100-SXM4-40GB", "memory_mib": 40960, "count": 8}


def test_a_known_name_gives_the_whole_profile_and_the_labels_gpu_feature_discovery_writes():
    profile = gpulab_gpu_profile("a100")
    assert {key: profile[key] for key in A100} == A100
    assert profile["labels"] == {"nvidia.com/gpu.memory": "40960", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
                                 "nvidia.com/gpu.count": "8"}


def test_a_dict_named_after_a_known_profile_overrides_its_fields():
    profile = gpulab_gpu_profile({"name": "a100", "count": "4", "memory_mib": 81920, "product": "NVIDIA A100-SXM4-80GB"})
    assert (profile["count"], profile["memory_mib"]) == (4, 81920)
    assert profile["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
    assert profile["labels"]["nvidia.com/gpu.count"] == "4"


def test_a_dict_of_its_own_gives_every_field():
    mine = {"name": "mine", "product": "Fake GPU", "memory_mib": 1000, "count": 2}
    assert {key: gpulab_gpu_profile(mine)[key] for key in mine} == mine


@pytest.mark.parametrize("value, message", [
    ("h100", "lab_gpu must be one of a100, or a dict with name, product, memory_mib, count (got 'h100')"),
    ({"name": "mine", "count": 2}, "lab_gpu needs lab_gpu.product, lab_gpu.memory_mib"),
    ({"name": "a100", "count": 0}, "lab_gpu.count must be 1 to 64, got 0"),
    ({"name": "a100", "count": 65}, "lab_gpu.count must be 1 to 64, got 65"),
    ({"name": "a100", "memory_mib": 40}, "lab_gpu.memory_mib must be at least 100, got 40"),
    ({"name": "a100", "memory_mib": "40GB"}, "lab_gpu.memory_mib must be a whole number, got '40GB'"),
    ({"name": "a100", "count": True}, "lab_gpu.count must be a whole number, got True"),
    ({"name": "a100", "colour": "green"}, "lab_gpu has unknown fields colour; it takes name, product, memory_mib, count"),
    ({"name": "a100", "product": "  "}, "lab_gpu.product: product '  ' sanitises to an empty label value"),
    (8, "lab_gpu must be a profile name (a100) or a dict"),
])
def test_a_profile_that_cannot_be_used_is_refused_naming_the_field(value, message):
    with pytest.raises(AnsibleFilterError) as error:
        gpulab_gpu_profile(value, "lab_gpu")
    assert message in str(error.value)


def test_nodes_take_the_default_profile_unless_they_name_their_own():
    nodes = gpulab_gpu_nodes(["lab-control-plane", {"name": "lab-gpu-1", "gpu_profile": {"name": "a100", "count": 2}}], "a100")
    assert [n["name"] for n in nodes] == ["lab-control-plane", "lab-gpu-1"]
    assert [n["gpu_profile"]["count"] for n in nodes] == [8, 2]


@pytest.mark.parametrize("nodes, message", [
    ([], "lab_nodes must be a non-empty list of nodes"),
    ("lab-control-plane", "lab_nodes must be a non-empty list of nodes"),
    ([{"name": "Lab"}], "lab_nodes[0].name must be a node name"),
    ([{"name": "a"}, {"name": "b"}, {"name": "a"}], "lab_nodes names a more than once"),
    ([{"name": "a", "gpus": 2}], "lab_nodes[0] has unknown fields gpus; it takes name, gpu_profile"),
    ([{"name": "a"}, {"name": "b", "gpu_profile": {"name": "a100", "count": 0}}], "lab_nodes[1].gpu_profile.count must be 1 to 64, got 0"),
])
def test_a_node_list_that_cannot_be_used_is_refused_naming_the_entry(nodes, message):
    with pytest.raises(AnsibleFilterError) as error:
        gpulab_gpu_nodes(nodes, "a100", "lab_nodes")
    assert message in str(error.value)


PLACEHOLDER = dict(name="binder", namespace="kai-scheduler", container="binder", process="binder", node="lab-control-plane",
                   log_file="/sim/kai/logs/binder.log", health_url="http://127.0.0.1:24001/metrics",
                   command=["/sim-bin/kai-binder", "--qps=20"], stand_in="KAI v0.16.0 kai-binder", kai_version="v0.16.0")


def test_a_placeholder_stands_for_its_process_on_its_node():
    deployment = sim_placeholder(PLACEHOLDER)
    pod = deployment["spec"]["template"]
    assert deployment["metadata"]["labels"]["gpulab.kai-hami/stands-for"] == pod["metadata"]["labels"]["gpulab.kai-hami/stands-for"] == "binder"
    assert pod["spec"]["nodeName"] == "lab-control-plane"
    assert pod["metadata"]["annotations"]["gpulab.kai-hami/log-file"] == PLACEHOLDER["log_file"]
    assert pod["metadata"]["annotations"]["gpulab.kai-hami/command"] == "/sim-bin/kai-binder --qps=20"
    assert deployment["metadata"]["annotations"]["gpulab.kai-hami/kai-version"] == "v0.16.0"
    assert PLACEHOLDER["health_url"] in deployment["metadata"]["annotations"]["gpulab.kai-hami/placeholder"]


def test_a_placeholder_without_its_process_is_refused():
    with pytest.raises(AnsibleFilterError) as error:
        sim_placeholder(dict(PLACEHOLDER, process="", node=None))
    assert "sim_placeholder needs process, node" in str(error.value)


def test_the_default_profile_is_named_in_its_errors():
    with pytest.raises(AnsibleFilterError) as error:
        gpulab_gpu_nodes(["lab-control-plane"], {"name": "a100", "count": 0}, "lab_nodes", "lab_gpu_profile")
    assert "lab_gpu_profile.count must be 1 to 64, got 0" in str(error.value)


def test_mock_gpu_uuids_are_the_nvml_stand_ins_own_defaults():
    """The roles' UUIDs and the C library's default (its snprintf format) name the same GPUs."""
    source = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "nvml_mock", "files", "nvml_stand_in.c")
    with open(source) as handle:
        fmt = re.search(r'snprintf\(uuids\[i\], sizeof uuids\[0\], "([^"]+)", i\)', handle.read()).group(1)
    assert gpulab_mock_gpu_uuids(3) == [fmt.replace("%02d", "%02d" % i) for i in range(3)]
    assert gpulab_mock_gpu_uuids("12")[11].endswith("11") and len(set(gpulab_mock_gpu_uuids(64))) == 64
    for bad in (0, 65, "x", True):
        with pytest.raises(AnsibleFilterError, match="count must be"):
            gpulab_mock_gpu_uuids(bad)


def test_first_node_name_is_the_cluster_name_and_control_plane():
    from ansible_collections.gpulab.kai_hami.plugins.filter.gpu import FilterModule

    name = FilterModule().filters()["first_node_name"]
    assert name("fairlab") == "fairlab-control-plane"
    assert name("kai-hami-test") == "kai-hami-test-control-plane"


def test_no_role_playbook_or_scenario_types_the_first_node_rule_again(typed_again):
    """Outside comments, '-control-plane' is named by the first_node_name filter only."""
    typed = typed_again(r"~ *'-control-plane'|\}\}-control-plane")
    assert typed == [], "\n".join(typed)
