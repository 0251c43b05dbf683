"""What decided C1: the node kwok plays, or NVIDIA's device plugin through a real kubelet, and the stand-ins named."""

import base64
import gzip
import json

from ansible_collections.gpulab.kai_hami.plugins.module_utils.provenance import (
    NVML_STANDIN_ANNOTATION, RUNTIME_STANDIN_ANNOTATION, device_plugin_version, helm_chart, node_runtime, provenance)

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


def release_secret(release, revision, status, chart, version):
    """Helm's record of a release revision, encoded as Helm stores it (base64 of gzipped JSON) and the API returns it (base64 again)."""
    record = {"name": release, "version": revision, "chart": {"metadata": {"name": chart, "version": version}}}
    payload = base64.b64encode(base64.b64encode(gzip.compress(json.dumps(record).encode()))).decode()
    return {"type": "helm.sh/release.v1", "data": {"release": payload},
            "metadata": {"name": "sh.helm.release.v1.%s.v%d" % (release, revision),
                         "labels": {"owner": "helm", "name": release, "status": status, "version": str(revision)}}}


def test_the_chart_is_read_from_helms_record_of_the_deployed_revision():
    secrets = [release_secret("kai-scheduler", 1, "superseded", "kai-scheduler", "v0.15.0"),
               release_secret("kai-scheduler", 2, "deployed", "kai-scheduler", "v0.16.0"),
               release_secret("other", 3, "deployed", "other", "v9")]
    assert helm_chart(secrets, "kai-scheduler") == "kai-scheduler-v0.16.0"
    assert helm_chart(secrets[:1], "kai-scheduler") == "" and helm_chart([], "kai-scheduler") == ""
    broken = release_secret("kai-scheduler", 4, "deployed", "kai-scheduler", "v1")
    broken["data"]["release"] = "bm90IGhlbG0="
    assert helm_chart([broken], "kai-scheduler") == ""


def test_kai_by_its_chart_names_chart_and_operator():
    scheduler = {"metadata": {"name": "kai-scheduler-default"},
                 "spec": {"template": {"spec": {"containers": [{"image": "registry/local/kai-scheduler/scheduler:v0.16.0"}]}}}}
    operator = {"metadata": {"name": "kai-operator"},
                "spec": {"template": {"spec": {"containers": [{"image": "registry/local/kai-scheduler/operator:v0.16.0"}]}}}}
    origin = provenance(scheduler, None, None, None, operator, "kai-scheduler-v0.16.0")
    assert origin["kai"] == "KAI v0.16.0 (chart kai-scheduler-v0.16.0, operator v0.16.0)" and origin["kai_version"] == "v0.16.0"
    processes = dict(scheduler, metadata={"annotations": {"gpulab.kai-hami/runs": "x", "gpulab.kai-hami/kai-version": "v0.16.0"}})
    assert provenance(processes, None)["kai"] == "KAI v0.16.0 (its own programs, run as local processes on the sim)"
