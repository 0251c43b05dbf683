# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU profiles and node lists as filters: every role reads a lab's GPUs through these."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.kai_hami.plugins.module_utils.gpu_profiles import (
    GpuProfileError,
    first_node_name,
    gpu_nodes,
    gpu_profile,
    mock_gpu_uuids,
)


def _plain(value):
    """Ansible's lazy containers as plain dicts and lists (the checks test their types)."""
    if isinstance(value, dict):
        return dict((str(key), _plain(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, str):
        return str(value)
    return value


def gpulab_mock_gpu_uuids(count, field="count"):
    try:
        return mock_gpu_uuids(_plain(count), field)
    except GpuProfileError as error:
        raise AnsibleFilterError(str(error))


def gpulab_gpu_profile(value, field="gpu_profile"):
    """The full GPU profile for a profile name or dict (name, product, memory_mib, count, labels)."""
    try:
        return gpu_profile(_plain(value), field)
    except GpuProfileError as error:
        raise AnsibleFilterError(str(error))


def gpulab_gpu_nodes(nodes, default_profile, field="nodes", profile_field="gpu_profile"):
    """The node list with each node's full GPU profile ({name, gpu_profile})."""
    try:
        return gpu_nodes(_plain(nodes), _plain(default_profile), field, profile_field)
    except GpuProfileError as error:
        raise AnsibleFilterError(str(error))


def gpulab_first_node_name(cluster_name):
    """``<cluster>-control-plane``: the name kind and the sim give a cluster's first node."""
    return first_node_name(_plain(cluster_name))


class FilterModule(object):
    """GPU profile filters."""

    def filters(self):
        return {"gpu_profile": gpulab_gpu_profile, "gpu_nodes": gpulab_gpu_nodes, "mock_gpu_uuids": gpulab_mock_gpu_uuids,
                "first_node_name": gpulab_first_node_name}
