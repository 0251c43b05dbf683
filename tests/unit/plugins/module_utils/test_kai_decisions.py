"""What KAI decided, from recorded objects: queue resources as numbers, pods' outcomes."""

import pytest

from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_decisions import (
    QuantityError,
    decided,
    parse_quantity,
    pod_outcome,
    queue_summary,
)


@pytest.mark.parametrize("text, number", [
    ("3500m", 3.5), ("2", 2.0), ("16Gi", 16 * 2 ** 30), ("500M", 5e8), ("1e3", 1000.0), ("0.5", 0.5), (".5", 0.5),
    ("100k", 1e5), ("250u", 250e-6), (3, 3.0), (1.25, 1.25), ("-1", -1.0),
])
def test_quantities(text, number):
    assert parse_quantity(text) == pytest.approx(number)


@pytest.mark.parametrize("text", ["", "3 GPUs", "1.2.3", "Gi", "5Xi", True, None])
def test_not_quantities(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)


def _queue(spec_gpu, status):
    return {"metadata": {"name": "team-a"},
            "spec": {"parentQueue": "dept", "resources": {"gpu": spec_gpu, "cpu": {"quota": 4000, "limit": -1, "overQuotaWeight": 2},
                                                          "memory": {"quota": 2048, "limit": -1, "overQuotaWeight": 1}}},
            "status": status}


def test_queue_summary_turns_spec_and_status_into_numbers_per_resource():
    memory_bytes = 3 * 2 ** 30
    queue = _queue({"quota": 1, "limit": 4, "overQuotaWeight": 1},
                   {"allocated": {"nvidia.com/gpu": "3500m", "cpu": "1500m", "memory": str(memory_bytes), "pods": "4"},
                    "requested": {"nvidia.com/gpu": "4"}, "childQueues": []})
    summary = queue_summary(queue)
    assert (summary["name"], summary["parent"], summary["children"]) == ("team-a", "dept", [])
    gpu, cpu, memory = (summary["resources"][r] for r in ("gpu", "cpu", "memory"))
    assert gpu == dict(quota=1, limit=4, over_quota_weight=1, allocated=3.5, allocated_non_preemptible=0, requested=4, fair_share=None)
    assert (cpu["quota"], cpu["limit"], cpu["over_quota_weight"], cpu["allocated"]) == (4000 / 1000, -1, 2, 1500 / 1000)
    assert memory["quota"] == 2048 and memory["allocated"] == pytest.approx(memory_bytes / 1e6, abs=1e-6)
    assert summary["resources"]["other"] == {"pods": {"allocated": 4}}


def test_queue_summary_takes_fair_share_from_a_division_line_in_its_units():
    division = {"gpu": {"fair_share": 1.51}, "cpu": {"fair_share": -1}, "memory": {"fair_share": 0.25}}
    resources = queue_summary(_queue({"quota": 0, "limit": -1, "overQuotaWeight": 1}, {}), division)["resources"]
    assert resources["gpu"]["fair_share"] == 1.51 and resources["cpu"]["fair_share"] == -1
    assert resources["memory"]["fair_share"] == 0.25 * 1000  # GB in the log, MB reported
    assert resources["gpu"]["allocated"] == 0 and resources["gpu"]["limit"] == -1


def _pod(node=None, conditions=(), labels=None):
    return {"metadata": {"name": "p", "labels": dict({"kai.scheduler/queue": "team-a"}, **(labels or {})),
                         "annotations": {"pod-group-name": "pg-p-1"}},
            "spec": {"nodeName": node} if node else {}, "status": {"conditions": list(conditions)}}


def test_a_bound_pod_names_its_node_and_gpu_group():
    outcome = pod_outcome(_pod("gpu-1", labels={"runai-gpu-group": "g-1"}))
    assert (outcome["outcome"], outcome["node"], outcome["gpu_group"], outcome["queue"], outcome["podgroup"]) == (
        "bound", "gpu-1", "g-1", "team-a", "pg-p-1")
    assert decided(outcome["outcome"])


def test_an_unschedulable_pod_gives_kai_reason_from_its_podgroup_and_message_from_the_pod():
    message = "QueueDoesNotExist: Queue 'team-z' does not exist."
    pod = _pod(conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}])
    podgroup = {"metadata": {"name": "pg-p-1"}, "spec": {"queue": "team-z"},
                "status": {"schedulingConditions": [{"type": "UnschedulableOnNodePool", "nodePool": "default",
                                                     "reasons": [{"reason": "QueueDoesNotExist", "message": "Queue 'team-z' does not exist"}]}]}}
    events = [{"type": "Warning", "reason": "Unschedulable", "message": message}, {"type": "Normal", "reason": "Pulled", "message": "x"}]
    outcome = pod_outcome(pod, podgroup, events)
    assert (outcome["outcome"], outcome["reason"], outcome["message"]) == ("unschedulable", "QueueDoesNotExist", message)
    assert outcome["podgroup_reasons"] == [{"node_pool": "default", "reason": "QueueDoesNotExist", "message": "Queue 'team-z' does not exist"}]
    assert [e["reason"] for e in outcome["events"]] == ["Unschedulable"]


def test_the_reason_falls_back_to_the_message_head_then_to_unschedulable():
    event = {"type": "Warning", "reason": "Unschedulable", "message": "OverLimit: team-a quota has reached the allowable limit of GPUs."}
    assert pod_outcome(_pod(), None, [event])["reason"] == "OverLimit"
    event = dict(event, message="no node fits")
    assert pod_outcome(_pod(), None, [event])["reason"] == "Unschedulable"


def test_binding_pending_and_not_found():
    bind = {"spec": {"selectedNode": "gpu-2"}}
    assert (pod_outcome(_pod(), None, [], bind)["outcome"], pod_outcome(_pod(), None, [], bind)["node"]) == ("binding", "gpu-2")
    assert pod_outcome(_pod())["outcome"] == "pending" and not decided("pending")
    assert pod_outcome(None)["outcome"] == "not_found"
