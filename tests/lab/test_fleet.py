"""The sim at a small fleet's scale (make bench-fleet's gate): shared pods through KAI's real reservations.

Four nodes of 8 A100s, 32 shared pods of 20000 MiB gpu-memory (two fit one 40 GB GPU) on 16 GPU
groups, through KAI's binder and its reservation apps with the NVML stand-in library: every shared pod
binds, each GPU group has one reservation pod, whose GPU UUID no other group holds on its node, and
every pod's CUDA_DEVICE_MEMORY_LIMIT is KAI's arithmetic on the request and the node's label. The
stage watch saw every shared pod through each of KAI's stages and every group's reservation through
its own. Taking the cluster down leaves no process and no file of it.
"""

import math
import os
import sys

from conftest import ROOT
from simtools import processes_under

sys.path.insert(0, os.path.join(ROOT, "tools"))
from bench_fleet import Fleet, fractional_fill  # noqa: E402  pylint: disable=wrong-import-position

NODES, GROUPS, REQUEST_MIB = 4, 16, 20000
GROUP_LABEL = "runai-gpu-group"
UUID_ANNOTATION = "run.ai/reserve_for_gpu_index"


def memory_limit(request_mib, label_mib):
    """KAI's arithmetic, written out in the test: the fraction (label floored to 100 MiB, rounded up to 0.01) times the raw label."""
    fraction = math.ceil(request_mib / (label_mib - label_mib % 100) * 100) / 100
    return "%dm" % int(label_mib * fraction)


def test_shared_pods_on_sixteen_gpu_groups_bind_through_real_reservations_and_nothing_is_left(tmp_path):
    fleet = Fleet(str(tmp_path), name="fleet-gate")
    try:
        fleet.up(NODES)
        fill, namespace = fractional_fill(fleet, GROUPS, REQUEST_MIB, timeout=300)
        pods = fleet.pods(namespace)
        assert fill["seconds"] is not None, "not all shared pods bound: %s" % sorted(
            p["metadata"]["name"] for p in pods if not p["spec"].get("nodeName"))
        print("32 shared pods bound in %.1f s" % fill["seconds"])
        assert len(pods) == 2 * GROUPS
        # every pod seen at each of its points, in order: created, PodGroup, BindRequest, bound, Running
        assert [(r["stage"], r["count"]) for r in fill["stages"]] == [
            ("pod-grouper", 2 * GROUPS), ("scheduler", 2 * GROUPS), ("binder", 2 * GROUPS), ("kwok Running", 2 * GROUPS)]
        assert all(r["max"] <= fill["seconds"] + 2 for r in fill["stages"]), fill["stages"]
        assert [r["count"] for r in fill["reservation_stages"]] == [GROUPS] * 4, fill["reservation_stages"]

        groups = {}
        for item in pods:
            groups.setdefault(item["metadata"]["labels"][GROUP_LABEL], []).append(item["spec"]["nodeName"])
        assert len(groups) == GROUPS and all(len(nodes) == 2 and len(set(nodes)) == 1 for nodes in groups.values()), groups

        reservations = fleet.pods("kai-resource-reservation")
        assert sorted(r["metadata"]["labels"][GROUP_LABEL] for r in reservations) == sorted(groups)
        held = {}
        for item in reservations:
            assert item["status"]["phase"] == "Running", item["metadata"]["name"]
            assert item["spec"]["nodeName"] == groups[item["metadata"]["labels"][GROUP_LABEL]][0]
            held.setdefault(item["spec"]["nodeName"], []).append(item["metadata"]["annotations"][UUID_ANNOTATION])
        assert all(len(set(uuids)) == len(uuids) for uuids in held.values()), held
        assert sum(len(uuids) for uuids in held.values()) == GROUPS

        labels = dict((n["metadata"]["name"], int(n["metadata"]["labels"]["nvidia.com/gpu.memory"]))
                      for n in fleet.core.list_node().to_dict()["items"])
        configmaps = fleet.configmaps(namespace)
        for item in pods:
            refs = [e["valueFrom"]["configMapKeyRef"]["name"] for e in item["spec"]["containers"][0].get("env") or []
                    if e["name"] == "CUDA_DEVICE_MEMORY_LIMIT"]
            assert len(refs) == 1, item["metadata"]["name"]
            assert configmaps[refs[0]]["data"]["CUDA_DEVICE_MEMORY_LIMIT"] == memory_limit(REQUEST_MIB, labels[item["spec"]["nodeName"]])
    finally:
        fleet.down()
    assert processes_under(fleet.workdir) == []
    assert not os.path.exists(fleet.simdir) and not os.path.exists(fleet.kubeconfig)
