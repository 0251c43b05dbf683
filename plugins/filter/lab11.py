# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the lab11 role's claims and report: one per claim (C1-C9), the record and the provenance.

The decisions live in module_utils/claims.py; each filter is the function of the same name
without the ``lab11_`` prefix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.kai_hami.plugins.module_utils.claims import (
    c1_mock_gpus,
    c2_kai_runs,
    c3_queues_gate,
    c4_isolator_webhook,
    c5_base_scheduling,
    c6_gpu_memory_accounting,
    c7_hami_core_injection,
    c8_reservation_boundary,
    c9_hamicore_numbers,
    claim_error,
    claim_record,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.provenance import provenance


def lab11_provenance(kai_deployment, isolator_deployment=None):
    """What decided the claims: KAI's version and source, and the isolator (real or stand-in)."""
    return provenance(kai_deployment, isolator_deployment)


class FilterModule(object):
    """Lab 11 filters."""

    def filters(self):
        return {
            "lab11_provenance": lab11_provenance,
            "lab11_c1_mock_gpus": c1_mock_gpus,
            "lab11_c2_kai_runs": c2_kai_runs,
            "lab11_c3_queues_gate": c3_queues_gate,
            "lab11_c4_isolator_webhook": c4_isolator_webhook,
            "lab11_c5_base_scheduling": c5_base_scheduling,
            "lab11_c6_gpu_memory_accounting": c6_gpu_memory_accounting,
            "lab11_c7_hami_core_injection": c7_hami_core_injection,
            "lab11_c8_reservation_boundary": c8_reservation_boundary,
            "lab11_c9_hamicore_numbers": c9_hamicore_numbers,
            "lab11_claim_record": claim_record,
            "lab11_claim_error": claim_error,
        }
