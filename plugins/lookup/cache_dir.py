# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: cache_dir
version_added: 0.3.0
author:
  - gpulab.kai_hami contributors (@gpulab)
short_description: A path under the collection's cache directory, ~/.cache/gpulab-kai-hami
description:
  - The one rule for where the collection's roles and playbooks keep what they make outside a lab's
    own directories - C($HOME/.cache/gpulab-kai-hami), joined with the terms - so that the roles'
    defaults, the playbooks and cleanup name the same places.
  - Read on the controller, from its C(HOME).
options:
  _terms:
    description: The parts of the path below the cache directory, in order (none for the directory itself).
    type: list
    elements: str
    required: false
"""

EXAMPLES = r"""
- name: The work dir the sim_cluster role gives a cluster named fairlab
  ansible.builtin.debug:
    msg: "{{ lookup('gpulab.kai_hami.cache_dir', 'sim', 'fairlab') }}"
"""

RETURN = r"""
_raw:
  description: The path, one string.
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpulab.kai_hami.plugins.module_utils.cache_dir import cache_dir


class LookupModule(LookupBase):
    """A path under the cache directory."""

    def run(self, terms, variables=None, **kwargs):
        try:
            return [cache_dir(*[str(term) for term in terms])]
        except ValueError as error:
            raise AnsibleLookupError("gpulab.kai_hami.cache_dir: %s" % error)
