# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the lab11 role's claims and report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.kai_hami.plugins.module_utils.provenance import provenance


def lab11_provenance(kai_deployment, isolator_deployment=None):
    """What decided the claims: KAI's version and source, and the isolator (real or stand-in)."""
    return provenance(kai_deployment, isolator_deployment)


class FilterModule(object):
    """Lab 11 filters."""

    def filters(self):
        return {"lab11_provenance": lab11_provenance}
