"""The lab11 filters: one per claim, documented with the function's own arguments; and
lab11_provenance (which programs decided the claims, from recorded Deployments)."""

import inspect
import os

import pytest
import yaml

from ansible_collections.gpulab.kai_hami.plugins.filter.lab11 import FilterModule, lab11_provenance

FILTER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")
CLAIM_FILTERS = ["lab11_c1_mock_gpus", "lab11_c2_kai_runs", "lab11_c3_queues_gate", "lab11_c4_isolator_webhook", "lab11_c5_base_scheduling",
                 "lab11_c6_gpu_memory_accounting", "lab11_c7_hami_core_injection", "lab11_c8_reservation_boundary", "lab11_c9_hamicore_numbers"]


def deployment(image=None, annotations=None):
    return {"metadata": {"name": "d", "annotations": annotations or {}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image or "sim.gpulab.kai-hami/local-process"}]}}}}


def test_registered():
    assert set(FilterModule().filters()) == set(CLAIM_FILTERS + ["lab11_provenance", "lab11_claim_record", "lab11_claim_error"])


@pytest.mark.parametrize("name", sorted(FilterModule().filters()))
def test_each_filter_is_documented_with_its_arguments(name):
    """The doc's positional arguments and options are the function's parameters, the first as _input."""
    with open(os.path.join(FILTER_DIR, name + ".yml")) as handle:
        doc = yaml.safe_load(handle)["DOCUMENTATION"]
    parameters = list(inspect.signature(FilterModule().filters()[name]).parameters.values())
    names = ["_input"] + [p.name for p in parameters[1:]]
    assert doc["name"] == name
    assert [a.strip() for a in doc["positional"].split(",")] == names
    assert list(doc["options"]) == names
    for parameter in parameters[1:]:
        option = doc["options"][parameter.name]
        if parameter.default is inspect.Parameter.empty:
            assert option.get("required") is True, parameter.name
        else:
            assert option.get("default") == parameter.default and not option.get("required"), parameter.name


def test_kind_reads_the_image_tags():
    result = lab11_provenance(deployment("ghcr.io/kai-scheduler/kai-scheduler/scheduler:v0.17.0"),
                              deployment("docker.io/projecthami/kai-resource-isolator:v1.1.0@sha256:abc"))
    assert result == {"kai_version": "v0.17.0", "kai": "KAI v0.17.0", "isolator": "kai-resource-isolator v1.1.0", "stand_ins": []}


def test_the_sim_says_what_runs_and_names_the_stand_in():
    stand_in = "isolator stand-in of gpulab.kai_hami (behaviour of kai-resource-isolator v1.1.0), not the isolator's own program"
    result = lab11_provenance(
        deployment(annotations={"gpulab.kai-hami/runs": "KAI v0.16.0 kai-scheduler", "gpulab.kai-hami/kai-version": "v0.16.0"}),
        deployment(annotations={"gpulab.kai-hami/runs": stand_in}))
    assert result["kai_version"] == "v0.16.0"
    assert result["kai"] == "KAI v0.16.0 (its own programs, run as local processes on the sim)"
    assert result["isolator"] == stand_in and result["stand_ins"] == [stand_in]


def test_missing_deployments_are_said_to_be_missing():
    result = lab11_provenance(None, None)
    assert result["kai"] == "KAI (not found)" and result["kai_version"] == "unknown"
    assert result["isolator"] == "kai-resource-isolator (not found)"


def test_an_image_without_a_tag_is_unknown():
    assert lab11_provenance(deployment("registry:5000/scheduler"))["kai_version"] == "unknown"
