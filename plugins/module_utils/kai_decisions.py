# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What KAI decided, read from its objects: a Queue's resources as numbers, a pod's scheduling outcome.

Pure functions over recorded API objects (dicts), no API calls; kai_queue_info and
kai_pod_schedule_info read the objects and hand them to these functions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_parts import (
    GPU_GROUP_LABEL,
    GPU_RESOURCE,
    QUEUE_LABEL,
)

UNLIMITED = -1
# Kubernetes quantity suffixes (k8s.io/apimachinery/pkg/api/resource): binary, decimal, and exponents.
_BINARY = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
_DECIMAL = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE])?$")
# A Queue's resources by KAI's names, the key each has in status (ResourceList) and the factor that
# turns a status quantity into the unit reported (GPUs, CPU cores, megabytes of 10^6 bytes) and
# the factor that turns the spec's number (GPUs, millicores, megabytes) into it.
QUEUE_RESOURCES = (
    ("gpu", GPU_RESOURCE, 1.0, 1.0),
    ("cpu", "cpu", 1.0, 1e-3),
    ("memory", "memory", 1e-6, 1.0),
)
STATUS_FIELDS = (("allocated", "allocated"), ("allocated_non_preemptible", "allocatedNonPreemptible"), ("requested", "requested"))
SPEC_FIELDS = (("quota", "quota"), ("limit", "limit"), ("over_quota_weight", "overQuotaWeight"))
# The scheduler's division line gives fair share in these units: GPUs, cores, GB (10^9 bytes).
DIVISION_TO_REPORTED = {"gpu": 1.0, "cpu": 1.0, "memory": 1e3}
OUTCOMES = ("bound", "unschedulable", "binding", "pending", "not_found")
DECIDED = ("bound", "unschedulable")
POD_GROUP_ANNOTATION = "pod-group-name"


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity."""


def parse_quantity(value):
    """A Kubernetes quantity (``"3500m"``, ``"2"``, ``"16Gi"``, ``"1e3"``, or a number) as a float."""
    if isinstance(value, bool):
        raise QuantityError("not a Kubernetes quantity: %r" % (value,))
    if isinstance(value, (int, float)):
        return float(value)
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise QuantityError("not a Kubernetes quantity: %r" % (value,))
    number, suffix = float(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix[:1] in ("e", "E"):
        return number * 10 ** int(suffix[1:])
    return number * _DECIMAL[suffix]


def _tidy(number):
    """Round away float noise (0.30000000000000004 -> 0.3); whole numbers as ints."""
    if number is None:
        return None
    number = round(float(number), 6)
    return int(number) if number.is_integer() else number


def queue_resources(queue, division=None):
    """One Queue's resources as numbers: ``{gpu: {...}, cpu: {...}, memory: {...}, other: {...}}``.

    Each of gpu (GPUs), cpu (cores) and memory (megabytes of 10^6 bytes) has ``quota``, ``limit``
    and ``over_quota_weight`` from the spec (-1 stays -1: unlimited), ``allocated``,
    ``allocated_non_preemptible`` and ``requested`` from the status (0 where the status has none),
    and ``fair_share`` from the scheduler's division line when ``division`` (its parsed line) is
    given, else None. ``other`` holds status quantities of any other resource, parsed, by field.
    """
    spec = ((queue.get("spec") or {}).get("resources")) or {}
    status = queue.get("status") or {}
    result = {}
    known = set()
    for name, status_key, status_factor, spec_factor in QUEUE_RESOURCES:
        known.add(status_key)
        entry = {}
        for field, spec_key in SPEC_FIELDS:
            value = (spec.get(name) or {}).get(spec_key)
            if value is None:
                entry[field] = 0
            elif field != "over_quota_weight" and float(value) == UNLIMITED:
                entry[field] = UNLIMITED
            else:
                entry[field] = _tidy(float(value) * (spec_factor if field != "over_quota_weight" else 1.0))
        for field, status_key_field in STATUS_FIELDS:
            value = (status.get(status_key_field) or {}).get(status_key)
            entry[field] = 0 if value is None else _tidy(parse_quantity(value) * status_factor)
        fair_share = ((division or {}).get(name) or {}).get("fair_share")
        entry["fair_share"] = None if fair_share is None else (
            UNLIMITED if fair_share == UNLIMITED else _tidy(fair_share * DIVISION_TO_REPORTED[name]))
        result[name] = entry
    other = {}
    for field, status_key_field in STATUS_FIELDS:
        for key, value in sorted((status.get(status_key_field) or {}).items()):
            if key not in known:
                other.setdefault(key, {})[field] = _tidy(parse_quantity(value))
    result["other"] = other
    return result


def queue_summary(queue, division=None):
    """``{name, parent, children, priority, display_name, resources, conditions}`` of one Queue."""
    metadata = queue.get("metadata") or {}
    spec = queue.get("spec") or {}
    status = queue.get("status") or {}
    return {
        "name": metadata.get("name"),
        "parent": spec.get("parentQueue") or None,
        "children": sorted(status.get("childQueues") or []),
        "priority": spec.get("priority"),
        "display_name": spec.get("displayName"),
        "resources": queue_resources(queue, division),
        "conditions": list(status.get("conditions") or []),
    }


def _condition(pod, kind):
    for condition in ((pod.get("status") or {}).get("conditions")) or []:
        if condition.get("type") == kind:
            return condition
    return None


def podgroup_reasons(podgroup):
    """``[{node_pool, reason, message}]`` of a PodGroup's ``status.schedulingConditions``."""
    found = []
    for condition in (((podgroup or {}).get("status") or {}).get("schedulingConditions")) or []:
        reasons = condition.get("reasons") or [{}]
        for reason in reasons:
            found.append({
                "node_pool": condition.get("nodePool") or "",
                "reason": reason.get("reason") or condition.get("reason") or "",
                "message": reason.get("message") or condition.get("message") or "",
            })
    return found


def pod_outcome(pod, podgroup=None, events=(), bind_request=None):
    """What KAI decided about one pod, from the pod, its PodGroup, its events and its BindRequest.

    ``outcome`` is one of:
      bound          the pod has a node (``node``; ``gpu_group`` for a shared GPU);
      unschedulable  KAI could not place it: ``reason`` and ``message`` from the pod's
                     PodScheduled condition, its newest Unschedulable event and its PodGroup;
      binding        KAI chose a node (a BindRequest names it) and the binder is at work;
      pending        no decision yet;
      not_found      no such pod.
    """
    if pod is None:
        return {"outcome": "not_found", "node": None, "gpu_group": None, "queue": None, "podgroup": None,
                "reason": None, "message": None, "podgroup_reasons": [], "events": []}
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    kai_events = [{"type": e.get("type"), "reason": e.get("reason"), "message": (e.get("message") or "").strip()}
                  for e in events if e.get("reason") in ("Unschedulable", "Scheduled", "Bound", "BindingError", "FailedScheduling")]
    result = {
        "node": (pod.get("spec") or {}).get("nodeName") or None,
        "gpu_group": labels.get(GPU_GROUP_LABEL),
        "queue": labels.get(QUEUE_LABEL) or ((podgroup or {}).get("spec") or {}).get("queue"),
        "podgroup": annotations.get(POD_GROUP_ANNOTATION) or ((podgroup or {}).get("metadata") or {}).get("name"),
        "reason": None,
        "message": None,
        "podgroup_reasons": podgroup_reasons(podgroup),
        "events": kai_events,
    }
    scheduled = _condition(pod, "PodScheduled")
    unschedulable_events = [e for e in kai_events if e["reason"] in ("Unschedulable", "FailedScheduling")]
    if result["node"]:
        result["outcome"] = "bound"
    elif scheduled and scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable" or unschedulable_events:
        result["outcome"] = "unschedulable"
        message = (scheduled or {}).get("message") or (unschedulable_events[-1]["message"] if unschedulable_events else "")
        if not message and result["podgroup_reasons"]:
            message = result["podgroup_reasons"][-1]["message"]
        result["message"] = message.strip() or None
        # KAI writes "<Reason>: <text>" (QueueDoesNotExist: Queue 'q' does not exist.); the PodGroup names it too.
        reasons = [r["reason"] for r in result["podgroup_reasons"] if r["reason"]]
        head = re.match(r"^([A-Z][A-Za-z]+): ", result["message"] or "")
        result["reason"] = reasons[-1] if reasons else (head.group(1) if head else "Unschedulable")
    elif bind_request is not None:
        result["outcome"] = "binding"
        result["node"] = (bind_request.get("spec") or {}).get("selectedNode") or None
    else:
        result["outcome"] = "pending"
    return result


def decided(outcome):
    """Whether KAI has decided about the pod (bound, or unschedulable)."""
    return outcome in DECIDED
