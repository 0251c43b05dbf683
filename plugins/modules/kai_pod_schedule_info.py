#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kai_pod_schedule_info
short_description: Read what KAI decided about pods (bound where, or unschedulable and why), optionally waiting for it
version_added: 0.2.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - Read-only. For each pod of O(names), reads the pod, its PodGroup (the C(pod-group-name)
    annotation KAI's pod-grouper writes), its events and its BindRequest, and names the outcome.
  - V(bound) - the pod has a node; C(node) names it and C(gpu_group) the shared GPU's group
    (the C(runai-gpu-group) label, for a GPU fraction).
  - V(unschedulable) - KAI could not place it; C(reason) is KAI's (C(QueueDoesNotExist),
    C(OverLimit), ... from the PodGroup's C(schedulingConditions), else the head of the message)
    and C(message) its text, from the pod's C(PodScheduled) condition or its newest
    C(Unschedulable) event.
  - V(binding) - KAI chose a node (a BindRequest names it in C(node)) and its binder is at work.
  - V(pending) - no decision yet. V(not_found) - no such pod.
  - With O(wait=true) it polls until KAI has decided about every pod (bound or unschedulable);
    with O(expect) until every pod has that outcome. Either fails after O(wait_timeout) seconds
    with each pod's last outcome. A shared-GPU pod reads as unschedulable for a moment while its
    reservation pod starts; O(expect=bound) waits past that.
  - For a shared-GPU pod's reservation boundary, see M(gpulab.kai_hami.reservation_probe).
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpulab.kai_hami.kube_error
  - gpulab.kai_hami.wait
  - gpulab.kai_hami.attributes
  - gpulab.kai_hami.attributes.info_module
options:
  names:
    description: The pods' names.
    type: list
    elements: str
    required: true
    aliases: [name]
  namespace:
    description: The pods' namespace.
    type: str
    default: default
  wait:
    description: Poll until KAI has decided about every pod (V(bound) or V(unschedulable)).
    type: bool
    default: false
  expect:
    description: Poll until every pod has this outcome.
    type: str
    choices: [bound, unschedulable, binding, pending]
  wait_timeout:
    default: 180
  wait_sleep:
    default: 2.0
"""

EXAMPLES = r"""
- name: Wait until KAI has decided about the team's pods
  gpulab.kai_hami.kai_pod_schedule_info:
    names: [team-a-trainer-1, team-a-trainer-2, team-a-trainer-3]
    namespace: default
    wait: true
  register: outcome

- name: Say what KAI decided
  ansible.builtin.debug:
    msg: "{% for p in outcome.pods %}{{ p.name }}: {{ p.outcome }} {{ p.node or p.reason }}; {% endfor %}"

- name: The fourth pod must stay out (its queue's limit)
  gpulab.kai_hami.kai_pod_schedule_info:
    name: team-a-trainer-4
    expect: unschedulable
    wait_timeout: 60
"""

RETURN = r"""
pods:
  description: One entry per pod of O(names), in that order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The pod's name.
      type: str
    namespace:
      description: Its namespace.
      type: str
    outcome:
      description: V(bound), V(unschedulable), V(binding), V(pending) or V(not_found).
      type: str
    node:
      description: The node it is bound to (or, while V(binding), the node KAI chose).
      type: str
    gpu_group:
      description: The C(runai-gpu-group) label (a shared GPU's group), when it has one.
      type: str
    queue:
      description: Its queue (the C(kai.scheduler/queue) label, else its PodGroup's queue).
      type: str
    podgroup:
      description: Its PodGroup's name.
      type: str
    reason:
      description: KAI's reason, when V(unschedulable).
      type: str
    message:
      description: KAI's message, when V(unschedulable).
      type: str
    podgroup_reasons:
      description: The PodGroup's scheduling conditions as C(node_pool), C(reason), C(message).
      type: list
      elements: dict
    events:
      description: The pod's scheduling events (C(type), C(reason), C(message)), oldest first.
      type: list
      elements: dict
  sample:
    - {name: team-a-trainer-4, namespace: default, outcome: unschedulable, node: null, gpu_group: null, queue: team-a,
       podgroup: pg-team-a-trainer-4-0f7e, reason: OverLimit,
       message: "OverLimit: team-a quota has reached the allowable limit of GPUs. ...", podgroup_reasons: [], events: []}
decided:
  description: Whether KAI has decided about every pod (each V(bound) or V(unschedulable)).
  returned: always
  type: bool
seconds:
  description: How long the module waited.
  returned: always
  type: float
kube_error:
  description: The failed Kubernetes call, or the wait that ran out (its keys are in the notes).
  returned: when a Kubernetes call fails
  type: dict
"""

from ansible_collections.gpulab.kai_hami.plugins.module_utils.client import (
    auth_argument_spec,
    build_module,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.exceptions import (
    KubeError,
    KubeTimeout,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_decisions import (
    POD_GROUP_ANNOTATION,
    decided,
    pod_outcome,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_parts import BIND_REQUEST_API
from ansible_collections.gpulab.kai_hami.plugins.module_utils.service import connect
from ansible_collections.gpulab.kai_hami.plugins.module_utils.waiter import wait_argument_spec, wait_options_error, wait_until

POD_GROUP_API = "scheduling.run.ai/v2alpha2"


def argument_spec():
    spec = auth_argument_spec()
    spec.update(
        names=dict(type="list", elements="str", required=True, aliases=["name"]),
        namespace=dict(type="str", default="default"),
        wait=dict(type="bool", default=False),
        expect=dict(type="str", choices=["bound", "unschedulable", "binding", "pending"]),
    )
    spec.update(wait_argument_spec(180, 2.0))
    return spec


def _get_kai(service, api_version, kind, name, namespace):
    """A KAI object, or None where there is none or its kind is not served (KAI not installed)."""
    if not name:
        return None
    try:
        return service.get(api_version, kind, name, namespace)
    except KubeError as error:
        if error.reason != "kind not served":
            raise
        return None


def observe(service, name, namespace):
    """One pod's outcome, read from the cluster."""
    pod = service.get("v1", "Pod", name, namespace)
    if pod is None:
        outcome = pod_outcome(None)
    else:
        group_name = ((pod.get("metadata") or {}).get("annotations") or {}).get(POD_GROUP_ANNOTATION)
        podgroup = _get_kai(service, POD_GROUP_API, "PodGroup", group_name, namespace)
        bind_request = None if (pod.get("spec") or {}).get("nodeName") else _get_kai(service, BIND_REQUEST_API, "BindRequest", name, namespace)
        outcome = pod_outcome(pod, podgroup, service.events_for("Pod", name, namespace), bind_request)
    return dict(outcome, name=name, namespace=namespace)


def main():
    module = build_module(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    if not params["names"] or not all(params["names"]):
        module.fail_json(msg="names must list at least one pod name, and no empty one")
    if wait_options_error(params):
        module.fail_json(msg=wait_options_error(params))

    def read_all():
        return [observe(service, name, params["namespace"]) for name in params["names"]]

    def done(pods):
        if params["expect"]:
            return all(p["outcome"] == params["expect"] for p in pods)
        return all(decided(p["outcome"]) for p in pods)

    seconds = 0.0
    try:
        service = connect(module)
        if params["wait"] or params["expect"]:
            seen = {}

            def reached():
                seen["pods"] = read_all()
                return done(seen["pods"])

            def timed_out(dummy_value, elapsed):
                pods = seen["pods"]
                return KubeTimeout(
                    "Pod", namespace=params["namespace"], timeout=params["wait_timeout"],
                    operation="wait for %s of" % ("outcome %r" % params["expect"] if params["expect"] else "KAI's decision"),
                    detail="; ".join("%s: %s%s" % (p["name"], p["outcome"], (" (%s)" % p["message"]) if p["message"] else "") for p in pods),
                    result=dict(pods=pods, decided=all(decided(p["outcome"]) for p in pods), seconds=round(elapsed, 1)),
                )

            dummy, seconds = wait_until(reached, params["wait_timeout"], timed_out, sleep=params["wait_sleep"])
            pods = seen["pods"]
        else:
            pods = read_all()
    except KubeError as error:
        module.fail_json(msg=str(error), **error.fail_fields())
    module.exit_json(changed=False, pods=pods, decided=all(decided(p["outcome"]) for p in pods), seconds=round(seconds, 1))


if __name__ == "__main__":
    main()
