"""Queue validation, ordering and manifests (no cluster)."""

import pytest

from ansible_collections.gpulab.kai_hami.plugins.module_utils.queues import (
    QueueSpecError,
    descendants,
    missing_parents,
    parents_first,
    queue_manifest,
    validate_queue,
    validate_queues,
)


def queue(name, parent=None, **resources):
    return {"name": name, "parent_queue": parent, "resources": resources}


def existing(name, parent=None):
    return {"metadata": {"name": name}, "spec": {"parentQueue": parent} if parent else {}}


def test_manifest_defaults_avoid_kai_limit_zero_trap():
    spec = queue_manifest(queue("default-queue", "default"))["spec"]
    assert spec["parentQueue"] == "default"
    for name in ("cpu", "gpu", "memory"):
        # an omitted limit is 0 in KAI (nothing may run); the module writes -1
        assert spec["resources"][name] == {"quota": 0, "limit": -1, "overQuotaWeight": 1}


def test_manifest_keeps_given_values():
    entry = queue("q", gpu={"quota": 2.5, "limit": 4.0, "over_quota_weight": 2.0})
    entry.update(priority=150, display_name="Q", preempt_min_runtime="5m")
    manifest = queue_manifest(entry)
    assert manifest["apiVersion"] == "scheduling.run.ai/v2"
    assert manifest["spec"]["resources"]["gpu"] == {"quota": 2.5, "limit": 4, "overQuotaWeight": 2}
    assert manifest["spec"]["priority"] == 150
    assert manifest["spec"]["displayName"] == "Q"
    assert manifest["spec"]["preemptMinRuntime"] == "5m"
    assert "parentQueue" not in manifest["spec"]


@pytest.mark.parametrize(
    "entry, field",
    [
        (queue("q", gpu={"limit": -2}), "queue.resources.gpu.limit must be -1"),
        (queue("q", cpu={"quota": -3}), "queue.resources.cpu.quota must be -1"),
        (queue("q", gpu={"quota": 5, "limit": 4}), "queue.resources.gpu.quota (5) must not exceed"),
        (queue("q", memory={"over_quota_weight": -1}), "queue.resources.memory.over_quota_weight must be >= 0"),
        (queue("Default_Queue"), "queue.name 'Default_Queue' is not a valid"),
        (queue("-q"), "DNS-1123"),
        (queue("q" * 254), "at most 253"),
        (queue("q", "q"), "queue.parent_queue must name another queue"),
        (dict(queue("q"), reclaim_min_runtime="five minutes"), "queue.reclaim_min_runtime 'five minutes' is not a duration"),
    ],
)
def test_bad_queue(entry, field):
    with pytest.raises(QueueSpecError) as error:
        validate_queue(entry, "queue")
    assert field in str(error.value)


def test_quota_above_limit_allowed_when_limit_unlimited():
    validate_queue(queue("q", gpu={"quota": 8, "limit": -1}), "queue")
    validate_queue(queue("q", gpu={"quota": -1, "limit": 4}), "queue")


def test_cycle_in_list():
    with pytest.raises(QueueSpecError, match="parent cycle: a -> c -> b -> a"):
        validate_queues([queue("a", "c"), queue("b", "a"), queue("c", "b")])


def test_duplicate_in_list():
    with pytest.raises(QueueSpecError, match=r"queues\[1\].name 'a' is listed twice"):
        validate_queues([queue("a"), queue("a")])


def test_list_entry_errors_name_their_index():
    with pytest.raises(QueueSpecError, match=r"queues\[1\].resources.gpu.limit"):
        validate_queues([queue("a"), queue("b", "a", gpu={"limit": -7})])


def test_missing_parent_checked_against_list_and_cluster():
    queues = [queue("child", "parent"), queue("other", "default-parent-queue"), queue("top")]
    assert missing_parents(queues, ["default-parent-queue"]) == [("child", "parent")]
    assert missing_parents(queues + [queue("parent")], ["default-parent-queue"]) == []


def test_parents_first_is_stable_and_complete():
    queues = [queue("leaf", "mid"), queue("solo"), queue("mid", "root"), queue("root")]
    order = [q["name"] for q in parents_first(queues)]
    assert sorted(order) == sorted(q["name"] for q in queues)
    for entry in queues:
        if entry["parent_queue"]:
            assert order.index(entry["parent_queue"]) < order.index(entry["name"])


def test_descendants_deepest_first():
    cluster = [existing("root"), existing("a", "root"), existing("b", "root"), existing("a1", "a"), existing("x")]
    found = descendants("root", cluster)
    assert sorted(found) == ["a", "a1", "b"]
    assert found.index("a1") < found.index("a")
    assert descendants("x", cluster) == []


def test_quota_equal_to_limit_is_accepted():
    entry = queue("q")
    entry["resources"] = dict((r, dict(quota=2, limit=2, over_quota_weight=1)) for r in ("cpu", "gpu", "memory"))
    validate_queue(entry)


def test_parents_first_keeps_the_given_order_where_the_hierarchy_allows():
    queues = [queue("b"), queue("a"), queue("c", "a"), queue("d")]
    assert [q["name"] for q in parents_first(queues)] == ["b", "a", "c", "d"]
    queues = [queue("leaf", "mid"), queue("solo"), queue("mid", "root"), queue("root")]
    assert [q["name"] for q in parents_first(queues)] == ["root", "mid", "leaf", "solo"]
