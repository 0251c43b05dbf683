# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stand-in for run.ai's fake-gpu-operator on the nodes kwok plays: GPUs in their capacity, and its labels.

Not fake-gpu-operator: a stand-in of gpulab.kai_hami where that operator's images and module cannot
be had. It does what KAI's scale suite (KAI's test/e2e/scale) reads from fake-gpu-operator 0.0.73,
the version the scale setup of the KAI the sim builds installs (KAI's hack/setup-scale-test-env.sh),
and nothing more, rule by rule:

1. The cluster's topology is the ConfigMap ``topology`` in the operator's namespace (``gpu-operator``),
   data key ``topology.yml``, in its flat format: ``nodePools: {<pool>: {gpuCount, gpuMemory (MiB),
   gpuProduct, otherDevices: [{name, count}]}}``, ``nodePoolLabelKey`` and ``migStrategy``. It is read
   once, when the stand-in starts, and not again (the operator reads it once too: an edit changes no
   node until the operator restarts). Without it the stand-in exits, as the operator does.
2. A node is the operator's when it carries the label ``nodePoolLabelKey`` (any value) and kwok
   plays it (annotation ``kwok.x-k8s.io/node: fake``). Its pool is that label's value; a pool the
   topology does not name gets nothing (the operator logs it and leaves the node).
3. Each such node, when it appears or first carries the label (and each one already there when the
   stand-in starts), gets in
   its status (the ``status`` subresource, a merge patch) ``nvidia.com/gpu`` = the pool's
   ``gpuCount`` in both capacity and allocatable, and each of the pool's ``otherDevices`` as
   ``name: count`` (the operator's kwok-gpu-device-plugin).
4. It gets the labels ``nvidia.com/gpu.memory`` (the pool's gpuMemory), ``nvidia.com/gpu.product``
   (gpuProduct), ``nvidia.com/mig.strategy``, ``nvidia.com/gpu.count`` (gpuCount),
   ``nvidia.com/gpu.present: "true"``, ``run.ai/fake.gpu: "true"`` (its status-exporter-kwok) and
   ``nvidia.com/gpu.deploy.dcgm-exporter: "true"`` (its status-updater).
5. A node deleted needs nothing (its status goes with it).

Left out, as KAI's scale suite reads none of it: the per-node ``topology-<node>`` ConfigMaps, the
GPU metrics, the pods' GPU status and the operator's nodes that are not kwok's.
"""

from __future__ import absolute_import, division, print_function

import json
import time

import yaml

from cri_log import say
from health import serve_health

TOPOLOGY_CONFIGMAP = "topology"
TOPOLOGY_KEY = "topology.yml"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
GPU_RESOURCE = "nvidia.com/gpu"


class TopologyError(ValueError):
    """The topology ConfigMap is missing or not in the format the stand-in reads."""


def read_topology(text):
    """The cluster topology from the ConfigMap's ``topology.yml``: ``{pools, label_key, mig_strategy}``."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise TopologyError("%s is not YAML: %s" % (TOPOLOGY_KEY, error))
    if not isinstance(data, dict) or not isinstance(data.get("nodePools"), dict) or not data["nodePools"]:
        raise TopologyError("%s has no nodePools (a map of pool name to gpuCount, gpuMemory, gpuProduct)" % TOPOLOGY_KEY)
    if not isinstance(data.get("nodePoolLabelKey"), str) or not data["nodePoolLabelKey"]:
        raise TopologyError("%s has no nodePoolLabelKey (the node label that names a node's pool)" % TOPOLOGY_KEY)
    pools = {}
    for name, pool in data["nodePools"].items():
        if not isinstance(pool, dict) or "gpu" in pool:
            raise TopologyError("nodePools.%s: the stand-in reads the flat format (gpuCount, gpuMemory, gpuProduct,"
                                " otherDevices), not a gpu: backend" % name)
        count = pool.get("gpuCount", 0)
        memory = pool.get("gpuMemory", 0)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise TopologyError("nodePools.%s.gpuCount must be a whole number of GPUs, not %r" % (name, count))
        if not isinstance(memory, int) or isinstance(memory, bool) or memory < 0:
            raise TopologyError("nodePools.%s.gpuMemory must be a whole number of MiB, not %r" % (name, memory))
        others = pool.get("otherDevices") or []
        if not isinstance(others, list) or not all(isinstance(o, dict) and isinstance(o.get("name"), str)
                                                   and isinstance(o.get("count"), int) for o in others):
            raise TopologyError("nodePools.%s.otherDevices must be a list of {name, count}" % name)
        pools[str(name)] = {"gpu_count": count, "gpu_memory": memory, "gpu_product": str(pool.get("gpuProduct") or ""),
                            "other_devices": [(o["name"], o["count"]) for o in others]}
    return {"pools": pools, "label_key": data["nodePoolLabelKey"], "mig_strategy": str(data.get("migStrategy") or "")}


def pool_of(node, topology):
    """The node's pool in the topology (rule 2), or None when the stand-in leaves the node alone."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    if topology["label_key"] not in labels:
        return None
    if (meta.get("annotations") or {}).get(KWOK_NODE_ANNOTATION) != "fake":
        return None
    return topology["pools"].get(labels[topology["label_key"]])


def status_patch(pool):
    """The merge patch of the node's status (rule 3)."""
    resources = dict([(GPU_RESOURCE, str(pool["gpu_count"]))] + [(name, str(count)) for name, count in pool["other_devices"]])
    return {"status": {"capacity": dict(resources), "allocatable": dict(resources)}}


def label_patch(pool, topology):
    """The merge patch of the node's labels (rule 4)."""
    return {"metadata": {"labels": {
        "nvidia.com/gpu.memory": str(pool["gpu_memory"]),
        "nvidia.com/gpu.product": pool["gpu_product"],
        "nvidia.com/mig.strategy": topology["mig_strategy"],
        "nvidia.com/gpu.count": str(pool["gpu_count"]),
        "nvidia.com/gpu.present": "true",
        "run.ai/fake.gpu": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
    }}}


def done(node, pool, topology):
    """Whether the node already shows what the rules give it (a restart of the stand-in patches nothing twice)."""
    status = node.get("status") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    want = status_patch(pool)["status"]
    return (all((status.get(part) or {}).get(name) == value for part in want for name, value in want[part].items())
            and all(labels.get(key) == value for key, value in label_patch(pool, topology)["metadata"]["labels"].items()))


class Nodes(object):
    """The node calls the stand-in makes, over the kubernetes client (JSON in and out)."""

    def __init__(self, kubeconfig):
        from kubernetes import client, config

        self.core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))

    def topology_text(self, namespace):
        from kubernetes.client.exceptions import ApiException

        try:
            configmap = self.core.read_namespaced_config_map(TOPOLOGY_CONFIGMAP, namespace, _request_timeout=10)
        except ApiException as error:
            if error.status == 404:
                raise TopologyError("no ConfigMap %s/%s (the cluster's GPU topology)" % (namespace, TOPOLOGY_CONFIGMAP))
            raise
        text = (configmap.data or {}).get(TOPOLOGY_KEY)
        if text is None:
            raise TopologyError("ConfigMap %s/%s has no key %s" % (namespace, TOPOLOGY_CONFIGMAP, TOPOLOGY_KEY))
        return text

    def listing(self, label_selector, **more):
        response = self.core.list_node(label_selector=label_selector, _preload_content=False, **more)
        return response if more.get("watch") else json.loads(response.data)

    def patch(self, name, body, status):
        if status:
            self.core.patch_node_status(name, body, _request_timeout=10)
        else:
            self.core.patch_node(name, body, _request_timeout=10)


def apply_rules(nodes, node, topology, seen):
    """Give one node what the rules say, once per node uid; True when it was patched."""
    meta = node["metadata"]
    pool = pool_of(node, topology)
    if pool is None or meta["uid"] in seen:
        return False
    if not done(node, pool, topology):
        nodes.patch(meta["name"], status_patch(pool), status=True)
        nodes.patch(meta["name"], label_patch(pool, topology), status=False)
    seen.add(meta["uid"])
    return True


def gpu_operator_stand_in(args, nodes=None):
    """Read the topology once, then give every node of a pool, now and as it appears, its GPUs and labels."""
    from kubernetes.watch.watch import iter_resp_lines
    from urllib3.exceptions import ProtocolError

    nodes = nodes or Nodes(args.kubeconfig)
    topology = read_topology(nodes.topology_text(args.namespace))
    say("gpu-operator stand-in of gpulab.kai_hami, not run.ai's fake-gpu-operator: nodes kwok plays with label %s get"
        " %s from the pools of %s/%s, read once now (%s)" % (
            topology["label_key"], GPU_RESOURCE, args.namespace, TOPOLOGY_CONFIGMAP,
            ", ".join("%s: %d" % (name, pool["gpu_count"]) for name, pool in sorted(topology["pools"].items()))))
    serve_health(args.health_address, "ok")
    seen = set()
    version = None
    while True:
        try:
            if version is None:
                listing = nodes.listing(topology["label_key"], _request_timeout=30)
                patched = sum(apply_rules(nodes, node, topology, seen) for node in listing["items"])
                seen &= set(node["metadata"]["uid"] for node in listing["items"])
                version = listing["metadata"]["resourceVersion"]
                say("%d nodes of a pool (%d given GPUs now)" % (len(listing["items"]), patched))
            response = nodes.listing(topology["label_key"], watch=True, resource_version=version, allow_watch_bookmarks=True,
                                     timeout_seconds=300, _request_timeout=(10, 330))
            for line in iter_resp_lines(response):
                event = json.loads(line)
                if event["type"] == "ERROR":
                    version = None
                    break
                node = event["object"]
                version = node["metadata"]["resourceVersion"]
                if event["type"] == "DELETED":
                    seen.discard(node["metadata"]["uid"])
                elif event["type"] in ("ADDED", "MODIFIED"):
                    apply_rules(nodes, node, topology, seen)
        except ProtocolError:
            continue
        except Exception as error:  # pylint: disable=broad-exception-caught
            say("gpu-operator stand-in: %s" % error)
            version = None
            time.sleep(1)
