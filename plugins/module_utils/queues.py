# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KAI ``scheduling.run.ai/v2`` Queues: argument spec, validation, ordering and manifests.

Pure functions, no API calls: all of this module runs before anything is sent to a cluster.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_parts import QUEUE_API as API_VERSION

KIND = "Queue"
RESOURCE_NAMES = ("cpu", "gpu", "memory")
UNLIMITED = -1

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|\u00b5s|ms|s|m|h))+$")

# Safe defaults: KAI reads an omitted limit as 0, i.e. "nothing of this resource may run".
RESOURCE_SPEC = dict(
    quota=dict(type="float", default=0),
    limit=dict(type="float", default=-1),
    over_quota_weight=dict(type="float", default=1),
)
RESOURCES_SPEC = dict(
    (name, dict(type="dict", apply_defaults=True, options=dict(RESOURCE_SPEC))) for name in RESOURCE_NAMES
)
QUEUE_FIELDS_SPEC = dict(
    parent_queue=dict(type="str"),
    display_name=dict(type="str"),
    priority=dict(type="int"),
    resources=dict(type="dict", apply_defaults=True, options=RESOURCES_SPEC),
    preempt_min_runtime=dict(type="str"),
    reclaim_min_runtime=dict(type="str"),
)


class QueueSpecError(ValueError):
    """Bad queue input; the message names the field and what it accepts."""


def _number(value):
    if value is None:
        return None
    value = float(value)
    return int(value) if value.is_integer() else value


def validate_queue(queue, where="queue"):
    """Check one queue's fields; raise QueueSpecError naming ``where.field``."""
    name = queue.get("name")
    if not name or len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        raise QueueSpecError(
            "%s.name %r is not a valid Kubernetes object name: use a DNS-1123 subdomain "
            "(lower-case letters, digits, '-' and '.', starting and ending with a letter or "
            "digit, at most 253 characters)" % (where, name)
        )
    if queue.get("parent_queue") is not None and queue.get("parent_queue") == name:
        raise QueueSpecError("%s.parent_queue must name another queue, not the queue itself (%r)" % (where, name))
    for field in ("preempt_min_runtime", "reclaim_min_runtime"):
        value = queue.get(field)
        if value is not None and not _GO_DURATION.match(value):
            raise QueueSpecError(
                "%s.%s %r is not a duration: use Go duration syntax such as 30s, 5m or 1h30m" % (where, field, value)
            )
    for resource_name in RESOURCE_NAMES:
        resource = (queue.get("resources") or {}).get(resource_name) or {}
        field = "%s.resources.%s" % (where, resource_name)
        quota, limit, weight = resource.get("quota"), resource.get("limit"), resource.get("over_quota_weight")
        if limit is not None and limit < UNLIMITED:
            raise QueueSpecError("%s.limit must be -1 (unlimited) or >= 0, got %s" % (field, _number(limit)))
        if quota is not None and quota < UNLIMITED:
            raise QueueSpecError("%s.quota must be -1 (unlimited) or >= 0, got %s" % (field, _number(quota)))
        if quota is not None and limit is not None and quota >= 0 and limit >= 0 and quota > limit:
            raise QueueSpecError(
                "%s.quota (%s) must not exceed %s.limit (%s); use limit -1 for no limit"
                % (field, _number(quota), field, _number(limit))
            )
        if weight is not None and weight < 0:
            raise QueueSpecError("%s.over_quota_weight must be >= 0, got %s" % (field, _number(weight)))


def validate_queues(queues):
    """Validate a whole list: each queue, unique names, and no parent cycle within the list."""
    names = {}
    for index, queue in enumerate(queues):
        validate_queue(queue, "queues[%d]" % index)
        if queue["name"] in names:
            raise QueueSpecError(
                "queues[%d].name %r is listed twice (first at queues[%d])" % (index, queue["name"], names[queue["name"]])
            )
        names[queue["name"]] = index
    parents = dict((q["name"], q.get("parent_queue")) for q in queues)
    for start in parents:
        seen = [start]
        current = parents.get(start)
        while current in parents:
            if current in seen:
                cycle = seen[seen.index(current):] + [current]
                raise QueueSpecError("queues form a parent cycle: %s" % " -> ".join(cycle))
            seen.append(current)
            current = parents.get(current)


def missing_parents(queues, existing_names):
    """``[(queue, parent)]`` whose parent is neither in the list nor among existing queues."""
    listed = set(q["name"] for q in queues)
    existing = set(existing_names)
    return [
        (q["name"], q["parent_queue"])
        for q in queues
        if q.get("parent_queue") and q["parent_queue"] not in listed and q["parent_queue"] not in existing
    ]


def parents_first(queues):
    """The queues ordered so every parent listed comes before its children (stable)."""
    by_name = dict((q["name"], q) for q in queues)
    ordered, done = [], set()

    def visit(queue):
        if queue["name"] in done:
            return
        parent = by_name.get(queue.get("parent_queue"))
        if parent is not None:
            visit(parent)
        done.add(queue["name"])
        ordered.append(queue)

    for queue in queues:
        visit(queue)
    return ordered


def descendants(name, existing_queues):
    """Names of every queue below ``name`` in the cluster's hierarchy, deepest first."""
    children = {}
    for queue in existing_queues:
        parent = (queue.get("spec") or {}).get("parentQueue")
        if parent:
            children.setdefault(parent, []).append(queue["metadata"]["name"])
    found = []

    def walk(parent, depth):
        for child in sorted(children.get(parent, [])):
            if child != name and child not in [f[1] for f in found]:
                found.append((depth, child))
                walk(child, depth + 1)

    walk(name, 1)
    return [child for depth, child in sorted(found, key=lambda item: -item[0])]


def depth_in(name, existing_queues, listed=None):
    """How deep ``name`` sits (0 = top level), from the cluster and the listed parents."""
    parents = dict(
        (q["metadata"]["name"], (q.get("spec") or {}).get("parentQueue")) for q in existing_queues
    )
    parents.update(listed or {})
    depth, current, seen = 0, parents.get(name), set([name])
    while current and current not in seen:
        seen.add(current)
        depth += 1
        current = parents.get(current)
    return depth


def queue_manifest(queue):
    """The Queue object our module applies for one validated queue entry."""
    spec = {}
    if queue.get("parent_queue"):
        spec["parentQueue"] = queue["parent_queue"]
    if queue.get("display_name") is not None:
        spec["displayName"] = queue["display_name"]
    if queue.get("priority") is not None:
        spec["priority"] = queue["priority"]
    if queue.get("preempt_min_runtime") is not None:
        spec["preemptMinRuntime"] = queue["preempt_min_runtime"]
    if queue.get("reclaim_min_runtime") is not None:
        spec["reclaimMinRuntime"] = queue["reclaim_min_runtime"]
    resources = queue.get("resources") or {}
    spec["resources"] = dict(
        (
            name,
            {
                "quota": _number(resources.get(name, {}).get("quota", 0)),
                "limit": _number(resources.get(name, {}).get("limit", UNLIMITED)),
                "overQuotaWeight": _number(resources.get(name, {}).get("over_quota_weight", 1)),
            },
        )
        for name in RESOURCE_NAMES
    )
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": queue["name"]}, "spec": spec}
