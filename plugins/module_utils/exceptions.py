# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one exception type our Kubernetes layers raise, as kubernetes.core's CoreException.

KubeService turns every client error (HTTP status, unknown kind, no connection) into a
KubeError naming the operation and the object, e.g.
``patch Node gpu-1: 409 Conflict: the object has been modified``; the waiter raises
KubeTimeout. A module's main() catches KubeError and passes ``fail_fields()`` to fail_json.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.kai_hami.plugins.module_utils.client import CoreException


class KubeError(CoreException):
    """A Kubernetes call failed: what was done, to which object, and the server's answer."""

    def __init__(self, operation, kind, name=None, namespace=None, status=None, reason=None,
                 detail=None, selector=None, result=None):
        self.operation = operation
        self.kind = kind
        self.name = name
        self.namespace = namespace
        self.status = status
        self.reason = reason
        self.detail = detail
        self.selector = selector
        self.notes = []
        self.result = dict(result or {})
        super(KubeError, self).__init__(self.describe())

    @property
    def target(self):
        """The object as the message names it: ``Node gpu-1``, ``Pod ns/name``, ``Pod in namespace ns``."""
        if self.name and self.namespace:
            text = "%s %s/%s" % (self.kind, self.namespace, self.name)
        elif self.name:
            text = "%s %s" % (self.kind, self.name)
        elif self.namespace:
            text = "%s in namespace %s" % (self.kind, self.namespace)
        else:
            text = self.kind
        if self.selector:
            text += " (%s)" % self.selector
        return text

    def describe(self):
        """``<operation> <target>: <status> <reason>: <detail>``, then any notes after '; '."""
        parts = ["%s %s" % (self.operation, self.target)]
        answer = " ".join(str(part) for part in (self.status, self.reason) if part)
        if answer:
            parts.append(answer)
        if self.detail:
            parts.append(str(self.detail))
        return "; ".join([": ".join(parts)] + self.notes)

    def add_note(self, note, **result):
        """Add context a caller knows (e.g. which nodes were patched) to the message and result."""
        self.notes.append(note)
        self.result.update(result)
        self.args = (self.describe(),)
        return self

    def details(self):
        """The parts of the message as a dict, for a module's ``kube_error`` return value."""
        return dict(
            operation=self.operation,
            kind=self.kind,
            name=self.name,
            namespace=self.namespace,
            status=self.status,
            reason=self.reason,
            detail=self.detail,
        )

    def fail_fields(self):
        """Keyword arguments for fail_json besides msg: ``kube_error`` and the caller's result."""
        fields = dict(self.result)
        fields["kube_error"] = self.details()
        return fields


class KubeTimeout(KubeError):
    """A wait ran out: ``wait for <target>: timed out after N s: <what was still missing>``."""

    def __init__(self, kind, name=None, namespace=None, timeout=None, detail=None, result=None, operation="wait for"):
        self.timeout = timeout
        super(KubeTimeout, self).__init__(
            operation, kind, name=name, namespace=namespace,
            reason="timed out after %s s" % _seconds(timeout), detail=detail, result=result,
        )


def _seconds(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


__all__ = ["KubeError", "KubeTimeout"]
