# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The wait options of the modules that poll the cluster for a state (module_utils/waiter.py's
wait_argument_spec types them; each module sets the defaults)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  wait_timeout:
    description:
      - The most seconds the module polls for the state it waits for (the description says which);
        each poll reads the cluster again. V(0) reads the cluster once.
    type: int
  wait_sleep:
    description: Seconds between two polls.
    type: float
"""
