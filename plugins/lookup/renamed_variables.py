# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: renamed_variables
version_added: 0.2.0
author:
  - gpulab.kai_hami contributors (@gpulab)
short_description: Which variables of gpulab.kai_hami 0.1.0 that are gone a play still sets, each with what replaces it
description:
  - The roles and playbooks refuse a variable of 0.1.0 that no longer exists, naming what
    replaces it, instead of ignoring it without a word. This lookup holds the one table of them.
  - Returns one message per such variable the play defines, for the roles or playbooks named.
  - Variables and values renamed in 0.3.0 are still accepted until 0.5.0; for each the play sets,
    the lookup gives a deprecation warning naming what replaces it, and returns no message.
options:
  _terms:
    description:
      - The parts whose old variables to look for (C(sim_cluster), C(sim_kai), C(sim_node), C(kai_scheduler),
        C(kai_resource_isolator), C(lab11)).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Refuse variables of 0.1.0 that are gone, naming what replaces them
  ansible.builtin.assert:
    that: renamed | length == 0
    fail_msg: "{{ renamed | join('; ') }}"
    quiet: true
  vars:
    renamed: "{{ lookup('gpulab.kai_hami.renamed_variables', 'sim_cluster', wantlist=True) }}"
"""

RETURN = r"""
_raw:
  description: "One message per old variable the play defines: C(<old> is gone since gpulab.kai_hami 0.2.0: <what replaces it>)."
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display

display = Display()

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
    "sim_node": {
        "sim_node_mock_nvml_library": "sim_node_nvml_stand_in_library",
        "sim_node_mock_nvml_config": "sim_node_nvml_stand_in_config",
    },
}
# Values renamed in 0.3.0, by part and variable: the old value means the new one until 0.5.0.
DEPRECATED_VALUES = {
    "lab11": {"lab11_boundary": {"mock_nvml": "library_stand_in"}},
}


def deprecated_messages(parts, variables):
    """The deprecation message for each variable or value of ``parts`` renamed in 0.3.0 that ``variables`` sets."""
    messages = ["%s is renamed %s since gpulab.kai_hami 0.3.0" % (old, new)
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
        raise AnsibleLookupError("renamed_variables knows no %s; it knows %s" % (", ".join(unknown), ", ".join(sorted(known))))
    return ["%s is gone since gpulab.kai_hami 0.2.0: use %s" % (old, new)
            for part in parts for old, new in sorted(RENAMED.get(part, {}).items()) if old in defined]


class LookupModule(LookupBase):
    """Old variables the play still sets."""

    def run(self, terms, variables=None, **kwargs):
        messages = renamed_messages(terms, set(variables or {}))
        for message in deprecated_messages(terms, variables or {}):
            display.deprecated(message, version="0.5.0", collection_name="gpulab.kai_hami")
        return messages
