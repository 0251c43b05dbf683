# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place this collection imports kubernetes.core (and the kubernetes client).

kubernetes.core does not promise a stable module_utils API; keeping every import in this file makes
a future break a one-file fix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import traceback

from ansible.module_utils.basic import missing_required_lib

K8S_CORE_IMPORT_ERROR = None
try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import (
        AUTH_ARG_SPEC,
    )
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import (
        get_api_client,
    )
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import (
        AnsibleK8SModule,
    )
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import (
        CoreException,
    )
except ImportError:
    K8S_CORE_IMPORT_ERROR = traceback.format_exc()
    AUTH_ARG_SPEC = {}
    get_api_client = None
    AnsibleK8SModule = None

    class CoreException(Exception):
        """Stand-in so callers can name the exception without kubernetes.core."""


try:
    from kubernetes.client.exceptions import ApiException
    from kubernetes.dynamic.exceptions import (
        DynamicApiError,
        NotFoundError,
        ResourceNotFoundError,
        ResourceNotUniqueError,
    )
    from urllib3.exceptions import HTTPError as TransportError
except ImportError:

    class ApiException(Exception):
        """Stand-in when the kubernetes client is missing (AnsibleK8SModule reports it)."""

    class DynamicApiError(ApiException):
        """Stand-in when the kubernetes client is missing (AnsibleK8SModule reports it)."""

    class NotFoundError(DynamicApiError):
        """Stand-in when the kubernetes client is missing."""

    class ResourceNotFoundError(Exception):
        """Stand-in when the kubernetes client is missing."""

    class ResourceNotUniqueError(Exception):
        """Stand-in when the kubernetes client is missing."""

    class TransportError(Exception):
        """Stand-in when urllib3 (the kubernetes client's HTTP library) is missing."""

# What the client raises when a call fails: an HTTP error status (DynamicApiError is an
# ApiException), a kind the API server does not serve, or no connection at all.
CLIENT_ERRORS = (ApiException, ResourceNotFoundError, ResourceNotUniqueError, TransportError)


def core_v1_api(api_client):
    """The kubernetes client's CoreV1Api over a client of get_api_client (pod logs: the dynamic client has no call for them)."""
    from kubernetes.client import CoreV1Api

    return CoreV1Api(api_client)


def auth_argument_spec():
    """A copy of kubernetes.core's connection options (kubeconfig, context, host, ...)."""
    return dict((key, dict(value)) for key, value in AUTH_ARG_SPEC.items())


def build_module(**kwargs):
    """An AnsibleK8SModule, or a plain failure when kubernetes.core is not installed."""
    if K8S_CORE_IMPORT_ERROR is not None:
        from ansible.module_utils.basic import AnsibleModule

        module = AnsibleModule(**kwargs)
        module.fail_json(
            msg=missing_required_lib(
                "kubernetes.core collection (>=6.0.0,<7.0.0)",
                reason="gpulab.kai_hami modules use its Kubernetes client",
            ),
            exception=K8S_CORE_IMPORT_ERROR,
        )
    return AnsibleK8SModule(**kwargs)


def api_error_text(error):
    """The server's message for an API error (its status body), else the exception text."""
    body = getattr(error, "body", None)
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if body:
        return str(body)
    return str(error)


def api_error_message(error):
    """The ``message`` of the Status object an API error carries, else its body or text."""
    text = api_error_text(error)
    try:
        status = json.loads(text)
    except ValueError:
        return text.strip()
    if isinstance(status, dict) and status.get("message"):
        return str(status["message"])
    return text.strip()


__all__ = [
    "AnsibleK8SModule",
    "ApiException",
    "CLIENT_ERRORS",
    "CoreException",
    "DynamicApiError",
    "NotFoundError",
    "ResourceNotFoundError",
    "ResourceNotUniqueError",
    "TransportError",
    "api_error_message",
    "api_error_text",
    "auth_argument_spec",
    "build_module",
    "get_api_client",
]
