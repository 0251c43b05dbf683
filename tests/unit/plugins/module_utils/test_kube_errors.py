"""KubeService turns the client's errors into KubeErrors naming the operation, kind, name and status.

The fake client raises the exception types the real one raises: kubernetes.dynamic's
per-status DynamicApiErrors (built by its own ``api_exception``), ResourceNotFoundError for a
kind the API server does not serve, and urllib3's MaxRetryError when nothing answers.
"""

import json

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError, api_exception
from urllib3.exceptions import MaxRetryError

from ansible_collections.gpulab.kai_hami.plugins.module_utils import service as service_module
from ansible_collections.gpulab.kai_hami.plugins.module_utils.client import CoreException
from ansible_collections.gpulab.kai_hami.plugins.module_utils.exceptions import KubeError
from ansible_collections.gpulab.kai_hami.plugins.module_utils.service import KubeService, connect

QUEUE = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "research"}, "spec": {}}


def api_error(status, reason, message):
    """The DynamicApiError subclass the dynamic client raises for this answer (ConflictError for 409, ...)."""
    body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": status})
    return api_exception(ApiException(status=status, reason=reason, body=body))


class FailingResource(object):
    def __init__(self, error):
        self.error = error

    def get(self, **params):
        raise self.error

    def delete(self, **params):
        raise self.error


class FailingClient(object):
    """kubernetes.core's K8SClient as KubeService uses it, where every call raises ``error``."""

    dry_run = False

    def __init__(self, error):
        self.error = error
        self.client = self

    def resource(self, kind, api_version):
        if isinstance(self.error, ResourceNotFoundError):
            raise self.error
        return FailingResource(self.error)

    def patch(self, resource, **kwargs):
        raise self.error

    def server_side_apply(self, resource, **kwargs):
        raise self.error


# (operation, the call, the object as the message names it)
CALLS = [
    ("get", lambda s: s.get("v1", "Node", "gpu-1"), "Node gpu-1"),
    ("get", lambda s: s.get("v1", "ConfigMap", "limits", "team-a"), "ConfigMap team-a/limits"),
    ("list", lambda s: s.list("v1", "Pod", namespace="kai-resource-reservation", label_selector="app=kai-resource-reservation"),
     "Pod in namespace kai-resource-reservation (label_selector app=kai-resource-reservation)"),
    ("list", lambda s: s.events_for("Pod", "shared", "team-a"),
     "Event in namespace team-a (field_selector involvedObject.kind=Pod,involvedObject.name=shared)"),
    ("apply", lambda s: s.apply(QUEUE), "Queue research"),
    ("patch", lambda s: s.merge_patch("v1", "Node", "gpu-1", {"metadata": {"labels": {"a": "b"}}}), "Node gpu-1"),
    ("delete", lambda s: s.delete("scheduling.run.ai/v2", "Queue", "research"), "Queue research"),
]
ANSWERS = [
    (403, "Forbidden", 'nodes "gpu-1" is forbidden: User "lab" cannot patch resource "nodes"'),
    (409, "Conflict", 'Operation cannot be fulfilled on nodes "gpu-1": the object has been modified'),
    (422, "Unprocessable Entity", "Queue.scheduling.run.ai \"research\" is invalid: spec.resources: Required value"),
    (500, "Internal Server Error", 'Internal error occurred: failed calling webhook "queue-validation.kai.scheduler"'),
]


@pytest.mark.parametrize("operation, call, target", CALLS)
@pytest.mark.parametrize("status, reason, message", ANSWERS)
def test_api_errors_name_operation_object_and_status(operation, call, target, status, reason, message):
    cause = api_error(status, reason, message)
    with pytest.raises(KubeError) as raised:
        call(KubeService(FailingClient(cause)))
    error = raised.value
    assert str(error) == "%s %s: %d %s: %s" % (operation, target, status, reason, message)
    assert (error.operation, error.status, error.reason, error.detail) == (operation, status, reason, message)
    assert error.__cause__ is cause
    assert isinstance(error, CoreException)  # as kubernetes.core's own errors


def test_an_error_without_a_body_is_named_by_its_status():
    cause = api_exception(ApiException(status=503, reason="Service Unavailable"))
    with pytest.raises(KubeError) as raised:
        KubeService(FailingClient(cause)).merge_patch("v1", "Node", "gpu-1", {})
    assert str(raised.value) == "patch Node gpu-1: 503 Service Unavailable"


def test_a_body_that_is_not_a_status_is_given_as_it_is():
    cause = api_exception(ApiException(status=502, reason="Bad Gateway", body="upstream connect error"))
    with pytest.raises(KubeError) as raised:
        KubeService(FailingClient(cause)).get("v1", "Node", "gpu-1")
    assert str(raised.value) == "get Node gpu-1: 502 Bad Gateway: upstream connect error"


def test_not_found_is_an_answer_for_get_and_delete_not_an_error():
    missing = api_error(404, "Not Found", 'nodes "gpu-1" not found')
    assert KubeService(FailingClient(missing)).get("v1", "Node", "gpu-1") is None
    assert KubeService(FailingClient(missing)).delete("v1", "Node", "gpu-1") is False


def test_not_found_on_patch_is_an_error():
    missing = api_error(404, "Not Found", 'nodes "gpu-9" not found')
    with pytest.raises(KubeError, match='^patch Node gpu-9: 404 Not Found: nodes "gpu-9" not found$'):
        KubeService(FailingClient(missing)).merge_patch("v1", "Node", "gpu-9", {})


def test_a_kind_the_server_does_not_serve():
    cause = ResourceNotFoundError("No matches found for {'api_version': 'scheduling.run.ai/v2', 'kind': 'Queue'}")
    with pytest.raises(KubeError) as raised:
        KubeService(FailingClient(cause)).apply(QUEUE)
    assert str(raised.value) == (
        "apply Queue research: kind not served: the API server does not serve scheduling.run.ai/v2 Queue "
        "(is its CustomResourceDefinition installed?)"
    )
    assert raised.value.status is None


def test_no_answer_from_the_api_server():
    cause = MaxRetryError(None, "/api/v1/nodes/gpu-1", reason=ConnectionRefusedError(111, "Connection refused"))
    with pytest.raises(KubeError) as raised:
        KubeService(FailingClient(cause)).merge_patch("v1", "Node", "gpu-1", {})
    assert str(raised.value) == "patch Node gpu-1: no answer from the API server: %s" % cause
    assert raised.value.status is None and raised.value.__cause__ is cause


class Module(object):
    def __init__(self, **params):
        self.params = params


@pytest.mark.parametrize(
    "cause, expected",
    [
        (CoreException("Could not create API client: Invalid kube-config file. No configuration found."),
         "connect to API server https://10.0.0.1:6443: Could not create API client: Invalid kube-config file. No configuration found."),
        (MaxRetryError(None, "/version", reason=ConnectionRefusedError(111, "Connection refused")),
         "connect to API server https://10.0.0.1:6443: no answer from the API server: None: Max retries exceeded with url: /version "
         "(Caused by ConnectionRefusedError(111, 'Connection refused'))"),
    ],
)
def test_connect_names_the_api_server(monkeypatch, cause, expected):
    def get_api_client(module):
        raise cause

    monkeypatch.setattr(service_module, "get_api_client", get_api_client)
    with pytest.raises(KubeError) as raised:
        connect(Module(host="https://10.0.0.1:6443"))
    assert str(raised.value) == expected


def test_a_note_adds_context_to_message_and_fail_fields():
    error = service_module.client_error(api_error(409, "Conflict", "modified"), "patch", "Node", "gpu-2")
    error.add_note("1 of 2 node(s) to change were patched", patched=["gpu-1"], not_patched=["gpu-2"])
    assert str(error) == "patch Node gpu-2: 409 Conflict: modified; 1 of 2 node(s) to change were patched"
    fields = error.fail_fields()
    assert fields["patched"] == ["gpu-1"] and fields["not_patched"] == ["gpu-2"]
    assert fields["kube_error"] == dict(operation="patch", kind="Node", name="gpu-2", namespace=None,
                                        status=409, reason="Conflict", detail="modified")
