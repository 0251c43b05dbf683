"""What the modules report when a Kubernetes call fails: one KubeError, with the call and context.

The modules run against the real KubeService over a fake kubernetes.core client that holds a
few objects and raises, for chosen calls, the exception types the real client raises.
"""

import json
import threading

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import api_exception
from urllib3.exceptions import MaxRetryError

from ansible_collections.gpulab.kai_hami.plugins.module_utils import service as service_module
from ansible_collections.gpulab.kai_hami.plugins.module_utils.node_labels import COUNT_LABEL, MEMORY_LABEL
from ansible_collections.gpulab.kai_hami.plugins.modules import gpu_node_label, kai_queue, reservation_probe


def api_error(status, reason, message):
    body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": status})
    return api_exception(ApiException(status=status, reason=reason, body=body))


def matches(obj, selector):
    labels = obj["metadata"].get("labels") or {}
    return all(labels.get(key) == value for key, value in (term.split("=", 1) for term in selector.split(",")))


class FakeResource(object):
    def __init__(self, cluster, kind):
        self.cluster = cluster
        self.kind = kind

    def get(self, name=None, namespace=None, label_selector=None, field_selector=None):
        self.cluster.fail_if("get" if name else "list", self.kind, name)
        if name:
            found = self.cluster.objects.get((self.kind, namespace, name))
            if found is None:
                raise api_error(404, "Not Found", "%s %r not found" % (self.kind, name))
            return found
        items = [o for (kind, ns, dummy), o in sorted(self.cluster.objects.items()) if kind == self.kind and (not namespace or ns == namespace)]
        return {"items": [o for o in items if not label_selector or matches(o, label_selector)]}

    def delete(self, name=None, namespace=None, **params):
        self.cluster.fail_if("delete", self.kind, name)
        self.cluster.objects.pop((self.kind, namespace, name))


class FakeCluster(object):
    """kubernetes.core's K8SClient (and the dynamic client under it) over a dict of objects."""

    dry_run = False

    def __init__(self, objects, failures=None):
        self.objects = dict(((o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]), o) for o in objects)
        self.failures = failures or {}
        self.client = self
        self.done = []
        self.lock = threading.Lock()

    def fail_if(self, operation, kind, name):
        failure = self.failures.get((operation, kind, name))
        if failure is not None:
            raise failure

    def resource(self, kind, api_version):
        return FakeResource(self, kind)

    def patch(self, resource, body, name, namespace, **kwargs):
        self.fail_if("patch", resource.kind, name)
        obj = self.objects[(resource.kind, namespace, name)]
        labels = obj["metadata"].setdefault("labels", {})
        for key, value in body["metadata"]["labels"].items():
            if value is None:
                labels.pop(key, None)
            else:
                labels[key] = value
        with self.lock:
            self.done.append(("patch", name))
        return obj

    def server_side_apply(self, resource, body, name, namespace, **kwargs):
        self.fail_if("apply", resource.kind, name)
        self.objects[(resource.kind, namespace, name)] = body
        self.done.append(("apply", name))
        return body


@pytest.fixture
def cluster_of(monkeypatch):
    """Point every module's connection at a FakeCluster holding these objects."""

    def make(objects, failures=None):
        cluster = FakeCluster(objects, failures)
        monkeypatch.setattr(service_module, "get_api_client", lambda module: cluster)
        return cluster

    return make


def node(name, labels=None):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})},
            "status": {"allocatable": {"nvidia.com/gpu": "8"}}}


NODES = ["gpu-a", "gpu-b", "gpu-c", "gpu-d"]
CONFLICT = 'Operation cannot be fulfilled on nodes "gpu-c": the object has been modified; please apply your changes to the latest version'


def test_a_failed_patch_names_the_nodes_patched_and_those_not_sent(run_module, cluster_of):
    # One node at a time: the patch of gpu-c fails, so gpu-a and gpu-b were patched and gpu-d is never sent.
    # gpu-e already carries the labels: it needs no patch and is neither.
    done = node("gpu-e", {MEMORY_LABEL: "40960", COUNT_LABEL: "8"})
    cluster = cluster_of([node(n) for n in NODES] + [done], {("patch", "Node", "gpu-c"): api_error(409, "Conflict", CONFLICT)})
    result, code = run_module(gpu_node_label.main, dict(nodes=NODES + ["gpu-e"], memory_mib=40960, parallel=1))
    failing = NODES.index("gpu-c")
    patched, not_patched = NODES[:failing], NODES[failing:]
    assert code == 1
    assert result["msg"] == (
        "patch Node gpu-c: 409 Conflict: %s; %d of %d node(s) to change were patched before the failure (%s); "
        "not patched: %s. Run the task again to patch the rest"
        % (CONFLICT, len(patched), len(NODES), ", ".join(patched), ", ".join(not_patched))
    )
    assert result["patched"] == patched and result["not_patched"] == not_patched
    assert cluster.done == [("patch", n) for n in patched]
    assert result["kube_error"]["status"] == 409 and result["kube_error"]["name"] == "gpu-c"


def test_a_failed_patch_among_concurrent_ones_reports_what_the_cluster_did(run_module, cluster_of):
    cluster = cluster_of([node(n) for n in NODES], {("patch", "Node", "gpu-b"): api_error(409, "Conflict", "modified")})
    result, code = run_module(gpu_node_label.main, dict(nodes=NODES, memory_mib=40960, parallel=4))
    applied = sorted(name for op, name in cluster.done)
    assert code == 1 and result["msg"].startswith("patch Node gpu-b: 409 Conflict: modified; ")
    assert result["patched"] == applied
    assert result["not_patched"] == sorted(set(NODES) - set(applied))
    assert "gpu-b" in result["not_patched"]
    assert "not patched: %s." % ", ".join(result["not_patched"]) in result["msg"]


def test_labels_of_every_node_when_no_patch_fails(run_module, cluster_of):
    cluster = cluster_of([node(n) for n in NODES])
    result, code = run_module(gpu_node_label.main, dict(nodes=NODES, memory_mib=40960, parallel=2))
    assert code == 0 and result["changed"] is True
    assert [n["name"] for n in result["nodes"]] == NODES
    assert all(cluster.objects[("Node", None, n)]["metadata"]["labels"][MEMORY_LABEL] == "40960" for n in NODES)


def queue(name, parent=None, children=None):
    spec = {"parentQueue": parent} if parent else {}
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec,
            "status": {"childQueues": list(children or [])}}


def test_kai_queue_names_the_queue_the_webhook_refused_and_what_was_applied(run_module, cluster_of):
    denied = 'admission webhook "queue-validation.kai.scheduler" denied the request: quota above the parent\'s'
    cluster_of([], {("apply", "Queue", "child"): api_error(403, "Forbidden", denied)})
    result, code = run_module(kai_queue.main, dict(queues=[dict(name="parent"), dict(name="child", parent_queue="parent")]))
    assert code == 1
    assert result["msg"] == "apply Queue child: 403 Forbidden: %s" % denied
    assert [(q["name"], q["action"]) for q in result["queues"]] == [("parent", "created")]
    assert result["kube_error"]["operation"] == "apply" and result["kube_error"]["kind"] == "Queue"


def test_kai_queue_wait_that_runs_out_names_the_unlisted_children(run_module, cluster_of):
    cluster_of([queue("parent")])
    result, code = run_module(kai_queue.main, dict(queues=[dict(name="child", parent_queue="parent")], wait=True, wait_timeout=0))
    assert code == 1
    assert result["msg"] == (
        "wait for status.childQueues of Queue parent: timed out after 0 s: child queue(s) not listed yet: "
        "child (parent parent) (is KAI's queue-controller running?)"
    )
    assert [(q["name"], q["action"]) for q in result["queues"]] == [("child", "created")]


def test_reservation_probe_names_the_pod_whose_log_it_could_not_read(run_module, cluster_of, monkeypatch):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "shared", "namespace": "team-a", "annotations": {"gpu-fraction": "0.5"}}}
    reservation = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "gpu-reservation-1", "namespace": "kai-resource-reservation", "labels": {"app": "kai-resource-reservation"}}}
    cluster_of([pod, reservation])
    forbidden = 'pods "gpu-reservation-1" is forbidden: User "lab" cannot get resource "pods/log"'
    body = json.dumps({"kind": "Status", "status": "Failure", "message": forbidden, "code": 403})

    class Core(object):
        def read_namespaced_pod_log(self, name, namespace, **kwargs):
            raise ApiException(status=403, reason="Forbidden", body=body)

    monkeypatch.setattr(service_module.KubeService, "_core_api", lambda self: Core())
    result, code = run_module(reservation_probe.main, dict(name="shared", namespace="team-a"))
    assert code == 1
    assert result["msg"] == "read the log of Pod kai-resource-reservation/gpu-reservation-1: 403 Forbidden: %s" % forbidden


@pytest.mark.parametrize(
    "main, args",
    [
        (gpu_node_label.main, dict(nodes=["gpu-a"], memory_mib=40960)),
        (kai_queue.main, dict(name="research")),
        (reservation_probe.main, dict(name="shared")),
    ],
)
def test_every_module_reports_an_api_server_that_does_not_answer(run_module, monkeypatch, main, args):
    refused = MaxRetryError(None, "/version", reason=ConnectionRefusedError(111, "Connection refused"))

    def get_api_client(module):
        raise refused

    monkeypatch.setattr(service_module, "get_api_client", get_api_client)
    result, code = run_module(main, dict(args, host="https://10.0.0.1:6443"))
    assert code == 1
    assert result["msg"] == "connect to API server https://10.0.0.1:6443: no answer from the API server: %s" % refused
    assert result["kube_error"]["status"] is None
