"""Every role's templates, rendered with the role's defaults, checked without a cluster.

Kubernetes objects are validated strictly against the Kubernetes 1.35 OpenAPI schemas
(kubernetes-validate); the Helm values files against the facts of the charts they feed (the kind
path cannot install a chart without a Docker engine). The render is one ansible-playbook run, so the templates are
rendered by Ansible itself, as the roles render them.
"""

import copy
import hashlib
import os
import subprocess
import sys

import kubernetes_validate
import pytest
import yaml

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.versions import read as read_versions

UNIT_DIR = os.path.dirname(__file__)
ROOT = os.path.abspath(os.path.join(UNIT_DIR, "..", ".."))
KUBERNETES_VERSION = "1.35.0"
# Objects of these API groups are not Kubernetes API objects (kwokctl's and kind's configs).
NOT_KUBERNETES = ("config.kwok.x-k8s.io/", "kind.x-k8s.io/", "kubelet.config.k8s.io/")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("render")
    playbook = os.path.join(UNIT_DIR, "playbooks", "render.yml")
    done = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), playbook, "-e", "render_dir=%s" % out],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    files = {}
    for role in sorted(os.listdir(out)):
        for name in sorted(os.listdir(out / role)):
            with open(out / role / name) as handle:
                files["%s/%s" % (role, name[:-len(".yaml")] if role == "filters" else name)] = [d for d in yaml.safe_load_all(handle) if d is not None]
    return files


def defaults(role):
    with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml")) as handle:
        return yaml.safe_load(handle)


def kubernetes_objects(rendered):
    return [
        (path, doc) for path, docs in rendered.items() for doc in docs
        if "apiVersion" in doc and not doc["apiVersion"].startswith(NOT_KUBERNETES)
    ]


def test_every_template_was_rendered(rendered):
    templates = {
        "%s/%s" % (role, name[:-3])
        for role in os.listdir(os.path.join(ROOT, "roles"))
        if os.path.isdir(os.path.join(ROOT, "roles", role, "templates"))
        for name in os.listdir(os.path.join(ROOT, "roles", role, "templates"))
        if name.endswith(".yaml.j2")
    }
    assert set(rendered) == templates | {"filters/sim_placeholder"}


def test_kubernetes_objects_are_valid_for_1_35(rendered):
    objects = kubernetes_objects(rendered)
    kinds = sorted({doc["kind"] for path, doc in objects})
    assert kinds == ["ClusterRole", "DaemonSet", "Deployment", "MutatingWebhookConfiguration", "Namespace", "Node", "Pod", "RoleBinding",
                     "RuntimeClass", "Service", "ServiceAccount", "ValidatingWebhookConfiguration"]
    for path, doc in objects:
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail("%s %s/%s: %s" % (path, doc["kind"], doc["metadata"].get("name"), error))


def test_the_validation_rejects_a_broken_object(rendered):
    """The check above can fail: a DaemonSet with a misspelled field is rejected."""
    daemonset = copy.deepcopy(rendered["device_plugin/daemonset.yaml"][0])
    daemonset["spec"]["template"]["spec"]["containerz"] = daemonset["spec"]["template"]["spec"].pop("containers")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, KUBERNETES_VERSION, strict=True)


def test_lab_workloads_are_the_labs_three_pods(rendered):
    lab = defaults("lab11")
    pods = {doc["metadata"]["name"]: doc for doc in rendered["lab11/workloads.yaml"]}
    assert sorted(pods) == sorted([lab["lab11_whole_gpu_pod"], lab["lab11_shared_pod"], lab["lab11_probe_pod"]])
    shared = pods[lab["lab11_shared_pod"]]
    # the annotation must be a string: the API server rejects a number (ansible-core 2.19 renders one)
    assert shared["metadata"]["annotations"]["gpu-memory"] == str(lab["lab11_shared_request_mib"])
    assert all(p["spec"]["schedulerName"] == "kai-scheduler" for p in pods.values())
    assert pods[lab["lab11_probe_pod"]]["metadata"]["labels"]["kai.scheduler/queue"] == lab["lab11_missing_queue"]


def test_kind_config_pins_the_node_image_by_digest(rendered):
    (config,) = rendered["kind_cluster/kind-config.yaml"]
    assert config["apiVersion"] == "kind.x-k8s.io/v1alpha4" and config["kind"] == "Cluster"
    images = [node["image"] for node in config["nodes"]]
    assert images == [read_versions()["KIND_UPSTREAM_NODE_IMAGE"]]
    assert "@sha256:" in images[0] and len(images[0].split("@sha256:")[1]) == 64


def test_nvml_mock_values_pin_the_image_and_profile(rendered):
    (values,) = rendered["nvml_mock/values.yaml"]
    role = defaults("nvml_mock")
    table = read_versions()
    assert values["image"] == {"repository": table["NVML_MOCK_IMAGE"], "tag": table["NVML_MOCK_IMAGE_TAG"], "pullPolicy": "IfNotPresent"}
    assert values["image"]["tag"] != "latest"
    # count "" means the profile's own device list (8 for a100); the chart's schema allows "" or 1-64
    assert values["gpu"] == {"profile": role["nvml_mock_profile"], "count": ""}


def test_kai_values_turn_on_gpu_sharing_and_hamicore(rendered):
    (values,) = rendered["kai_scheduler/values.yaml"]
    assert values == {"global": {"gpuSharing": True}, "binder": {"plugins": {"hamicore": {"enabled": True}}}}


def test_isolator_values_pin_the_image_and_keep_the_vgpu_path(rendered):
    (values,) = rendered["kai_resource_isolator/values.yaml"]
    table = read_versions()
    assert values["image"] == {"tag": table["ISOLATOR_IMAGE_TAG"]} and values["image"]["tag"] != "latest"
    # chart X.Y.Z-chart is released with image vX.Y.Z (its release job writes the tag)
    assert values["image"]["tag"] == "v" + table["ISOLATOR_CHART_VERSION"][: -len("-chart")]
    assert values["monitor"] == {"enabled": True}
    assert values["paths"] == {"containerVgpuMount": "/usr/local/vgpu"}


def test_isolator_probe_pod_triggers_the_webhook_and_the_runtime_class_maps_nvidia(rendered):
    (probe,) = rendered["kai_resource_isolator/probe-pod.yaml"]
    assert set(probe["metadata"]["annotations"]) & {"gpu-fraction", "gpu-memory"}
    (runtime_class,) = rendered["kai_resource_isolator/runtimeclass.yaml"]
    assert (runtime_class["metadata"]["name"], runtime_class["handler"]) == ("nvidia", "runc")


def test_sim_nodes_take_allocatable_and_labels_from_their_own_profile(rendered):
    """render.yml gives the second node a profile of its own: 4 GPUs of the a100 profile."""
    nodes = {doc["metadata"]["name"]: doc for doc in rendered["sim_cluster/gpu-nodes.yaml"]}
    assert sorted(nodes) == ["kai-hami-test-control-plane", "kai-hami-test-gpu-1"]
    for name, count in (("kai-hami-test-control-plane", "8"), ("kai-hami-test-gpu-1", "4")):
        node = nodes[name]
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == count == node["status"]["capacity"]["nvidia.com/gpu"]
        labels = node["metadata"]["labels"]
        assert labels["nvidia.com/gpu.count"] == count
        assert labels["nvidia.com/gpu.memory"] == "40960"
        assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
        assert labels["nvidia.com/gpu.present"] == "true"


def test_the_real_nodes_kubelet_has_no_anonymous_access_and_listens_on_its_own_address(rendered):
    kubelet = rendered["kubelet_node/kubelet.yaml"][0]
    cidr = "10.244.%d.0/24" % (int(hashlib.sha256(b"kai-hami-test").hexdigest()[:8], 16) % 250 + 1)
    assert kubelet["podCIDR"] == cidr
    assert kubelet["address"] == cidr.replace(".0/24", ".1") and kubelet["healthzBindAddress"] == "127.0.0.1"
    assert kubelet["readOnlyPort"] == 0 and kubelet["authentication"]["anonymous"]["enabled"] is False
    assert kubelet["authorization"]["mode"] == "Webhook"
    assert kubelet["authentication"]["x509"]["clientCAFile"] == "/sim/kwok/clusters/kai-hami-test/pki/ca.crt"
    assert (kubelet["port"], kubelet["healthzPort"]) == (24010, 24011)
    # the host conditions given to the template: cgroup v1 and a bounding set without CAP_SYS_RESOURCE
    assert kubelet["failCgroupV1"] is False and kubelet["failSwapOn"] is True
    assert kubelet["containerRuntimeEndpoint"] == "unix:///sim/node/containerd/containerd.sock"


def test_isolator_stand_in_on_a_real_node_is_served_through_its_service(rendered):
    """On a real node the webhook configuration names the stand-in's Service, whose selector picks
    the Deployment's pods on its https port, as the isolator's chart wires its webhook."""
    service, deployment = rendered["sim_isolator/standin.yaml"]
    (configuration,) = rendered["sim_isolator/webhook.yaml"]
    with open(os.path.join(ROOT, "roles", "sim_isolator", "vars", "main.yml")) as handle:
        role = dict(defaults("sim_isolator"), **yaml.safe_load(handle))
    client = configuration["webhooks"][0]["clientConfig"]
    assert "url" not in client and client["service"] == {"name": service["metadata"]["name"], "namespace": service["metadata"]["namespace"],
                                                         "path": "/mutate", "port": service["spec"]["ports"][0]["port"]}
    pod = deployment["spec"]["template"]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    container = pod["spec"]["containers"][0]
    assert service["spec"]["ports"][0]["targetPort"] in [p["name"] for p in container["ports"]]
    # the isolator's own pods stay out of its webhook; the stand-in says what it is
    assert pod["metadata"]["labels"]["kai-resource-isolator.io/webhook"] == "ignore"
    assert deployment["metadata"]["annotations"]["gpulab.kai-hami/runs"].startswith("isolator stand-in")
    assert container["imagePullPolicy"] == "Never" and pod["spec"]["securityContext"]["runAsUser"] == 65532
    assert deployment["metadata"]["name"] == role["sim_isolator_release"] + "-webhook"
    assert "--listen=:%d" % role["sim_isolator_pod_port"] in container["args"]
