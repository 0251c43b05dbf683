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
        C(kai_resource_isolator), C(lab11), C(nvml_mock)).
      - C(sim_node), the role renamed C(kubelet_node) in 0.3.0, gives a deprecation warning for the role itself.
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

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.renamed import deprecated_messages, renamed_messages

display = Display()


class LookupModule(LookupBase):
    """Old variables the play still sets."""

    def run(self, terms, variables=None, **kwargs):
        try:
            messages = renamed_messages(terms, set(variables or {}))
        except ValueError as error:
            raise AnsibleLookupError(str(error))
        for message in deprecated_messages(terms, variables or {}):
            display.deprecated(message, version="0.5.0", collection_name="gpulab.kai_hami")
        return messages
