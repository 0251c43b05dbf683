# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU node labels KAI reads, computed and checked without touching a cluster."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_parts import (
    GPU_COUNT_LABEL as COUNT_LABEL,
    GPU_MEMORY_LABEL as MEMORY_LABEL,
    GPU_PRODUCT_LABEL as PRODUCT_LABEL,
    GPU_RESOURCE,
)

GPU_LABELS = (MEMORY_LABEL, PRODUCT_LABEL, COUNT_LABEL)
MIN_MEMORY_MIB = 100
MAX_LABEL_VALUE = 63

_NOT_LABEL_CHAR = re.compile(r"[^A-Za-z0-9._-]")
_EDGE = re.compile(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$")


class NodeLabelError(ValueError):
    """Bad label input; the message names the field and what it accepts."""


def sanitise_product(product):
    """The product name as GPU feature discovery writes it: spaces become '-'.

    Characters a label value cannot hold are dropped, as are leading and trailing
    non-alphanumerics. ``NVIDIA A100-SXM4-40GB`` -> ``NVIDIA-A100-SXM4-40GB``.
    """
    value = "-".join(str(product).split())
    value = _EDGE.sub("", _NOT_LABEL_CHAR.sub("", value))
    if not value:
        raise NodeLabelError(
            "product %r sanitises to an empty label value: give letters or digits, e.g. NVIDIA-A100-SXM4-40GB" % (product,)
        )
    if len(value) > MAX_LABEL_VALUE:
        raise NodeLabelError(
            "product %r sanitises to %d characters (%s); a label value holds at most %d"
            % (product, len(value), value, MAX_LABEL_VALUE)
        )
    return value


def validate_label_input(params):
    """Check the module's label fields before any API call; raise NodeLabelError."""
    if params.get("nodes") is not None and len(params["nodes"]) == 0:
        raise NodeLabelError("nodes must list at least one node name (or use label_selector)")
    if params.get("nodes") is not None and any(not n for n in params["nodes"]):
        raise NodeLabelError("nodes must not contain empty names")
    if params.get("state", "present") == "present":
        memory = params.get("memory_mib")
        if memory is None and not params.get("from_existing"):
            raise NodeLabelError("memory_mib is required with state=present unless from_existing=true")
        if memory is not None and memory < MIN_MEMORY_MIB:
            raise NodeLabelError(
                "memory_mib must be per-GPU memory in MiB, at least %d; %d looks like GiB "
                "(KAI floors it to 0; an A100-40GB is 40960)" % (MIN_MEMORY_MIB, memory)
            )
        count = params.get("count")
        if count is not None and count <= 0:
            raise NodeLabelError("count must be a positive number of GPUs per node, got %d" % count)
        if params.get("product") is not None:
            sanitise_product(params["product"])
    if params.get("min_nodes") is not None and params["min_nodes"] < 0:
        raise NodeLabelError("min_nodes must be >= 0, got %d" % params["min_nodes"])


def allocatable_gpus(node):
    """The node's allocatable nvidia.com/gpu as an int, or None."""
    value = ((node.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE)
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def desired_labels(node, params):
    """``(labels, warnings)``: the GPU labels this node should carry (None = remove).

    Raises NodeLabelError naming the node when a value cannot be derived.
    """
    name = node["metadata"]["name"]
    current = (node["metadata"].get("labels") or {})
    warnings = []
    if params.get("state", "present") == "absent":
        return dict((key, None) for key in GPU_LABELS), warnings
    labels = {}
    if params.get("from_existing") and params.get("memory_mib") is None:
        if not current.get(MEMORY_LABEL):
            raise NodeLabelError(
                "node %s has no %s label to keep (from_existing=true); give memory_mib" % (name, MEMORY_LABEL)
            )
        labels[MEMORY_LABEL] = current[MEMORY_LABEL]
    elif params.get("from_existing") and current.get(MEMORY_LABEL):
        labels[MEMORY_LABEL] = current[MEMORY_LABEL]
    else:
        labels[MEMORY_LABEL] = str(params["memory_mib"])
    if params.get("product") is not None:
        labels[PRODUCT_LABEL] = sanitise_product(params["product"])
    allocatable = allocatable_gpus(node)
    if params.get("count") is not None:
        labels[COUNT_LABEL] = str(params["count"])
        if allocatable is not None and allocatable != params["count"]:
            warnings.append(
                "node %s: count %d differs from its allocatable %s (%d); KAI uses the label for "
                "shared-GPU accounting" % (name, params["count"], GPU_RESOURCE, allocatable)
            )
    elif allocatable is not None:
        labels[COUNT_LABEL] = str(allocatable)
    else:
        raise NodeLabelError(
            "node %s has no allocatable %s to take count from; is the device plugin running? "
            "Or give count" % (name, GPU_RESOURCE)
        )
    return labels, warnings


def label_changes(node, labels):
    """``{key: [before, after]}`` for the labels that differ (after None = removed)."""
    current = node["metadata"].get("labels") or {}
    return dict(
        (key, [current.get(key), value])
        for key, value in sorted(labels.items())
        if current.get(key) != value
    )
