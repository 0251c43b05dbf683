# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lab 11's claims, decided from API objects and log lines read beforehand.

Each function takes what the claim's task file read from the cluster and returns
``{'holds': bool, 'evidence': [lines]}``. Expected numbers come from KAI's arithmetic
(kai_math), computed from the inputs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_math import (
    gpu_fraction,
    hamicore_memory_limit,
    last_division,
)

GPU_GROUP_LABEL = "runai-gpu-group"
GPU_INDEX_ANNOTATION = "run.ai/reserve_for_gpu_index"
LIMIT_ENV = "CUDA_DEVICE_MEMORY_LIMIT"
DEVICES_KEY = "NVIDIA_VISIBLE_DEVICES"


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


def c9_hamicore_numbers(first_pod, second_pod, requests_mib, node_memory_label, configmaps, reservation_pods,
                        scheduler_lines, queue, whole_gpus=1):
    """C9: the numbers KAI's hamicore plugin writes reach shared pods, and two pods share one GPU.

    ``requests_mib`` are the two pods' ``gpu-memory`` requests; ``configmaps`` the ConfigMaps of
    their namespace; ``reservation_pods`` the pods in KAI's reservation namespace;
    ``scheduler_lines`` the scheduler's log lines.
    """
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
