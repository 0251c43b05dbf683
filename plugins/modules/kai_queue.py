#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kai_queue
short_description: Manage KAI Scheduler queues (scheduling.run.ai/v2 Queue)
version_added: 0.1.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - Create, update or delete one KAI Scheduler C(Queue), or a whole hierarchy in one task.
  - A hierarchy given in O(queues) is applied parents first and deleted children first.
  - Each resource (C(cpu), C(gpu), C(memory)) defaults to C(quota=0), C(limit=-1),
    C(over_quota_weight=1). KAI reads an omitted C(limit) as V(0), which lets nothing of that
    resource run; these defaults avoid that trap.
  - Queues are written with server-side apply (field manager C(gpulab.kai_hami)), taking over
    fields from other managers such as Helm, like C(kubectl apply --server-side --force-conflicts).
  - Right after KAI is installed, its queue-validation webhook can refuse requests with
    C(failed calling webhook) or C(connection refused) until queue-controller serves TLS. The
    module retries those for O(webhook_retry_timeout) seconds and says so in a warning.
  - Nothing is sent to the cluster before every input has been validated.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpulab.kai_hami.kube_error
  - gpulab.kai_hami.wait
  - gpulab.kai_hami.attributes
attributes:
  check_mode:
    support: full
    details: Writes are sent as server-side dry-runs, so the API server and its webhooks validate them.
  diff_mode:
    support: full
    details: Shows the C(spec) of each queue before and after.
options:
  name:
    description:
      - Name of one queue. Mutually exclusive with O(queues).
    type: str
  queues:
    description:
      - A list of queues (for example a whole hierarchy), each with the same fields as the
        top-level options. Mutually exclusive with O(name).
      - With O(state=present) parents are applied before children; with O(state=absent)
        children are deleted before parents.
    type: list
    elements: dict
    suboptions:
      name:
        description: Name of the queue.
        type: str
        required: true
      parent_queue:
        description: Name of the parent queue.
        type: str
      display_name:
        description: Display name used in KAI's logs and metrics.
        type: str
      priority:
        description: Over-quota priority (KAI's default is 100).
        type: int
      resources:
        description: Quota, limit and over-quota weight per resource.
        type: dict
        suboptions:
          cpu:
            description: CPU in millicores.
            type: dict
            suboptions: &resource_options
              quota:
                description: Guaranteed amount; V(-1) is unlimited.
                type: float
                default: 0
              limit:
                description: Hard cap; V(-1) is no limit.
                type: float
                default: -1
              over_quota_weight:
                description: Weight for resources beyond the quota.
                type: float
                default: 1
          gpu:
            description: GPUs, fractions allowed.
            type: dict
            suboptions: *resource_options
          memory:
            description: Memory in megabytes (10^6 bytes).
            type: dict
            suboptions: *resource_options
      preempt_min_runtime:
        description: Minimum runtime before a job in this queue may be preempted (Go duration, for example V(5m)).
        type: str
      reclaim_min_runtime:
        description: Minimum runtime before a job in this queue may be reclaimed (Go duration).
        type: str
  parent_queue:
    description: Name of the parent queue of O(name).
    type: str
  display_name:
    description: Display name of O(name), used in KAI's logs and metrics.
    type: str
  priority:
    description: Over-quota priority of O(name) (KAI's default is 100).
    type: int
  resources:
    description: Quota, limit and over-quota weight per resource of O(name).
    type: dict
    suboptions:
      cpu:
        description: CPU in millicores.
        type: dict
        suboptions: *resource_options
      gpu:
        description: GPUs, fractions allowed.
        type: dict
        suboptions: *resource_options
      memory:
        description: Memory in megabytes (10^6 bytes).
        type: dict
        suboptions: *resource_options
  preempt_min_runtime:
    description: Minimum runtime before a job in O(name) may be preempted (Go duration).
    type: str
  reclaim_min_runtime:
    description: Minimum runtime before a job in O(name) may be reclaimed (Go duration).
    type: str
  state:
    description: Whether the queues should exist.
    type: str
    choices: [present, absent]
    default: present
  validate_parent:
    description:
      - Fail when a parent queue exists neither in the cluster nor in O(queues). KAI silently
        drops queues whose parent is missing, and their pods stay Pending.
    type: bool
    default: true
  force:
    description:
      - With O(state=absent), also delete the descendant queues of a queue that has children
        (deepest first). Without it, deleting a queue that has children fails.
    type: bool
    default: false
  webhook_retry_timeout:
    description: Seconds to keep retrying while KAI's queue webhook is not serving yet.
    type: int
    default: 120
  wait:
    description:
      - Wait until the parent queue's C(status.childQueues) lists each applied child queue
        (set by KAI's queue-controller). Ignored in check mode.
    type: bool
    default: false
  wait_timeout:
    description: The most seconds O(wait=true) polls for the child queues to be listed (V(0) reads once).
    default: 60
  wait_sleep:
    default: 1.0
    version_added: 0.3.0
notes:
  - Only leaf queues run workloads in KAI; point pods at a leaf queue.
seealso:
  - name: KAI Scheduler queues
    description: KAI's documentation of the Queue resource.
    link: https://github.com/kai-scheduler/KAI-Scheduler/tree/main/docs/queues
"""

EXAMPLES = r"""
- name: The lab's queue hierarchy, parents first
  gpulab.kai_hami.kai_queue:
    queues:
      - name: default
        resources:
          cpu: {quota: -1}
          memory: {quota: -1}
          gpu: {quota: -1}
      - name: default-queue
        parent_queue: default
        resources:
          cpu: {quota: -1}
          memory: {quota: -1}
          gpu: {quota: -1}
    wait: true

- name: One queue with two GPUs guaranteed and at most four
  gpulab.kai_hami.kai_queue:
    name: research
    parent_queue: default
    resources:
      gpu: {quota: 2, limit: 4, over_quota_weight: 2}

- name: Remove a parent queue and everything below it
  gpulab.kai_hami.kai_queue:
    name: default
    state: absent
    force: true
"""

RETURN = r"""
queues:
  description: One entry per queue handled, in the order it was handled.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Queue name.
      type: str
      sample: default-queue
    action:
      description: What was done (or, in check mode, what would be done).
      type: str
      sample: created
      choices: [created, updated, unchanged, deleted, absent]
    object:
      description: The Queue as the API server returned it (the dry-run result in check mode); null after deletion.
      type: dict
      sample: {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "default-queue"}}
webhook_retries:
  description: How many times a request was retried because KAI's queue webhook was not serving yet.
  returned: always
  type: int
  sample: 0
kube_error:
  description:
    - The Kubernetes call that failed (or the wait that ran out), as the message names it.
    - "Its keys: C(operation), C(kind), C(name) (null for a list), C(namespace) (null for cluster-scoped objects),
      C(status) (the HTTP status; null when the API server did not answer, or for a wait), C(reason) and C(detail)
      (the API server's message, or what a wait was still missing), as M(gpulab.kai_hami.gpu_node_label) documents them."
  returned: when a Kubernetes call fails
  type: dict
  sample: {operation: apply, kind: Queue, name: research, namespace: null, status: 403, reason: Forbidden,
           detail: 'admission webhook "queue-validation.kai.scheduler" denied the request: ...'}
"""

from ansible_collections.gpulab.kai_hami.plugins.module_utils.client import (
    auth_argument_spec,
    build_module,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.exceptions import (
    KubeError,
    KubeTimeout,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.queues import (
    API_VERSION,
    KIND,
    QUEUE_FIELDS_SPEC,
    QueueSpecError,
    depth_in,
    descendants,
    missing_parents,
    parents_first,
    queue_manifest,
    validate_queue,
    validate_queues,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.service import connect
from ansible_collections.gpulab.kai_hami.plugins.module_utils.waiter import (
    retry_while_webhook_settles,
    wait_argument_spec,
    wait_options_error,
    wait_until,
)


def argument_spec():
    spec = auth_argument_spec()
    queue_entry = dict(QUEUE_FIELDS_SPEC)
    queue_entry["name"] = dict(type="str", required=True)
    spec.update(QUEUE_FIELDS_SPEC)
    spec.update(
        name=dict(type="str"),
        queues=dict(type="list", elements="dict", options=queue_entry),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        validate_parent=dict(type="bool", default=True),
        force=dict(type="bool", default=False),
        webhook_retry_timeout=dict(type="int", default=120),
        wait=dict(type="bool", default=False),
    )
    spec.update(wait_argument_spec(60, 1.0))
    return spec


def requested_queues(params):
    """The queue entries of this task, validated; raises QueueSpecError."""
    if params["queues"] is not None:
        if not params["queues"]:
            raise QueueSpecError("queues must list at least one queue")
        validate_queues(params["queues"])
        return list(params["queues"])
    queue = dict((key, params[key]) for key in QUEUE_FIELDS_SPEC)
    queue["name"] = params["name"]
    validate_queue(queue, "queue")
    return [queue]


class QueueRunner:
    """Applies or deletes the requested queues and records what happened."""

    def __init__(self, module, service):
        self.module = module
        self.service = service
        self.results = []
        self.diffs = []
        self.webhook_retries = 0

    def _call(self, call):
        result, retries, waited = retry_while_webhook_settles(call, self.module.params["webhook_retry_timeout"])
        if retries:
            self.webhook_retries += retries
            self.module.warn(
                "KAI's queue webhook was not serving yet (queue-controller has no readiness probe); "
                "retried %d time(s) over %.0f s before the request went through" % (retries, waited)
            )
        return result

    def existing_queues(self):
        return self.service.list(API_VERSION, KIND)

    def present(self, queues):
        existing = dict((q["metadata"]["name"], q) for q in self.existing_queues())
        if self.module.params["validate_parent"]:
            missing = missing_parents(queues, existing)
            if missing:
                self.module.fail_json(
                    msg="parent queue not found: "
                    + "; ".join("%s names parent_queue %r, which neither exists nor is listed" % m for m in missing)
                    + " (KAI drops queues whose parent is missing; create the parent first or set validate_parent=false)"
                )
        for queue in parents_first(queues):
            manifest = queue_manifest(queue)
            before = existing.get(queue["name"])
            after = self._call(lambda manifest=manifest: self.service.apply(manifest))
            before_spec = (before or {}).get("spec")
            after_spec = (after or {}).get("spec")
            if before is None:
                action = "created"
            elif before_spec != after_spec:
                action = "updated"
            else:
                action = "unchanged"
            self.results.append(dict(name=queue["name"], action=action, object=after))
            if action != "unchanged":
                self.diffs.append(
                    dict(
                        before_header="queue %s" % queue["name"],
                        after_header="queue %s" % queue["name"],
                        before={"spec": before_spec} if before else {},
                        after={"spec": after_spec},
                    )
                )
        if self.module.params["wait"] and not self.module.check_mode:
            self.wait_for_children(queues)

    def wait_for_children(self, queues):
        pending = [q for q in queues if q.get("parent_queue")]
        timeout = self.module.params["wait_timeout"]
        unlisted = []

        def listed_by_parents():
            del unlisted[:]
            for queue in pending:
                parent = self.service.get(API_VERSION, KIND, queue["parent_queue"]) or {}
                if queue["name"] not in ((parent.get("status") or {}).get("childQueues") or []):
                    unlisted.append("%s (parent %s)" % (queue["name"], queue["parent_queue"]))
            return not unlisted

        def timed_out(dummy_value, dummy_elapsed):
            return KubeTimeout(
                KIND,
                name=", ".join(sorted(set(q["parent_queue"] for q in pending))),
                timeout=timeout,
                operation="wait for status.childQueues of",
                detail="child queue(s) not listed yet: %s (is KAI's queue-controller running?)" % ", ".join(unlisted),
                result=dict(queues=self.results),
            )

        wait_until(listed_by_parents, timeout, timed_out, sleep=self.module.params["wait_sleep"])

    def absent(self, queues):
        existing_list = self.existing_queues()
        existing = dict((q["metadata"]["name"], q) for q in existing_list)
        targets = [q["name"] for q in queues]
        for name in list(targets):
            if name not in existing:
                continue
            below = [child for child in descendants(name, existing_list) if child not in targets]
            if below and not self.module.params["force"]:
                self.module.fail_json(
                    msg="queue %r has child queues %s: delete them first, list them in queues, "
                    "or set force=true to delete them too" % (name, below)
                )
            targets.extend(child for child in below if child not in targets)
        listed_parents = dict((q["name"], q.get("parent_queue")) for q in queues)
        order = sorted(targets, key=lambda n: -depth_in(n, existing_list, listed_parents))
        for name in order:
            if name not in existing:
                self.results.append(dict(name=name, action="absent", object=None))
                continue
            self._call(lambda name=name: self.service.delete(API_VERSION, KIND, name))
            self.results.append(dict(name=name, action="deleted", object=None))
            self.diffs.append(
                dict(
                    before_header="queue %s" % name,
                    after_header="queue %s (deleted)" % name,
                    before={"spec": existing[name].get("spec")},
                    after={},
                )
            )


def main():
    module = build_module(
        argument_spec=argument_spec(),
        mutually_exclusive=[("name", "queues")],
        required_one_of=[("name", "queues")],
        supports_check_mode=True,
    )
    params = module.params
    if params["webhook_retry_timeout"] < 0:
        module.fail_json(msg="webhook_retry_timeout must be >= 0 seconds, got %d" % params["webhook_retry_timeout"])
    if wait_options_error(params):
        module.fail_json(msg=wait_options_error(params))
    try:
        queues = requested_queues(params)
    except QueueSpecError as error:
        module.fail_json(msg=str(error))

    runner = None
    try:
        runner = QueueRunner(module, connect(module))
        if params["state"] == "present":
            runner.present(queues)
        else:
            runner.absent(queues)
    except KubeError as error:
        error.result.setdefault("queues", runner.results if runner else [])
        module.fail_json(msg=str(error), **error.fail_fields())

    result = dict(
        changed=any(r["action"] not in ("unchanged", "absent") for r in runner.results),
        queues=runner.results,
        webhook_retries=runner.webhook_retries,
    )
    if module._diff:
        result["diff"] = runner.diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
