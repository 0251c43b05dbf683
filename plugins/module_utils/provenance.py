# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which programs decided the lab's claims, read from the cluster's own Deployments.

On the sim, the Deployments that stand for local processes say what runs in the annotations
``gpulab.kai-hami/runs`` and ``gpulab.kai-hami/kai-version``; elsewhere the image tags say it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

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


def provenance(kai_deployment, isolator_deployment):
    """``{'kai_version', 'kai', 'isolator', 'stand_ins'}`` describing what decided the claims.

    ``kai_deployment`` is KAI's ``kai-scheduler-default`` Deployment, ``isolator_deployment`` the
    isolator's webhook Deployment (either may be None when missing).
    """
    kai_annotations = _annotations(kai_deployment)
    kai_version = kai_annotations.get(KAI_VERSION_ANNOTATION) or image_tag(kai_deployment) or UNKNOWN
    if RUNS_ANNOTATION in kai_annotations:
        kai = "KAI %s (its own programs, run as local processes on the sim)" % kai_version
    elif kai_deployment:
        kai = "KAI %s" % kai_version
    else:
        kai = "KAI (not found)"
    iso_annotations = _annotations(isolator_deployment)
    stand_ins = []
    if RUNS_ANNOTATION in iso_annotations:
        isolator = iso_annotations[RUNS_ANNOTATION]
        stand_ins.append(isolator)
    elif isolator_deployment:
        isolator = "kai-resource-isolator %s" % (image_tag(isolator_deployment) or UNKNOWN)
    else:
        isolator = "kai-resource-isolator (not found)"
    return {"kai_version": kai_version, "kai": kai, "isolator": isolator, "stand_ins": stand_ins}
