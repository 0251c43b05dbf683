"""tools/stage_watch.py: watch events become each pod's points, joined with its PodGroup and BindRequest;
the stage table's figures are the spans between points; a GPU group's reservation stages."""

import importlib.util
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools"))
spec = importlib.util.spec_from_file_location("stage_watch", os.path.join(ROOT, "tools", "stage_watch.py"))
stage_watch = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stage_watch)


def pod(name, namespace="fill", node=None, phase="Pending", podgroup=None, group=None, gpu=None):
    annotations = {}
    if podgroup:
        annotations["pod-group-name"] = podgroup
    if gpu:
        annotations["run.ai/reserve_for_gpu_index"] = gpu
    labels = {"runai-gpu-group": group} if group else {}
    return {"metadata": {"name": name, "namespace": namespace, "annotations": annotations, "labels": labels},
            "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}


def lived(watch, name, start, steps, namespace="fill", group=None):
    """A pod through KAI's stages, each `steps[i]` seconds after the one before, from `start`."""
    created, podgroup, bindrequest, bound, running = [start + sum(steps[:i]) for i in range(1, 6)]
    watch._seen("pods", "ADDED", pod(name, namespace, group=group), created)
    watch._seen("podgroups", "ADDED", {"metadata": {"name": "pg-" + name, "namespace": namespace}}, podgroup)
    watch._seen("pods", "MODIFIED", pod(name, namespace, podgroup="pg-" + name, group=group), podgroup + 0.001)
    watch._seen("bindrequests", "ADDED", {"metadata": {"name": name + "-x", "namespace": namespace}, "spec": {"podName": name}}, bindrequest)
    watch._seen("pods", "MODIFIED", pod(name, namespace, node="n1", podgroup="pg-" + name, group=group), bound)
    watch._seen("pods", "MODIFIED", pod(name, namespace, node="n1", phase="Running", podgroup="pg-" + name, group=group), running)
    watch._seen("pods", "MODIFIED", pod(name, namespace, node="n1", phase="Running", podgroup="pg-" + name, group=group), running + 5)


def test_each_stage_is_the_span_between_the_first_sight_of_its_two_points():
    watch = stage_watch.StageWatch(api_client=None)
    steps = {"a": [1.0, 0.1, 2.0, 0.5, 0.2], "b": [1.0, 0.3, 4.0, 1.5, 0.2], "c": [1.0, 0.2, 6.0, 2.5, 0.4]}
    for name, pod_steps in steps.items():
        lived(watch, name, 100.0, pod_steps)
    watch._seen("pods", "DELETED", pod("a"), 999.0)
    rows = dict((r["stage"], r) for r in stage_watch.stage_rows(watch.points("fill"), stage_watch.KAI_STAGES, started=100.0))
    for index, stage in enumerate(["pod-grouper", "scheduler", "binder", "kwok Running"]):
        spans = sorted(s[index + 1] for s in steps.values())
        row = rows[stage]
        assert row["count"] == 3
        assert abs(row["p50"] - spans[1]) < 1e-9 and abs(row["p90"] - spans[2]) < 1e-9 and abs(row["max"] - spans[2]) < 1e-9
        assert abs(row["last_at"] - max(sum(s[:index + 2]) for s in steps.values())) < 1e-9


def test_pods_of_other_namespaces_and_pods_not_yet_bound_are_apart():
    watch = stage_watch.StageWatch(api_client=None)
    lived(watch, "a", 0.0, [1, 1, 1, 1, 1])
    lived(watch, "a", 0.0, [2, 2, 2, 2, 2], namespace="other")
    watch._seen("pods", "ADDED", pod("waiting"), 3.0)
    points = watch.points("fill")
    assert sorted(points) == ["a", "waiting"]
    assert points["a"]["bound"] == 4.0 and "bound" not in points["waiting"]
    assert stage_watch.bound_curve(points, 1.0) == [3.0]
    rows = stage_watch.stage_rows(points, stage_watch.KUBE_STAGES, 0.0)
    assert rows[0]["count"] == 1 and rows[0]["p50"] == 3.0


def test_a_gpu_groups_reservation_stages_run_from_its_first_bindrequest_to_its_first_shared_pod_bound():
    watch = stage_watch.StageWatch(api_client=None)
    lived(watch, "s1", 0.0, [1.0, 0.1, 1.0, 3.0, 0.1], group="g1")  # bindrequest at 2.1, bound 5.1
    lived(watch, "s2", 0.0, [1.0, 0.1, 1.5, 4.0, 0.1], group="g1")  # bindrequest at 2.6, bound 6.6
    reservation = "gpu-reservation-n1-abc"
    space = "kai-resource-reservation"
    watch._seen("pods", "ADDED", pod(reservation, space, node="n1", group="g1"), 2.5)
    watch._seen("pods", "MODIFIED", pod(reservation, space, node="n1", phase="Running", group="g1"), 3.0)
    watch._seen("pods", "MODIFIED", pod(reservation, space, node="n1", phase="Running", group="g1", gpu="GPU-1"), 4.5)
    groups = watch.group_points("fill", space)
    assert list(groups) == ["g1"]
    rows = dict((r["stage"], r["p50"]) for r in stage_watch.stage_rows(groups, stage_watch.RESERVATION_STAGES, 0.0))
    assert abs(rows["binder: reservation pod"] - (2.5 - 2.1)) < 1e-9
    assert abs(rows["kwok Running"] - 0.5) < 1e-9
    assert abs(rows["reservation app: GPU"] - 1.5) < 1e-9
    assert abs(rows["binder: shared pod bound"] - (5.1 - 4.5)) < 1e-9


def test_percentile_is_the_nearest_rank():
    values = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0, 7.0, 6.0, 9.0, 8.0]
    assert stage_watch.percentile(values, 0.5) == 5.0
    assert stage_watch.percentile(values, 0.9) == 9.0
    assert stage_watch.percentile([2.0], 0.9) == 2.0
    assert stage_watch.percentile([], 0.5) is None
