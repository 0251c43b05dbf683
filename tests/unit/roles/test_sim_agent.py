"""The sim agent's own decisions: CRI log lines, and which GPU a reservation app reports."""

import argparse
import importlib.util
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
_spec = importlib.util.spec_from_file_location("sim_agent", os.path.join(ROOT, "roles", "sim_cluster", "files", "sim_agent.py"))
agent = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(agent)

UUIDS = ["GPU-%d" % i for i in range(3)]


def test_cri_lines_are_what_kwok_reads():
    line = agent.cri_line(b"hello world\n")
    assert re.match(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z stdout F hello world\n$", line), line


def reservation(name, node="n1", group=None, uuid=None):
    meta = {"name": name, "namespace": "kai-resource-reservation", "uid": name, "labels": {}, "annotations": {}}
    if group:
        meta["labels"]["runai-gpu-group"] = group
    if uuid:
        meta["annotations"]["run.ai/reserve_for_gpu_index"] = uuid
    return {"metadata": meta, "spec": {"nodeName": node}}


def runner(tmp_path):
    args = argparse.Namespace(state_dir=str(tmp_path), mock_nvml_dir="/lib", gpu_uuid=UUIDS)
    return agent.Reservations(api=None, args=args)


def test_a_new_group_gets_the_first_gpu_no_other_group_holds(tmp_path):
    r = runner(tmp_path)
    first = reservation("r1", group="g1")
    assert r.choose_gpu(first, [first]) == "GPU-0"
    second = reservation("r2", group="g2")
    assert r.choose_gpu(second, [first, second]) == "GPU-1"
    # the same group again (a restarted runner, a re-run): the same GPU
    assert runner(tmp_path).choose_gpu(first, [first, second]) == "GPU-0"


def test_a_group_that_already_reported_keeps_its_uuid_and_a_gone_group_frees_its_gpu(tmp_path):
    r = runner(tmp_path)
    old = reservation("r0", group="g0", uuid="GPU-2")
    new = reservation("r1", group="g0")
    assert r.choose_gpu(new, [old, new]) == "GPU-2"
    other = reservation("r2", group="g5")
    assert r.choose_gpu(other, [other]) == "GPU-0"  # g0 has no pods left: its GPU is free again


def test_gpus_are_per_node_and_none_when_all_are_held(tmp_path):
    r = runner(tmp_path)
    pods = [reservation("a%d" % i, group="g%d" % i, uuid=UUIDS[i]) for i in range(3)]
    elsewhere = reservation("b", node="n2", group="h")
    assert r.choose_gpu(elsewhere, pods + [elsewhere]) == "GPU-0"
    late = reservation("c", group="g9")
    assert r.choose_gpu(late, pods + [late]) is None
