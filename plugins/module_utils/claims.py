# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lab 11's claims, decided from API objects and log lines read beforehand.

Each ``cN_<what>`` function takes what the lab_claim module read for claim CN (API objects as
dicts, log lines, reservation_probe's classification) and the expected inputs, and returns
``{'holds': bool, 'evidence': [lines]}``. Expected numbers come from KAI's arithmetic
(kai_math), computed from the inputs. ``claim_record`` turns a decision into the report's
record: the one place a claim's verdict is named.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections import namedtuple

from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_math import (
    KaiMathError,
    gpu_fraction,
    hamicore_memory_limit,
    last_division,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_parts import (
    GPU_GROUP_LABEL,
    GPU_INDEX_ANNOTATION,
    GPU_MEMORY_LABEL,
    GPU_RESOURCE,
    ISOLATOR_VGPU_VOLUME,
    SCHEDULER_DEPLOYMENT,
)

# One row per claim, everything the lab knows of it besides how it is decided (cN_<what> below):
#   title         its line in the report (C8's depends on the boundary the lab expects: see claim_text);
#   decided_by    the component whose behaviour decided it (the report's "decided by"): {kai},
#                 {isolator} and {gpus} are provenance()'s kai, isolator and gpus, {node} the GPU node;
#   parts         on the sim platform, the parts of the sim (see the sim_process_info module's
#                 state_dirs) it depends on. The cluster's own processes (etcd, kube-apiserver,
#                 kube-controller-manager, kwok) serve every claim; the sim's agent keeps KAI's
#                 Deployments' readiness; KAI decides the queue, scheduling, accounting, admission and
#                 reservation claims, and its admission webhook (failurePolicy Fail) admits C4's
#                 dry-run pod; the isolator injects. A real GPU node's kubelet and containerd (part
#                 "node") advertise C1's GPUs (the device plugin runs there) and run the pods of C5,
#                 C8 and C9;
#   waits_on_kai  it waits (lab_claim's wait_timeout, the lab's lab11_wait_timeout) for KAI to act:
#                 an event, a bind, a log line, a reservation. When C2 found KAI not running it is
#                 decided at once, and says why;
#   shared_pods   how many of the lab's shared pods (lab_claim's lab.shared_pods) it looks at.
Claim = namedtuple("Claim", "title decided_by parts waits_on_kai shared_pods")
CLAIMS = {
    "C1": Claim(title="Mock advertises whole GPUs",
                decided_by="{gpus}: node {node}'s allocatable nvidia.com/gpu",
                parts=("cluster", "node"), waits_on_kai=False, shared_pods=0),
    "C2": Claim(title="KAI installs and runs",
                decided_by="{kai}: its Deployments and their pods",
                parts=("cluster", "agent", "kai"), waits_on_kai=False, shared_pods=0),
    "C3": Claim(title="Queues gate scheduling",
                decided_by="{kai}: kai-scheduler's event on the probe pod",
                parts=("cluster", "kai"), waits_on_kai=True, shared_pods=0),
    "C4": Claim(title="Isolator webhook is active",
                decided_by="{isolator}: its log and a server-side dry-run through the admission chain",
                parts=("cluster", "kai", "isolator"), waits_on_kai=False, shared_pods=1),
    "C5": Claim(title="KAI base scheduling works",
                decided_by="{kai}: kai-scheduler's BindRequest and the binder",
                parts=("cluster", "kai", "node"), waits_on_kai=True, shared_pods=0),
    "C6": Claim(title="KAI reads per-GPU memory",
                decided_by="{kai}: kai-scheduler's log",
                parts=("cluster", "kai"), waits_on_kai=True, shared_pods=1),
    "C7": Claim(title="Isolator injects HAMi-core",
                decided_by="{kai}: admission (runtimeClassName, CUDA_DEVICE_MEMORY_LIMIT reference); {isolator}: mounts and env",
                parts=("cluster", "kai", "isolator"), waits_on_kai=False, shared_pods=1),
    "C8": Claim(title="Boundary: shared pod cannot run",
                decided_by="{kai}: the binder's events and the reservation app's log",
                parts=("cluster", "kai", "node"), waits_on_kai=True, shared_pods=1),
    "C9": Claim(title="KAI's hamicore numbers reach the pod",
                decided_by="{kai}: the binder's hamicore and gpusharing plugins (the shared pods' ConfigMaps) and kai-scheduler's log",
                parts=("cluster", "kai", "isolator", "node"), waits_on_kai=True, shared_pods=2),
}
CLAIM_IDS = sorted(CLAIMS, key=lambda claim_id: int(claim_id[1:]))
C8_CROSSED = "Boundary: the reservation succeeds, the shared pod binds"
LIMIT_ENV = "CUDA_DEVICE_MEMORY_LIMIT"
DEVICES_KEY = "NVIDIA_VISIBLE_DEVICES"
QUEUE_MISSING_REASON = "QueueDoesNotExist"
ISOLATOR_KEYS_LINE = "annotationKeys=gpu-fraction|gpu-memory"
ISOLATOR_VOLUME_PREFIX = "kai-resource-isolator-"
PRELOAD_PATH = "/etc/ld.so.preload"
VGPU_PATH = "/usr/local/vgpu"
VGPU_MOUNT_ENV = "CONTAINER_VGPU_MOUNT"
NOT_WAITED_LINE = "not waited for: C2 found KAI not running"


def claim_parts(claim_id, kai_by_chart=False):
    """The parts of the sim claim ``claim_id`` depends on (CLAIMS' parts). KAI installed by its chart
    runs in the real node's containers, with Deployments of its operator's: a claim KAI decides
    depends on the node (its containerd and kubelet), and the agent, which keeps the readiness of
    the Deployments that stand for KAI's local processes, serves it no more."""
    parts = CLAIMS[claim_id].parts if claim_id in CLAIMS else ()
    if not kai_by_chart:
        return parts
    parts = tuple(part for part in parts if part != "agent")
    return parts + ("node",) if "kai" in parts and "node" not in parts else parts


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NEWLINE = re.compile(r"\s*\n\s*")


def _name(obj):
    meta = (obj or {}).get("metadata") or {}
    return "%s/%s" % (meta.get("namespace"), meta.get("name"))


def _limit_configmap(pod):
    """Name of the ConfigMap the pod's CUDA_DEVICE_MEMORY_LIMIT env refers to (KAI's admission adds it)."""
    for container in ((pod or {}).get("spec") or {}).get("containers") or []:
        for env in container.get("env") or []:
            ref = ((env.get("valueFrom") or {}).get("configMapKeyRef") or {})
            if env.get("name") == LIMIT_ENV and ref.get("name"):
                return ref["name"]
    return None


def _shared_pod_facts(pod, request_mib, label, configmaps):
    """What KAI wrote for one shared pod: its fraction, expected limit, ConfigMap data, group."""
    fraction = gpu_fraction(request_mib, label)
    configmap_name = _limit_configmap(pod)
    data = ((configmaps.get(configmap_name) or {}).get("data") or {}) if configmap_name else {}
    return dict(
        name=_name(pod),
        phase=((pod or {}).get("status") or {}).get("phase", "missing"),
        group=(((pod or {}).get("metadata") or {}).get("labels") or {}).get(GPU_GROUP_LABEL),
        fraction=fraction,
        expected_limit=hamicore_memory_limit(fraction, label),
        configmap=configmap_name,
        limit=data.get(LIMIT_ENV),
        devices=data.get(DEVICES_KEY),
    )


def _get(obj, *keys):
    """obj[k1][k2]... with None for anything missing on the way."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _first(resources):
    """The first object of a list the API returned, or {} when there is none."""
    return (resources or [None])[0] or {}


def _state(present):
    return "present" if present else "missing"


def c1_mock_gpus(nodes, node_name, gpu_count):
    """C1: the mock advertises whole GPUs: the node's allocatable nvidia.com/gpu is the profile's count.

    ``nodes`` is what the API returned for the GPU node (a list of at most one Node).
    """
    allocatable = _get(_first(nodes), "status", "allocatable", GPU_RESOURCE)
    allocatable = "none" if allocatable is None else str(allocatable)
    return {"holds": allocatable == str(gpu_count),
            "evidence": ["node %s allocatable %s: %s (expected %s)" % (node_name, GPU_RESOURCE, allocatable, gpu_count)]}


def _workload_of(pod):
    """The Deployment a pod belongs to, from its ReplicaSet owner (``<deployment>-<hash>``); '' when none."""
    owners = [o for o in _get(pod, "metadata", "ownerReferences") or [] if o.get("kind") == "ReplicaSet"]
    return owners[0]["name"].rsplit("-", 1)[0] if owners else ""


def _running_container(pod):
    """``runtime://id`` (shortened) of a Running pod's first container when every container is ready; '' otherwise."""
    statuses = _get(pod, "status", "containerStatuses") or []
    if _get(pod, "status", "phase") != "Running" or not statuses or not all(s.get("ready") for s in statuses):
        return ""
    runtime, found, container = (statuses[0].get("containerID") or "").partition("://")
    return "%s://%s" % (runtime, container[:12]) if found else "running"


def c2_kai_runs(deployments, workloads, namespace, pods=None):
    """C2: KAI installs and runs: each of its workloads is a Deployment with an available replica,
    and (with ``pods``, those of KAI's namespace) a Running pod whose containers are ready."""
    available = set(_get(d, "metadata", "name") for d in deployments or [] if (_get(d, "status", "availableReplicas") or 0) >= 1)
    up = [w for w in workloads if w in available]
    down = [w for w in workloads if w not in available]
    evidence = ["available in %s: %s" % (namespace, ", ".join(up) or "none"),
                "missing or not available: %s" % (", ".join(down) or "none")]
    if pods is None:
        return {"holds": not down, "evidence": evidence}
    running = {}
    for pod in pods:
        container = _running_container(pod)
        if container and _workload_of(pod) in workloads:
            running.setdefault(_workload_of(pod), container)
    without = [w for w in workloads if w not in running]
    evidence += ["Running pods: %s" % (", ".join("%s (%s)" % (w, running[w]) for w in workloads if w in running) or "none"),
                 "without a Running pod: %s" % (", ".join(without) or "none")]
    return {"holds": not down and not without, "evidence": evidence}


def c3_queues_gate(queues, events, probe_pods, queue, parent_queue, missing_queue, namespace, probe_pod):
    """C3: queues gate scheduling: ``queue`` exists under ``parent_queue``, and the probe pod, which
    names ``missing_queue``, is Pending with KAI's QueueDoesNotExist event.

    ``events`` are the probe pod's events; ``probe_pods`` what the API returned for it.
    """
    names = [_get(q, "metadata", "name") for q in queues or []]
    parent = next((_get(q, "spec", "parentQueue") or "" for q in queues or [] if _get(q, "metadata", "name") == queue), "")
    messages = [e.get("message") or "" for e in events or [] if QUEUE_MISSING_REASON in (e.get("message") or "")]
    message = messages[-1] if messages else ""
    phase = _get(_first(probe_pods), "status", "phase") or "missing"
    holds = parent_queue in names and queue in names and parent == parent_queue and bool(message) and phase == "Pending"
    event = message or "no %s event" % QUEUE_MISSING_REASON
    return {"holds": holds,
            "evidence": ["queues: %s; %s has parent %s (expected %s)" % (", ".join(sorted(names)) or "none", queue, parent or "none", parent_queue),
                         "pod %s/%s (queue %s) is %s; event: %s" % (namespace, probe_pod, missing_queue, phase, event)]}


def c4_isolator_webhook(log_lines, log_error, dry_run_pod):
    """C4: the isolator webhook is active: its startup line names the annotation keys, and a
    server-side dry-run of an annotated pod comes back with the isolator's vgpu volume.

    ``log_error`` says why the log could not be read (else None);
    ``dry_run_pod`` the pod the API server returned for the dry-run.
    """
    lines = [line for line in log_lines or [] if "annotationKeys=" in line]
    line = lines[-1] if lines else ""
    # only the isolator's volumes: the service-account volume's name is random on every dry-run
    volumes = [v.get("name") for v in _get(dry_run_pod, "spec", "volumes") or [] if (v.get("name") or "").startswith(ISOLATOR_VOLUME_PREFIX)]
    return {"holds": ISOLATOR_KEYS_LINE in line and ISOLATOR_VGPU_VOLUME in volumes,
            "evidence": ["webhook log: %s" % (line or "no annotationKeys line (%s)" % (log_error or "no log")),
                         "isolator volumes in the dry-run pod: %s" % (", ".join(volumes) or "none")]}


def c5_base_scheduling(pods, bind_requests, node_name, namespace, pod_name, events=None):
    """C5: KAI base scheduling works: the whole-GPU pod runs on the GPU node, bound by KAI (its
    BindRequest exists; the manifest names no node). ``events``, the pod's (oldest first), say
    why a pod that does not run waits."""
    pod = _first(pods)
    phase = _get(pod, "status", "phase") or "missing"
    node = _get(pod, "spec", "nodeName") or ""
    bound = bool(bind_requests)
    evidence = ["pod %s/%s is %s on node %s (expected %s)" % (namespace, pod_name, phase, node or "none", node_name),
                "BindRequest %s/%s: %s" % (namespace, pod_name, "exists" if bound else "not found")]
    if phase not in ("Running", "missing"):
        evidence.extend(_containers_waiting(pod))
        evidence.extend(_last_events(events))
    return {"holds": phase == "Running" and node == node_name and bound, "evidence": evidence}


def _last_events(events, count=6):
    """The last event of each reason about an object, the latest reasons last, as 'event Reason (xN): message'
    (N the times that reason was seen)."""
    last, seen = {}, {}
    for event in events or []:
        reason = event.get("reason") or ""
        seen[reason] = seen.get(reason, 0) + (event.get("count") or 1)
        last.pop(reason, None)
        last[reason] = event
    said = []
    for reason, event in list(last.items())[-count:]:
        times = (" (x%d)" % seen[reason]) if seen[reason] > 1 else ""
        said.append("event %s%s: %s" % (reason, times, (event.get("message") or "")[:300]))
    return said


def _containers_waiting(pod):
    """Why a pod's containers do not run yet, as the kubelet says it ('container app waiting: ErrImagePull: ...')."""
    reasons = []
    for status in (_get(pod, "status", "containerStatuses") or []):
        waiting = _get(status, "state", "waiting")
        if waiting:
            message = (": " + waiting["message"][:300]) if waiting.get("message") else ""
            reasons.append("container %s waiting: %s%s" % (status.get("name"), waiting.get("reason") or "", message))
    conditions = [c for c in (_get(pod, "status", "conditions") or []) if c.get("status") != "True" and c.get("message")]
    reasons.extend("condition %s: %s" % (c.get("type"), c["message"][:300]) for c in conditions)
    return reasons


def c6_gpu_memory_accounting(scheduler_lines, log_error, nodes, queue, requests_mib, whole_gpus, kai_namespace):
    """C6: KAI reads per-GPU memory: a scheduler division line for ``queue`` shows GPU allocated ==
    ``whole_gpus`` (the whole-GPU pod's request) + kai_gpu_fraction(request, label) for each of
    ``requests_mib`` (the shared pods' gpu-memory requests), label being the node's
    nvidia.com/gpu.memory label.

    Also returns ``expected_allocation`` (None when there is nothing to wait for: the node has
    no usable label), so the task can wait for the line it expects.
    """
    node = _first(nodes)
    label = _get(node, "metadata", "labels", GPU_MEMORY_LABEL)
    node_name = _get(node, "metadata", "name") or "(not found)"
    if not label:
        return {"holds": False, "expected_allocation": None,
                "evidence": ["node %s has no %s label (Step 3 sets it, with gpulab.kai_hami.gpu_node_label)" % (node_name, GPU_MEMORY_LABEL)]}
    try:
        fractions = [gpu_fraction(request, label) for request in requests_mib]
    except KaiMathError as error:
        return {"holds": False, "expected_allocation": None,
                "evidence": ["node %s label %s=%s gives KAI no GPU fraction: %s" % (node_name, GPU_MEMORY_LABEL, label, error)]}
    expected = round(whole_gpus + sum(fractions), 2)
    match = last_division(scheduler_lines or [], queue, expected)
    division = match or last_division(scheduler_lines or [], queue) or {}
    terms = " + ".join(["%d" % whole_gpus] + ["kai_gpu_fraction(%s, %s)" % (request, label) for request in requests_mib])
    allocated = _get(division, "gpu", "allocated")
    return {"holds": match is not None, "expected_allocation": expected,
            "evidence": ["queue %s GPU allocated: %s; expected %s = %s" % (queue, "none" if allocated is None else allocated, terms, expected),
                         "scheduler log: %s" % (division.get("line") or "no division line for %s in the log of deployment/%s in %s%s" % (
                             queue, SCHEDULER_DEPLOYMENT, kai_namespace, " (%s)" % log_error if log_error else ""))]}


def c7_hami_core_injection(pods, nodes, request_mib):
    """C7: the isolator injects HAMi-core and KAI wires the memory limit into the shared pod: the
    /etc/ld.so.preload subPath and /usr/local/vgpu mounts, CONTAINER_VGPU_MOUNT, runtimeClassName
    nvidia, and a CUDA_DEVICE_MEMORY_LIMIT env taken from a ConfigMap (which the hamicore plugin
    fills at bind time with kai_memory_limit(fraction, label), named in the evidence)."""
    pod = _first(pods)
    spec = pod.get("spec") or {}
    container = (spec.get("containers") or [{}])[0]
    mounts = container.get("volumeMounts") or []
    env = [e.get("name") for e in container.get("env") or []]
    preload = [m for m in mounts if m.get("mountPath") == PRELOAD_PATH and m.get("subPath")]
    vgpu = [m for m in mounts if m.get("mountPath") == VGPU_PATH]
    limit_configmap = _limit_configmap(pod)
    label = _get(_first(nodes), "metadata", "labels", GPU_MEMORY_LABEL)
    if not label:
        limit = "none (no %s label: the hamicore plugin writes nothing)" % GPU_MEMORY_LABEL
    else:
        try:
            limit = hamicore_memory_limit(gpu_fraction(request_mib, label), label) or "nothing"
        except KaiMathError as error:
            limit = "none (%s)" % error
    checks = [preload, vgpu, VGPU_MOUNT_ENV in env, limit_configmap, spec.get("runtimeClassName") == "nvidia"]
    return {"holds": all(bool(c) for c in checks),
            "evidence": ["%s mount (subPath %s): %s" % (PRELOAD_PATH, preload[0]["subPath"] if preload else "none", _state(preload)),
                         "%s mount: %s; %s env: %s" % (VGPU_PATH, _state(vgpu), VGPU_MOUNT_ENV, _state(VGPU_MOUNT_ENV in env)),
                         "runtimeClassName: %s" % (spec.get("runtimeClassName") or "none"),
                         "%s env reference: %s (hamicore writes %s at bind time)" % (
                             LIMIT_ENV, "present (ConfigMap %s)" % limit_configmap if limit_configmap else
                             ("missing (an env without a ConfigMap reference)" if LIMIT_ENV in env else "missing"), limit)]}


def c8_reservation_boundary(probe, expected_boundary):
    """C8: the reservation boundary: reservation_probe's verdict is ``expected_boundary``.

    Anything but ``reserved`` expected is an expected failure (a mock GPU: the reservation pod
    finds no NVML), returned as ``expected_failure``. ``probe`` is reservation_probe's result.
    """
    probe = probe or {}
    verdict = probe.get("verdict") or "none"
    first = "verdict: %s (expected %s)" % (verdict, expected_boundary)
    if probe.get("nvml_error"):
        first += ", NVML %s" % probe["nvml_error"]
    details = probe["evidence"] if "evidence" in probe else [probe.get("msg") or "no evidence"]
    return {"holds": verdict == expected_boundary, "expected_failure": expected_boundary != "reserved",
            "evidence": [first] + list(details)}


def c9_hamicore_numbers(pods, pod_names, requests_mib, nodes, configmaps, reservation_pods, scheduler_lines, queue, whole_gpus=1):
    """C9: the numbers KAI's hamicore plugin writes reach shared pods, and two pods share one GPU.

    ``pods`` are the lab's pods, among them the two shared pods ``pod_names``, whose
    ``gpu-memory`` requests are ``requests_mib``; ``nodes`` what the API returned for the GPU node;
    ``configmaps`` the ConfigMaps of the pods' namespace; ``reservation_pods`` the pods in KAI's
    reservation namespace; ``scheduler_lines`` the scheduler's log lines; ``whole_gpus`` the
    whole-GPU pod's request, also in the queue's allocation.
    """
    by_pod_name = dict((_get(p, "metadata", "name"), p) for p in pods or [])
    first_pod, second_pod = by_pod_name.get(pod_names[0]), by_pod_name.get(pod_names[1])
    node_memory_label = _get(_first(nodes), "metadata", "labels", GPU_MEMORY_LABEL)
    by_name = dict((((c.get("metadata") or {}).get("name")), c) for c in configmaps or [])
    first = _shared_pod_facts(first_pod, requests_mib[0], node_memory_label, by_name)
    second = _shared_pod_facts(second_pod, requests_mib[1], node_memory_label, by_name)
    group_pods = [p for p in reservation_pods or []
                  if first["group"] and ((p.get("metadata") or {}).get("labels") or {}).get(GPU_GROUP_LABEL) == first["group"]]
    reserved = sorted(set(((p.get("metadata") or {}).get("annotations") or {}).get(GPU_INDEX_ANNOTATION) for p in group_pods) - set([None]))
    expected_allocation = round(whole_gpus + first["fraction"] + second["fraction"], 2)
    division = last_division(scheduler_lines or [], queue, expected_allocation)

    checks = [
        first["phase"] == "Running",
        first["limit"] is not None and first["limit"] == first["expected_limit"],
        len(reserved) == 1 and first["devices"] == reserved[0],
        second["phase"] == "Running",
        second["group"] is not None and second["group"] == first["group"],
        second["devices"] is not None and second["devices"] == first["devices"],
        second["limit"] is not None and second["limit"] == second["expected_limit"],
        len(group_pods) == 1,
        division is not None,
    ]
    evidence = []
    for facts in (first, second):
        evidence.append(
            "pod %s is %s in GPU group %s; ConfigMap %s: %s=%s (expected kai_memory_limit(%.2f) = %s), %s=%s"
            % (facts["name"], facts["phase"], facts["group"] or "none", facts["configmap"] or "none", LIMIT_ENV,
               facts["limit"] or "none", facts["fraction"], facts["expected_limit"], DEVICES_KEY, facts["devices"] or "none"))
    evidence.append(
        "reservation pods of GPU group %s: %s; reserved GPU: %s"
        % (first["group"] or "none", ", ".join(_name(p) for p in group_pods) or "none", ", ".join(reserved) or "none"))
    evidence.append(
        "queue %s GPU allocated %s (expected %d + %.2f + %.2f = %s)"
        % (queue, division["gpu"].get("allocated") if division else "not seen", whole_gpus, first["fraction"],
           second["fraction"], expected_allocation))
    return {"holds": all(checks), "evidence": evidence}


def claim_text(claim_id, expected_boundary="nvml_unavailable"):
    """The claim's line in the report."""
    if claim_id == "C8" and expected_boundary == "reserved":
        return C8_CROSSED
    return CLAIMS[claim_id].title


def decided_by(claim_id, origin, node):
    """What decided the claim, from ``origin`` (provenance()'s answer) and the GPU node's name."""
    return CLAIMS[claim_id].decided_by.format(kai=origin["kai"], isolator=origin["isolator"], node=node,
                                              gpus=origin.get("gpus") or "the node's status")


def claim_error(message):
    """The decision of a claim whose evidence could not be read: the error as evidence (verdict ``error``)."""
    return {"holds": False, "error": True, "evidence": [message or "error"]}


def _clean(line):
    """One evidence line: no ANSI colours, newlines (with the space around them) or tabs."""
    return _NEWLINE.sub(" ", _ANSI.sub("", "%s" % (line,))).replace("\t", " ").strip()


def not_running_lines(claim_id, processes, kai_by_chart=False):
    """One evidence line per process ``claim_id`` depends on (claim_parts()) that does not run.

    ``processes`` is the sim_process_info module's list ({name, part, pid, running}).
    """
    parts = claim_parts(claim_id, kai_by_chart)
    return ["not running: %s (%s, pid %s)" % (p.get("name"), p.get("part"), p.get("pid"))
            for p in processes or [] if p.get("part") in parts and not p.get("running")]


def claim_record(decision, claim_id, claim, decided_by, kai_running=True, processes=None, kai_by_chart=False):
    """The report's record of one claim: ``id``, ``claim``, ``decided_by``, ``ok``, ``verdict``
    (``holds``, ``holds (expected failure)``, ``fails`` or ``error``) and ``evidence`` (clean lines).

    A claim that waits for KAI, decided without waiting because C2 found KAI not running
    (``kai_running`` false), and that does not hold, says so in a last line. A claim one of
    whose processes (``processes``, on the sim) does not run fails whatever the API showed,
    with a first line per dead process: what a dead process did before it died proves nothing.
    """
    holds = bool(decision.get("holds"))
    error = bool(decision.get("error"))
    dead = not_running_lines(claim_id, processes, kai_by_chart)
    if dead:
        holds, error = False, False
    if error:
        verdict = "error"
    elif holds:
        verdict = "holds (expected failure)" if decision.get("expected_failure") else "holds"
    else:
        verdict = "fails"
    evidence = dead + [_clean(line) for line in decision.get("evidence") or []]
    if claim_id in CLAIMS and CLAIMS[claim_id].waits_on_kai and not kai_running and not holds and not error:
        evidence.append(NOT_WAITED_LINE)
    return {"id": claim_id, "claim": claim, "decided_by": decided_by, "ok": holds and not error, "verdict": verdict, "evidence": evidence}
