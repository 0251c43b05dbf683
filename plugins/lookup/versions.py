# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: versions
version_added: 0.3.0
author:
  - gpulab.kai_hami contributors (@gpulab)
short_description: A value of the collection's table of versions, images and checksums
description:
  - The collection pins every version, image and checksum it uses in one table, C(versions.env) at
    the collection's root (KEY=VALUE lines). The roles' defaults read it through this lookup, so a
    version is changed in one line.
  - With O(by_platform), a key is the prefix of C(<KEY>_<OS>_<ARCH>) keys, returned as one dict by
    C(<os>-<arch>) (release checksums per host).
options:
  _terms:
    description: The table's keys, such as C(K8S_VERSION), C(KAI_BUILD_VERSION) or C(WORKLOAD_IMAGE).
    type: list
    elements: str
    required: true
  by_platform:
    description: Return the C(<KEY>_<OS>_<ARCH>) keys of each term as a dict by C(<os>-<arch>).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: The Kubernetes version the sim builds
  ansible.builtin.debug:
    msg: "{{ lookup('gpulab.kai_hami.versions', 'K8S_VERSION') }}"

- name: Helm's release checksums by platform
  ansible.builtin.debug:
    msg: "{{ lookup('gpulab.kai_hami.versions', 'HELM_SHA256', by_platform=true) }}"
"""

RETURN = r"""
_raw:
  description: The value of each key (a dict by platform with O(by_platform)).
  type: list
  elements: raw
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.versions import by_platform, read


class LookupModule(LookupBase):
    """Values of versions.env."""

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        try:
            table = read()
        except (OSError, ValueError) as error:
            raise AnsibleLookupError("gpulab.kai_hami.versions: %s" % error)
        answer = []
        for term in terms:
            if self.get_option("by_platform"):
                value = by_platform(table, term)
                if not value:
                    raise AnsibleLookupError("gpulab.kai_hami.versions: the table has no %s_<OS>_<ARCH> keys" % term)
            elif term in table:
                value = table[term]
            else:
                raise AnsibleLookupError("gpulab.kai_hami.versions: the table has no %s; it has %s" % (term, ", ".join(sorted(table))))
            answer.append(value)
        return answer
