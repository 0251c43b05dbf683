"""Benchmark: one gpulab.kai_hami task vs a kubernetes.core.k8s loop, in the same run.

1. Label N sim GPU nodes: one gpu_node_label task vs a kubernetes.core.k8s
   `state: patched` loop over the same nodes.
2. Create Q queues: one kai_queue task (queues: list) vs a kubernetes.core.k8s loop.

Both sides run as ansible-playbook against the same sim cluster; the figures are wall times
of the whole playbook run. Prints both and the ratio (loop / module).

usage: python tools/bench_modules.py [--nodes 1000] [--queues 200]   (make bench)
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.path.dirname(sys.executable)
INVENTORY = os.path.join(ROOT, "tests", "integration", "inventory.yml")
SELECTOR = "gpulab.kai-hami/sim-node=extra"


def playbook(workdir, name, tasks):
    path = os.path.join(workdir, name + ".yml")
    with open(path, "w") as handle:
        json.dump([{"name": name, "hosts": "localhost", "gather_facts": False, "tasks": tasks}], handle)
    return path


def run(path, *extra_vars):
    command = [os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, path]
    for item in extra_vars:
        command += ["-e", json.dumps(item)]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - start
    if done.returncode != 0:
        sys.exit("%s failed:\n%s\n%s" % (os.path.basename(path), done.stdout[-4000:], done.stderr[-2000:]))
    return elapsed


def report(title, module_seconds, loop_seconds, count):
    print("%s" % title)
    print("  gpulab.kai_hami, one task : %8.1f s  (%6.1f items/s)" % (module_seconds, count / module_seconds))
    print("  kubernetes.core.k8s loop  : %8.1f s  (%6.1f items/s)" % (loop_seconds, count / loop_seconds))
    print("  ratio loop / module       : %8.1f x" % (loop_seconds / module_seconds))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--queues", type=int, default=200)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="kai-hami-bench-") as workdir:
        kubeconfig = os.path.join(workdir, "kubeconfig")
        os.environ["K8S_AUTH_KUBECONFIG"] = kubeconfig
        cluster = dict(
            sim_cluster_name="bench",
            sim_cluster_node_runtime="kwok",
            sim_cluster_workdir=os.path.join(workdir, "sim"),
            sim_cluster_kubeconfig=kubeconfig,
            sim_cluster_nodes=["bench-control-plane"] + ["bench-gpu-%d" % n for n in range(args.nodes)],
        )
        sim = playbook(workdir, "sim", [{"name": "Sim cluster", "ansible.builtin.include_role": {"name": "gpulab.kai_hami.sim_cluster"}}])
        print("starting a sim cluster with %d extra GPU nodes ..." % args.nodes, flush=True)
        up = run(sim, cluster, {"sim_cluster_state": "present"})
        print("  up in %.1f s" % up, flush=True)
        try:
            labels = {"nvidia.com/gpu.memory": "40960", "nvidia.com/gpu.count": "8"}
            module_labels = playbook(workdir, "labels-module", [{
                "name": "Label the nodes", "gpulab.kai_hami.gpu_node_label": {
                    "label_selector": SELECTOR, "memory_mib": 40960, "count": 8, "min_nodes": args.nodes}}])
            unlabel = playbook(workdir, "unlabel", [{
                "name": "Remove the labels", "gpulab.kai_hami.gpu_node_label": {"label_selector": SELECTOR, "state": "absent"}}])
            loop_labels = playbook(workdir, "labels-loop", [
                {"name": "List the nodes", "kubernetes.core.k8s_info": {"kind": "Node", "label_selectors": [SELECTOR]}, "register": "found"},
                {"name": "Label each node", "kubernetes.core.k8s": {
                    "kind": "Node", "name": "{{ item }}", "state": "patched", "definition": {"metadata": {"labels": labels}}},
                 "loop": "{{ found.resources | map(attribute='metadata.name') | list }}"},
            ])
            run(unlabel)  # the sim_cluster role gives its nodes their GPU labels: both ways start from none
            module_seconds = run(module_labels)
            run(unlabel)
            loop_seconds = run(loop_labels)
            report("label %d GPU nodes" % args.nodes, module_seconds, loop_seconds, args.nodes)

            queues = [{"name": "bench-root"}] + [{"name": "bench-%03d" % i, "parent_queue": "bench-root"} for i in range(args.queues - 1)]
            module_queues = playbook(workdir, "queues-module", [{"name": "Queues", "gpulab.kai_hami.kai_queue": {"queues": queues}}])
            drop_queues = playbook(workdir, "queues-drop", [{"name": "Drop", "gpulab.kai_hami.kai_queue": {"queues": queues, "state": "absent"}}])
            manifests = [{
                "apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": q["name"]},
                "spec": dict({"parentQueue": q["parent_queue"]} if "parent_queue" in q else {}, resources=dict(
                    (r, {"quota": 0, "limit": -1, "overQuotaWeight": 1}) for r in ("cpu", "gpu", "memory")))} for q in queues]
            loop_queues = playbook(workdir, "queues-loop", [{
                "name": "Queue", "kubernetes.core.k8s": {"state": "present", "definition": "{{ item }}"},
                "loop": manifests, "loop_control": {"label": "{{ item.metadata.name }}"}}])
            module_seconds = run(module_queues)
            run(drop_queues)
            loop_seconds = run(loop_queues)
            report("create %d queues" % args.queues, module_seconds, loop_seconds, args.queues)
        finally:
            run(sim, cluster, {"sim_cluster_state": "absent"})


if __name__ == "__main__":
    main()
