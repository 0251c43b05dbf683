# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The few API calls the sim's agent and runners make, over the kubernetes client."""

from __future__ import absolute_import, division, print_function

import datetime
import json
import threading
import time

LOGS_API = ("kwok.x-k8s.io", "v1alpha1", "logs")


class Api(object):
    """The few API calls the agent makes, over the kubernetes client."""

    def __init__(self, kubeconfig):
        from kubernetes import client, config

        self.client = client
        api_client = config.new_client_from_config(config_file=kubeconfig)
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)

    def pod_list(self, label_selector=None, namespace=None, **more):
        """The pods as the API server gives them (JSON, not the client's models: a tenth of the time), or a watch of them."""
        if namespace:
            response = self.core.list_namespaced_pod(namespace, label_selector=label_selector or "", _preload_content=False, **more)
        else:
            response = self.core.list_pod_for_all_namespaces(label_selector=label_selector or "", _preload_content=False, **more)
        return response if more.get("watch") else json.loads(response.data)

    def pods(self, label_selector=None, namespace=None):
        return self.pod_list(label_selector, namespace, _request_timeout=10)["items"]

    def ensure_logs(self, pod, log_file):
        """A kwok Logs object for ``pod`` (same name and namespace, owned by the pod)."""
        meta = pod["metadata"]
        body = {
            "apiVersion": "%s/%s" % LOGS_API[:2],
            "kind": "Logs",
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}],
            },
            "spec": {"logs": [{"containers": [], "logsFile": log_file}]},
        }
        try:
            self.custom.create_namespaced_custom_object(LOGS_API[0], LOGS_API[1], meta["namespace"], LOGS_API[2], body, _request_timeout=10)
            return True
        except self.client.exceptions.ApiException as error:
            if error.status == 409:
                return False
            raise

    def set_ready(self, pod, ready, message):
        """Set the pod's Ready/ContainersReady conditions and containers' ready flags."""
        status = "True" if ready else "False"
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        conditions = []
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition["type"] in ("Ready", "ContainersReady"):
                condition = dict(condition, status=status, lastTransitionTime=now,
                                 reason=None if ready else "ProcessNotHealthy", message=None if ready else message)
                condition = dict((k, v) for k, v in condition.items() if v is not None)
            conditions.append(condition)
        statuses = [dict(s, ready=ready) for s in (pod.get("status") or {}).get("containerStatuses") or []]
        body = {"status": {"conditions": conditions, "containerStatuses": statuses}}
        self.core.patch_namespaced_pod_status(pod["metadata"]["name"], pod["metadata"]["namespace"], body, _request_timeout=10)

    def set_terminated(self, pod, exit_code):
        """Record that the pod's container exited (the pod stays; KAI decides what happens to it)."""
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        statuses = []
        for container in (pod.get("status") or {}).get("containerStatuses") or []:
            started = ((container.get("state") or {}).get("running") or {}).get("startedAt", now)
            statuses.append(dict(container, ready=False, started=False, state={"terminated": {
                "exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error", "startedAt": started, "finishedAt": now}}))
        conditions = [dict(c, status="False", lastTransitionTime=now, reason="PodCompleted" if exit_code == 0 else "ContainersNotReady")
                      if c["type"] in ("Ready", "ContainersReady") else c for c in (pod.get("status") or {}).get("conditions") or []]
        body = {"status": {"conditions": conditions, "containerStatuses": statuses}}
        self.core.patch_namespaced_pod_status(pod["metadata"]["name"], pod["metadata"]["namespace"], body, _request_timeout=10)


class PodWatch(object):
    """The pods of a namespace with a label, kept current by a watch in a thread of its own.

    ``pods`` maps each pod's uid to the pod as last seen; ``changed`` is set on every change (and
    after every new list, as when the watch's version has expired). Errors are passed to ``say``.
    """

    def __init__(self, api, namespace, label_selector, say):
        self.api = api
        self.namespace = namespace
        self.label_selector = label_selector
        self.say = say
        self.pods = {}
        self.changed = threading.Event()
        self.listed = threading.Event()
        thread = threading.Thread(target=self._run, name="pod-watch", daemon=True)
        thread.start()

    def _run(self):
        from kubernetes.watch.watch import iter_resp_lines
        from urllib3.exceptions import ProtocolError

        version = None
        while True:
            try:
                if version is None:
                    listing = self.api.pod_list(self.label_selector, self.namespace, _request_timeout=10)
                    self.pods = dict((p["metadata"]["uid"], p) for p in listing["items"])
                    version = listing["metadata"]["resourceVersion"]
                    self.listed.set()
                    self.changed.set()
                response = self.api.pod_list(self.label_selector, self.namespace, watch=True, resource_version=version,
                                             allow_watch_bookmarks=True, timeout_seconds=300, _request_timeout=(10, 330))
                for line in iter_resp_lines(response):
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        version = None  # expired: list again
                        break
                    pod = event["object"]
                    version = pod["metadata"]["resourceVersion"]
                    if event["type"] == "DELETED":
                        self.pods.pop(pod["metadata"]["uid"], None)
                    elif event["type"] != "BOOKMARK":
                        self.pods[pod["metadata"]["uid"]] = pod
                    self.changed.set()
            except ProtocolError:
                continue  # the server ended the watch early: watch on from the last version
            except Exception as error:  # pylint: disable=broad-exception-caught
                self.say("watching pods %s in %s: %s" % (self.label_selector, self.namespace, error))
                version = None
                time.sleep(1)


def is_ready(pod):
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return condition["status"] == "True"
    return False
