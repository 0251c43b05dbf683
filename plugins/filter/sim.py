# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sim platform's placeholder Deployments, as a filter the sim roles share."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.urllib.parse import urlsplit

REQUIRED = ("name", "namespace", "container", "process", "node", "log_file", "health_url", "command", "stand_in")
IMAGE = "sim.gpulab.kai-hami/local-process"
# On a real node the placeholder's container follows the process's log (CRI format: the first
# three fields are time, stream and tag) so that its own log is the process's.
FOLLOW_LOG = 'tail -n +1 -F "$0" | awk \'{ sub(/^[^ ]+ [^ ]+ [^ ]+ /, ""); print; fflush() }\''


def readiness_probe(health_url):
    """The kubelet's httpGet probe for a health URL on the host's 127.0.0.1."""
    parsed = urlsplit(str(health_url))
    if parsed.hostname != "127.0.0.1" or not parsed.port:
        raise AnsibleFilterError("sim_placeholder: on a real node the health URL must be http(s)://127.0.0.1:PORT/... (got %s)" % health_url)
    return {"httpGet": {"host": "127.0.0.1", "port": parsed.port, "path": parsed.path or "/", "scheme": parsed.scheme.upper()},
            "periodSeconds": 2, "timeoutSeconds": 1, "failureThreshold": 1}


def real_node_container(placeholder):
    """A busybox container that follows the process's log and is Ready while the process answers."""
    log_dir = os.path.dirname(str(placeholder["log_file"]))
    return (
        {"name": str(placeholder["container"]), "image": str(placeholder["image"]), "imagePullPolicy": "IfNotPresent",
         "command": ["sh", "-c", FOLLOW_LOG, str(placeholder["log_file"])],
         "readinessProbe": readiness_probe(placeholder["health_url"]),
         "volumeMounts": [{"name": "process-log", "mountPath": log_dir, "readOnly": True}]},
        {"name": "process-log", "hostPath": {"path": log_dir, "type": "Directory"}},
    )


def sim_placeholder(placeholder):
    """A Deployment that stands for a local process of the sim platform.

    The sim agent keeps its pod Ready only while the process answers ``health_url``; the pod's
    log is the process's log file. With ``image`` (on a real node, where a kubelet runs the pod)
    the pod is a container of that image following the log file, and the kubelet's readiness
    probe on ``health_url`` keeps it Ready.
    """
    missing = [key for key in REQUIRED if placeholder.get(key) in (None, "")]
    if missing:
        raise AnsibleFilterError("sim_placeholder needs %s (got %s)" % (", ".join(missing), ", ".join(sorted(placeholder))))
    name, process = str(placeholder["name"]), str(placeholder["process"])
    annotations = {
        "gpulab.kai-hami/runs": str(placeholder["stand_in"]),
        "gpulab.kai-hami/placeholder": "stands for the local process %s of the sim platform (%s); Ready only while it answers %s"
                                       % (process, placeholder["stand_in"], placeholder["health_url"]),
    }
    if placeholder.get("kai_version"):
        annotations["gpulab.kai-hami/kai-version"] = str(placeholder["kai_version"])
    spec = {"nodeName": str(placeholder["node"]), "terminationGracePeriodSeconds": 0,
            "containers": [{"name": str(placeholder["container"]), "image": IMAGE}]}
    if placeholder.get("image"):
        container, volume = real_node_container(placeholder)
        spec.update(containers=[container], volumes=[volume])
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": str(placeholder["namespace"]),
            "labels": {"app": name, "app.kubernetes.io/managed-by": "gpulab.kai_hami", "gpulab.kai-hami/stands-for": process},
            "annotations": annotations,
        },
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {
                    "labels": {"app": name, "gpulab.kai-hami/stands-for": process},
                    "annotations": {
                        "gpulab.kai-hami/log-file": str(placeholder["log_file"]),
                        "gpulab.kai-hami/health-url": str(placeholder["health_url"]),
                        "gpulab.kai-hami/command": " ".join(str(part) for part in placeholder["command"]),
                    },
                },
                "spec": spec,
            },
        },
    }


class FilterModule(object):
    """Sim platform filters."""

    def filters(self):
        return {"sim_placeholder": sim_placeholder}
