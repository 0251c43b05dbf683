"""reservation_probe's classifier: one test per verdict, on recorded API objects."""

import copy
import os

import pytest
import yaml

from ansible_collections.gpulab.kai_hami.plugins.module_utils.reservation import VERDICTS, classify

with open(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "reservation.yml")) as handle:
    RECORDED = yaml.safe_load(handle)


def objects(*names):
    return [copy.deepcopy(RECORDED[name]) for name in names]


def test_nvml_unavailable_reads_the_code_from_the_reservation_log():
    pod, failing = objects("shared_pod", "reservation_pod_failing")
    result = classify(pod, RECORDED["binding_error_events"], [failing], {failing["metadata"]["name"]: RECORDED["nvml_log"]})
    assert result["verdict"] == "nvml_unavailable"
    assert result["nvml_error"] == "ERROR_LIBRARY_NOT_FOUND"
    assert any("unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND" in line for line in result["evidence"])
    assert any("failed waiting for GPU reservation pod to allocate" in line for line in result["evidence"])
    assert result["bind_attempts"] == 3
    assert result["reservation_pods"][0]["name"] == "gpu-reservation-5df74f36086ed6c5"


def test_other_nvml_codes_are_reported_as_they_are():
    pod, failing = objects("shared_pod", "reservation_pod_failing")
    log = RECORDED["nvml_log"].replace("ERROR_LIBRARY_NOT_FOUND", "ERROR_DRIVER_NOT_LOADED")
    result = classify(pod, [], [failing], {failing["metadata"]["name"]: log})
    assert (result["verdict"], result["nvml_error"]) == ("nvml_unavailable", "ERROR_DRIVER_NOT_LOADED")


def test_reservation_timeout_without_log_evidence():
    pod, failing = objects("shared_pod", "reservation_pod_failing")
    result = classify(pod, RECORDED["binding_error_events"], [failing], {failing["metadata"]["name"]: None})
    assert result["verdict"] == "reservation_timeout"
    assert result["nvml_error"] is None
    assert "failed waiting for GPU reservation pod to allocate" in result["evidence"][0]


def test_reserved_when_bound_and_reservation_pod_has_gpu():
    pod, reserved, other = objects("bound_shared_pod", "reservation_pod_reserved", "reservation_pod_failing")
    result = classify(pod, [], [reserved, other], {})
    assert result["verdict"] == "reserved"
    # matched by the runai-gpu-group label: the other group's pod is not read
    assert [p["name"] for p in result["reservation_pods"]] == ["gpu-reservation-1a2b3c4d5e6f7081"]
    assert any("GPU-12345678-1234-1234-1234-123456780003" in line for line in result["evidence"])


def test_group_label_filters_out_other_groups_nvml_logs():
    pod, failing = objects("bound_shared_pod", "reservation_pod_failing")
    pod["spec"].pop("nodeName")
    result = classify(pod, [], [failing], {failing["metadata"]["name"]: RECORDED["nvml_log"]})
    assert result["verdict"] == "pending"
    assert result["reservation_pods"] == []


def test_pending_keeps_the_last_event():
    (pod,) = objects("shared_pod")
    result = classify(pod, RECORDED["unschedulable_events"], [], {})
    assert result["verdict"] == "pending"
    assert result["bind_attempts"] == 0
    assert any("didn't have enough resources: GPU memory" in line for line in result["evidence"])


def test_not_shared_for_a_whole_gpu_pod():
    pod, failing = objects("whole_gpu_pod", "reservation_pod_failing")
    result = classify(pod, [], [failing], {failing["metadata"]["name"]: RECORDED["nvml_log"]})
    assert result["verdict"] == "not_shared"


@pytest.mark.parametrize("verdict", VERDICTS)
def test_every_verdict_is_reachable(verdict):
    pod, bound, failing, reserved = objects("shared_pod", "bound_shared_pod", "reservation_pod_failing", "reservation_pod_reserved")
    whole, = objects("whole_gpu_pod")
    logs = {failing["metadata"]["name"]: RECORDED["nvml_log"]}
    cases = {
        "reserved": (bound, [], [reserved], {}),
        "nvml_unavailable": (pod, [], [failing], logs),
        "reservation_timeout": (pod, RECORDED["binding_error_events"], [], {}),
        "pending": (pod, [], [], {}),
        "not_shared": (whole, [], [], {}),
    }
    assert classify(*cases[verdict])["verdict"] == verdict


# Each case below makes one wrong way of classifying give a wrong verdict.

def test_an_unbound_shared_pod_is_not_reserved_even_when_its_reservation_pod_has_a_gpu():
    pod, reserved = objects("bound_shared_pod", "reservation_pod_reserved")
    pod["spec"].pop("nodeName")
    pod["status"]["phase"] = "Pending"
    assert classify(pod, [], [reserved], {})["verdict"] == "pending"


def test_a_bound_shared_pod_without_a_reserved_gpu_is_not_reserved():
    pod, failing = objects("bound_shared_pod", "reservation_pod_failing")
    failing["metadata"]["labels"]["runai-gpu-group"] = pod["metadata"]["labels"]["runai-gpu-group"]
    assert classify(pod, [], [failing], {})["verdict"] == "pending"


def test_a_bound_whole_gpu_pod_is_not_shared_even_beside_a_reserved_gpu():
    whole, reserved = objects("whole_gpu_pod", "reservation_pod_reserved")
    whole["metadata"]["labels"]["runai-gpu-group"] = reserved["metadata"]["labels"]["runai-gpu-group"]
    assert classify(whole, [], [reserved], {})["verdict"] == "not_shared"


def test_a_binding_error_of_another_kind_is_not_a_reservation_timeout():
    (pod,) = objects("shared_pod")
    event = dict(RECORDED["binding_error_events"][1],
                 message="Failed to bind pod default/gpu-sharing-with-isolation to node n: error looking up service account")
    result = classify(pod, [event], [], {})
    assert result["verdict"] == "pending"
    assert result["bind_attempts"] == 3


def test_the_last_nvml_code_is_the_one_reported():
    pod, failing = objects("shared_pod", "reservation_pod_failing")
    log = ("Error while running the app: unable to initialize NVML: ERROR_DRIVER_NOT_LOADED\n"
           + RECORDED["nvml_log"])
    result = classify(pod, [], [failing], {failing["metadata"]["name"]: log})
    assert result["nvml_error"] == "ERROR_LIBRARY_NOT_FOUND"
    assert len([line for line in result["evidence"] if "unable to initialize NVML" in line]) == 2
