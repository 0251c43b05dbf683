#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kai_queue_info
short_description: Read KAI queues' allocation, requests and quotas as numbers
version_added: 0.2.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - Read-only. Reads KAI C(scheduling.run.ai/v2) Queues and returns, for each, its resources
    as numbers per resource (V(gpu) in GPUs, V(cpu) in cores, V(memory) in megabytes of
    10^6 bytes) - C(quota), C(limit) and C(over_quota_weight) from the spec (V(-1) is
    unlimited); C(allocated), C(allocated_non_preemptible) and C(requested) from the status
    that KAI's queue-controller keeps (Kubernetes quantities such as C(3500m) parsed, 3.5).
  - KAI keeps no fair share in a Queue's status. With O(fair_share=true), the module reads it
    from the scheduler's log (the C(Resource division result for queue <name>) lines, logged at
    verbosity 3 or more), newest line per queue; a queue with no such line has a null C(fair_share).
  - A parent queue's status adds up its children's.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpulab.kai_hami.kube_error
  - gpulab.kai_hami.attributes
  - gpulab.kai_hami.attributes.info_module
options:
  name:
    description:
      - One queue's name. Without it, every queue is read.
      - A name that is not a queue fails, naming the queues there are.
    type: str
  fair_share:
    description: Read each queue's fair share from the scheduler's log (see the description).
    type: bool
    default: false
  kai_namespace:
    description: KAI's namespace, where the scheduler runs (for O(fair_share)).
    type: str
    default: kai-scheduler
  scheduler_deployment:
    description: The scheduler's Deployment, whose log holds the division lines (for O(fair_share)).
    type: str
    default: kai-scheduler-default
  log_lines:
    description: How many of the last lines of the scheduler's log to read (for O(fair_share)).
    type: int
    default: 2000
"""

EXAMPLES = r"""
- name: Read every queue's allocation
  gpulab.kai_hami.kai_queue_info:
  register: queues

- name: Say what each leaf queue holds
  ansible.builtin.debug:
    msg: >-
      {% for q in queues.queues if not q.children %}{{ q.name }}: {{ q.resources.gpu.allocated }} of
      {{ q.resources.gpu.requested }} requested GPUs allocated; {% endfor %}

- name: One queue, with its fair share from the scheduler's log
  gpulab.kai_hami.kai_queue_info:
    name: team-a
    fair_share: true
  register: team_a

- name: Check that team-a holds two GPUs
  ansible.builtin.assert:
    that: team_a.queues[0].resources.gpu.allocated == 2
"""

RETURN = r"""
queues:
  description: One entry per queue, sorted by name (or the one of O(name)).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The queue's name.
      type: str
    parent:
      description: Its parent queue (null for a top-level queue).
      type: str
    children:
      description: Its child queues, from the status queue-controller keeps.
      type: list
      elements: str
    priority:
      description: C(spec.priority) (null when unset; KAI then uses 100).
      type: int
    display_name:
      description: C(spec.displayName).
      type: str
    resources:
      description:
        - V(gpu), V(cpu) and V(memory), each with C(quota), C(limit), C(over_quota_weight),
          C(allocated), C(allocated_non_preemptible), C(requested) and C(fair_share) (null unless
          read); V(other) holds any other resource of the status, by field.
      type: dict
    conditions:
      description: C(status.conditions), as KAI wrote them.
      type: list
      elements: dict
  sample:
    - name: team-a
      parent: dept
      children: []
      priority: null
      display_name: null
      resources:
        gpu: {quota: 0, limit: -1, over_quota_weight: 1, allocated: 3.5, allocated_non_preemptible: 0, requested: 3.5, fair_share: 3.5}
        cpu: {quota: 0, limit: -1, over_quota_weight: 1, allocated: 0, allocated_non_preemptible: 0, requested: 0, fair_share: 0}
        memory: {quota: 0, limit: -1, over_quota_weight: 1, allocated: 0, allocated_non_preemptible: 0, requested: 0, fair_share: 0}
        other: {}
      conditions: []
fair_share_note:
  description: Why some queue has no fair share although O(fair_share) was asked (no log, no line).
  returned: when O(fair_share=true)
  type: str
  sample: "no division line for queue team-b in the last 2000 lines of kai-scheduler/kai-scheduler-default's log"
kube_error:
  description: The failed Kubernetes call (its keys are in the notes).
  returned: when a Kubernetes call fails
  type: dict
"""

from ansible_collections.gpulab.kai_hami.plugins.module_utils.client import (
    auth_argument_spec,
    build_module,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.exceptions import KubeError
from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_decisions import (
    QuantityError,
    queue_summary,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_math import parse_division_line
from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_parts import (
    NAMESPACE,
    QUEUE_API,
    SCHEDULER_DEPLOYMENT,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.service import connect


def argument_spec():
    spec = auth_argument_spec()
    spec.update(
        name=dict(type="str"),
        fair_share=dict(type="bool", default=False),
        kai_namespace=dict(type="str", default=NAMESPACE),
        scheduler_deployment=dict(type="str", default=SCHEDULER_DEPLOYMENT),
        log_lines=dict(type="int", default=2000),
    )
    return spec


def newest_divisions(lines):
    """The newest parsed division line per queue name."""
    found = {}
    for line in lines:
        parsed = parse_division_line(line)
        if parsed:
            found[parsed["queue"]] = parsed
    return found


def main():
    module = build_module(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    if params["log_lines"] <= 0:
        module.fail_json(msg="log_lines must be a positive number, got %d" % params["log_lines"])
    result = {}
    try:
        service = connect(module)
        queues = sorted(service.list(QUEUE_API, "Queue"), key=lambda q: q["metadata"]["name"])
        if params["name"] is not None:
            chosen = [q for q in queues if q["metadata"]["name"] == params["name"]]
            if not chosen:
                module.fail_json(msg="name: no queue named %s; the queues are: %s" % (
                    params["name"], ", ".join(q["metadata"]["name"] for q in queues) or "none"))
            queues = chosen
        divisions = {}
        if params["fair_share"]:
            lines, no_log = service.deployment_log(params["scheduler_deployment"], params["kai_namespace"], tail_lines=params["log_lines"])
            divisions = newest_divisions(lines)
            missing = [q["metadata"]["name"] for q in queues if q["metadata"]["name"] not in divisions]
            result["fair_share_note"] = no_log or ((
                "no division line for queue %s in the last %d lines of %s/%s's log (the scheduler logs them at verbosity 3 or more)"
                % (", ".join(missing), params["log_lines"], params["kai_namespace"], params["scheduler_deployment"])) if missing else "")
        result["queues"] = [queue_summary(q, divisions.get(q["metadata"]["name"])) for q in queues]
    except KubeError as error:
        module.fail_json(msg=str(error), **error.fail_fields())
    except QuantityError as error:
        module.fail_json(msg="a queue's status holds a value that is not a Kubernetes quantity: %s" % error)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
