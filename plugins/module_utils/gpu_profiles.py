# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU profiles and node lists: the one place a lab's GPUs are defined.

A GPU profile says what one node's GPUs are: ``name`` (nvml-mock's chart profile of that name
on kind), ``product`` (as NVML names it), ``memory_mib`` (per GPU) and ``count`` (GPUs per
node). It drives the node's allocatable ``nvidia.com/gpu``, the ``nvidia.com/gpu.*`` labels KAI
reads, the NVML stand-in library's devices and nvml-mock's values.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.kai_hami.plugins.module_utils.node_labels import (
    COUNT_LABEL,
    MEMORY_LABEL,
    MIN_MEMORY_MIB,
    PRODUCT_LABEL,
    NodeLabelError,
    sanitise_product,
)

# nvml-mock's profiles (the chart's profiles/<name>.yaml) that the collection knows.
PROFILES = {
    "a100": {"name": "a100", "product": "NVIDIA A100-SXM4-40GB", "memory_mib": 40960, "count": 8},
}
# The lab's profile: the roles' and modules' defaults take their GPUs from it.
DEFAULT_PROFILE = "a100"
FIELDS = ("name", "product", "memory_mib", "count")
MAX_GPUS_PER_NODE = 64
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def first_node_name(cluster_name):
    """The name kind and the sim give a cluster's first node (the lab's GPU node): ``<cluster>-control-plane``.
    (The roles check the cluster's name; a bad one gives a bad node name, which they refuse too.)"""
    return "%s-control-plane" % (cluster_name,)


class GpuProfileError(ValueError):
    """A profile or node list that cannot be used; the message names the field."""


def _whole(value, field, minimum, maximum=None):
    text = str(value).strip()
    if isinstance(value, bool) or not re.match(r"^[0-9]+$", text):
        raise GpuProfileError("%s must be a whole number, got %r" % (field, value))
    number = int(text)
    if maximum is not None and not minimum <= number <= maximum:
        raise GpuProfileError("%s must be %d to %d, got %d" % (field, minimum, maximum, number))
    if number < minimum:
        raise GpuProfileError("%s must be at least %d, got %d" % (field, minimum, number))
    return number


def gpu_profile(value, field="gpu_profile"):
    """The full profile for a name of PROFILES or a dict (a dict with a known name overrides its fields).

    ``'a100'`` -> ``{name: a100, product: NVIDIA A100-SXM4-40GB, memory_mib: 40960, count: 8, labels: {...}}``;
    ``{'name': 'a100', 'count': 4, 'memory_mib': 81920}`` -> the a100 profile with 4 GPUs of 81920 MiB.
    """
    if isinstance(value, str):
        if value not in PROFILES:
            raise GpuProfileError("%s must be one of %s, or a dict with %s (got %r)"
                                  % (field, ", ".join(sorted(PROFILES)), ", ".join(FIELDS), value))
        value = {"name": value}
    if not isinstance(value, dict):
        raise GpuProfileError("%s must be a profile name (%s) or a dict with %s (got %r)"
                              % (field, ", ".join(sorted(PROFILES)), ", ".join(FIELDS), value))
    unknown = sorted(set(value) - set(FIELDS) - {"labels"})
    if unknown:
        raise GpuProfileError("%s has unknown fields %s; it takes %s" % (field, ", ".join(unknown), ", ".join(FIELDS)))
    profile = dict(PROFILES.get(value.get("name"), {}))
    profile.update((key, value[key]) for key in FIELDS if value.get(key) is not None)
    missing = [key for key in FIELDS if profile.get(key) in (None, "")]
    if missing:
        raise GpuProfileError("%s needs %s (a dict not named after a known profile, %s, must give every field)"
                              % (field, ", ".join("%s.%s" % (field, key) for key in missing), ", ".join(sorted(PROFILES))))
    profile["name"] = str(profile["name"])
    profile["product"] = str(profile["product"])
    profile["memory_mib"] = _whole(profile["memory_mib"], field + ".memory_mib", MIN_MEMORY_MIB)
    profile["count"] = _whole(profile["count"], field + ".count", 1, MAX_GPUS_PER_NODE)
    try:
        product_label = sanitise_product(profile["product"])
    except NodeLabelError as error:
        raise GpuProfileError("%s.product: %s" % (field, error))
    profile["labels"] = {
        MEMORY_LABEL: str(profile["memory_mib"]),
        PRODUCT_LABEL: product_label,
        COUNT_LABEL: str(profile["count"]),
    }
    return profile


def gpu_nodes(nodes, default_profile, field="nodes", profile_field="gpu_profile"):
    """The node list, each entry ``{name, gpu_profile}`` with its full profile (the default when it names none).

    ``field`` and ``profile_field`` are the names the errors give the list and the default profile.
    """
    if not isinstance(nodes, list) or not nodes:
        raise GpuProfileError("%s must be a non-empty list of nodes, each {name: ..., gpu_profile: ...} (got %r)" % (field, nodes))
    default = gpu_profile(default_profile, profile_field)
    result = []
    for index, node in enumerate(nodes):
        where = "%s[%d]" % (field, index)
        if isinstance(node, str):
            node = {"name": node}
        if not isinstance(node, dict):
            raise GpuProfileError("%s must be a node name or a dict {name: ..., gpu_profile: ...} (got %r)" % (where, node))
        unknown = sorted(set(node) - {"name", "gpu_profile"})
        if unknown:
            raise GpuProfileError("%s has unknown fields %s; it takes name, gpu_profile" % (where, ", ".join(unknown)))
        name = str(node.get("name") or "")
        if not _NODE_NAME.match(name):
            raise GpuProfileError("%s.name must be a node name: lowercase letters, digits, '-' and '.', starting and ending "
                                  "with a letter or digit (got %r)" % (where, name))
        profile = default if node.get("gpu_profile") is None else gpu_profile(node["gpu_profile"], where + ".gpu_profile")
        result.append({"name": name, "gpu_profile": profile})
    names = [node["name"] for node in result]
    twice = sorted(set(name for name in names if names.count(name) > 1))
    if twice:
        raise GpuProfileError("%s names %s more than once" % (field, ", ".join(twice)))
    return result


# nvml-mock's GPU UUIDs (and the sim's NVML stand-in library's default): GPU-12345678-1234-1234-1234-1234567800NN.
MOCK_UUID_PREFIX = "GPU-12345678-1234-1234-1234-1234567800"


def mock_gpu_uuids(count, field="count"):
    """The UUIDs of a node's ``count`` mock GPUs, in order (index NN, two digits)."""
    count = _whole(count, field, 1, MAX_GPUS_PER_NODE)
    return ["%s%02d" % (MOCK_UUID_PREFIX, index) for index in range(count)]
