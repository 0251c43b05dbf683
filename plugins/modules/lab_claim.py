#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: lab_claim
short_description: Prove Lab 11's claims (C1-C9) from live evidence and return their records
version_added: 0.1.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - Reads what claim O(claim) looks at, waits where the claim waits for KAI to act, decides it
    and returns the report's record (RV(record)) with the programs that decided it
    (RV(provenance)) and, on the sim, the processes it depends on (RV(processes)).
  - With O(claims), one call proves several claims in the order given (one connection, one read
    of KAI's Deployments for all) and returns their records in RV(records).
  - V(C1) the GPU node's allocatable C(nvidia.com/gpu) is O(lab.gpu_count).
    V(C2) KAI's Deployments (O(kai.workloads)) each have an available replica and a Running pod whose containers are ready.
    V(C3) O(lab.queue) exists under O(lab.parent_queue) and the probe pod, which names
    O(lab.missing_queue), stays Pending with KAI's C(QueueDoesNotExist) event.
    V(C4) the isolator's webhook logs its annotation keys and mutates a server-side dry-run pod.
    V(C5) the whole-GPU pod runs on the GPU node with a BindRequest.
    V(C6) a scheduler division line shows the queue's GPU allocation computed with KAI's arithmetic.
    V(C7) the first shared pod carries HAMi-core's mounts, env and C(CUDA_DEVICE_MEMORY_LIMIT) reference.
    V(C8) M(gpulab.kai_hami.reservation_probe)'s verdict for the first shared pod is O(lab.expected_boundary).
    V(C9) the first two shared pods run on one GPU with the limits KAI's hamicore plugin computes.
  - The claims that wait for KAI to act (C3, C5, C6, C8, C9) wait at most O(wait_timeout)
    seconds, and not at all when KAI's Deployments are not available (the record says so).
  - A claim whose evidence cannot be read (the API does not answer, a kind is not served) is
    returned with verdict C(error) and the failed call as evidence; the task does not fail. The
    task fails only on bad options. RV(record.ok) says whether the claim holds.
  - With O(state_dirs), a claim one of whose processes does not run is C(fails) whatever the API
    shows, since what a dead process did before it died proves nothing.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpulab.kai_hami.kube_error
  - gpulab.kai_hami.wait
  - gpulab.kai_hami.attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; C4's pod is sent as a server-side dry-run in any mode.
  diff_mode:
    support: none
options:
  claim:
    description: The claim to prove. Give either O(claim) or O(claims).
    type: str
    choices: [C1, C2, C3, C4, C5, C6, C7, C8, C9]
  claims:
    description: Claims to prove in one call, in this order (each at most once).
    type: list
    elements: str
    choices: [C1, C2, C3, C4, C5, C6, C7, C8, C9]
  lab:
    description: The lab's names and numbers the claims expect (playbooks/lab11.yml's defaults shown).
    type: dict
    required: true
    suboptions:
      namespace:
        description: Namespace of the lab's pods.
        type: str
        default: default
      gpu_node:
        description: The GPU node.
        type: str
        required: true
      gpu_count:
        description: GPUs the node advertises (the GPU profile's count; the default is the a100 profile's).
        type: int
        default: 8
      queue:
        description: The leaf queue of the lab's pods.
        type: str
        default: default-queue
      parent_queue:
        description: The parent of O(lab.queue).
        type: str
        default: default
      missing_queue:
        description: The queue, missing on purpose, that C3's probe pod names.
        type: str
        default: lab11-no-such-queue
      probe_pod:
        description: C3's probe pod.
        type: str
        default: lab11-missing-queue-probe
      whole_gpu_pod:
        description: The whole-GPU pod (Step 6).
        type: str
        default: kai-whole-gpu
      whole_gpu_count:
        description: GPUs the whole-GPU pod requests.
        type: int
        default: 1
      shared_pods:
        description:
          - The shared pods with their C(gpu-memory) requests in MiB, the lab's shared pod
            (Step 7) first. C6 counts them all, C7 and C8 look at the first, C9 at the first two.
        type: list
        elements: dict
        required: true
        suboptions:
          name:
            description: The pod's name.
            type: str
            required: true
          request_mib:
            description: Its C(gpu-memory) annotation, MiB (a positive number).
            type: int
            required: true
      image:
        description:
          - Image of C4's dry-run pod (a dry-run pulls nothing). Unset, the image of the first shared
            pod, or when that pod does not exist, C(gpulab.kai-hami/dry-run), a name nothing pulls.
        type: str
      expected_boundary:
        description: The verdict C8 expects (V(reserved) where the reservation can be crossed).
        type: str
        default: nvml_unavailable
        choices: [reserved, nvml_unavailable, reservation_timeout, pending, not_shared]
  kai:
    description: KAI's parts, as the kai_scheduler and sim_kai roles publish them (C(kai_scheduler_made), C(sim_kai_made)).
    type: dict
    default: {}
    suboptions:
      namespace:
        description: KAI's namespace.
        type: str
        default: kai-scheduler
      workloads:
        description: KAI's Deployments.
        type: list
        elements: str
        default: [admission, binder, kai-operator, kai-scheduler-default, pod-grouper, podgroup-controller, queue-controller]
      scheduler_deployment:
        description: The scheduler's Deployment (its log holds the division lines).
        type: str
        default: kai-scheduler-default
      scheduler_name:
        description: KAI's scheduler name (C4's dry-run pod names it).
        type: str
        default: kai-scheduler
      reservation_namespace:
        description: Namespace of KAI's reservation pods.
        type: str
        default: kai-resource-reservation
      release:
        description:
          - The Helm release of KAI's chart, when KAI was installed by its chart (empty for KAI's programs run as the sim's local
            processes). The provenance names the release's chart, read from Helm's record of it.
        type: str
        default: ""
  isolator:
    description: The isolator's parts, as the kai_resource_isolator and sim_isolator roles publish them.
    type: dict
    default: {}
    suboptions:
      namespace:
        description: The isolator's namespace.
        type: str
        default: kai-resource-isolator
      webhook:
        description: The webhook's Deployment.
        type: str
        default: kai-resource-isolator-webhook
  state_dirs:
    description:
      - On the sim, the pid-file directory of each part (C(cluster), C(agent), C(kai), C(isolator)),
        as M(gpulab.kai_hami.sim_process_info) takes them. Empty elsewhere.
    type: dict
    default: {}
  report:
    description:
      - Write the report of the claims proved, from their records, as M(gpulab.kai_hami.lab_report)
        writes it (C(claims.json), C(report.md) and C(junit.xml)) in O(report.dir). Its summary names
        O(report.platform), the programs that decided the claims (RV(provenance)), the stand-ins, and
        the processes a claim depends on that do not run. Nothing is written in check mode.
      - The task is C(changed) when the report's outcome (each claim's C(id), C(ok) and C(verdict)) differs
        from the C(claims.json) already in O(report.dir), as M(gpulab.kai_hami.lab_report) decides it; a
        report written anew with this run's evidence (log lines, pod names, times) and the same verdicts is no change.
    type: dict
    version_added: 0.3.0
    suboptions:
      dir:
        description: The directory of the report's files (made when missing; its parent must exist).
        type: path
        required: true
      title:
        description: The lab's name, the report's title.
        type: str
        required: true
      platform:
        description: The platform the lab runs on, named in the summary's first line.
        type: str
        required: true
      heading:
        description: The heading of the report's table.
        type: str
        default: What This Lab Proved
  wait_timeout:
    default: 300
  wait_sleep:
    default: 1
"""

EXAMPLES = r"""
- name: C8 the shared pod stops at the reservation boundary
  gpulab.kai_hami.lab_claim:
    claim: C8
    lab:
      gpu_node: lab11-control-plane
      shared_pods: [{name: gpu-sharing-with-isolation, request_mib: 20480}]
    kai: "{{ sim_kai_made }}"
    isolator: "{{ sim_isolator_made }}"
  register: c8

- name: Show its verdict and evidence
  ansible.builtin.debug:
    msg: "{{ c8.record.verdict }}: {{ c8.record.evidence }}"

- name: All of Lab 11's claims in one call, and their report (claims.json, report.md, junit.xml)
  gpulab.kai_hami.lab_claim:
    claims: [C1, C2, C3, C4, C5, C6, C7, C8]
    lab:
      gpu_node: lab11-control-plane
      shared_pods: [{name: gpu-sharing-with-isolation, request_mib: 20480}]
    report:
      dir: "{{ playbook_dir }}/report"
      title: "Lab 11: KAI Scheduler + HAMi-core on a Fake GPU"
      platform: kind
  register: lab

- name: Print the report
  ansible.builtin.debug:
    msg: "{{ lab.report.splitlines() }}"
"""

RETURN = r"""
record:
  description: The report's record of the claim.
  returned: when O(claim) is given
  type: dict
  contains:
    id:
      description: The claim (O(claim)).
      type: str
    seconds:
      description: Seconds the claim took to read and decide, its wait included.
      type: float
    claim:
      description: What it claims.
      type: str
    decided_by:
      description: The program whose behaviour decided it.
      type: str
    ok:
      description: Whether it holds (an expected failure holds).
      type: bool
    verdict:
      description: C(holds), C(holds (expected failure)), C(fails) or C(error).
      type: str
    evidence:
      description: The lines that decided it.
      type: list
      elements: str
  sample: {"id": "C8", "claim": "Boundary: shared pod cannot run", "decided_by": "KAI <version>: the binder's events and the reservation app's log",
           "ok": true, "verdict": "holds (expected failure)",
           "evidence": ["verdict: nvml_unavailable (expected nvml_unavailable), NVML ERROR_LIBRARY_NOT_FOUND"], "seconds": 0.4}
records:
  description: The record (as RV(record)) of each claim proved, in the order of O(claims) (or O(claim) alone).
  returned: always
  type: list
  elements: dict
provenance:
  description: Which programs decided the claims, read from KAI's scheduler and the isolator's webhook Deployments.
  returned: always
  type: dict
  sample: {"kai_version": "<version>", "kai": "KAI <version> (its own programs, run as local processes on the sim)",
           "isolator": "kai-resource-isolator stand-in", "stand_ins": ["kai-resource-isolator stand-in"]}
processes:
  description: The processes of O(state_dirs) the claims depend on, each {name, part, pid, running}.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "kube-apiserver", "part": "cluster", "pid": 4242, "running": true}]
processes_not_running:
  description: The names of the processes in RV(processes) that do not run, each once.
  returned: always
  type: list
  elements: str
  version_added: 0.3.0
report:
  description: The text of C(report.md), as written in O(report.dir).
  returned: when O(report) is given
  type: str
  version_added: 0.3.0
report_files:
  description: The paths of the report's files.
  returned: when O(report) is given
  type: list
  elements: str
  version_added: 0.3.0
kube_error:
  description: The (first) failed Kubernetes call that made a verdict C(error) (its keys are in the notes).
  returned: when a Kubernetes call failed
  type: dict
"""

import time

from ansible_collections.gpulab.kai_hami.plugins.module_utils import claims
from ansible_collections.gpulab.kai_hami.plugins.module_utils.client import (
    auth_argument_spec,
    build_module,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.exceptions import KubeError
from ansible_collections.gpulab.kai_hami.plugins.module_utils.gpu_profiles import DEFAULT_PROFILE, PROFILES
from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_parts import (
    BIND_REQUEST_API,
    ISOLATOR_NAMESPACE,
    ISOLATOR_WEBHOOK,
    NAMESPACE,
    OPERATOR_DEPLOYMENT,
    QUEUE_API,
    QUEUE_LABEL,
    RESERVATION_NAMESPACE,
    SCHEDULER_DEPLOYMENT,
    SCHEDULER_NAME,
    WORKLOADS,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_math import KaiMathError
from ansible_collections.gpulab.kai_hami.plugins.module_utils.provenance import helm_chart, provenance
from ansible_collections.gpulab.kai_hami.plugins.module_utils.report import (
    DEFAULT_HEADING,
    files_problem,
    lab_summary,
    outcome_changed,
    report_files,
    write_files,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.reservation import (
    VERDICTS,
    PodNotFound,
    read_boundary,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.service import connect
from ansible_collections.gpulab.kai_hami.plugins.module_utils.sim_process import processes_in
from ansible_collections.gpulab.kai_hami.plugins.module_utils.waiter import poll, wait_argument_spec, wait_options_error

CLAIM_IDS = claims.CLAIM_IDS
LAB_LABEL_SELECTOR = "app.kubernetes.io/part-of=gpulab-lab11"
DRY_RUN_POD = "lab11-isolator-dry-run"
DRY_RUN_IMAGE = "gpulab.kai-hami/dry-run"
LOG_TAIL = 2000


def argument_spec():
    spec = auth_argument_spec()
    spec.update(
        claim=dict(type="str", choices=CLAIM_IDS),
        claims=dict(type="list", elements="str", choices=CLAIM_IDS),
        lab=dict(type="dict", required=True, options=dict(
            namespace=dict(type="str", default="default"),
            gpu_node=dict(type="str", required=True),
            gpu_count=dict(type="int", default=PROFILES[DEFAULT_PROFILE]["count"]),
            queue=dict(type="str", default="default-queue"),
            parent_queue=dict(type="str", default="default"),
            missing_queue=dict(type="str", default="lab11-no-such-queue"),
            probe_pod=dict(type="str", default="lab11-missing-queue-probe"),
            whole_gpu_pod=dict(type="str", default="kai-whole-gpu"),
            whole_gpu_count=dict(type="int", default=1),
            shared_pods=dict(type="list", elements="dict", required=True, options=dict(
                name=dict(type="str", required=True),
                request_mib=dict(type="int", required=True),
            )),
            image=dict(type="str"),
            expected_boundary=dict(type="str", default="nvml_unavailable", choices=list(VERDICTS)),
        )),
        kai=dict(type="dict", default={}, options=dict(
            namespace=dict(type="str", default=NAMESPACE),
            workloads=dict(type="list", elements="str", default=list(WORKLOADS)),
            scheduler_deployment=dict(type="str", default=SCHEDULER_DEPLOYMENT),
            scheduler_name=dict(type="str", default=SCHEDULER_NAME),
            reservation_namespace=dict(type="str", default=RESERVATION_NAMESPACE),
            release=dict(type="str", default=""),
        )),
        isolator=dict(type="dict", default={}, options=dict(
            namespace=dict(type="str", default=ISOLATOR_NAMESPACE),
            webhook=dict(type="str", default=ISOLATOR_WEBHOOK),
        )),
        state_dirs=dict(type="dict", default={}),
        report=dict(type="dict", options=dict(
            dir=dict(type="path", required=True),
            title=dict(type="str", required=True),
            platform=dict(type="str", required=True),
            heading=dict(type="str", default=DEFAULT_HEADING),
        )),
    )
    spec.update(wait_argument_spec(300, 1.0))
    return spec


def shared_pods(value):
    """``lab.shared_pods`` as [(name, request_mib)] (the argument spec types them), or a ValueError
    naming an entry whose request is not positive."""
    for index, pod in enumerate(value):
        if pod["request_mib"] <= 0:
            raise ValueError("lab.shared_pods[%d].request_mib must be a positive number of MiB, got %d" % (index, pod["request_mib"]))
    return [(pod["name"], pod["request_mib"]) for pod in value]


class ClaimDecider:
    """Reads each claim's evidence through one KubeService, waiting where the claim waits, and
    decides it: ``c1()`` ... ``c9()`` return the claim's decision (the functions of claims.py)."""

    def __init__(self, service, params, shared, timeout):
        self.service = service
        self.lab = params["lab"]
        self.kai = params["kai"]
        self.isolator = params["isolator"]
        self.shared = shared
        self.timeout = timeout
        self.sleep = params["wait_sleep"]

    def wait(self, read, done):
        """``read()`` until ``done(value)`` holds or the claim's wait runs out; the last value."""
        seen = {}

        def check():
            seen["value"] = read()
            return done(seen["value"])

        poll(check, self.timeout, sleep=self.sleep)
        return seen["value"]

    def node(self):
        node = self.service.get("v1", "Node", self.lab["gpu_node"])
        return [node] if node else []

    def kai_deployments(self):
        return self.service.list("apps/v1", "Deployment", namespace=self.kai["namespace"])

    def pod(self, name):
        pod = self.service.get("v1", "Pod", name, self.lab["namespace"])
        return [pod] if pod else []

    def scheduler_log(self):
        return self.service.deployment_log(self.kai["scheduler_deployment"], self.kai["namespace"], tail_lines=LOG_TAIL)

    def c1(self):
        return claims.c1_mock_gpus(self.node(), self.lab["gpu_node"], self.lab["gpu_count"])

    def c2(self):
        pods = self.service.list("v1", "Pod", namespace=self.kai["namespace"])
        return claims.c2_kai_runs(self.kai_deployments(), self.kai["workloads"], self.kai["namespace"], pods)

    def c3(self):
        lab = self.lab
        queues = self.service.list(QUEUE_API, "Queue")
        events = self.wait(lambda: self.service.events_for("Pod", lab["probe_pod"], lab["namespace"]),
                           lambda found: any(claims.QUEUE_MISSING_REASON in (e.get("message") or "") for e in found))
        return claims.c3_queues_gate(queues, events, self.pod(lab["probe_pod"]), lab["queue"], lab["parent_queue"],
                                     lab["missing_queue"], lab["namespace"], lab["probe_pod"])

    def dry_run_image(self):
        """C4's dry-run pod's image: lab.image, else the first shared pod's, else a name nothing pulls."""
        if self.lab["image"]:
            return self.lab["image"]
        for pod in self.pod(self.shared[0][0]):
            for container in (pod.get("spec") or {}).get("containers") or []:
                if container.get("image"):
                    return container["image"]
        return DRY_RUN_IMAGE

    def c4(self):
        lab = self.lab
        lines, no_log = self.service.deployment_log(self.isolator["webhook"], self.isolator["namespace"])
        dry_run = self.service.apply({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": DRY_RUN_POD, "namespace": lab["namespace"], "labels": {QUEUE_LABEL: lab["queue"]},
                         "annotations": {"gpu-memory": str(self.shared[0][1])}},
            "spec": {"schedulerName": self.kai["scheduler_name"], "containers": [{"name": "probe", "image": self.dry_run_image()}]},
        }, dry_run=True)
        return claims.c4_isolator_webhook(lines, no_log, dry_run)

    def c5(self):
        lab = self.lab
        pods = self.wait(lambda: self.pod(lab["whole_gpu_pod"]),
                         lambda found: any((p.get("status") or {}).get("phase") == "Running" for p in found))
        try:
            bind = self.service.get(BIND_REQUEST_API, "BindRequest", lab["whole_gpu_pod"], lab["namespace"])
        except KubeError as error:
            if error.reason != "kind not served":
                raise
            bind = None
        events = None
        if not any((p.get("status") or {}).get("phase") == "Running" for p in pods):
            events = self.service.events_for("Pod", lab["whole_gpu_pod"], lab["namespace"])
        return claims.c5_base_scheduling(pods, [bind] if bind else [], lab["gpu_node"], lab["namespace"], lab["whole_gpu_pod"], events)

    def c6(self):
        lab = self.lab
        nodes = self.node()
        requests = [request for dummy_name, request in self.shared]

        def decide():
            lines, no_log = self.scheduler_log()
            return claims.c6_gpu_memory_accounting(lines, no_log, nodes, lab["queue"], requests, lab["whole_gpu_count"], self.kai["namespace"])

        # The scheduler logs a division line every cycle; what it shows depends on the moment (a
        # pending shared pod, a bind in flight, all bound): wait for a line with the expected value
        # (not at all when the node's label gives no expected value).
        decision = self.wait(decide, lambda found: found["holds"] or found["expected_allocation"] is None)
        decision.pop("expected_allocation", None)
        return decision

    def c7(self):
        return claims.c7_hami_core_injection(self.pod(self.shared[0][0]), self.node(), self.shared[0][1])

    def c8(self):
        lab = self.lab
        expected = lab["expected_boundary"]
        try:
            probe = self.wait(lambda: read_boundary(self.service, self.shared[0][0], lab["namespace"], self.kai["reservation_namespace"]),
                              lambda found: found["verdict"] == expected)
        except PodNotFound as error:
            return claims.claim_error(str(error))
        return claims.c8_reservation_boundary(probe, expected)

    def c9(self):
        lab = self.lab
        names = [name for name, dummy_request in self.shared[:2]]
        pods = self.wait(lambda: self.service.list("v1", "Pod", namespace=lab["namespace"], label_selector=LAB_LABEL_SELECTOR),
                         lambda found: len([p for p in found if p["metadata"]["name"] in names
                                            and (p.get("status") or {}).get("phase") == "Running"]) == 2)
        configmaps = self.service.list("v1", "ConfigMap", namespace=lab["namespace"])
        reservation_pods = self.service.list("v1", "Pod", namespace=self.kai["reservation_namespace"])
        lines, dummy_no_log = self.scheduler_log()
        return claims.c9_hamicore_numbers(pods, names, [request for dummy_name, request in self.shared[:2]], self.node(), configmaps,
                                          reservation_pods, lines, lab["queue"], lab["whole_gpu_count"])


def origin(service, params):
    """provenance() of KAI's scheduler and the isolator's webhook Deployments, and whether KAI runs (C2)."""
    kai, isolator = params["kai"], params["isolator"]
    deployments = service.list("apps/v1", "Deployment", namespace=kai["namespace"])
    scheduler = next((d for d in deployments if d["metadata"]["name"] == kai["scheduler_deployment"]), None)
    operator = next((d for d in deployments if d["metadata"]["name"] == OPERATOR_DEPLOYMENT), None)
    chart = ""
    if kai.get("release"):
        chart = helm_chart(service.list("v1", "Secret", namespace=kai["namespace"], label_selector="owner=helm"), kai["release"])
    webhook = service.get("apps/v1", "Deployment", isolator["webhook"], isolator["namespace"])
    kai_runs = claims.c2_kai_runs(deployments, kai["workloads"], kai["namespace"])["holds"]
    node = service.get("v1", "Node", params["lab"]["gpu_node"])
    daemonsets = service.list("apps/v1", "DaemonSet") if node else []
    return provenance(scheduler, webhook, node, daemonsets, operator, chart), kai_runs


def sim_processes(claim_id, found, kai_by_chart=False):
    """Of the processes ``found`` (processes_in() of each state dir), those the claim depends on (claims.claim_parts())."""
    parts = claims.claim_parts(claim_id, kai_by_chart)
    return [process for process in found if process["part"] in parts]


def decide(claim_id, service, params, pods, timeout):
    """Claim ``claim_id``'s decision (claims.claim_error() when its evidence cannot be read) and the failed call, if any."""
    try:
        return getattr(ClaimDecider(service, params, pods, timeout), claim_id.lower())(), None
    except KubeError as error:
        return claims.claim_error(str(error)), error.details()
    except KaiMathError as error:
        return claims.claim_error("KAI's arithmetic has no answer: %s" % error), None


def main():
    module = build_module(argument_spec=argument_spec(), supports_check_mode=True,
                          mutually_exclusive=[("claim", "claims")], required_one_of=[("claim", "claims")])
    params = module.params
    claim_ids = [params["claim"]] if params["claim"] else params["claims"]
    for part, state_dir in params["state_dirs"].items():
        if not isinstance(state_dir, str) or not state_dir:
            module.fail_json(msg="state_dirs.%s must be a directory's path, got %r" % (part, state_dir))
    if wait_options_error(params):
        module.fail_json(msg=wait_options_error(params))
    if not claim_ids:
        module.fail_json(msg="claims must name at least one of %s" % ", ".join(CLAIM_IDS))
    for claim_id in claim_ids:
        if claim_ids.count(claim_id) > 1:
            module.fail_json(msg="claims names %s twice" % claim_id)
    report = params["report"]
    if report and files_problem(report["dir"], {}, 0o644):
        module.fail_json(msg="report.%s" % files_problem(report["dir"], {}, 0o644))
    try:
        pods = shared_pods(params["lab"]["shared_pods"])
    except ValueError as error:
        module.fail_json(msg=str(error))
    for claim_id in claim_ids:
        needed = claims.CLAIMS[claim_id].shared_pods
        if len(pods) < needed:
            module.fail_json(msg="%s needs %d shared pod(s) in lab.shared_pods, got %d" % (claim_id, needed, len(pods)))

    found = []
    for part in sorted(params["state_dirs"]):
        found += processes_in(part, params["state_dirs"][part])
    wanted = set(part for claim_id in claim_ids for part in claims.claim_parts(claim_id, bool(params["kai"]["release"])))
    result = dict(changed=False, provenance=provenance(None, None), processes=[p for p in found if p["part"] in wanted], records=[])
    decisions = {}
    kai_runs = True
    try:
        service = connect(module)
        result["provenance"], kai_runs = origin(service, params)
    except KubeError as error:
        # Nothing can be read: every claim is an error with the same cause.
        result["kube_error"] = error.details()
        decisions = dict((claim_id, (claims.claim_error(str(error)), 0.0)) for claim_id in claim_ids)
    # Waiting for KAI to act is pointless when KAI does not run: decide at once (the record says so).
    timeout = params["wait_timeout"] if kai_runs else 0
    for claim_id in claim_ids:
        if claim_id not in decisions:
            started = time.monotonic()
            decision, kube_error = decide(claim_id, service, params, pods, timeout)
            decisions[claim_id] = (decision, time.monotonic() - started)
            if kube_error and "kube_error" not in result:
                result["kube_error"] = kube_error
        decision, seconds = decisions[claim_id]
        text = claims.claim_text(claim_id, params["lab"]["expected_boundary"])
        by = claims.decided_by(claim_id, result["provenance"], params["lab"]["gpu_node"])
        kai_by_chart = bool(params["kai"]["release"])
        record = claims.claim_record(decision, claim_id, text, by, kai_runs, sim_processes(claim_id, found, kai_by_chart), kai_by_chart)
        record["seconds"] = round(seconds, 1)
        result["records"].append(record)
    if params["claim"]:
        result["record"] = result["records"][0]
    result["processes_not_running"] = not_running(result["processes"])
    if report:
        properties = dict(
            platform=report["platform"], node=result["provenance"].get("node", ""), gpus=result["provenance"].get("gpus", ""),
            processes_not_running=result["processes_not_running"],
            **dict((key, result["provenance"].get(key)) for key in ("kai", "kai_version", "isolator", "stand_ins")))
        files = report_files(report["title"], result["records"], lab_summary(report["platform"], result["provenance"], result["processes_not_running"]),
                             properties, heading=report["heading"])
        result["changed"] = outcome_changed(report["dir"], result["records"])
        try:
            written, result["report_files"], dummy_diffs = write_files(report["dir"], files, check_mode=module.check_mode)
        except (IOError, OSError) as error:
            module.fail_json(msg="cannot write the report's %s: %s" % (error.filename, error), **result)
        result["report"] = files["report.md"]
    module.exit_json(**result)


def not_running(processes):
    """The names of the processes that do not run, each once, in their order."""
    names = []
    for process in processes:
        if not process["running"] and process["name"] not in names:
            names.append(process["name"])
    return names


if __name__ == "__main__":
    main()
