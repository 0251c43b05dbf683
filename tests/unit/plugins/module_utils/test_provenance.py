"""What decided C1: the node kwok plays, or NVIDIA's device plugin through a real kubelet, and the stand-ins named."""

from ansible_collections.gpulab.kai_hami.plugins.module_utils.provenance import (
    NVML_STANDIN_ANNOTATION, RUNTIME_STANDIN_ANNOTATION, device_plugin_version, node_runtime, provenance)

REAL = {"metadata": {"name": "n", "annotations": {NVML_STANDIN_ANNOTATION: "nvml-mock stand-in X"}},
        "status": {"nodeInfo": {"kubeletVersion": "v1.35.8", "containerRuntimeVersion": "containerd://2.4.2"}}}
KWOK = {"metadata": {"name": "n"}, "status": {"nodeInfo": {"kubeletVersion": "fake", "containerRuntimeVersion": ""}}}
PLUGIN = {"spec": {"template": {"spec": {"containers": [{"image": "sim.gpulab.kai-hami/k8s-device-plugin:v0.18.2"}]}}}}
OTHER = {"spec": {"template": {"spec": {"containers": [{"image": "registry.k8s.io/kube-proxy:v1.35.8"}]}}}}


def test_a_real_node_is_named_by_its_kubelet_and_runtime():
    assert node_runtime(REAL) == (True, "kubelet v1.35.8, containerd 2.4.2")
    assert node_runtime(KWOK)[0] is False and node_runtime(None)[0] is False


def test_the_device_plugin_is_found_by_its_image():
    assert device_plugin_version([OTHER, PLUGIN]) == "v0.18.2"
    assert device_plugin_version([OTHER]) == ""


def test_on_a_real_node_c1_is_the_device_plugins_and_the_nvml_mock_stand_in_is_named():
    origin = provenance(None, None, REAL, [OTHER, PLUGIN])
    assert origin["gpus"] == ("NVIDIA's device plugin v0.18.2 through the kubelet's device manager (kubelet v1.35.8, containerd 2.4.2)"
                              " on nvml-mock stand-in X")
    assert origin["node"] == "kubelet v1.35.8, containerd 2.4.2"
    assert origin["stand_ins"] == ["nvml-mock stand-in X"]


def test_on_a_node_kwok_plays_nothing_advertises_the_gpus():
    origin = provenance(None, None, KWOK, [PLUGIN])
    assert "kwok" in origin["gpus"] and "device plugin" not in origin["gpus"]
    assert origin["stand_ins"] == []


def test_the_nvidia_runtime_stand_in_of_a_real_node_is_named_between_the_gpus_and_the_isolator():
    node = {"metadata": {"name": "n", "annotations": {NVML_STANDIN_ANNOTATION: "nvml-mock stand-in X", RUNTIME_STANDIN_ANNOTATION: "runtime stand-in Y"}},
            "status": REAL["status"]}
    isolator = {"metadata": {"annotations": {"gpulab.kai-hami/runs": "isolator stand-in Z"}}}
    assert provenance(None, isolator, node, [PLUGIN])["stand_ins"] == ["nvml-mock stand-in X", "runtime stand-in Y", "isolator stand-in Z"]
    assert provenance(None, isolator, REAL, [PLUGIN])["stand_ins"] == ["nvml-mock stand-in X", "isolator stand-in Z"]
