"""Lab 11's claims decided on recorded API objects (tests/unit/fixtures/lab11_claims.yml): every
verdict of every claim - holds, fails through each check, expected failure (C8), error (the
record) - with expected numbers and lines computed by the tests from the inputs."""

import copy
import math
import os

import pytest
import yaml

from ansible_collections.gpulab.kai_hami.plugins.module_utils import claims

with open(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "lab11_claims.yml")) as _handle:
    RECORDED = yaml.safe_load(_handle)

NODE = "kai-hami-test-control-plane"
WORKLOADS = ["admission", "binder", "kai-operator", "kai-scheduler-default", "pod-grouper", "podgroup-controller", "queue-controller"]
LABEL = "40960"
UUID = "GPU-12345678-1234-1234-1234-123456780001"
DIVISION = ("Resource division result for queue <default-queue>: Queue Priority: <100>, GPU: deserved: <Unlimited>, "
            "requested: <{a}>, maxAllowed: <Unlimited>, allocated: <{a}>, historicalUsage: <0>, fairShare: <{a}> ")


def recorded(name):
    """A fresh copy of a recorded object, so a test can change it."""
    return copy.deepcopy(RECORDED[name])


def fraction(request, label=LABEL):
    """KAI's fraction written out: the label floored to 100 MiB, the ratio rounded up to hundredths."""
    node = int(label) - int(label) % 100
    return math.ceil(request / node * 100) / 100


def limit(request, label=LABEL):
    return "%dm" % int(int(label) * fraction(request, label))


# C1 ---------------------------------------------------------------------------------------

def test_c1_holds_when_the_node_advertises_the_profile_count():
    node = recorded("node")
    result = claims.c1_mock_gpus([node], NODE, 8)
    assert result == {"holds": True, "evidence": ["node %s allocatable nvidia.com/gpu: 8 (expected 8)" % NODE]}


@pytest.mark.parametrize("nodes, expected_line", [
    ([recorded("node")], "node %s allocatable nvidia.com/gpu: 8 (expected 9)" % NODE),
    ([dict(recorded("node"), status={"allocatable": {"cpu": "8"}})], "node %s allocatable nvidia.com/gpu: none (expected 9)" % NODE),
    ([], "node %s allocatable nvidia.com/gpu: none (expected 9)" % NODE),
], ids=["another count", "no GPU resource", "no node"])
def test_c1_fails_with_what_the_node_advertises(nodes, expected_line):
    result = claims.c1_mock_gpus(nodes, NODE, 9)
    assert result == {"holds": False, "evidence": [expected_line]}


# C2 ---------------------------------------------------------------------------------------

def test_c2_holds_when_the_seven_workloads_are_available():
    result = claims.c2_kai_runs(recorded("kai_deployments"), WORKLOADS, "kai-scheduler")
    assert result == {"holds": True, "evidence": ["available in kai-scheduler: %s" % ", ".join(WORKLOADS), "missing or not available: none"]}


def _without_available(deployments, name, status):
    for deployment in deployments:
        if deployment["metadata"]["name"] == name:
            deployment["status"] = status
    return deployments


@pytest.mark.parametrize("deployments", [
    _without_available(recorded("kai_deployments"), "binder", {"replicas": 1, "availableReplicas": 0}),
    _without_available(recorded("kai_deployments"), "binder", {"replicas": 1, "unavailableReplicas": 1}),
    [d for d in recorded("kai_deployments") if d["metadata"]["name"] != "binder"],
], ids=["no available replica", "no availableReplicas field", "no Deployment"])
def test_c2_fails_naming_the_workload_that_is_not_available(deployments):
    result = claims.c2_kai_runs(deployments, WORKLOADS, "kai-scheduler")
    others = [w for w in WORKLOADS if w != "binder"]
    assert result == {"holds": False, "evidence": ["available in kai-scheduler: %s" % ", ".join(others), "missing or not available: binder"]}


def test_c2_fails_with_none_available_when_kai_is_not_installed():
    result = claims.c2_kai_runs([], WORKLOADS, "kai-scheduler")
    assert result["holds"] is False
    assert result["evidence"] == ["available in kai-scheduler: none", "missing or not available: %s" % ", ".join(WORKLOADS)]


def _pod(workload, phase="Running", ready=True, container_id="containerd://0123456789abcdef"):
    """A pod of ``workload``'s ReplicaSet, as the API server returns it."""
    return {"metadata": {"name": workload + "-5d4c-x", "ownerReferences": [{"kind": "ReplicaSet", "name": workload + "-5d4c"}]},
            "status": {"phase": phase, "containerStatuses": [{"ready": ready, "containerID": container_id}]}}


def test_c2_with_pods_names_each_workloads_running_container():
    result = claims.c2_kai_runs(recorded("kai_deployments"), WORKLOADS, "kai-scheduler", [_pod(w) for w in WORKLOADS])
    assert result["holds"] is True
    assert result["evidence"][2] == "Running pods: " + ", ".join("%s (containerd://0123456789ab)" % w for w in WORKLOADS)
    assert result["evidence"][3] == "without a Running pod: none"


@pytest.mark.parametrize("binder_pods", [
    [],
    [_pod("binder", phase="Pending")],
    [_pod("binder", ready=False)],
    [dict(_pod("binder"), metadata={"name": "binder-x", "ownerReferences": [{"kind": "Job", "name": "binder-5d4c"}]})],
], ids=["no pod", "Pending", "container not ready", "not the Deployment's"])
def test_c2_with_pods_fails_naming_the_workload_without_a_running_pod(binder_pods):
    pods = [_pod(w) for w in WORKLOADS if w != "binder"] + binder_pods
    result = claims.c2_kai_runs(recorded("kai_deployments"), WORKLOADS, "kai-scheduler", pods)
    assert result["holds"] is False and result["evidence"][3] == "without a Running pod: binder"
    assert result["evidence"][1] == "missing or not available: none"


def test_kai_by_its_chart_depends_on_the_node_not_on_the_sims_agent():
    assert "agent" in claims.claim_parts("C2") and "node" not in claims.claim_parts("C2")
    assert set(claims.claim_parts("C2", kai_by_chart=True)) == {"cluster", "kai", "node"}
    assert claims.claim_parts("C5", kai_by_chart=True) == claims.CLAIMS["C5"].parts
    assert claims.claim_parts("C1", kai_by_chart=True) == ("cluster", "node")


# C3 ---------------------------------------------------------------------------------------

def decide_c3(**changes):
    inputs = dict(queues=recorded("queues"), events=recorded("probe_events"), probe=[recorded("probe_pod")])
    inputs.update(changes)
    return claims.c3_queues_gate(inputs["queues"], inputs["events"], inputs["probe"], "default-queue", "default", "lab11-no-such-queue",
                                 "default", "lab11-missing-queue-probe")


def test_c3_holds_with_the_queues_and_the_probe_pending_on_queue_does_not_exist():
    result = decide_c3()
    message = RECORDED["probe_events"][0]["message"]
    assert result == {"holds": True, "evidence": [
        "queues: default, default-queue; default-queue has parent default (expected default)",
        "pod default/lab11-missing-queue-probe (queue lab11-no-such-queue) is Pending; event: %s" % message]}


def test_c3_takes_the_last_queue_does_not_exist_event():
    later = dict(recorded("probe_events")[0], message="QueueDoesNotExist: Queue 'lab11-no-such-queue' does not exist. (again)")
    other = dict(recorded("probe_events")[0], message="Successfully assigned default/lab11-missing-queue-probe", reason="Scheduled")
    result = decide_c3(events=recorded("probe_events") + [later, other])
    assert result["evidence"][1].endswith("event: " + later["message"])


def _queues_with_parent(parent):
    queues = recorded("queues")
    queues[1]["spec"]["parentQueue"] = parent
    return queues


@pytest.mark.parametrize("change, line, expected", [
    (dict(queues=recorded("queues")[1:]), 0, "queues: default-queue; default-queue has parent default (expected default)"),
    (dict(queues=recorded("queues")[:1]), 0, "queues: default; default-queue has parent none (expected default)"),
    (dict(queues=_queues_with_parent("other")), 0, "queues: default, default-queue; default-queue has parent other (expected default)"),
    (dict(queues=[]), 0, "queues: none; default-queue has parent none (expected default)"),
    (dict(events=[]), 1, "pod default/lab11-missing-queue-probe (queue lab11-no-such-queue) is Pending; event: no QueueDoesNotExist event"),
    (dict(probe=[dict(recorded("probe_pod"), status={"phase": "Running"})]), 1,
     "pod default/lab11-missing-queue-probe (queue lab11-no-such-queue) is Running; event: %s" % RECORDED["probe_events"][0]["message"]),
    (dict(probe=[]), 1,
     "pod default/lab11-missing-queue-probe (queue lab11-no-such-queue) is missing; event: %s" % RECORDED["probe_events"][0]["message"]),
], ids=["no parent queue", "no leaf queue", "another parent", "no queues", "no event", "probe running", "no probe pod"])
def test_c3_fails_for_each_reason(change, line, expected):
    result = decide_c3(**change)
    assert result["holds"] is False
    assert result["evidence"][line] == expected


# C4 ---------------------------------------------------------------------------------------

def test_c4_holds_with_the_startup_line_and_the_mutated_dry_run_pod():
    result = claims.c4_isolator_webhook(recorded("isolator_log"), None, recorded("dry_run_pod"))
    assert result == {"holds": True, "evidence": [
        "webhook log: " + RECORDED["isolator_log"][1],
        # the service-account volume is not the isolator's: left out
        "isolator volumes in the dry-run pod: kai-resource-isolator-vgpu, kai-resource-isolator-vgpulock"]}


def test_c4_fails_when_the_log_cannot_be_read():
    result = claims.c4_isolator_webhook([], "Deployment kai-resource-isolator-webhook not found", recorded("dry_run_pod"))
    assert result["holds"] is False
    assert result["evidence"][0] == "webhook log: no annotationKeys line (Deployment kai-resource-isolator-webhook not found)"


def test_c4_fails_when_the_webhook_handles_other_annotations():
    lines = [RECORDED["isolator_log"][1].replace("annotationKeys=gpu-fraction|gpu-memory", "annotationKeys=gpu-fraction")]
    result = claims.c4_isolator_webhook(lines, None, recorded("dry_run_pod"))
    assert result["holds"] is False and result["evidence"][0] == "webhook log: " + lines[0]


def test_c4_fails_when_the_dry_run_pod_comes_back_unmutated():
    pod = recorded("dry_run_pod")
    pod["spec"]["volumes"] = [v for v in pod["spec"]["volumes"] if not v["name"].startswith("kai-resource-isolator-")]
    result = claims.c4_isolator_webhook(recorded("isolator_log"), None, pod)
    assert result["holds"] is False and result["evidence"][1] == "isolator volumes in the dry-run pod: none"
    assert claims.c4_isolator_webhook(recorded("isolator_log"), None, None)["evidence"][1] == "isolator volumes in the dry-run pod: none"


# C5 ---------------------------------------------------------------------------------------

def test_c5_holds_when_kai_bound_the_whole_gpu_pod_to_the_gpu_node():
    result = claims.c5_base_scheduling([recorded("whole_gpu_pod")], [recorded("whole_gpu_bind_request")], NODE, "default", "kai-whole-gpu")
    assert result == {"holds": True, "evidence": ["pod default/kai-whole-gpu is Running on node %s (expected %s)" % (NODE, NODE),
                                                  "BindRequest default/kai-whole-gpu: exists"]}


def _whole_gpu_pod(phase="Running", node=NODE):
    pod = recorded("whole_gpu_pod")
    pod["status"]["phase"] = phase
    if node:
        pod["spec"]["nodeName"] = node
    else:
        del pod["spec"]["nodeName"]
    return pod


@pytest.mark.parametrize("pods, binds, line, expected", [
    ([_whole_gpu_pod("Pending", None)], [], 0, "pod default/kai-whole-gpu is Pending on node none (expected %s)" % NODE),
    ([_whole_gpu_pod(node="other-node")], [recorded("whole_gpu_bind_request")], 0,
     "pod default/kai-whole-gpu is Running on node other-node (expected %s)" % NODE),
    ([recorded("whole_gpu_pod")], [], 1, "BindRequest default/kai-whole-gpu: not found"),
    ([], [], 0, "pod default/kai-whole-gpu is missing on node none (expected %s)" % NODE),
], ids=["pending", "another node", "no BindRequest (bound by someone else)", "no pod"])
def test_c5_fails_for_each_reason(pods, binds, line, expected):
    result = claims.c5_base_scheduling(pods, binds, NODE, "default", "kai-whole-gpu")
    assert result["holds"] is False
    assert result["evidence"][line] == expected


def test_c5_says_why_a_bound_pod_does_not_run():
    pod = _whole_gpu_pod("Pending")
    pod["status"]["containerStatuses"] = [{"name": "app", "ready": False,
                                           "state": {"waiting": {"reason": "ErrImagePull", "message": "failed to pull image \"x:1\""}}}]
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False", "message": "containers with unready status: [app]"},
                                   {"type": "PodScheduled", "status": "True"}]
    result = claims.c5_base_scheduling([pod], [recorded("whole_gpu_bind_request")], NODE, "default", "kai-whole-gpu")
    assert result["holds"] is False
    assert result["evidence"][2:] == ['container app waiting: ErrImagePull: failed to pull image "x:1"',
                                      "condition Ready: containers with unready status: [app]"]


def test_c5_names_the_last_events_of_a_pod_that_does_not_run():
    pod = _whole_gpu_pod("Pending")
    events = [{"reason": "Scheduled", "message": "Successfully assigned default/kai-whole-gpu to %s" % NODE}]
    events += [{"reason": "Step%d" % i, "message": "m%d" % i} for i in range(6)]
    events.append({"reason": "FailedCreatePodSandBox", "count": 3, "message": "rpc error: first"})
    events.append({"reason": "Step2", "message": "m2 again"})
    events.append({"reason": "FailedCreatePodSandBox", "count": 2, "message": "rpc error: " + "x" * 400})
    result = claims.c5_base_scheduling([pod], [recorded("whole_gpu_bind_request")], NODE, "default", "kai-whole-gpu", events)
    said = [line for line in result["evidence"] if line.startswith("event ")]
    # one line per reason, at its last place, with the times it was seen
    assert said == (["event Step%d: m%d" % (i, i) for i in (1, 3, 4, 5)] + ["event Step2 (x2): m2 again"]
                    + ["event FailedCreatePodSandBox (x5): rpc error: " + "x" * 289])
    running = claims.c5_base_scheduling([_whole_gpu_pod()], [recorded("whole_gpu_bind_request")], NODE, "default", "kai-whole-gpu", events)
    assert not [line for line in running["evidence"] if line.startswith("event ")]


# C6 ---------------------------------------------------------------------------------------

def test_c6_holds_with_the_division_line_of_whole_gpus_plus_the_fraction():
    lines = recorded("scheduler_log")
    expected = round(1 + fraction(20480), 2)
    assert expected == 1.51
    result = claims.c6_gpu_memory_accounting(lines, None, [recorded("node")], "default-queue", [20480], 1, "kai-scheduler")
    assert result["holds"] is True and result["expected_allocation"] == expected
    assert result["evidence"][0] == "queue default-queue GPU allocated: %s; expected 1 + kai_gpu_fraction(20480, %s) = %s" % (expected, LABEL, expected)
    # the matching line (the second cycle's), colours and session prefix removed
    assert result["evidence"][1].startswith("scheduler log: Resource division result for queue <default-queue>:")
    assert "allocated: <%s>" % expected in result["evidence"][1]


def test_c6_adds_the_whole_gpu_count_and_each_shared_pod():
    whole, requests = 2, [20480, 20000]
    expected = round(whole + fraction(20480) + fraction(20000), 2)
    result = claims.c6_gpu_memory_accounting([DIVISION.format(a=expected)], None, [recorded("node")], "default-queue", requests, whole, "kai-scheduler")
    assert result["holds"] is True
    assert result["evidence"][0].endswith("expected 2 + kai_gpu_fraction(20480, %s) + kai_gpu_fraction(20000, %s) = %s" % (LABEL, LABEL, expected))


def test_c6_fails_with_another_allocation_and_shows_the_last_line():
    lines = recorded("scheduler_log")[:2]
    result = claims.c6_gpu_memory_accounting(lines, None, [recorded("node")], "default-queue", [20480], 1, "kai-scheduler")
    assert result["holds"] is False
    assert result["evidence"][0] == "queue default-queue GPU allocated: 1.0; expected 1 + kai_gpu_fraction(20480, %s) = %s" % (LABEL, 1 + fraction(20480))
    assert "allocated: <1>" in result["evidence"][1]


def test_c6_fails_with_no_division_line_and_says_why_the_log_is_empty():
    result = claims.c6_gpu_memory_accounting([], "Deployment kai-scheduler-default not found", [recorded("node")], "default-queue", [20480], 1, "kai-scheduler")
    assert result["holds"] is False and result["expected_allocation"] == round(1 + fraction(20480), 2)
    assert result["evidence"][0].startswith("queue default-queue GPU allocated: none;")
    assert result["evidence"][1] == ("scheduler log: no division line for default-queue in the log of deployment/kai-scheduler-default in kai-scheduler"
                                     " (Deployment kai-scheduler-default not found)")


def test_c6_fails_at_once_without_the_memory_label():
    node = recorded("node")
    del node["metadata"]["labels"]["nvidia.com/gpu.memory"]
    result = claims.c6_gpu_memory_accounting(recorded("scheduler_log"), None, [node], "default-queue", [20480], 1, "kai-scheduler")
    assert result == {"holds": False, "expected_allocation": None, "evidence": [
        "node %s has no nvidia.com/gpu.memory label (Step 3 sets it, with gpulab.kai_hami.gpu_node_label)" % NODE]}


def test_c6_fails_at_once_with_a_label_kai_cannot_use():
    node = recorded("node")
    node["metadata"]["labels"]["nvidia.com/gpu.memory"] = "40"  # GiB by mistake: floors to 0 MiB
    result = claims.c6_gpu_memory_accounting(recorded("scheduler_log"), None, [node], "default-queue", [20480], 1, "kai-scheduler")
    assert result["holds"] is False and result["expected_allocation"] is None
    assert result["evidence"][0].startswith("node %s label nvidia.com/gpu.memory=40 gives KAI no GPU fraction:" % NODE)


# C7 ---------------------------------------------------------------------------------------

def test_c7_holds_with_the_mounts_env_runtime_class_and_limit_reference():
    result = claims.c7_hami_core_injection([recorded("shared_pod")], [recorded("node")], 20480)
    configmap = RECORDED["shared_pod"]["spec"]["containers"][0]["env"][1]["valueFrom"]["configMapKeyRef"]["name"]
    assert result == {"holds": True, "evidence": [
        "/etc/ld.so.preload mount (subPath ld.so.preload): present",
        "/usr/local/vgpu mount: present; CONTAINER_VGPU_MOUNT env: present",
        "runtimeClassName: nvidia",
        "CUDA_DEVICE_MEMORY_LIMIT env reference: present (ConfigMap %s) (hamicore writes %s at bind time)" % (configmap, limit(20480))]}
    assert limit(20480) == "20889m"


def _shared_pod(change):
    pod = recorded("shared_pod")
    change(pod["spec"], pod["spec"]["containers"][0])
    return pod


@pytest.mark.parametrize("pod, line, expected", [
    (_shared_pod(lambda s, c: c.update(volumeMounts=[m for m in c["volumeMounts"] if m["mountPath"] != "/etc/ld.so.preload"])), 0,
     "/etc/ld.so.preload mount (subPath none): missing"),
    (_shared_pod(lambda s, c: [m.pop("subPath", None) for m in c["volumeMounts"]]), 0, "/etc/ld.so.preload mount (subPath none): missing"),
    (_shared_pod(lambda s, c: c.update(volumeMounts=[m for m in c["volumeMounts"] if m["mountPath"] != "/usr/local/vgpu"])), 1,
     "/usr/local/vgpu mount: missing; CONTAINER_VGPU_MOUNT env: present"),
    (_shared_pod(lambda s, c: c.update(env=[e for e in c["env"] if e["name"] != "CONTAINER_VGPU_MOUNT"])), 1,
     "/usr/local/vgpu mount: present; CONTAINER_VGPU_MOUNT env: missing"),
    (_shared_pod(lambda s, c: s.pop("runtimeClassName")), 2, "runtimeClassName: none"),
    (_shared_pod(lambda s, c: s.update(runtimeClassName="runc")), 2, "runtimeClassName: runc"),
    (_shared_pod(lambda s, c: c.update(env=[e for e in c["env"] if e["name"] != "CUDA_DEVICE_MEMORY_LIMIT"])), 3,
     "CUDA_DEVICE_MEMORY_LIMIT env reference: missing (hamicore writes 20889m at bind time)"),
    (_shared_pod(lambda s, c: c["env"].__setitem__(1, {"name": "CUDA_DEVICE_MEMORY_LIMIT", "value": "20480m"})), 3,
     "CUDA_DEVICE_MEMORY_LIMIT env reference: missing (an env without a ConfigMap reference) (hamicore writes 20889m at bind time)"),
], ids=["no preload mount", "preload without subPath", "no vgpu mount", "no CONTAINER_VGPU_MOUNT", "no runtimeClassName",
        "another runtimeClassName", "no limit env", "a typed-in limit"])
def test_c7_fails_for_each_missing_piece(pod, line, expected):
    result = claims.c7_hami_core_injection([pod], [recorded("node")], 20480)
    assert result["holds"] is False
    assert result["evidence"][line] == expected


def test_c7_fails_for_a_pod_nobody_mutated_and_for_no_pod():
    for pods in ([recorded("whole_gpu_pod")], []):
        result = claims.c7_hami_core_injection(pods, [recorded("node")], 20480)
        assert result["holds"] is False
        assert result["evidence"][0].endswith("missing") and result["evidence"][3].startswith("CUDA_DEVICE_MEMORY_LIMIT env reference: missing")


def test_c7_names_no_limit_without_the_memory_label():
    node = recorded("node")
    del node["metadata"]["labels"]["nvidia.com/gpu.memory"]
    result = claims.c7_hami_core_injection([recorded("shared_pod")], [node], 20480)
    assert result["holds"] is True
    assert result["evidence"][3].endswith("(hamicore writes none (no nvidia.com/gpu.memory label: the hamicore plugin writes nothing) at bind time)")


# C8 ---------------------------------------------------------------------------------------

def test_c8_holds_as_the_expected_failure_on_a_mock_gpu():
    probe = recorded("probe_nvml_unavailable")
    result = claims.c8_reservation_boundary(probe, "nvml_unavailable")
    assert result == {"holds": True, "expected_failure": True,
                      "evidence": ["verdict: nvml_unavailable (expected nvml_unavailable), NVML ERROR_LIBRARY_NOT_FOUND"] + probe["evidence"]}


def test_c8_holds_when_the_reservation_succeeds_where_that_is_expected():
    probe = recorded("probe_reserved")
    result = claims.c8_reservation_boundary(probe, "reserved")
    assert result == {"holds": True, "expected_failure": False, "evidence": ["verdict: reserved (expected reserved)"] + probe["evidence"]}


@pytest.mark.parametrize("probe, expected, first", [
    ("probe_nvml_unavailable", "reserved", "verdict: nvml_unavailable (expected reserved), NVML ERROR_LIBRARY_NOT_FOUND"),
    ("probe_reserved", "nvml_unavailable", "verdict: reserved (expected nvml_unavailable)"),
    ("probe_pending", "nvml_unavailable", "verdict: pending (expected nvml_unavailable)"),
], ids=["no NVML where a GPU reserves", "reserved where the mock cannot", "never reached the boundary"])
def test_c8_fails_when_the_probe_reaches_another_verdict(probe, expected, first):
    result = claims.c8_reservation_boundary(recorded(probe), expected)
    assert result["holds"] is False and result["expected_failure"] is (expected != "reserved")
    assert result["evidence"] == [first] + RECORDED[probe]["evidence"]


def test_c8_without_evidence_says_the_probe_message():
    result = claims.c8_reservation_boundary({"verdict": "pending", "msg": "timed out"}, "nvml_unavailable")
    assert result["evidence"] == ["verdict: pending (expected nvml_unavailable)", "timed out"]


# The record -------------------------------------------------------------------------------

def record(decision, claim_id="C6", kai_running=True):
    return claims.claim_record(decision, claim_id, "KAI reads per-GPU memory", "KAI v0.17.0: kai-scheduler's log", kai_running)


def test_record_of_a_claim_that_holds():
    assert record({"holds": True, "evidence": ["a line"]}) == {
        "id": "C6", "claim": "KAI reads per-GPU memory", "decided_by": "KAI v0.17.0: kai-scheduler's log",
        "ok": True, "verdict": "holds", "evidence": ["a line"]}


def test_record_of_the_expected_failure_and_of_a_claim_that_fails():
    assert record(claims.c8_reservation_boundary(recorded("probe_nvml_unavailable"), "nvml_unavailable"), "C8")["verdict"] == "holds (expected failure)"
    failed = record(claims.c8_reservation_boundary(recorded("probe_pending"), "nvml_unavailable"), "C8")
    assert (failed["ok"], failed["verdict"]) == (False, "fails")


def test_record_of_a_claim_whose_evidence_could_not_be_read_is_an_error_with_the_message():
    decision = claims.claim_error("Failed to get client due to HTTPSConnectionPool(host='127.0.0.1', port=9)")
    result = record(decision)
    assert (result["ok"], result["verdict"]) == (False, "error")
    assert result["evidence"] == ["Failed to get client due to HTTPSConnectionPool(host='127.0.0.1', port=9)"]
    assert record(claims.claim_error(None))["evidence"] == ["error"]
    # an error is not blamed on KAI not running
    assert record(decision, kai_running=False)["evidence"] == result["evidence"]


def test_record_cleans_colours_newlines_and_tabs():
    line = "\x1b[34mINFO\x1b[0m\tfirst part\n   second part  \n"
    assert record({"holds": False, "evidence": [line, 3]})["evidence"] == ["INFO first part second part", "3"]


@pytest.mark.parametrize("claim_id", ["C3", "C5", "C6", "C8", "C9"])
def test_record_says_a_claim_waiting_on_kai_was_not_waited_for(claim_id):
    result = record({"holds": False, "evidence": ["no division line"]}, claim_id, kai_running=False)
    assert result["evidence"] == ["no division line", "not waited for: C2 found KAI not running"]


@pytest.mark.parametrize("claim_id, holds, kai_running", [
    ("C1", False, False), ("C4", False, False), ("C7", False, False),  # these never wait for KAI
    ("C6", True, False),                                              # it holds: nothing to explain
    ("C6", False, True),                                              # KAI runs: it was waited for
])
def test_record_adds_no_not_waited_line_otherwise(claim_id, holds, kai_running):
    assert record({"holds": holds, "evidence": ["x"]}, claim_id, kai_running)["evidence"] == ["x"]


SIM_PROCESSES = [
    {"name": "etcd", "part": "cluster", "pid": 11, "running": True},
    {"name": "kube-apiserver", "part": "cluster", "pid": 12, "running": True},
    {"name": "sim-agent", "part": "agent", "pid": 21, "running": True},
    {"name": "binder", "part": "kai", "pid": 31, "running": True},
    {"name": "kai-scheduler-default", "part": "kai", "pid": 32, "running": True},
    {"name": "kai-resource-isolator-webhook", "part": "isolator", "pid": 41, "running": True},
]


def with_dead(*names):
    return [dict(p, running=p["name"] not in names) for p in SIM_PROCESSES]


@pytest.mark.parametrize("dead, failing", [
    (("kube-apiserver",), {"C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9"}),
    (("sim-agent",), {"C2"}),
    (("kai-scheduler-default",), {"C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9"}),
    (("kai-resource-isolator-webhook",), {"C4", "C7", "C9"}),
    (("binder", "kai-resource-isolator-webhook"), {"C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9"}),
    ((), set()),
])
def test_a_claim_whose_process_is_dead_fails_naming_it_whatever_the_api_showed(dead, failing):
    processes = with_dead(*dead)
    for claim_id in ["C%d" % n for n in range(1, 10)]:
        result = claims.claim_record({"holds": True, "evidence": ["what the API showed"]}, claim_id, "a claim", "KAI", True, processes)
        if claim_id in failing:
            named = [p for p in processes if not p["running"] and p["part"] in claims.CLAIMS[claim_id].parts]
            assert (result["ok"], result["verdict"]) == (False, "fails"), (claim_id, result)
            assert result["evidence"] == ["not running: %s (%s, pid %d)" % (p["name"], p["part"], p["pid"]) for p in named] + [
                "what the API showed"]
        else:
            assert (result["ok"], result["verdict"], result["evidence"]) == (True, "holds", ["what the API showed"]), (claim_id, result)


def test_a_dead_process_turns_an_error_and_an_expected_failure_into_a_failure():
    processes = with_dead("kube-apiserver")
    errored = claims.claim_record(claims.claim_error("Connection refused"), "C5", "c", "KAI", True, processes)
    assert (errored["verdict"], errored["evidence"]) == ("fails", ["not running: kube-apiserver (cluster, pid 12)", "Connection refused"])
    expected = claims.claim_record(claims.c8_reservation_boundary(recorded("probe_nvml_unavailable"), "nvml_unavailable"), "C8", "c", "KAI",
                                   True, with_dead("binder"))
    assert (expected["ok"], expected["verdict"]) == (False, "fails")
    assert expected["evidence"][0] == "not running: binder (kai, pid 31)"


# C9 ---------------------------------------------------------------------------------------

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


def decide_c9(whole_gpus=1, **changes):
    inputs = dict(
        first=shared_pod("a"), second=shared_pod("b"),
        configmaps=[configmap("a-x-shared-gpu-0", limit(20480)), configmap("b-x-shared-gpu-0", limit(20000))],
        reservations=[reservation()],
        lines=[DIVISION.format(a=1.51), DIVISION.format(a=round(whole_gpus + fraction(20480) + fraction(20000), 2))],
    )
    inputs.update(changes)
    pods = [p for p in (inputs["first"], inputs["second"], recorded("whole_gpu_pod")) if p]
    return claims.c9_hamicore_numbers(pods, ["a", "b"], [20480, 20000], [recorded("node")], inputs["configmaps"],
                                      inputs["reservations"], inputs["lines"], "default-queue", whole_gpus)


def test_c9_holds_with_the_limits_kai_writes_one_uuid_and_one_reservation_pod():
    result = decide_c9()
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
def test_c9_fails_for_each_reason(change, why):
    result = decide_c9(**change)
    assert result["holds"] is False, why
    assert len(result["evidence"]) == 4


def test_c9_counts_the_whole_gpu_pods_request():
    """The whole-GPU count the workloads use is the one C9 adds to the two fractions."""
    expected = round(2 + fraction(20480) + fraction(20000), 2)
    assert decide_c9(whole_gpus=2)["evidence"][3] == "queue default-queue GPU allocated %s (expected 2 + 0.51 + 0.49 = %s)" % (expected, expected)
    # a line for one whole GPU does not make C9 hold when the workloads requested two
    assert decide_c9(whole_gpus=2, lines=[DIVISION.format(a=round(1 + fraction(20480) + fraction(20000), 2))])["holds"] is False


def test_each_claim_has_its_text_and_what_decided_it():
    origin = {"kai": "KAI v9", "isolator": "iso stand-in"}
    assert claims.CLAIM_IDS == ["C%d" % n for n in range(1, 10)]
    assert claims.decided_by("C1", origin, "gpu-0") == "the node's status: node gpu-0's allocatable nvidia.com/gpu"
    assert claims.decided_by("C1", dict(origin, gpus="NVIDIA's device plugin v1"), "gpu-0").startswith("NVIDIA's device plugin v1: node gpu-0")
    assert claims.decided_by("C7", origin, "gpu-0").startswith("KAI v9: admission") and "iso stand-in: mounts" in claims.decided_by("C7", origin, "gpu-0")
    assert claims.claim_text("C8", "nvml_unavailable") == "Boundary: shared pod cannot run"
    assert claims.claim_text("C8", "reserved") == "Boundary: the reservation succeeds, the shared pod binds"


def test_with_kai_by_its_chart_a_dead_node_process_fails_a_kai_claim_naming_it():
    dead = [{"name": "containerd", "part": "node", "pid": 7, "running": False}]
    assert claims.not_running_lines("C4", dead) == []
    assert claims.not_running_lines("C4", dead, kai_by_chart=True) == ["not running: containerd (node, pid 7)"]
