# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: kai_parts
version_added: 0.1.0
author:
  - gpulab.kai_hami contributors (@gpulab)
short_description: The names KAI Scheduler gives its parts
description:
  - The Deployments of a KAI install, its scheduler's Deployment and name, the reservation pods'
    namespace, service account and app label, and the queues KAI's chart creates on first install,
    as KAI's chart and operator name them on every platform.
  - One place for them in the collection; the kai_scheduler and sim_kai roles read them through this lookup.
  - With a term, the value of that key; without, the whole dict.
options:
  _terms:
    description:
      - Keys to return (C(namespace), C(workloads), C(scheduler_deployment), C(operator_deployment), C(scheduler_name), C(reservation_namespace),
        C(reservation_service_account), C(reservation_app_label), C(chart_default_queues), C(isolator)).
    type: list
    elements: str
    required: false
  isolator_release:
    description:
      - The isolator's release name; C(isolator) is then the objects its chart names after it
        (C(webhook), C(libsync), C(webhook_configuration)) and the volume its webhook injects (C(injected_volume)).
    type: str
    default: kai-resource-isolator
    version_added: 0.3.0
"""

EXAMPLES = r"""
- name: KAI's reservation namespace
  ansible.builtin.debug:
    msg: "{{ lookup('gpulab.kai_hami.kai_parts', 'reservation_namespace') }}"

- name: The isolator's webhook Deployment under a release of yours
  ansible.builtin.debug:
    msg: "{{ lookup('gpulab.kai_hami.kai_parts', 'isolator', isolator_release='my-isolator').webhook }}"

- name: Every name at once
  ansible.builtin.debug:
    msg: "{{ query('gpulab.kai_hami.kai_parts') | first }}"
"""

RETURN = r"""
_raw:
  description: The value of each key asked for, or the whole dict when none is.
  type: list
  elements: raw
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_parts import ISOLATOR_RELEASE, isolator_parts, kai_parts


class LookupModule(LookupBase):
    """KAI's part names."""

    def run(self, terms, variables=None, **kwargs):
        unknown = sorted(set(kwargs) - {"isolator_release"})
        if unknown:
            raise AnsibleLookupError("kai_parts takes no option %s; it takes isolator_release" % ", ".join(unknown))
        release = kwargs.get("isolator_release", ISOLATOR_RELEASE)
        if not isinstance(release, str) or not release:
            raise AnsibleLookupError("kai_parts: isolator_release must be a release name, got %r" % (release,))
        parts = kai_parts()
        parts["isolator"] = isolator_parts(release)
        if not terms:
            return [parts]
        unknown = [term for term in terms if term not in parts]
        if unknown:
            raise AnsibleLookupError("kai_parts has no %s; it knows %s" % (", ".join(unknown), ", ".join(sorted(parts))))
        return [parts[term] for term in terms]
