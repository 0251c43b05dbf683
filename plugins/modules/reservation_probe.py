#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: reservation_probe
short_description: Classify KAI's GPU reservation-pod boundary for a shared-GPU pod
version_added: 0.1.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - Read-only. Reads a shared-GPU pod (one with a C(gpu-memory) or C(gpu-fraction)
    annotation), its events, and KAI's reservation pods with their
    C(run.ai/reserve_for_gpu_index) annotation and container logs, and names the case.
  - V(reserved) - the pod is bound and a reservation pod carries a GPU id.
  - V(nvml_unavailable) - a reservation pod's log says C(unable to initialize NVML) (the
    lab's Step 8 on a mock GPU); RV(nvml_error) holds the code, e.g. C(ERROR_LIBRARY_NOT_FOUND).
  - V(reservation_timeout) - a C(BindingError) event says
    C(failed waiting for GPU reservation pod to allocate), without NVML evidence in the logs.
  - V(pending) - none of the above yet.
  - V(not_shared) - the pod has no sharing annotation, so KAI reserves nothing for it.
  - With O(expect), it polls for that verdict up to O(wait_timeout) seconds (KAI's reservation
    timeout is 40 s per bind attempt).
  - Reservation pods are matched by the pod's C(runai-gpu-group) label when it has one; KAI
    removes that label when a bind attempt fails, and then every reservation pod in
    O(reservation_namespace) is read.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpulab.kai_hami.kube_error
  - gpulab.kai_hami.wait
  - gpulab.kai_hami.attributes
  - gpulab.kai_hami.attributes.info_module
options:
  name:
    description: Name of the shared-GPU pod.
    type: str
    required: true
  namespace:
    description: Namespace of the pod.
    type: str
    default: default
  reservation_namespace:
    description: Namespace of KAI's reservation pods (the binder's C(--resource-reservation-namespace)).
    type: str
    default: kai-resource-reservation
  log_lines:
    description: How many of the last lines of each reservation pod's log to read.
    type: int
    default: 50
  expect:
    description:
      - Poll until the verdict is this one, and fail with the last verdict and its evidence
        if it is not reached within O(wait_timeout) seconds.
    type: str
    choices: [reserved, nvml_unavailable, reservation_timeout, pending, not_shared]
  wait_timeout:
    default: 180
  wait_sleep:
    default: 5
"""

EXAMPLES = r"""
- name: The lab's Step 8 - the shared pod must stop at the reservation boundary
  gpulab.kai_hami.reservation_probe:
    name: gpu-sharing-with-isolation
    namespace: default
    expect: nvml_unavailable
    wait_timeout: 300
  register: boundary

- name: Show what decided it
  ansible.builtin.debug:
    msg: "{{ boundary.verdict }} ({{ boundary.nvml_error }}): {{ boundary.evidence }}"
"""

RETURN = r"""
verdict:
  description: The case the pod is in.
  returned: always
  type: str
  sample: nvml_unavailable
nvml_error:
  description: The NVML error code from the reservation pod's log, when there is one.
  returned: always
  type: str
  sample: ERROR_LIBRARY_NOT_FOUND
evidence:
  description: The event and log lines that decided the verdict.
  returned: always
  type: list
  elements: str
  sample:
    - "reservation pod gpu-reservation-5df74f36086ed6c5 log: Error while running the app: unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND"
reservation_pods:
  description: The reservation pods read, with node, phase, GPU group and GPU id.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "gpu-reservation-5df74f36086ed6c5", "node": "kai-hami-test-control-plane",
            "phase": "Running", "gpu_group": "0b0a5e0e", "gpu": null}]
bind_attempts:
  description: How many BindingError events the pod has had (events' counts added up).
  returned: always
  type: int
  sample: 3
kube_error:
  description: The failed Kubernetes call, or the wait that ran out (its keys are in the notes).
  returned: when a Kubernetes call fails
  type: dict
  sample: {operation: read the log of, kind: Pod, name: gpu-reservation-5df74f36086ed6c5, namespace: kai-resource-reservation,
           status: 403, reason: Forbidden, detail: 'pods "gpu-reservation-5df74f36086ed6c5" is forbidden: ...'}
"""

from ansible_collections.gpulab.kai_hami.plugins.module_utils.client import (
    auth_argument_spec,
    build_module,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.exceptions import (
    KubeError,
    KubeTimeout,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_parts import RESERVATION_NAMESPACE
from ansible_collections.gpulab.kai_hami.plugins.module_utils.reservation import (
    VERDICTS,
    PodNotFound,
    read_boundary,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.service import connect
from ansible_collections.gpulab.kai_hami.plugins.module_utils.waiter import wait_argument_spec, wait_options_error, wait_until


def argument_spec():
    spec = auth_argument_spec()
    spec.update(
        name=dict(type="str", required=True),
        namespace=dict(type="str", default="default"),
        reservation_namespace=dict(type="str", default=RESERVATION_NAMESPACE),
        log_lines=dict(type="int", default=50),
        expect=dict(type="str", choices=list(VERDICTS)),
    )
    spec.update(wait_argument_spec(180, 5.0))
    return spec


def observe(service, params):
    """Read everything the verdict depends on and classify it."""
    return read_boundary(service, params["name"], params["namespace"], params["reservation_namespace"], params["log_lines"])


def main():
    module = build_module(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    if params["log_lines"] <= 0:
        module.fail_json(msg="log_lines must be a positive number, got %d" % params["log_lines"])
    if wait_options_error(params):
        module.fail_json(msg=wait_options_error(params))

    try:
        service = connect(module)
        if params["expect"] is None:
            result = observe(service, params)
        else:
            seen = {}

            def reached():
                seen["result"] = observe(service, params)
                return seen["result"]["verdict"] == params["expect"]

            def timed_out(dummy_value, dummy_elapsed):
                last = seen["result"]
                return KubeTimeout(
                    "Pod",
                    name=params["name"],
                    namespace=params["namespace"],
                    timeout=params["wait_timeout"],
                    operation="wait for verdict %r of" % params["expect"],
                    detail="last verdict %r; evidence: %s" % (last["verdict"], "; ".join(last["evidence"])),
                    result=last,
                )

            wait_until(reached, params["wait_timeout"], timed_out, sleep=params["wait_sleep"])
            result = seen["result"]
    except PodNotFound as error:
        module.fail_json(msg=str(error))
    except KubeError as error:
        module.fail_json(msg=str(error), **error.fail_fields())

    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
