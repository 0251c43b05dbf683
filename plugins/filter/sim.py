# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sim platform's placeholder Deployments, as a filter the sim roles share."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.versions import read as read_versions

REQUIRED = ("name", "namespace", "container", "process", "node", "log_file", "health_url", "command", "stand_in")


def image():
    """The placeholder pods' image (a name among the images built locally; kwok runs nothing in them)."""
    return read_versions()["LOCAL_IMAGE_REGISTRY"] + "/local-process"


def sim_placeholder(placeholder):
    """A Deployment that stands for a local process of the sim platform.

    The sim agent keeps its pod Ready only while the process answers ``health_url``; the pod's
    log is the process's log file. Only where kwok plays the node: a real node's kubelet runs
    its pods in containers, and what runs there runs in a pod of its own.
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
            "containers": [{"name": str(placeholder["container"]), "image": image()}]}
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
