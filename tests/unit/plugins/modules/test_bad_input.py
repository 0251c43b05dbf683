"""Every bad input the issue lists: a clear message naming the field, nothing sent.

The modules are pointed at https://127.0.0.1:9, where nothing listens: a module that sent a
request before failing would report a connection error instead of the validation message.
"""

import pytest

from ansible_collections.gpulab.kai_hami.plugins.modules import (
    gpu_node_label,
    kai_pod_schedule_info,
    kai_queue,
    kai_queue_info,
    lab_claim,
    reservation_probe,
)


def assert_clear_failure(result, code, *fragments):
    assert code == 1, result
    assert result.get("failed") is True
    for fragment in fragments:
        assert fragment in result["msg"], result["msg"]
    for sign_of_a_request in ("Max retries", "Connection refused", "HTTPSConnection", "API error"):
        assert sign_of_a_request not in result["msg"]


@pytest.mark.parametrize(
    "args, fragments",
    [
        (dict(name="q", resources=dict(gpu=dict(limit=-2))), ["resources.gpu.limit", "-1 (unlimited) or >= 0"]),
        (dict(name="q", resources=dict(gpu=dict(quota=3, limit=2))), ["resources.gpu.quota (3)", "limit (2)"]),
        (dict(name="q", resources=dict(cpu=dict(over_quota_weight=-0.5))), ["resources.cpu.over_quota_weight", ">= 0"]),
        (dict(name="Team_A"), ["name 'Team_A'", "DNS-1123 subdomain"]),
        (dict(name="q", parent_queue="q"), ["parent_queue", "not the queue itself"]),
        (dict(queues=[dict(name="a", parent_queue="b"), dict(name="b", parent_queue="a")]), ["parent cycle"]),
        (dict(queues=[dict(name="a"), dict(name="b", resources=dict(gpu=dict(limit=-5)))]), ["queues[1].resources.gpu.limit"]),
        (dict(name="q", resources=dict(tpu=dict(quota=1))), ["tpu", "cpu, gpu, memory"]),
        (dict(name="q", queues=[dict(name="a")]), ["mutually exclusive", "name", "queues"]),
        (dict(state="present"), ["one of the following is required", "name", "queues"]),
        (dict(name="q", state="gone"), ["state", "present, absent"]),
        (dict(name="q", webhook_retry_timeout=-1), ["webhook_retry_timeout must be >= 0"]),
        (dict(name="q", wait=True, wait_timeout=-1), ["wait_timeout must be 0 or more seconds (0 reads once), got -1"]),
        (dict(name="q", wait=True, wait_sleep=0), ["wait_sleep must be more than 0 seconds, got 0"]),
    ],
)
def test_kai_queue_bad_input(run_module, args, fragments):
    result, code = run_module(kai_queue.main, args)
    assert_clear_failure(result, code, *fragments)


@pytest.mark.parametrize(
    "args, fragments",
    [
        (dict(nodes=["n"], memory_mib=40), ["memory_mib", "at least 100", "looks like GiB"]),
        (dict(nodes=["n"], memory_mib=40960, count=0), ["count must be a positive number"]),
        (dict(nodes=["n"], label_selector="a=b", memory_mib=40960), ["mutually exclusive", "nodes", "label_selector"]),
        (dict(nodes=[], memory_mib=40960), ["nodes must list at least one node"]),
        (dict(nodes=["n"], memory_mib=40960, product="(((  )))"), ["product", "empty label value"]),
        (dict(nodes=["n"], memory_mib=40960, product="X" * 80), ["product", "at most 63"]),
        (dict(nodes=["n"]), ["memory_mib is required"]),
        (dict(nodes=["n"], memory_mib=40960, state="on"), ["state", "present, absent"]),
        (dict(nodes=["n"], memory_mib=40960, parallel=0), ["parallel must be >= 1"]),
    ],
)
def test_gpu_node_label_bad_input(run_module, args, fragments):
    result, code = run_module(gpu_node_label.main, args)
    assert_clear_failure(result, code, *fragments)


@pytest.mark.parametrize(
    "args, fragments",
    [
        (dict(name="p", wait_timeout=-1), ["wait_timeout must be 0 or more seconds (0 reads once), got -1"]),
        (dict(name="p", wait_timeout=-10, expect="nvml_unavailable"), ["wait_timeout must be 0 or more seconds", "got -10"]),
        (dict(name="p", wait_sleep=0), ["wait_sleep must be more than 0 seconds, got 0"]),
        (dict(name="p", wait_sleep="often"), ["wait_sleep", "float"]),
        (dict(name="p", expect="crashed"), ["expect", "reserved, nvml_unavailable, reservation_timeout, pending, not_shared"]),
        (dict(name="p", log_lines=0), ["log_lines must be a positive number"]),
        (dict(namespace="default"), ["missing required arguments: name"]),
    ],
)
def test_reservation_probe_bad_input(run_module, args, fragments):
    result, code = run_module(reservation_probe.main, args)
    assert_clear_failure(result, code, *fragments)


@pytest.mark.parametrize(
    "args, fragments",
    [
        (dict(names=[]), ["names must list at least one pod name"]),
        (dict(names=["a", ""]), ["names must list at least one pod name, and no empty one"]),
        (dict(names=["a"], wait=True, wait_timeout=-5), ["wait_timeout must be 0 or more seconds (0 reads once), got -5"]),
        (dict(names=["a"], wait_sleep=-1), ["wait_sleep must be more than 0 seconds, got -1"]),
        (dict(names=["a"], expect="running"), ["expect", "bound, unschedulable, binding, pending"]),
        (dict(namespace="default"), ["missing required arguments: names"]),
    ],
)
def test_kai_pod_schedule_info_bad_input(run_module, args, fragments):
    result, code = run_module(kai_pod_schedule_info.main, args)
    assert_clear_failure(result, code, *fragments)


@pytest.mark.parametrize(
    "args, fragments",
    [
        (dict(log_lines=0), ["log_lines must be a positive number, got 0"]),
        (dict(fair_share="sometimes"), ["fair_share", "bool"]),
    ],
)
def test_kai_queue_info_bad_input(run_module, args, fragments):
    result, code = run_module(kai_queue_info.main, args)
    assert_clear_failure(result, code, *fragments)


LAB = dict(gpu_node="gpu-0", shared_pods=[dict(name="shared", request_mib=20480)])


@pytest.mark.parametrize(
    "args, fragments",
    [
        (dict(claim="C10", lab=LAB), ["claim", "C1, C2, C3, C4, C5, C6, C7, C8, C9", "C10"]),
        (dict(claim="C9", lab=LAB), ["C9 needs 2 shared pod(s) in lab.shared_pods, got 1"]),
        (dict(claim="C7", lab=dict(LAB, shared_pods=[])), ["C7 needs 1 shared pod(s) in lab.shared_pods, got 0"]),
        (dict(claim="C7", lab=dict(LAB, shared_pods=[dict(name="p", request_mib="lots")])),
         ["argument 'request_mib' is of type str found in 'lab -> shared_pods'", "int"]),
        (dict(claim="C7", lab=dict(LAB, shared_pods=[dict(request_mib=1)])), ["missing required arguments: name found in lab -> shared_pods"]),
        (dict(claim="C7", lab=dict(LAB, shared_pods=[dict(name="p", request_mib=0)])),
         ["lab.shared_pods[0].request_mib must be a positive number of MiB, got 0"]),
        (dict(claim="C7", lab=dict(LAB, shared_pods=[dict(name="p", request_mib=1, gpus=2)])),
         ["Unsupported parameters", "lab.shared_pods.gpus", "name, request_mib"]),
        (dict(claim="C8", lab=dict(LAB, expected_boundary="running")), ["expected_boundary", "reserved, nvml_unavailable"]),
        (dict(claim="C1", lab=dict(shared_pods=[])), ["missing required arguments: gpu_node", "lab"]),
        (dict(claim="C1", lab=LAB, state_dirs={"cluster": ""}), ["state_dirs.cluster must be a directory's path, got ''"]),
        (dict(claim="C3", lab=LAB, wait_timeout=-1), ["wait_timeout must be 0 or more"]),
        (dict(lab=LAB), ["one of the following is required: claim, claims"]),
        (dict(claim="C1", claims=["C2"], lab=LAB), ["parameters are mutually exclusive: claim|claims"]),
        (dict(claims=[], lab=LAB), ["claims must name at least one of C1, C2"]),
        (dict(claims=["C1", "C2", "C1"], lab=LAB), ["claims names C1 twice"]),
        (dict(claims=["C1", "C12"], lab=LAB), ["claims", "C1, C2, C3, C4, C5, C6, C7, C8, C9", "C12"]),
        (dict(claims=["C1", "C9"], lab=LAB), ["C9 needs 2 shared pod(s) in lab.shared_pods, got 1"]),
    ],
)
def test_lab_claim_bad_input(run_module, args, fragments):
    result, code = run_module(lab_claim.main, args)
    assert_clear_failure(result, code, *fragments)
    assert "record" not in result and "records" not in result


# The modules that poll the cluster type their wait options through one spec (module_utils/waiter.py).
POLLING = (kai_queue, kai_pod_schedule_info, reservation_probe, lab_claim)


@pytest.mark.parametrize("module", POLLING, ids=[m.__name__.rsplit(".", 1)[-1] for m in POLLING])
def test_the_polling_modules_share_the_wait_options(module):
    spec = module.argument_spec()
    assert (spec["wait_timeout"]["type"], spec["wait_sleep"]["type"]) == ("int", "float")
    assert "gpulab.kai_hami.wait" in module.DOCUMENTATION
