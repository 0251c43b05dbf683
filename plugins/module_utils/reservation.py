# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Classify KAI's reservation-pod boundary for a shared-GPU pod, from API objects.

KAI's binder reserves a GPU for a shared pod by starting a reservation pod in
``kai-resource-reservation`` that calls NVML and annotates itself with the GPU's UUID. On a
mock GPU the call fails and the shared pod never binds. ``classify`` names which case a pod is
in and keeps the event and log lines that decided it; ``read_boundary`` reads those objects.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_parts import (
    GPU_GROUP_LABEL,
    GPU_INDEX_ANNOTATION,
    RESERVATION_APP_SELECTOR,
    SHARING_ANNOTATIONS,
)

VERDICTS = ("reserved", "nvml_unavailable", "reservation_timeout", "pending", "not_shared")
BINDING_ERROR = "BindingError"
RESERVATION_TIMEOUT_TEXT = "failed waiting for GPU reservation pod to allocate"
NVML_ERROR = re.compile(r"unable to initialize NVML: (?P<code>[A-Za-z0-9_]+)")


def is_shared(pod):
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return any(key in annotations for key in SHARING_ANNOTATIONS)


def gpu_group(pod):
    return ((pod.get("metadata") or {}).get("labels") or {}).get(GPU_GROUP_LABEL)


def matching_reservation_pods(pod, reservation_pods):
    """Reservation pods of this pod's GPU group when it has one, else all of them."""
    group = gpu_group(pod)
    if not group:
        return list(reservation_pods)
    return [r for r in reservation_pods if gpu_group(r) == group]


def _event_count(event):
    series = event.get("series") or {}
    return int(series.get("count") or event.get("count") or 1)


def _summary(reservation_pod):
    metadata = reservation_pod.get("metadata") or {}
    return dict(
        name=metadata.get("name"),
        node=(reservation_pod.get("spec") or {}).get("nodeName"),
        phase=(reservation_pod.get("status") or {}).get("phase"),
        gpu_group=gpu_group(reservation_pod),
        gpu=(metadata.get("annotations") or {}).get(GPU_INDEX_ANNOTATION),
    )


def classify(pod, events, reservation_pods, logs):
    """Decide the verdict for ``pod``.

    ``events`` are the pod's core/v1 Events; ``reservation_pods`` the pods in the reservation
    namespace; ``logs`` maps a reservation pod name to its log text (None when unreadable).
    Returns a dict with ``verdict``, ``nvml_error``, ``evidence`` (list of lines),
    ``reservation_pods`` (summaries) and ``bind_attempts``.
    """
    metadata = pod.get("metadata") or {}
    ref = "%s/%s" % (metadata.get("namespace"), metadata.get("name"))
    matched = matching_reservation_pods(pod, reservation_pods)
    summaries = [_summary(r) for r in matched]
    binding_errors = [e for e in events if e.get("reason") == BINDING_ERROR]
    timeouts = [e for e in binding_errors if RESERVATION_TIMEOUT_TEXT in (e.get("message") or "")]
    result = dict(
        verdict="pending",
        nvml_error=None,
        evidence=[],
        reservation_pods=summaries,
        bind_attempts=sum(_event_count(e) for e in binding_errors),
    )

    if not is_shared(pod):
        result["verdict"] = "not_shared"
        result["evidence"].append(
            "pod %s has neither a gpu-memory nor a gpu-fraction annotation: KAI does not share a GPU for it" % ref
        )
        return result

    node = (pod.get("spec") or {}).get("nodeName")
    reserved = [s for s in summaries if s["gpu"]]
    if node and reserved:
        result["verdict"] = "reserved"
        result["evidence"].append("pod %s is bound to node %s" % (ref, node))
        result["evidence"].extend(
            "reservation pod %s: %s=%s" % (s["name"], GPU_INDEX_ANNOTATION, s["gpu"]) for s in reserved
        )
        return result

    nvml_lines = []
    for summary in summaries:
        for line in (logs.get(summary["name"]) or "").splitlines():
            match = NVML_ERROR.search(line)
            if match:
                nvml_lines.append((summary["name"], line.strip(), match.group("code")))
    if nvml_lines:
        result["verdict"] = "nvml_unavailable"
        result["nvml_error"] = nvml_lines[-1][2]
        result["evidence"].extend("reservation pod %s log: %s" % (name, line) for name, line, code in nvml_lines)
        if timeouts:
            result["evidence"].append("event %s: %s" % (BINDING_ERROR, timeouts[-1].get("message")))
        return result

    if timeouts:
        result["verdict"] = "reservation_timeout"
        result["evidence"].append("event %s: %s" % (BINDING_ERROR, timeouts[-1].get("message")))
        if summaries:
            result["evidence"].append(
                "no NVML error in the logs of reservation pod(s) %s" % ", ".join(s["name"] for s in summaries)
            )
        return result

    phase = (pod.get("status") or {}).get("phase")
    result["evidence"].append("pod %s is %s%s" % (ref, phase or "unknown", " on node %s" % node if node else ", not bound"))
    if events:
        last = events[-1]
        result["evidence"].append("last event %s: %s" % (last.get("reason"), last.get("message")))
    return result


class PodNotFound(Exception):
    """The shared pod does not exist."""


def read_boundary(service, name, namespace, reservation_namespace, log_lines=50):
    """Read the pod, its events, the reservation pods and their logs (a KubeService's calls), and classify them."""
    pod = service.get("v1", "Pod", name, namespace)
    if pod is None:
        raise PodNotFound("pod %s/%s not found" % (namespace, name))
    events = service.events_for("Pod", name, namespace)
    reservation_pods = service.list("v1", "Pod", namespace=reservation_namespace, label_selector=RESERVATION_APP_SELECTOR)
    logs = {}
    for reservation_pod in reservation_pods:
        pod_name = reservation_pod["metadata"]["name"]
        text = service.pod_log(pod_name, reservation_namespace, tail_lines=log_lines)
        if not text:
            # A crashed reservation app restarts (no restartPolicy is set): read the last run.
            text = service.pod_log(pod_name, reservation_namespace, tail_lines=log_lines, previous=True)
        logs[pod_name] = text
    return classify(pod, events, reservation_pods, logs)
