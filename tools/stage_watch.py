"""When each pod of a fill reached each stage, from watches on the API server (bench-fleet's stage table).

Three watches (pods, KAI's PodGroups and BindRequests, all namespaces) note when each change
arrived, on this process's monotonic clock: the API objects' own timestamps have whole-second
resolution, too coarse for stages of a tenth of a second. A pod's stages through KAI:

    created -> PodGroup (pod-grouper) -> BindRequest (the scheduler's decision) -> bound (binder) -> Running (kwok)

through kube-scheduler: created -> bound -> Running. A GPU group of shared pods also has its
reservation pod: the group's first BindRequest -> reservation pod created (binder) -> Running (kwok)
-> GPU annotated (the reservation app) -> the group's first shared pod bound (binder).
"""

import json
import threading
import time

from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import ProtocolError

PODGROUP_ANNOTATION = "pod-group-name"
GPU_GROUP_LABEL = "runai-gpu-group"
GPU_INDEX_ANNOTATION = "run.ai/reserve_for_gpu_index"
# kind -> (API group, version, plural); "" for the core group's pods
WATCHES = {
    "pods": ("", "v1", "pods"),
    "podgroups": ("scheduling.run.ai", "v2alpha2", "podgroups"),
    "bindrequests": ("scheduling.run.ai", "v1alpha2", "bindrequests"),
}
# (stage, from, to): each pod's seconds between two of its points
KAI_STAGES = [("pod-grouper", "created", "podgroup"), ("scheduler", "podgroup", "bindrequest"),
              ("binder", "bindrequest", "bound"), ("kwok Running", "bound", "running")]
KUBE_STAGES = [("kube-scheduler", "created", "bound"), ("kwok Running", "bound", "running")]
RESERVATION_STAGES = [("binder: reservation pod", "bindrequest", "reservation"), ("kwok Running", "reservation", "reservation_running"),
                      ("reservation app: GPU", "reservation_running", "gpu"), ("binder: shared pod bound", "gpu", "bound")]


def percentile(values, share):
    """The nearest-rank percentile of a list (None for an empty one)."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, int(-(-share * len(ordered) // 1)))
    return ordered[min(rank, len(ordered)) - 1]


class StageWatch(object):
    """Watches the cluster from start() to stop(); stage times per pod and per GPU group."""

    def __init__(self, api_client):
        self.api_client = api_client
        self.pods = {}  # (namespace, name) -> {point: seconds, "podgroup_name": ..., "group": ...}
        self.podgroups = {}  # (namespace, name) -> seconds first seen
        self.bindrequests = {}  # (namespace, pod name) -> seconds first seen
        self._stopping = threading.Event()
        self._threads = []
        self.errors = []

    def start(self):
        ready = []
        for kind, resource in WATCHES.items():
            listed = threading.Event()
            thread = threading.Thread(target=self._watch, args=(kind, resource, listed), name="watch-" + kind, daemon=True)
            thread.start()
            self._threads.append(thread)
            ready.append(listed)
        for listed in ready:
            listed.wait(30)
        return self

    def stop(self):
        self._stopping.set()

    def _get(self, resource, **query):
        """A list (or, with watch=True, a watch) of every namespace's objects, unparsed."""
        from kubernetes import client

        group, version, plural = resource
        if not group:
            return client.CoreV1Api(self.api_client).list_pod_for_all_namespaces(_preload_content=False, **query)
        return client.CustomObjectsApi(self.api_client).list_cluster_custom_object(group, version, plural, _preload_content=False, **query)

    def _watch(self, kind, resource, listed):
        version = None
        while not self._stopping.is_set():
            try:
                if version is None:
                    listing = json.loads(self._get(resource).data)
                    version = listing["metadata"]["resourceVersion"]
                    now = time.monotonic()
                    for item in listing["items"]:
                        self._seen(kind, "ADDED", item, now)
                    listed.set()
                response = self._get(resource, watch=True, resource_version=version, allow_watch_bookmarks=True, timeout_seconds=60)
                for line in iter_resp_lines(response):
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        version = None  # expired: list again
                        break
                    version = event["object"]["metadata"]["resourceVersion"]
                    if event["type"] != "BOOKMARK":
                        self._seen(kind, event["type"], event["object"], time.monotonic())
            except ProtocolError:
                continue  # the server ended the watch early (as at its timeout): watch on from the last version
            except Exception as error:  # pylint: disable=broad-exception-caught
                self.errors.append("%s: %s" % (kind, error))
                version = None
                time.sleep(1)

    def _seen(self, kind, event, item, now):
        meta = item["metadata"]
        if event == "DELETED":
            if kind == "pods" and (meta["namespace"], meta["name"]) in self.pods:
                record = self.pods[(meta["namespace"], meta["name"])]
                record.setdefault("deleting", now)
                record.setdefault("deleted", now)
            return
        if kind == "podgroups":
            self.podgroups.setdefault((meta["namespace"], meta["name"]), now)
        elif kind == "bindrequests":
            self.bindrequests.setdefault((meta["namespace"], (item.get("spec") or {}).get("podName")), now)
        else:
            record = self.pods.setdefault((meta["namespace"], meta["name"]), {})
            record.setdefault("created", now)
            annotations = meta.get("annotations") or {}
            if annotations.get(PODGROUP_ANNOTATION):
                record["podgroup_name"] = annotations[PODGROUP_ANNOTATION]
            if annotations.get(GPU_INDEX_ANNOTATION):
                record.setdefault("gpu", now)
            if (meta.get("labels") or {}).get(GPU_GROUP_LABEL):
                record["group"] = meta["labels"][GPU_GROUP_LABEL]
            if (item.get("spec") or {}).get("nodeName"):
                record.setdefault("bound", now)
            if (item.get("status") or {}).get("phase") == "Running":
                record.setdefault("running", now)
            if meta.get("deletionTimestamp"):
                record.setdefault("deleting", now)

    def points(self, namespace):
        """Each pod of the namespace: its points (seconds, monotonic), PodGroup and BindRequest joined in."""
        found = {}
        for (space, name), record in list(self.pods.items()):
            if space != namespace:
                continue
            points = dict((k, v) for k, v in record.items() if isinstance(v, float))
            if record.get("podgroup_name") and (space, record["podgroup_name"]) in self.podgroups:
                points["podgroup"] = self.podgroups[(space, record["podgroup_name"])]
            if (space, name) in self.bindrequests:
                points["bindrequest"] = self.bindrequests[(space, name)]
            points["group"] = record.get("group")
            found[name] = points
        return found

    def group_points(self, namespace, reservation_namespace):
        """Each GPU group of the namespace's shared pods: its first BindRequest, its reservation pod's points, its first bind."""
        groups = {}
        for points in self.points(namespace).values():
            if not points.get("group"):
                continue
            group = groups.setdefault(points["group"], {})
            for point in ("bindrequest", "bound"):
                if point in points:
                    group[point] = min(group.get(point, points[point]), points[point])
        for points in self.points(reservation_namespace).values():
            group = groups.get(points.get("group"))
            if group is None:
                continue
            for point, name in (("created", "reservation"), ("running", "reservation_running"), ("gpu", "gpu")):
                if point in points:
                    group[name] = points[point]
        return groups


def stage_rows(points, stages, started):
    """Per stage: count, p50, p90 and max seconds, and when (since `started`) the last pod passed it."""
    rows = []
    for stage, begin, end in stages:
        spans = [p[end] - p[begin] for p in points.values() if begin in p and end in p]
        ends = [p[end] - started for p in points.values() if end in p]
        rows.append({"stage": stage, "count": len(spans), "p50": percentile(spans, 0.5), "p90": percentile(spans, 0.9),
                     "max": max(spans) if spans else None, "last_at": max(ends) if ends else None})
    return rows


def bound_curve(points, started):
    """Seconds since `started` at which each pod was bound, in order (the picture's line)."""
    return sorted(p["bound"] - started for p in points.values() if "bound" in p)
