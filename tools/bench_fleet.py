"""Benchmark: the sim at fleet scale, KAI against kube-scheduler, fractions through real reservations.

On one sim cluster with KAI's own programs, kube-scheduler and the NVML stand-in library, grown through
the sim_cluster role's node list (one apply of the missing nodes, all of one GPU profile):

1. whole-GPU fill: nodes x GPUs single-GPU pods through KAI, from the first create to all bound,
   then the same pods through kube-scheduler on the same nodes; at each size of the scaling line
   (8, 32 and --nodes nodes, the cluster grown between them);
2. queues at scale: two leaf queues with GPU quotas 2:1 of the cluster, each asking for every GPU;
   what KAI allocated to each against its quota, and when it got there;
3. fractional fill: two pods of --request-mib MiB gpu-memory per GPU on --groups GPU groups, through
   KAI's binder and its real reservation apps with the NVML stand-in library: the time to all bound,
   and the checks (one reservation pod per group, its GPU UUID distinct on its node, every pod's
   CUDA_DEVICE_MEMORY_LIMIT as KAI's arithmetic gives it); the memory of the reservation processes
   and of the whole sim.

Prints a table and last one machine-readable line:
``bench-fleet nodes=<n> gpus=<n> kai_fill_s=<s> kube_fill_s=<s> ratio=<x> frac_pods=<n> frac_groups=<n> frac_fill_s=<s> rss_mib=<n>``
(ratio = kai_fill_s / kube_fill_s at --nodes nodes). Exits 1 when a check of the fractional fill
fails or a fill does not finish in --timeout seconds.

usage: python tools/bench_fleet.py [--nodes 64] [--groups 64] [--request-mib 20000] [--timeout 600] [--keep]   (make bench-fleet)
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.path.dirname(sys.executable)
sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))

from ansible_collections.gpulab.kai_hami.plugins.module_utils import kai_math, kai_parts  # noqa: E402  pylint: disable=wrong-import-position

NAME = "fleet"
PROFILE = "a100"
FILL_QUEUE = "fleet-fill"
QUEUE_A, QUEUE_B = "fleet-a", "fleet-b"
KUBE_SCHEDULER = "default-scheduler"
POLL_SECONDS = 0.25
CREATE_THREADS = 8


def gpu_queue(name, quota, parent="fleet-root"):
    """A kai_queue entry: GPU quota as given (-1 for the root), CPU and memory unlimited over quota."""
    return {"name": name, "parent_queue": parent, "resources": {"gpu": {"quota": quota, "limit": -1, "over_quota_weight": 1}}}


def queue_quotas(gpus):
    """The two queues' GPU quotas: 2:1 of the cluster's GPUs."""
    quota_a = (2 * gpus) // 3
    return {QUEUE_A: quota_a, QUEUE_B: gpus - quota_a}


class Fleet(object):
    """One sim cluster with KAI, kube-scheduler and the NVML stand-in library, in a work dir of its own."""

    def __init__(self, workdir, name=NAME):
        self.workdir = workdir
        self.name = name
        self.kubeconfig = os.path.join(workdir, "kubeconfig")
        self.simdir = os.path.join(workdir, "sim")
        self.playbook = os.path.join(workdir, "fleet.yml")
        self._core = None
        with open(self.playbook, "w") as handle:
            json.dump([{"name": "A sim fleet", "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [
                {"name": "The sim cluster", "ansible.builtin.include_role": {"name": "gpulab.kai_hami.sim_cluster"}},
                {"name": "KAI", "ansible.builtin.include_role": {"name": "gpulab.kai_hami.sim_kai"},
                 "when": "sim_cluster_state == 'present'"},
            ]}], handle)

    def node_names(self, count):
        return ["%s-gpu-%03d" % (self.name, n) for n in range(1, count + 1)]

    def _play(self, extra):
        argv = [os.path.join(BIN, "ansible-playbook"), self.playbook, "-e", json.dumps(extra)]
        env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), ANSIBLE_NOCOLOR="1")
        started = time.monotonic()
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError("ansible-playbook failed:\n%s%s" % (done.stdout[-5000:], done.stderr[-2000:]))
        return time.monotonic() - started

    def up(self, nodes):
        """Bring the cluster up with `nodes` GPU nodes, or grow it to that many; KAI and its queues with it."""
        queues = [{"name": "fleet-root", "resources": {"gpu": {"quota": -1, "limit": -1, "over_quota_weight": 1}}},
                  gpu_queue(FILL_QUEUE, 0)] + [gpu_queue(name, quota) for name, quota in sorted(queue_quotas(nodes * 8).items())]
        return self._play(dict(
            sim_cluster_state="present", sim_cluster_name=self.name, sim_cluster_workdir=self.simdir,
            sim_cluster_kubeconfig=self.kubeconfig, sim_cluster_gpu_profile=PROFILE, sim_cluster_nodes=self.node_names(nodes),
            sim_cluster_kube_scheduler=True, sim_kai_nvml_stand_in=True, sim_kai_queues=queues))

    def down(self):
        return self._play(dict(sim_cluster_state="absent", sim_cluster_name=self.name, sim_cluster_workdir=self.simdir,
                               sim_cluster_kubeconfig=self.kubeconfig))

    # --- the API ---------------------------------------------------------------------------

    @property
    def core(self):
        if self._core is None:
            from kubernetes import client, config

            configuration = client.Configuration()
            config.load_kube_config(config_file=self.kubeconfig, client_configuration=configuration)
            configuration.connection_pool_maxsize = CREATE_THREADS * 2
            self._core = client.CoreV1Api(client.ApiClient(configuration))
        return self._core

    def pods(self, namespace, selector=None):
        response = self.core.list_namespaced_pod(namespace, label_selector=selector, _preload_content=False)
        return json.loads(response.data)["items"]

    def configmaps(self, namespace):
        response = self.core.list_namespaced_config_map(namespace, _preload_content=False)
        return dict((c["metadata"]["name"], c) for c in json.loads(response.data)["items"])

    def namespace(self, name):
        from kubernetes.client.rest import ApiException

        try:
            self.core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        except ApiException as error:
            if error.status != 409:
                raise

    def create(self, manifests):
        """Create the pods from CREATE_THREADS threads; the time the first create started."""
        started = time.monotonic()
        with ThreadPoolExecutor(CREATE_THREADS) as pool:
            list(pool.map(lambda pod: self.core.create_namespaced_pod(pod["metadata"]["namespace"], pod, _preload_content=False), manifests))
        return started

    def clear(self, namespace, timeout):
        """Delete every pod of the namespace and wait until they are gone."""
        self.core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
        deadline = time.monotonic() + timeout
        while self.pods(namespace) and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)


def pod(name, namespace, scheduler, queue=None, gpus=1, gpu_memory_mib=None):
    """A pod that asks for whole GPUs, or for gpu-memory (a fraction KAI reserves)."""
    manifest = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "gpulab-fleet"}},
                "spec": {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "work", "image": "registry.k8s.io/pause:3.10"}]}}
    if queue:
        manifest["metadata"]["labels"][kai_parts.QUEUE_LABEL] = queue
    if gpu_memory_mib:
        manifest["metadata"]["annotations"] = {"gpu-memory": str(gpu_memory_mib)}
    else:
        manifest["spec"]["containers"][0]["resources"] = {"limits": {kai_parts.GPU_RESOURCE: str(gpus)}}
    return manifest


def wait_bound(fleet, namespace, count, started, timeout, done=None):
    """Poll until `count` pods of the namespace are bound (or `done(pods)` holds); seconds since `started` or None."""
    deadline = started + timeout
    while time.monotonic() < deadline:
        pods = fleet.pods(namespace)
        bound = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
        if (done(pods) if done else len(bound) >= count):
            return time.monotonic() - started
        time.sleep(POLL_SECONDS)
    return None


def whole_gpu_fill(fleet, scheduler, gpus, timeout, tag):
    """gpus single-GPU pods through `scheduler`: seconds from the first create to all bound (None: not all bound)."""
    namespace = "fleet-%s-%s" % (tag, "kai" if scheduler == kai_parts.SCHEDULER_NAME else "kube")
    fleet.namespace(namespace)
    queue = FILL_QUEUE if scheduler == kai_parts.SCHEDULER_NAME else None
    started = fleet.create([pod("fill-%04d" % i, namespace, scheduler, queue) for i in range(gpus)])
    seconds = wait_bound(fleet, namespace, gpus, started, timeout)
    fleet.clear(namespace, timeout)
    return seconds


def queues_at_scale(fleet, gpus, timeout):
    """Both queues ask for every GPU: what each got against its quota, and when."""
    namespace = "fleet-queues"
    fleet.namespace(namespace)
    quotas = queue_quotas(gpus)
    manifests = []
    for i in range(gpus):  # interleaved, as two teams submitting at once
        for queue in (QUEUE_A, QUEUE_B):
            manifests.append(pod("%s-%04d" % (queue, i), namespace, kai_parts.SCHEDULER_NAME, queue))

    def per_queue(pods):
        counts = dict((q, 0) for q in quotas)
        for item in pods:
            if (item.get("spec") or {}).get("nodeName"):
                counts[item["metadata"]["labels"][kai_parts.QUEUE_LABEL]] += 1
        return counts

    started = fleet.create(manifests)
    full_s = wait_bound(fleet, namespace, gpus, started, timeout)
    at_quota_s = wait_bound(fleet, namespace, gpus, started, timeout, done=lambda pods: per_queue(pods) == quotas)
    reached = per_queue(fleet.pods(namespace))
    fleet.clear(namespace, timeout)
    return dict(quotas=quotas, reached=reached, full_s=full_s, at_quota_s=at_quota_s)


def fractional_fill(fleet, groups, request_mib, timeout):
    """2 x groups gpu-memory pods (two per GPU) through KAI's binder and its reservation apps; seconds to all bound and the pods."""
    namespace = "fleet-fractions"
    fleet.namespace(namespace)
    count = 2 * groups
    started = fleet.create([pod("shared-%04d" % i, namespace, kai_parts.SCHEDULER_NAME, FILL_QUEUE, gpu_memory_mib=request_mib)
                            for i in range(count)])
    seconds = wait_bound(fleet, namespace, count, started, timeout)
    return seconds, namespace


def check_fractions(fleet, namespace, groups, request_mib):
    """What KAI and the reservation apps did for the shared pods, checked; the list of what is wrong."""
    problems = []
    pods = fleet.pods(namespace)
    nodes = dict((n["metadata"]["name"], n) for n in json.loads(fleet.core.list_node(_preload_content=False).data)["items"])
    configmaps = fleet.configmaps(namespace)
    reservations = fleet.pods(kai_parts.RESERVATION_NAMESPACE)
    unbound = [p["metadata"]["name"] for p in pods if not p["spec"].get("nodeName")]
    if len(pods) != 2 * groups or unbound:
        problems.append("%d shared pods, %d expected; not bound: %s" % (len(pods), 2 * groups, ", ".join(unbound[:5]) or "none"))
    by_group = {}
    for item in reservations:
        group = (item["metadata"].get("labels") or {}).get(kai_parts.GPU_GROUP_LABEL)
        by_group.setdefault(group, []).append(item)
    used = set((p["metadata"].get("labels") or {}).get(kai_parts.GPU_GROUP_LABEL) for p in pods)
    if set(by_group) != used or any(len(v) != 1 for v in by_group.values()) or len(used) != groups:
        problems.append("reservation pods per GPU group: %s; the shared pods use %d groups, %d expected"
                        % (dict((g, len(v)) for g, v in by_group.items()), len(used), groups))
    uuids = {}
    for item in reservations:
        uuid = (item["metadata"].get("annotations") or {}).get(kai_parts.GPU_INDEX_ANNOTATION)
        node = item["spec"].get("nodeName")
        if not uuid:
            problems.append("reservation pod %s reports no GPU" % item["metadata"]["name"])
        elif uuid in uuids.setdefault(node, set()):
            problems.append("GPU %s is reserved twice on node %s" % (uuid, node))
        uuids[node].add(uuid)
    for item in pods:
        label = nodes.get(item["spec"].get("nodeName"), {}).get("metadata", {}).get("labels", {}).get(kai_parts.GPU_MEMORY_LABEL)
        expected = kai_math.hamicore_memory_limit(kai_math.gpu_fraction(request_mib, label), label) if label else None
        name = None
        for env in item["spec"]["containers"][0].get("env") or []:
            if env.get("name") == "CUDA_DEVICE_MEMORY_LIMIT":
                name = ((env.get("valueFrom") or {}).get("configMapKeyRef") or {}).get("name")
        written = ((configmaps.get(name) or {}).get("data") or {}).get("CUDA_DEVICE_MEMORY_LIMIT") if name else None
        if written != expected or expected is None:
            problems.append("pod %s: CUDA_DEVICE_MEMORY_LIMIT %s, KAI's arithmetic gives %s" % (item["metadata"]["name"], written, expected))
    return problems, dict((node, len(found)) for node, found in uuids.items())


def memory_mib(pids):
    """(RSS, PSS) of the processes, MiB: RSS counts the pages they share once per process, PSS divides them."""
    totals = {"Rss:": 0, "Pss:": 0}
    for pid in pids:
        try:
            with open("/proc/%d/smaps_rollup" % pid) as handle:
                for line in handle:
                    field = line.split()
                    if field and field[0] in totals:
                        totals[field[0]] += int(field[1])
        except OSError:
            pass
    return totals["Rss:"] / 1024.0, totals["Pss:"] / 1024.0


def sim_pids(workdir, under=None):
    """Processes of the sim: a command line naming its work dir, or a working directory under it (or under `under`)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                cmdline = handle.read().decode("utf-8", "replace")
            cwd = os.readlink("/proc/%s/cwd" % entry)
        except OSError:
            continue
        if under is not None:
            if cwd == under or cwd.startswith(under + os.sep):
                found.append(int(entry))
        elif workdir in cmdline or cwd.startswith(workdir + os.sep):
            found.append(int(entry))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64, help="GPU nodes of the largest fill (8 GPUs each)")
    parser.add_argument("--groups", type=int, default=64, help="GPU groups of the fractional fill (two pods each)")
    parser.add_argument("--request-mib", type=int, default=20000, help="each shared pod's gpu-memory, MiB (two fit one 40 GB GPU)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds each fill may take")
    parser.add_argument("--keep", action="store_true", help="leave the cluster up (take it down with playbooks/cleanup.yml)")
    args = parser.parse_args()
    if args.nodes < 1 or args.groups < 1:
        sys.exit("--nodes and --groups must be at least 1")
    if args.groups > args.nodes * 8:
        sys.exit("--groups %d needs %d GPUs; --nodes %d gives %d" % (args.groups, args.groups, args.nodes, args.nodes * 8))

    sizes = sorted(set(n for n in (8, 32) if n < args.nodes) | {args.nodes})
    workdir = tempfile.mkdtemp(prefix="kai-hami-fleet-")
    fleet = Fleet(workdir)
    failed = []
    rows = []
    try:
        for size in sizes:
            print("growing the sim to %d GPU nodes (%d GPUs) ..." % (size, size * 8), flush=True)
            grew = fleet.up(size)
            gpus = size * 8
            kai_s = whole_gpu_fill(fleet, kai_parts.SCHEDULER_NAME, gpus, args.timeout, "n%d" % size)
            kube_s = whole_gpu_fill(fleet, KUBE_SCHEDULER, gpus, args.timeout, "n%d" % size)
            rows.append((size, gpus, grew, kai_s, kube_s))
            print("  up/grown in %.1f s; KAI filled %d GPUs in %s s, kube-scheduler in %s s"
                  % (grew, gpus, "%.1f" % kai_s if kai_s else "(not all)", "%.1f" % kube_s if kube_s else "(not all)"), flush=True)
            if kai_s is None or kube_s is None:
                failed.append("the whole-GPU fill at %d nodes did not finish in %d s" % (size, args.timeout))
        gpus = args.nodes * 8
        print("queues at scale: %s and %s ask for every GPU ..." % (QUEUE_A, QUEUE_B), flush=True)
        queues = queues_at_scale(fleet, gpus, args.timeout)
        baseline = memory_mib(sim_pids(fleet.simdir))
        print("fractional fill: %d pods of %d MiB on %d GPU groups ..." % (2 * args.groups, args.request_mib, args.groups), flush=True)
        frac_s, namespace = fractional_fill(fleet, args.groups, args.request_mib, args.timeout)
        problems, per_node = check_fractions(fleet, namespace, args.groups, args.request_mib)
        reservation_dir = os.path.join(fleet.simdir, "kai", "reservations")
        reservation_pids = sim_pids(fleet.simdir, under=reservation_dir)
        reservation_mib = memory_mib(reservation_pids)
        whole_mib = memory_mib(sim_pids(fleet.simdir))
        if frac_s is None:
            problems.insert(0, "not all %d shared pods bound in %d s" % (2 * args.groups, args.timeout))
        failed += problems
    finally:
        if args.keep:
            print("left up: ansible-playbook playbooks/cleanup.yml -e cleanup_cluster_name=%s -e sim_cluster_workdir=%s"
                  % (fleet.name, fleet.simdir))
        else:
            fleet.down()
            shutil.rmtree(workdir, ignore_errors=True)

    print()
    print("| nodes | GPUs | cluster up/grown s | KAI fill s | KAI pods/s | kube-scheduler fill s | pods/s | KAI / kube-scheduler |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, count, grew, kai_s, kube_s in rows:
        print("| %d | %d | %.1f | %s | %s | %s | %s | %s |" % (
            size, count, grew, "%.1f" % kai_s if kai_s else "-", "%.1f" % (count / kai_s) if kai_s else "-",
            "%.1f" % kube_s if kube_s else "-", "%.1f" % (count / kube_s) if kube_s else "-",
            "%.2f" % (kai_s / kube_s) if kai_s and kube_s else "-"))
    print()
    print("queues at scale (%d GPUs): quota %s; allocated when full (%s s) and at the end: %s; at quota after %s s"
          % (gpus, queues["quotas"], "%.1f" % queues["full_s"] if queues["full_s"] else "-", queues["reached"],
             "%.1f" % queues["at_quota_s"] if queues["at_quota_s"] else "- (not reached)"))
    print("fractional fill: %d pods on %d GPU groups (%d nodes) bound in %s s" % (
        2 * args.groups, args.groups, len(per_node), "%.1f" % frac_s if frac_s else "-"))
    print("memory, MiB (RSS / PSS): %d reservation processes %.0f / %.0f (%.1f / %.1f per group); the whole sim %.0f / %.0f "
          "(%.0f / %.0f before the fill)" % (
              len(reservation_pids), reservation_mib[0], reservation_mib[1], reservation_mib[0] / args.groups,
              reservation_mib[1] / args.groups, whole_mib[0], whole_mib[1], baseline[0], baseline[1]))
    for problem in failed:
        print("FAILED: %s" % problem)
    last = rows[-1]
    print("bench-fleet nodes=%d gpus=%d kai_fill_s=%s kube_fill_s=%s ratio=%s frac_pods=%d frac_groups=%d frac_fill_s=%s rss_mib=%d" % (
        last[0], last[1], "%.1f" % last[3] if last[3] else "nan", "%.1f" % last[4] if last[4] else "nan",
        "%.2f" % (last[3] / last[4]) if last[3] and last[4] else "nan", 2 * args.groups, args.groups,
        "%.1f" % frac_s if frac_s else "nan", whole_mib[0]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
