# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the lab11 role's claims and report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.kai_hami.plugins.module_utils.claims import c9_hamicore_numbers
from ansible_collections.gpulab.kai_hami.plugins.module_utils.provenance import provenance


def lab11_provenance(kai_deployment, isolator_deployment=None):
    """What decided the claims: KAI's version and source, and the isolator (real or stand-in)."""
    return provenance(kai_deployment, isolator_deployment)


def lab11_c9_hamicore_numbers(first_pod, second_pod, requests_mib, node_memory_label, configmaps, reservation_pods,
                              scheduler_lines, queue, whole_gpus=1):
    """C9's decision: ``{'holds', 'evidence'}`` (see module_utils/claims.py)."""
    return c9_hamicore_numbers(first_pod, second_pod, requests_mib, node_memory_label, configmaps, reservation_pods,
                               scheduler_lines, queue, whole_gpus)


class FilterModule(object):
    """Lab 11 filters."""

    def filters(self):
        return {"lab11_provenance": lab11_provenance, "lab11_c9_hamicore_numbers": lab11_c9_hamicore_numbers}
