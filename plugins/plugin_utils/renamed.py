# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's renames, once: the variables of 0.1.0 that are gone (refused, naming what replaces
them), and the variables, values and roles renamed in 0.3.0 (read until 0.5.0, with a deprecation
warning). The renamed_variables lookup and the renamed_variable filter read them; docs/porting.md lists them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Variables of 0.1.0 a user may have set, by the part that read them, and what replaces each.
RENAMED = {
    "sim_cluster": {
        "sim_cluster_profile": "sim_cluster_gpu_profile (a profile name such as a100, or a dict of name, product, memory_mib, count)",
        "sim_cluster_profiles": "sim_cluster_gpu_profile, and a gpu_profile on each node of sim_cluster_nodes",
        "sim_cluster_gpu_node_name": "sim_cluster_nodes (the first node is the GPU node)",
        "sim_cluster_extra_gpu_nodes": "sim_cluster_nodes",
    },
    "kai_scheduler": {
        "kai_scheduler_mode": "the sim_kai role on a sim cluster (kai_scheduler installs KAI by its Helm chart on kind and clusters of yours)",
        "kai_scheduler_sim_mock_nvml": "sim_kai_nvml_stand_in (the sim_kai role)",
        "kai_scheduler_sim_ports": "sim_kai_ports (the sim_kai role)",
        "kai_scheduler_reservation_timeout": "sim_kai_reservation_timeout (the sim_kai role)",
        "kai_scheduler_sim_gpu_name": "kai_scheduler_gpu_profile (its product)",
        "kai_scheduler_gpu_memory_mib": "kai_scheduler_gpu_profile (its memory_mib)",
        "kai_scheduler_gpu_product": "kai_scheduler_gpu_profile (its product)",
        "kai_scheduler_gpu_count": "kai_scheduler_gpu_profile (its count)",
    },
    "kai_resource_isolator": {
        "kai_resource_isolator_mode": "the sim_isolator role on a sim cluster (kai_resource_isolator installs the isolator's chart)",
        "kai_resource_isolator_sim_port": "sim_isolator_port (the sim_isolator role)",
    },
    "lab11": {
        "lab11_profile": "lab11_gpu_profile",
        "lab11_profiles": "lab11_gpu_profile, and a gpu_profile on each node of lab11_nodes",
        "lab11_cleanup_cluster": "playbooks/cleanup.yml's cleanup_keep_cluster (true keeps the cluster)",
    },
}


# Variables renamed in 0.3.0, by the part that reads them, and their new names: the old name is
# still read (the role's default of the new one is the old one's value) until 0.5.0.
DEPRECATED = {
    "sim_kai": {"sim_kai_mock_nvml": "sim_kai_nvml_stand_in"},
    "nvml_mock": {
        "nvml_mock_sim_library": "nvml_mock_stand_in_library",
        "nvml_mock_sim_root": "nvml_mock_stand_in_root",
    },
    "sim_node": {
        "sim_node_mock_nvml_library": "kubelet_node_nvml_stand_in_library",
        "sim_node_mock_nvml_config": "kubelet_node_nvml_stand_in_config",
    },
}
# Roles renamed in 0.3.0: the old name still runs the new role (a role of the old name redirects,
# giving each of its variables set, <old>_<x>, to the new role as <new>_<x>).
DEPRECATED_ROLES = {"sim_node": "kubelet_node"}
# Values renamed in 0.3.0, by part and variable: the old value means the new one until 0.5.0.
DEPRECATED_VALUES = {
    "lab11": {"lab11_boundary": {"mock_nvml": "library_stand_in"}},
    "nvml_mock": {"nvml_mock_mode": {"sim": "stand_in"}},
}


def renamed_variable(old):
    """The name a variable of a role renamed in 0.3.0 has now (``old`` when it is of no such role)."""
    for part, names in DEPRECATED.items():
        if part in DEPRECATED_ROLES and old in names:
            return names[old]
    for role, new_role in DEPRECATED_ROLES.items():
        if old.startswith(role + "_"):
            return new_role + old[len(role):]
    return old


def deprecated_messages(parts, variables):
    """The deprecation message for each variable or value of ``parts`` renamed in 0.3.0 that ``variables`` sets,
    and for a role of ``parts`` renamed in 0.3.0."""
    messages = ["the role gpulab.kai_hami.%s is renamed gpulab.kai_hami.%s since gpulab.kai_hami 0.3.0 (its variables %s_<name> are %s_<name>)"
                % (part, DEPRECATED_ROLES[part], part, DEPRECATED_ROLES[part]) for part in parts if part in DEPRECATED_ROLES]
    messages += ["%s is renamed %s since gpulab.kai_hami 0.3.0" % (old, new)
                 for part in parts for old, new in sorted(DEPRECATED.get(part, {}).items()) if old in variables]
    for part in parts:
        for name, values in sorted(DEPRECATED_VALUES.get(part, {}).items()):
            value = variables.get(name)
            if isinstance(value, str) and value in values:
                messages.append("%s=%s is renamed %s=%s since gpulab.kai_hami 0.3.0" % (name, value, name, values[value]))
    return messages


def renamed_messages(parts, defined):
    """The message for each old variable of ``parts`` among the names ``defined``."""
    known = set(RENAMED) | set(DEPRECATED) | set(DEPRECATED_VALUES)
    unknown = [part for part in parts if part not in known]
    if unknown:
        raise ValueError("renamed_variables knows no %s; it knows %s" % (", ".join(unknown), ", ".join(sorted(known))))
    return ["%s is gone since gpulab.kai_hami 0.2.0: use %s" % (old, new)
            for part in parts for old, new in sorted(RENAMED.get(part, {}).items()) if old in defined]
