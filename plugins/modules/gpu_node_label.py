#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_node_label
short_description: Set the nvidia.com/gpu.memory, gpu.product and gpu.count labels KAI reads
version_added: 0.1.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - Sets (or removes) C(nvidia.com/gpu.memory), C(nvidia.com/gpu.product) and
    C(nvidia.com/gpu.count) on the named nodes, or on every node matching a label selector.
    GPU feature discovery writes these on real GPU nodes; on a mock GPU node someone has to.
  - KAI needs C(nvidia.com/gpu.memory) (MiB per GPU) to turn a C(gpu-memory) request into a
    fraction, and its hamicore binder plugin needs it to write C(CUDA_DEVICE_MEMORY_LIMIT).
  - Only the labels are patched (JSON merge patch on C(metadata.labels)); the Node is never
    replaced. Many nodes are patched concurrently.
  - When a patch fails (for example with C(409 Conflict) from a concurrent change), no further
    patch is sent (those already sent finish), and the failure names the nodes already patched (RV(patched)) and
    those not patched (RV(not_patched)); running the task again finishes the rest.
  - Nothing is sent to the cluster before every input has been validated.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - gpulab.kai_hami.kube_error
  - gpulab.kai_hami.attributes
attributes:
  check_mode:
    support: full
    details: Patches are sent as server-side dry-runs.
  diff_mode:
    support: full
    details: Shows the GPU labels of each changed node before and after.
options:
  nodes:
    description:
      - Names of the nodes to label. Mutually exclusive with O(label_selector).
    type: list
    elements: str
  label_selector:
    description:
      - Label every node matching this selector. Used when O(nodes) is not given; then it
        defaults to C(nvidia.com/gpu.present=true), the label nvml-mock and GPU feature
        discovery put on GPU nodes.
    type: str
  state:
    description: Whether the GPU labels should be present or removed.
    type: str
    choices: [present, absent]
    default: present
  memory_mib:
    description:
      - Memory per GPU in MiB (an A100-SXM4-40GB has 40960). Required with O(state=present)
        unless O(from_existing=true).
      - Values below 100 are refused - they look like GiB, which KAI floors to 0.
    type: int
  from_existing:
    description:
      - Keep an existing C(nvidia.com/gpu.memory) label (for example one GPU feature discovery
        wrote); O(memory_mib) is then only used for nodes without one.
    type: bool
    default: false
  product:
    description:
      - GPU product name, written as GPU feature discovery writes it (spaces become C(-)).
        Left unchanged when omitted. KAI's scheduler does not read it.
    type: str
  count:
    description:
      - GPUs per node for C(nvidia.com/gpu.count). Defaults to the node's allocatable
        C(nvidia.com/gpu); a warning is given when an explicit count differs from it.
    type: int
  min_nodes:
    description: Fail when fewer nodes than this match.
    type: int
    default: 1
  parallel:
    description: How many nodes to patch at once.
    type: int
    default: 16
notes:
  - The lab says KAI caches per-GPU memory when it first sees a node, so labels must be set
    before KAI is installed. The module warns when it changes the memory label while a
    C(kai-scheduler-default) Deployment exists.
"""

EXAMPLES = r"""
- name: Label the lab's mock A100 node (the lab's Step 3)
  gpulab.kai_hami.gpu_node_label:
    nodes: [kai-hami-test-control-plane]
    memory_mib: 40960
    product: NVIDIA A100-SXM4-40GB
    count: 8

- name: Label every GPU node, keeping memory GPU feature discovery already wrote
  gpulab.kai_hami.gpu_node_label:
    memory_mib: 40960
    from_existing: true

- name: Remove the labels again
  gpulab.kai_hami.gpu_node_label:
    nodes: [kai-hami-test-control-plane]
    state: absent
"""

RETURN = r"""
nodes:
  description: One entry per matched node, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
      sample: kai-hami-test-control-plane
    changed:
      description: Whether this node's labels changed (or would, in check mode).
      type: bool
      sample: true
    changes:
      description: The labels that changed, each as C([before, after]) (null = absent).
      type: dict
      sample: {"nvidia.com/gpu.memory": [null, "40960"]}
    labels:
      description: The node's GPU labels afterwards (the dry-run result in check mode).
      type: dict
      sample: {"nvidia.com/gpu.memory": "40960", "nvidia.com/gpu.count": "8"}
matched:
  description: How many nodes matched.
  returned: always
  type: int
  sample: 1
patched:
  description: The nodes whose labels were patched before a patch failed, sorted by name.
  returned: when a patch fails
  type: list
  elements: str
  sample: [gpu-node-1, gpu-node-3]
not_patched:
  description:
    - The nodes that needed a change and were not patched when a patch failed, sorted by name
      (the failed ones and those whose patch was not sent).
  returned: when a patch fails
  type: list
  elements: str
  sample: [gpu-node-2, gpu-node-4]
kube_error:
  description: The Kubernetes call that failed, as the message names it.
  returned: when a Kubernetes call fails
  type: dict
  contains:
    operation:
      description: What was being done.
      type: str
      sample: patch
    kind:
      description: The kind of the object.
      type: str
      sample: Node
    name:
      description: The object's name (null for a list).
      type: str
      sample: gpu-node-2
    namespace:
      description: The object's namespace (null for cluster-scoped objects).
      type: str
      sample: null
    status:
      description: The HTTP status the API server answered (null when it did not answer).
      type: int
      sample: 409
    reason:
      description: The HTTP reason, or what went wrong when there is no status.
      type: str
      sample: Conflict
    detail:
      description: The API server's message.
      type: str
      sample: 'Operation cannot be fulfilled on nodes "gpu-node-2": the object has been modified'
"""

from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures

from ansible_collections.gpulab.kai_hami.plugins.module_utils.client import (
    auth_argument_spec,
    build_module,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.exceptions import KubeError
from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_parts import SCHEDULER_DEPLOYMENT as KAI_SCHEDULER_DEPLOYMENT
from ansible_collections.gpulab.kai_hami.plugins.module_utils.node_labels import (
    GPU_LABELS,
    MEMORY_LABEL,
    NodeLabelError,
    desired_labels,
    label_changes,
    validate_label_input,
)
from ansible_collections.gpulab.kai_hami.plugins.module_utils.service import connect

DEFAULT_SELECTOR = "nvidia.com/gpu.present=true"


def argument_spec():
    spec = auth_argument_spec()
    spec.update(
        nodes=dict(type="list", elements="str"),
        label_selector=dict(type="str"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        memory_mib=dict(type="int"),
        from_existing=dict(type="bool", default=False),
        product=dict(type="str"),
        count=dict(type="int"),
        min_nodes=dict(type="int", default=1),
        parallel=dict(type="int", default=16),
    )
    return spec


def select_nodes(service, params):
    if params["nodes"] is not None:
        found, missing = [], []
        for name in params["nodes"]:
            node = service.get("v1", "Node", name)
            (found if node else missing).append(node or name)
        if missing:
            raise NodeLabelError("node(s) not found: %s" % ", ".join(missing))
        return found, "nodes %s" % ", ".join(params["nodes"])
    selector = params["label_selector"] or DEFAULT_SELECTOR
    return service.list("v1", "Node", label_selector=selector), "label_selector %r" % selector


def kai_scheduler_running(service):
    try:
        return bool(
            service.list("apps/v1", "Deployment", field_selector="metadata.name=%s" % KAI_SCHEDULER_DEPLOYMENT)
        )
    except KubeError:
        return False


def patch_nodes(plans, patch, parallel):
    """Run ``patch(plan)`` for every plan, at most ``parallel`` at a time; the results in plan order.

    After a patch fails no further patch is sent (those running finish), and the first failing
    node's KubeError is raised with a note, and ``patched`` / ``not_patched`` results, naming
    the nodes that were patched and those that were not.
    """
    results, errors, in_flight, succeeded = [None] * len(plans), {}, {}, set()
    waiting = iter(enumerate(plans))
    with ThreadPoolExecutor(max_workers=parallel) as pool:

        def send_next():
            entry = next(waiting, None)
            if entry is not None:
                in_flight[pool.submit(patch, entry[1])] = entry[0]

        for dummy in range(parallel):
            send_next()
        while in_flight:
            done, dummy = wait_for_futures(list(in_flight), return_when=FIRST_COMPLETED)
            for future in done:
                index = in_flight.pop(future)
                if future.exception() is not None:
                    errors[index] = future.exception()
                else:
                    results[index] = future.result()
                    succeeded.add(index)
                if not errors:
                    send_next()
    if not errors:
        return results
    patched, not_patched = [], []
    for index, (node, dummy, changes) in enumerate(plans):
        if changes:
            (patched if index in succeeded else not_patched).append(node["metadata"]["name"])
    error = errors[min(errors)]
    if not isinstance(error, KubeError):
        raise error
    raise error.add_note(
        "%d of %d node(s) to change were patched before the failure (%s); not patched: %s. "
        "Run the task again to patch the rest"
        % (len(patched), len(patched) + len(not_patched), ", ".join(sorted(patched)) or "none", ", ".join(sorted(not_patched))),
        patched=sorted(patched),
        not_patched=sorted(not_patched),
    )


def main():
    module = build_module(
        argument_spec=argument_spec(),
        mutually_exclusive=[("nodes", "label_selector")],
        supports_check_mode=True,
    )
    params = module.params
    try:
        validate_label_input(params)
        if params["parallel"] < 1:
            raise NodeLabelError("parallel must be >= 1, got %d" % params["parallel"])
    except NodeLabelError as error:
        module.fail_json(msg=str(error))

    try:
        service = connect(module)
        nodes, source = select_nodes(service, params)
        if len(nodes) < params["min_nodes"]:
            raise NodeLabelError(
                "%s matched %d node(s), fewer than min_nodes=%d; check the selector, or that the "
                "GPU nodes carry the label" % (source, len(nodes), params["min_nodes"])
            )
        plans = []
        for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
            labels, warnings = desired_labels(node, params)
            for warning in warnings:
                module.warn(warning)
            plans.append((node, labels, label_changes(node, labels)))

        def patch(plan):
            node, labels, changes = plan
            if not changes:
                return node
            body = {"metadata": {"labels": dict((key, after) for key, (before, after) in changes.items())}}
            return service.merge_patch("v1", "Node", node["metadata"]["name"], body)

        patched = patch_nodes(plans, patch, params["parallel"])
    except NodeLabelError as error:
        module.fail_json(msg=str(error))
    except KubeError as error:
        module.fail_json(msg=str(error), **error.fail_fields())

    results, diffs = [], []
    for (node, labels, changes), after in zip(plans, patched):
        after_labels = (after.get("metadata") or {}).get("labels") or {}
        name = node["metadata"]["name"]
        gpu_after = dict((k, after_labels[k]) for k in GPU_LABELS if k in after_labels)
        results.append(dict(name=name, changed=bool(changes), changes=changes, labels=gpu_after))
        if changes:
            before_labels = node["metadata"].get("labels") or {}
            diffs.append(
                dict(
                    before_header="node %s" % name,
                    after_header="node %s" % name,
                    before={"labels": dict((k, before_labels[k]) for k in GPU_LABELS if k in before_labels)},
                    after={"labels": gpu_after},
                )
            )
    changed = any(r["changed"] for r in results)
    if any(MEMORY_LABEL in r["changes"] for r in results) and kai_scheduler_running(service):
        module.warn(
            "%s changed while KAI is running (Deployment %s exists). The lab's Step 3 says KAI caches "
            "per-GPU memory when it first sees a node, so labels must come first; KAI's scheduler "
            "re-reads node labels every scheduling cycle. If gpu-memory pods stay Pending with "
            "'GPU memory', check the label value first." % (MEMORY_LABEL, KAI_SCHEDULER_DEPLOYMENT)
        )
    result = dict(changed=changed, nodes=results, matched=len(results))
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
