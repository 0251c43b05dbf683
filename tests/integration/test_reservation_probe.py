"""reservation_probe on real objects shaped like each verdict.

KAI is not running in this suite: the objects KAI would create (BindingError events,
reservation pods with and without the GPU annotation) are created by the test through the API, so
the module reads them the way it reads KAI's. The real ones come with the KAI sim.
"""

import time

import pytest
from kubernetes.dynamic.exceptions import NotFoundError

NAMESPACE = "probe-test"
RESERVATION_NS = "kai-resource-reservation"
GPU_UUID = "GPU-12345678-1234-1234-1234-123456780003"
TIMEOUT_MESSAGE = (
    "Failed to bind pod {ns}/{name} to node kai-hami-test-control-plane: failed to reserve GPUs for pod "
    "<{ns}/{name}> in gpu group <g-1>: failed waiting for GPU reservation pod to allocate: "
    "kai-resource-reservation/gpu-reservation-fc9757493a36c25e"
)


def pod(name, namespace, annotations=None, labels=None, node=None):
    spec = {"schedulerName": "kai-scheduler", "containers": [{"name": "app", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}, "labels": labels or {}},
        "spec": spec,
    }


@pytest.fixture(scope="module")
def namespaces(kube):
    ns_api = kube.resources.get(api_version="v1", kind="Namespace")
    sa_api = kube.resources.get(api_version="v1", kind="ServiceAccount")
    for name in (NAMESPACE, RESERVATION_NS):
        ns_api.create(body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    deadline = time.monotonic() + 60
    for name in (NAMESPACE, RESERVATION_NS):  # pods need the default ServiceAccount
        while True:
            try:
                sa_api.get(name="default", namespace=name)
                break
            except NotFoundError:
                assert time.monotonic() < deadline, "no default ServiceAccount in %s" % name
                time.sleep(0.5)
    yield
    for name in (NAMESPACE, RESERVATION_NS):
        ns_api.delete(name=name)


@pytest.fixture
def pods(kube, namespaces):
    api = kube.resources.get(api_version="v1", kind="Pod")
    made = []

    def make(body):
        made.append((body["metadata"]["namespace"], body["metadata"]["name"]))
        return api.create(body=body, namespace=body["metadata"]["namespace"])

    yield make
    for namespace, name in made:
        api.delete(name=name, namespace=namespace, body={"gracePeriodSeconds": 0})


def binding_error(kube, name):
    kube.resources.get(api_version="v1", kind="Event").create(
        namespace=NAMESPACE,
        body={
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": name + ".", "namespace": NAMESPACE},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": NAMESPACE},
            "reason": "BindingError",
            "type": "Warning",
            "count": 2,
            "message": TIMEOUT_MESSAGE.format(ns=NAMESPACE, name=name),
            "source": {"component": "binder"},
        },
    )


def test_pending_then_reservation_timeout(module, kube, pods):
    pods(pod("shared-a", NAMESPACE, annotations={"gpu-memory": "20480"}))
    result = module("reservation_probe", name="shared-a", namespace=NAMESPACE)
    assert result["changed"] is False
    assert result["verdict"] == "pending" and result["bind_attempts"] == 0

    binding_error(kube, "shared-a")
    result = module("reservation_probe", name="shared-a", namespace=NAMESPACE, expect="reservation_timeout", wait_timeout=30, wait_sleep=1)
    assert result["verdict"] == "reservation_timeout"
    assert result["bind_attempts"] == 2
    assert "failed waiting for GPU reservation pod to allocate" in result["evidence"][0]
    assert result["nvml_error"] is None


def test_reserved_when_bound_and_annotated(module, pods, sim_cluster):
    node = sim_cluster["gpu_node"]
    pods(pod("shared-b", NAMESPACE, annotations={"gpu-memory": "20480"}, labels={"runai-gpu-group": "g-b"}, node=node))
    pods(pod("gpu-reservation-aaaabbbbccccdddd", RESERVATION_NS, labels={"app": "kai-resource-reservation", "runai-gpu-group": "g-b"},
             annotations={"run.ai/reserve_for_gpu_index": GPU_UUID}, node=node))
    pods(pod("gpu-reservation-0000111122223333", RESERVATION_NS, labels={"app": "kai-resource-reservation", "runai-gpu-group": "g-other"}, node=node))
    result = module("reservation_probe", name="shared-b", namespace=NAMESPACE)
    assert result["verdict"] == "reserved"
    assert [p["name"] for p in result["reservation_pods"]] == ["gpu-reservation-aaaabbbbccccdddd"]
    assert result["reservation_pods"][0]["gpu"] == GPU_UUID
    assert any(GPU_UUID in line for line in result["evidence"])


def test_not_shared(module, pods, sim_cluster):
    pods(pod("whole", NAMESPACE, node=sim_cluster["gpu_node"]))
    assert module("reservation_probe", name="whole", namespace=NAMESPACE)["verdict"] == "not_shared"


def test_expect_times_out_with_last_verdict_and_evidence(module, pods):
    pods(pod("shared-c", NAMESPACE, annotations={"gpu-fraction": "0.5"}))
    start = time.monotonic()
    result = module("reservation_probe", name="shared-c", namespace=NAMESPACE, expect="reserved", wait_timeout=3, wait_sleep=1)
    assert time.monotonic() - start < 60
    assert result.get("failed") is True
    assert result["msg"].startswith(
        "wait for verdict 'reserved' of Pod %s/shared-c: timed out after 3 s: last verdict 'pending'; evidence: " % NAMESPACE)
    assert result["verdict"] == "pending"
    assert result["kube_error"]["reason"] == "timed out after 3 s" and result["kube_error"]["name"] == "shared-c"


def test_missing_pod_fails_naming_it(module, namespaces):
    result = module("reservation_probe", name="no-such-pod", namespace=NAMESPACE)
    assert result.get("failed") is True
    assert result["msg"] == "pod %s/no-such-pod not found" % NAMESPACE
