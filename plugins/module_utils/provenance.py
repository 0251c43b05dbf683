# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which programs decided the lab's claims, read from the cluster's own Deployments.

On the sim, the Deployments that stand for local processes say what runs in the annotations
``gpulab.kai-hami/runs`` and ``gpulab.kai-hami/kai-version``; elsewhere the image tags say it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import gzip
import json

RUNS_ANNOTATION = "gpulab.kai-hami/runs"
KAI_VERSION_ANNOTATION = "gpulab.kai-hami/kai-version"
UNKNOWN = "unknown"


def _annotations(deployment):
    return ((deployment or {}).get("metadata") or {}).get("annotations") or {}


def image_tag(deployment):
    """The tag of the Deployment's first container image ('' when there is none)."""
    containers = (((((deployment or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    image = (containers[0].get("image") or "") if containers else ""
    name = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return name.split(":", 1)[1] if ":" in name else ""


# The nvml_mock role's sim mode marks the node whose mock driver root it placed; the kubelet_node role
# marks a real node whose runtime handler nvidia is its stand-in for NVIDIA's container runtime.
NVML_STANDIN_ANNOTATION = "gpulab.kai-hami/nvml-mock"
RUNTIME_STANDIN_ANNOTATION = "gpulab.kai-hami/nvidia-container-runtime"
DEVICE_PLUGIN_IMAGE = "k8s-device-plugin"


def node_runtime(node):
    """What runs the GPU node: ``(real, text)``, from its nodeInfo (kwok writes its own versions)."""
    info = (((node or {}).get("status") or {}).get("nodeInfo")) or {}
    runtime = info.get("containerRuntimeVersion") or ""
    kubelet = info.get("kubeletVersion") or ""
    if not node or "kwok" in runtime or "kwok" in kubelet or not runtime:
        return False, "a node kwok plays (no kubelet, no container runtime)"
    return True, "kubelet %s, %s" % (kubelet, runtime.replace("://", " "))


def device_plugin_version(daemonsets):
    """The tag of the first DaemonSet whose image is NVIDIA's device plugin ('' when none)."""
    for daemonset in daemonsets or []:
        containers = ((((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
        if any(DEVICE_PLUGIN_IMAGE in (container.get("image") or "") for container in containers):
            return image_tag(daemonset) or UNKNOWN
    return ""


def gpus_origin(node, daemonsets):
    """``(text, stand_ins)``: what made the node's allocatable nvidia.com/gpu, and the stand-ins it relies on."""
    real, runtime = node_runtime(node)
    if not real:
        return "the node's status as written for the node kwok plays", []
    version = device_plugin_version(daemonsets)
    stand_ins = []
    standin = _annotations(node).get(NVML_STANDIN_ANNOTATION)
    if standin:
        stand_ins.append(standin)
    plugin = ("NVIDIA's device plugin %s" % version) if version else "a device plugin"
    text = "%s through the kubelet's device manager (%s)" % (plugin, runtime)
    if standin:
        text += " on %s" % standin
    return text, stand_ins


def helm_chart(secrets, release):
    """``name-version`` of the chart of Helm release ``release``'s deployed revision, read from Helm's
    own record (a Secret of type helm.sh/release.v1: base64 of the gzipped release JSON); '' when none."""
    deployed = [s for s in secrets or [] if s.get("type") == "helm.sh/release.v1"
                and (_get_labels(s).get("name"), _get_labels(s).get("status")) == (release, "deployed")]
    if not deployed:
        return ""
    latest = max(deployed, key=lambda s: int(_get_labels(s).get("version") or 0))
    try:
        record = json.loads(gzip.decompress(base64.b64decode(base64.b64decode((latest.get("data") or {}).get("release") or ""))))
        meta = record["chart"]["metadata"]
        return "%s-%s" % (meta["name"], meta["version"])
    except (ValueError, KeyError, TypeError, OSError):
        return ""


def _get_labels(obj):
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def kai_text(kai_version, kai_deployment, operator_deployment=None, chart=""):
    """How KAI runs, in words: as the sim's local processes, or by its chart and operator."""
    if RUNS_ANNOTATION in _annotations(kai_deployment):
        return "KAI %s (its own programs, run as local processes on the sim)" % kai_version
    if not kai_deployment:
        return "KAI (not found)"
    installed = []
    if chart:
        installed.append("chart %s" % chart)
    if operator_deployment:
        installed.append("operator %s" % (image_tag(operator_deployment) or UNKNOWN))
    return "KAI %s%s" % (kai_version, (" (%s)" % ", ".join(installed)) if installed else "")


def provenance(kai_deployment, isolator_deployment, node=None, daemonsets=None, operator_deployment=None, chart=""):
    """``{'kai_version', 'kai', 'isolator', 'gpus', 'node', 'stand_ins'}`` describing what decided the claims.

    ``kai_deployment`` is KAI's ``kai-scheduler-default`` Deployment, ``isolator_deployment`` the
    isolator's webhook Deployment (either may be None when missing), ``node`` the GPU node and
    ``daemonsets`` those that may run NVIDIA's device plugin; ``operator_deployment`` KAI's
    ``kai-operator`` and ``chart`` the ``name-version`` of the Helm chart that installed KAI.
    """
    kai_annotations = _annotations(kai_deployment)
    kai_version = kai_annotations.get(KAI_VERSION_ANNOTATION) or image_tag(kai_deployment) or UNKNOWN
    kai = kai_text(kai_version, kai_deployment, operator_deployment, chart)
    iso_annotations = _annotations(isolator_deployment)
    stand_ins = []
    if RUNS_ANNOTATION in iso_annotations:
        isolator = iso_annotations[RUNS_ANNOTATION]
        stand_ins.append(isolator)
    elif isolator_deployment:
        isolator = "kai-resource-isolator %s" % (image_tag(isolator_deployment) or UNKNOWN)
    else:
        isolator = "kai-resource-isolator (not found)"
    gpus, gpu_stand_ins = gpus_origin(node, daemonsets)
    runtime = _annotations(node).get(RUNTIME_STANDIN_ANNOTATION)
    return {"kai_version": kai_version, "kai": kai, "isolator": isolator, "gpus": gpus,
            "node": node_runtime(node)[1] if node else "", "stand_ins": gpu_stand_ins + ([runtime] if runtime else []) + stand_ins}
