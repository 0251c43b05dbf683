"""bench_fleet's check of fractions in bulk: each of its four rules finds what breaks it, from pods and the watch's times."""

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bench_fleet  # noqa: E402  pylint: disable=wrong-import-position

GROUP, GPU = "runai-gpu-group", "run.ai/reserve_for_gpu_index"


def shared(name, node=None, group=None, refused=False):
    item = {"metadata": {"name": name, "labels": {GROUP: group} if group else {}}, "spec": {"nodeName": node} if node else {}, "status": {}}
    if refused:
        item["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "message": "0/1 nodes are available"}]
    return item


def reservation(name, node, group, uuid):
    return {"metadata": {"name": name, "labels": {GROUP: group}, "annotations": {GPU: uuid}}, "spec": {"nodeName": node}}


class Watch(object):
    def __init__(self, points):
        self.by_namespace = points

    def points(self, namespace):
        return self.by_namespace.get(namespace, {})


class FakeFleet(object):
    def __init__(self, pods, reservations, points):
        self.by_namespace = {"bulk": pods, "kai-resource-reservation": reservations}
        self.watch = Watch(points)

    def pods(self, namespace):
        return self.by_namespace[namespace]


def test_two_halves_on_each_gpu_break_no_rule():
    pods = [shared("a", "n1", "g1"), shared("b", "n1", "g1"), shared("c", "n1", "g2"), shared("d", "n1", "g2")]
    fleet = FakeFleet(pods, [reservation("r1", "n1", "g1", "GPU-0"), reservation("r2", "n1", "g2", "GPU-1")], {})
    counts, findings = bench_fleet.check_bulk_fractions(fleet, "bulk", 4)
    assert findings == [] and counts["bound"] == 4 and counts["groups"] == 2


def test_each_rule_finds_what_breaks_it():
    pods = [shared("a", "n1", "g1"), shared("b", "n1", "g1"), shared("c", "n1", "g2"),  # three halves on GPU-0 (g1 and g2 share it)
            shared("d", refused=True), shared("e")]                                    # e: neither bound nor refused
    reservations = [reservation("r1", "n1", "g1", "GPU-0"), reservation("r2", "n1", "g2", "GPU-0"), reservation("r3", "n1", "g1", "GPU-1")]
    points = {"kai-resource-reservation": {"r-old": {"group": "g1", "deleting": 20.0}},
              "bulk": {"a": {"group": "g1", "bound": 10.0}, "b": {"group": "g1", "bound": 30.0}}}
    counts, findings = bench_fleet.check_bulk_fractions(FakeFleet(pods, reservations, points), "bulk", 5)
    assert counts["unexplained"] == 1 and counts["refused_with_reason"] == 1
    assert counts["groups_named_twice"] == 2  # g1 has two reservation pods; GPU-0 of n1 is named by g1 and g2
    assert counts["reservations_deleted_in_use"] == 1  # r-old went at 20 s while a (bound at 10 s) used its group
    assert len(findings) == 3 and any("neither bound nor refused" in f for f in findings)
    assert any("r-old (group g1, used by a)" in f for f in findings)


def test_three_halves_on_one_gpu_are_found():
    pods = [shared("a", "n1", "g1"), shared("b", "n1", "g1"), shared("c", "n1", "g1")]
    counts, findings = bench_fleet.check_bulk_fractions(FakeFleet(pods, [reservation("r1", "n1", "g1", "GPU-0")], {}), "bulk", 3)
    assert counts["gpus_over_two"] == 1 and findings == ["GPUs holding more than two halves: {'n1 GPU-0': 3}"]
