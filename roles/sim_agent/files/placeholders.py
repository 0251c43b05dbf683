# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Placeholder pods on a node kwok plays: their log is their process's, and they are Ready only while it answers.

Placeholder pods are labelled ``gpulab.kai-hami/stands-for`` and carry, in their Deployment's
pod template, ``gpulab.kai-hami/log-file`` (the CRI-format log), ``gpulab.kai-hami/health-url``
and optionally ``gpulab.kai-hami/health-ca-file``. A placeholder with a readiness probe runs on a
real node, whose kubelet probes the process; it is left alone.
"""

from __future__ import absolute_import, division, print_function

import time

from cri_log import say
from health import check_health, serve_health
from kube_api import Api, is_ready

STANDS_FOR_LABEL = "gpulab.kai-hami/stands-for"
LOG_FILE_ANNOTATION = "gpulab.kai-hami/log-file"
HEALTH_URL_ANNOTATION = "gpulab.kai-hami/health-url"
HEALTH_CA_ANNOTATION = "gpulab.kai-hami/health-ca-file"
POLL_SECONDS = 1.0


def placeholder_step(api, known):
    """One pass over the placeholder pods; ``known`` maps pod uid -> last health verdict."""
    pods = api.pods(label_selector=STANDS_FOR_LABEL)
    seen = set()
    for pod in pods:
        meta = pod["metadata"]
        annotations = meta.get("annotations") or {}
        if meta.get("deletionTimestamp") or (pod.get("status") or {}).get("phase") != "Running":
            continue
        seen.add(meta["uid"])
        process = (meta.get("labels") or {}).get(STANDS_FOR_LABEL)
        log_file = annotations.get(LOG_FILE_ANNOTATION)
        if log_file and meta["uid"] not in known:
            if api.ensure_logs(pod, log_file):
                say("pod %s/%s: log is %s (process %s)" % (meta["namespace"], meta["name"], log_file, process))
        url = annotations.get(HEALTH_URL_ANNOTATION)
        healthy, detail = check_health(url, annotations.get(HEALTH_CA_ANNOTATION)) if url else (False, "no health URL")
        if is_ready(pod) != healthy:
            api.set_ready(pod, healthy, "process %s: %s" % (process, detail))
            say("pod %s/%s %s: process %s %s" % (meta["namespace"], meta["name"], "Ready" if healthy else "NotReady", process, detail))
        known[meta["uid"]] = healthy
    for uid in list(known):
        if uid not in seen:
            del known[uid]


def placeholders(args):
    api = Api(args.kubeconfig)
    serve_health(args.health_address, "ok")
    say("sim agent: placeholder pods (label %s) are Ready only while their process answers its health URL;"
        " their log is the process's log" % STANDS_FOR_LABEL)
    known = {}
    while True:
        try:
            placeholder_step(api, known)
        except Exception as error:  # pylint: disable=broad-exception-caught
            say("placeholders: %s" % error)
        time.sleep(POLL_SECONDS)
