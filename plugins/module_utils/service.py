# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes operations our modules need, over kubernetes.core's client.

Reads are always real; writes honour the client's server-side dry-run flag (check mode), so
what check mode reports is what the API server would have done.

As kubernetes.core's K8sService, every method turns the client's errors into one exception of
ours, KubeError, whose message names the operation, the object and the server's answer
(``patch Node gpu-1: 409 Conflict: <the API server's message>``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from contextlib import contextmanager

from ansible_collections.gpulab.kai_hami.plugins.module_utils.client import (
    CLIENT_ERRORS,
    ApiException,
    CoreException,
    NotFoundError,
    ResourceNotFoundError,
    ResourceNotUniqueError,
    TransportError,
    api_error_message,
    core_v1_api,
    get_api_client,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.exceptions import KubeError

FIELD_MANAGER = "gpulab.kai_hami"
# API answers to pods/log that mean "no log to read (yet)".
NO_LOG_YET = (400, 404)
DRY_RUN_ALL = "All"


def client_error(error, operation, kind, name=None, namespace=None, selector=None, api_version=None):
    """The KubeError for a client error raised while doing ``operation`` on an object."""
    where = dict(name=name, namespace=namespace, selector=selector)
    if isinstance(error, ApiException):
        detail = api_error_message(error) if getattr(error, "body", None) else None
        return KubeError(operation, kind, status=getattr(error, "status", None), reason=getattr(error, "reason", None),
                         detail=detail, **where)
    if isinstance(error, (ResourceNotFoundError, ResourceNotUniqueError)):
        served = "serves more than one" if isinstance(error, ResourceNotUniqueError) else "does not serve"
        return KubeError(
            operation, kind, reason="kind not served",
            detail="the API server %s %s (is its CustomResourceDefinition installed?)" % (served, " ".join(p for p in (api_version, kind) if p)),
            **where
        )
    if isinstance(error, TransportError):
        return KubeError(operation, kind, reason="no answer from the API server", detail=str(error), **where)
    return KubeError(operation, kind, detail="%s: %s" % (type(error).__name__, error), **where)


@contextmanager
def wrapped(operation, kind, name=None, namespace=None, selector=None, api_version=None):
    """Raise any client error inside the block as a KubeError naming this operation and object."""
    try:
        yield
    except CLIENT_ERRORS as error:  # pylint: disable=catching-non-exception
        raise client_error(error, operation, kind, name, namespace, selector, api_version) from error


def connect(module):
    """A KubeService on kubernetes.core's API client for the module's connection options."""
    host = module.params.get("host")
    try:
        return KubeService(get_api_client(module=module))
    except KubeError:
        raise
    except CoreException as error:
        raise KubeError("connect to", "API server", name=host, detail=str(error)) from error
    except CLIENT_ERRORS as error:  # pylint: disable=catching-non-exception
        raise client_error(error, "connect to", "API server", name=host) from error


def _plain(obj):
    if obj is None:
        return None
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    return obj


class KubeService:
    """Typed get/list/apply/patch/delete/log calls on one API client."""

    def __init__(self, k8s_client):
        self.k8s_client = k8s_client
        self.dynamic = k8s_client.client
        self._resources = {}

    @property
    def dry_run(self):
        """True in check mode: every write is sent with dryRun=All."""
        return bool(getattr(self.k8s_client, "dry_run", False))

    def _dry_run_params(self):
        return {"dry_run": DRY_RUN_ALL} if self.dry_run else {}

    def resource(self, api_version, kind):
        key = (api_version, kind)
        if key not in self._resources:
            self._resources[key] = self.k8s_client.resource(kind, api_version)
        return self._resources[key]

    def get(self, api_version, kind, name, namespace=None):
        """The object as a dict, or None when it does not exist."""
        with wrapped("get", kind, name, namespace, api_version=api_version):
            try:
                return _plain(self.resource(api_version, kind).get(name=name, namespace=namespace))
            except NotFoundError:
                return None

    def list(self, api_version, kind, namespace=None, label_selector=None, field_selector=None):
        params = {}
        if namespace:
            params["namespace"] = namespace
        if label_selector:
            params["label_selector"] = label_selector
        if field_selector:
            params["field_selector"] = field_selector
        selector = ", ".join("%s %s" % (key, params[key]) for key in ("label_selector", "field_selector") if key in params)
        with wrapped("list", kind, namespace=namespace, selector=selector or None, api_version=api_version):
            result = _plain(self.resource(api_version, kind).get(**params))
        return result.get("items") or []

    def apply(self, definition, field_manager=FIELD_MANAGER, dry_run=False):
        """Server-side apply (taking over fields from other managers, as kubectl --force-conflicts).

        ``dry_run`` sends it as a server-side dry-run whatever the check mode: the admission
        chain answers with the object it would have stored, and nothing is stored.
        """
        name = definition["metadata"]["name"]
        namespace = definition["metadata"].get("namespace")
        with wrapped("apply", definition["kind"], name, namespace, api_version=definition["apiVersion"]):
            resource = self.resource(definition["apiVersion"], definition["kind"])
            return _plain(
                self.dynamic.server_side_apply(
                    resource,
                    body=definition,
                    name=name,
                    namespace=namespace,
                    field_manager=field_manager,
                    force_conflicts=True,
                    **({"dry_run": DRY_RUN_ALL} if dry_run else self._dry_run_params())
                )
            )

    def merge_patch(self, api_version, kind, name, patch, namespace=None):
        """A JSON merge patch (RFC 7386): only the given fields change; None deletes a key."""
        with wrapped("patch", kind, name, namespace, api_version=api_version):
            resource = self.resource(api_version, kind)
            return _plain(
                self.dynamic.patch(
                    resource,
                    body=patch,
                    name=name,
                    namespace=namespace,
                    content_type="application/merge-patch+json",
                    field_manager=FIELD_MANAGER,
                    **self._dry_run_params()
                )
            )

    def delete(self, api_version, kind, name, namespace=None):
        """Delete; returns False when the object was already gone."""
        with wrapped("delete", kind, name, namespace, api_version=api_version):
            resource = self.resource(api_version, kind)
            try:
                resource.delete(name=name, namespace=namespace, **self._dry_run_params())
            except NotFoundError:
                return False
        return True

    def events_for(self, kind, name, namespace):
        """core/v1 Events about one object, oldest first."""
        events = self.list(
            "v1",
            "Event",
            namespace=namespace,
            field_selector="involvedObject.kind=%s,involvedObject.name=%s" % (kind, name),
        )
        return sorted(events, key=_event_time)

    def _core_api(self):
        return core_v1_api(self.dynamic.client)

    def pod_log(self, name, namespace, container=None, tail_lines=None, previous=False):
        """A container's log text, or None when the API server has none to give.

        "None to give" is the API's 400 (the container has not started, or no previous run) or
        404 (no such pod, no such log); any other error (403 on pods/log, a server error) is
        raised as a KubeError, so that a missing permission never reads as "no evidence yet".
        """
        kwargs = {"previous": previous}
        if container:
            kwargs["container"] = container
        if tail_lines:
            kwargs["tail_lines"] = tail_lines
        operation = "read the previous log of" if previous else "read the log of"
        with wrapped(operation, "Pod", name, namespace):
            try:
                return self._core_api().read_namespaced_pod_log(name, namespace, **kwargs)
            except ApiException as error:
                if error.status in NO_LOG_YET:
                    return None
                raise

    def deployment_log(self, name, namespace, tail_lines=None):
        """``(lines, why_none)``: the log of one of a Deployment's pods (a running one first), as
        ``kubectl logs deployment/<name>`` reads it; ``why_none`` says why there are no lines."""
        deployment = self.get("apps/v1", "Deployment", name, namespace)
        if deployment is None:
            return [], "Deployment %s/%s not found" % (namespace, name)
        labels = (((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels")) or {}
        selector = ",".join("%s=%s" % item for item in sorted(labels.items()))
        pods = self.list("v1", "Pod", namespace=namespace, label_selector=selector) if selector else []
        pods.sort(key=lambda pod: ((pod.get("status") or {}).get("phase") != "Running", (pod.get("metadata") or {}).get("name")))
        if not pods:
            return [], "Deployment %s/%s has no pods" % (namespace, name)
        pod_name = pods[0]["metadata"]["name"]
        text = self.pod_log(pod_name, namespace, tail_lines=tail_lines)
        if not text:
            return [], "pod %s/%s has no log yet" % (namespace, pod_name)
        return text.splitlines(), None


def _event_time(event):
    return (
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


__all__ = ["FIELD_MANAGER", "KubeError", "KubeService", "client_error", "connect", "wrapped"]
