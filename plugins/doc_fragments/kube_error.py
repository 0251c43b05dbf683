# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the modules return as kube_error when a Kubernetes call fails."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options: {}
notes:
  - "When a Kubernetes call fails, the message names the operation, the object and the API server's
    answer (C(patch Node gpu-1: 409 Conflict: <the server's message>)), and the result's
    C(kube_error) holds the same parts, C(operation), C(kind), C(name) (null for a list),
    C(namespace) (null for cluster-scoped objects), C(status) (the HTTP status; null when the API
    server did not answer, or for a wait that ran out), C(reason) and C(detail)."
"""
