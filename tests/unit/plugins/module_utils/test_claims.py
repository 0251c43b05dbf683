"""C9's decision on recorded objects shaped like KAI's, with expected numbers computed here."""

import math

import pytest

from ansible_collections.gpulab.kai_hami.plugins.module_utils.claims import c9_hamicore_numbers

LABEL = "40960"
UUID = "GPU-12345678-1234-1234-1234-123456780001"
DIVISION = ("Resource division result for queue <default-queue>: Queue Priority: <100>, GPU: deserved: <Unlimited>, "
            "requested: <{a}>, maxAllowed: <Unlimited>, allocated: <{a}>, historicalUsage: <0>, fairShare: <{a}> ")


def fraction(request):
    node = int(LABEL) - int(LABEL) % 100
    return math.ceil(request / node * 100) / 100


def limit(request):
    return "%dm" % int(int(LABEL) * fraction(request))


def shared_pod(name, group="g1", phase="Running", configmap=None):
    return {"metadata": {"name": name, "namespace": "default", "labels": {"runai-gpu-group": group} if group else {}},
            "spec": {"containers": [{"name": "c", "env": [
                {"name": "CUDA_DEVICE_MEMORY_LIMIT",
                 "valueFrom": {"configMapKeyRef": {"name": configmap or name + "-x-shared-gpu-0", "key": "CUDA_DEVICE_MEMORY_LIMIT", "optional": True}}}]}]},
            "status": {"phase": phase}}


def configmap(name, memory_limit, devices=UUID):
    return {"metadata": {"name": name}, "data": {"CUDA_DEVICE_MEMORY_LIMIT": memory_limit, "NVIDIA_VISIBLE_DEVICES": devices, "GPU_PORTION": "0.51"}}


def reservation(name="gpu-reservation-1", group="g1", uuid=UUID):
    annotations = {"run.ai/reserve_for_gpu_index": uuid} if uuid else {}
    return {"metadata": {"name": name, "namespace": "kai-resource-reservation", "labels": {"runai-gpu-group": group}, "annotations": annotations}}


def decide(**changes):
    inputs = dict(
        first=shared_pod("a"), second=shared_pod("b"),
        configmaps=[configmap("a-x-shared-gpu-0", limit(20480)), configmap("b-x-shared-gpu-0", limit(20000))],
        reservations=[reservation()],
        lines=[DIVISION.format(a=1.51), DIVISION.format(a=round(1 + fraction(20480) + fraction(20000), 2))],
    )
    inputs.update(changes)
    return c9_hamicore_numbers(inputs["first"], inputs["second"], [20480, 20000], LABEL, inputs["configmaps"],
                               inputs["reservations"], inputs["lines"], "default-queue")


def test_holds_with_the_limits_kai_writes_one_uuid_and_one_reservation_pod():
    result = decide()
    assert result["holds"] is True, result
    assert limit(20480) == "20889m" and limit(20000) == "20070m"
    assert "CUDA_DEVICE_MEMORY_LIMIT=20889m (expected kai_memory_limit(0.51) = 20889m), NVIDIA_VISIBLE_DEVICES=%s" % UUID in result["evidence"][0]
    assert "reserved GPU: %s" % UUID in result["evidence"][2]
    assert result["evidence"][3] == "queue default-queue GPU allocated 2.0 (expected 1 + 0.51 + 0.49 = 2.0)"


@pytest.mark.parametrize("change, why", [
    (dict(first=shared_pod("a", phase="Pending")), "the first pod does not run"),
    (dict(configmaps=[configmap("a-x-shared-gpu-0", "20480m"), configmap("b-x-shared-gpu-0", limit(20000))]), "a limit that is not KAI's arithmetic"),
    (dict(configmaps=[configmap("b-x-shared-gpu-0", limit(20000))]), "no ConfigMap for the first pod"),
    (dict(configmaps=[configmap("a-x-shared-gpu-0", limit(20480), "GPU-other"), configmap("b-x-shared-gpu-0", limit(20000), "GPU-other")]),
     "the devices are not the reserved UUID"),
    (dict(second=shared_pod("b", group="g2")), "the second pod is in another GPU group"),
    (dict(configmaps=[configmap("a-x-shared-gpu-0", limit(20480)), configmap("b-x-shared-gpu-0", limit(20000), "GPU-2")]), "another GPU for the second pod"),
    (dict(reservations=[reservation(), reservation("gpu-reservation-2")]), "a second reservation pod for the group"),
    (dict(reservations=[reservation(uuid=None)]), "no reserved UUID"),
    (dict(lines=[DIVISION.format(a=1.51)]), "no division line with 1 + 0.51 + 0.49"),
    (dict(second=None), "no second pod"),
])
def test_fails_for_each_reason(change, why):
    result = decide(**change)
    assert result["holds"] is False, why
    assert len(result["evidence"]) == 4
