# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names KAI Scheduler and the isolator give their parts, labels and annotations, once: KAI's
chart and operator name them so on every platform. The kai_scheduler and sim_kai roles read
them through the kai_parts lookup; the modules and the claims import them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# KAI's namespace as its chart's docs install it (a release namespace: the roles take another).
NAMESPACE = "kai-scheduler"
# The Deployments a KAI install runs in its namespace: kai-operator from the chart, the others
# from the operator (its operands, the same in KAI's versions the collection runs).
WORKLOADS = ["admission", "binder", "kai-operator", "kai-scheduler-default", "pod-grouper", "podgroup-controller", "queue-controller"]
SCHEDULER_DEPLOYMENT = "kai-scheduler-default"
OPERATOR_DEPLOYMENT = "kai-operator"
SCHEDULER_NAME = "kai-scheduler"
# The reservation pods' namespace, service account and app label (the chart creates the first two).
RESERVATION_NAMESPACE = "kai-resource-reservation"
RESERVATION_SERVICE_ACCOUNT = "kai-resource-reservation"
RESERVATION_APP_LABEL = "kai-resource-reservation"
RESERVATION_APP_SELECTOR = "app=" + RESERVATION_APP_LABEL
# The isolator's chart's default release name and namespace, and the volume its webhook injects
# into an annotated pod (a fixed name, whatever the release).
ISOLATOR_RELEASE = "kai-resource-isolator"
ISOLATOR_NAMESPACE = "kai-resource-isolator"
ISOLATOR_VGPU_VOLUME = "kai-resource-isolator-vgpu"
# Labels, annotations and resources KAI and GPU feature discovery use on pods and nodes.
GPU_RESOURCE = "nvidia.com/gpu"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
QUEUE_LABEL = "kai.scheduler/queue"
SHARING_ANNOTATIONS = ("gpu-memory", "gpu-fraction")
GPU_GROUP_LABEL = "runai-gpu-group"
GPU_INDEX_ANNOTATION = "run.ai/reserve_for_gpu_index"
# The API groups of KAI's kinds the modules read.
QUEUE_API = "scheduling.run.ai/v2"
BIND_REQUEST_API = "scheduling.run.ai/v1alpha2"
# The queues KAI's chart creates on first install (templates/default-queue.yaml).
_CHART_QUEUE_RESOURCES = dict((r, {"quota": 0, "limit": -1, "over_quota_weight": 1}) for r in ("cpu", "memory", "gpu"))
CHART_DEFAULT_QUEUES = [
    {"name": "default-parent-queue", "resources": _CHART_QUEUE_RESOURCES},
    {"name": "default-queue", "parent_queue": "default-parent-queue", "resources": _CHART_QUEUE_RESOURCES},
]


def isolator_parts(release=ISOLATOR_RELEASE):
    """The objects the isolator's chart names after its release (templates/_helpers.tpl), and the
    volume its webhook injects."""
    return {
        "webhook": release + "-webhook",
        "libsync": release + "-libsync",
        "webhook_configuration": release + "-mutating",
        "injected_volume": ISOLATOR_VGPU_VOLUME,
    }


# The isolator webhook's Deployment under the chart's default release name.
ISOLATOR_WEBHOOK = isolator_parts()["webhook"]


def kai_parts():
    """The names above as one dict (the kai_parts lookup's answer)."""
    return {
        "namespace": NAMESPACE,
        "workloads": list(WORKLOADS),
        "scheduler_deployment": SCHEDULER_DEPLOYMENT,
        "operator_deployment": OPERATOR_DEPLOYMENT,
        "scheduler_name": SCHEDULER_NAME,
        "reservation_namespace": RESERVATION_NAMESPACE,
        "reservation_service_account": RESERVATION_SERVICE_ACCOUNT,
        "reservation_app_label": RESERVATION_APP_LABEL,
        "chart_default_queues": [dict(q, resources=dict((k, dict(v)) for k, v in q["resources"].items())) for q in CHART_DEFAULT_QUEUES],
        "isolator": isolator_parts(),
    }
