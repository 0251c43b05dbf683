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
   and of the whole sim;
4. with --sweep, at --nodes nodes: the whole-GPU fill and a fractional fill (--sweep-groups) through
   KAI again at each point of SWEEP: the binder's client limits at KAI's scale-test values (QPS 500,
   burst 2000), a shorter scheduler cycle (250ms), the scheduler's own client limits raised; to see
   which stage moves.

Every fill is timed per stage from watches on the API server (tools/stage_watch.py): created ->
PodGroup -> BindRequest -> bound -> Running, and for a GPU group its reservation pod; the table
gives p50, p90 and max of each stage and when the last pod passed it. With matplotlib installed
(requirements/bench.txt, make bench-fleet installs it) it draws an SVG (--svg): bound pods over time
for KAI and kube-scheduler at each size, and the p50 of each stage.

Prints the tables and last one machine-readable line:
``bench-fleet nodes=<n> gpus=<n> kai_fill_s=<s> kube_fill_s=<s> ratio=<x> frac_pods=<n> frac_groups=<n> frac_fill_s=<s>
rss_mib=<n> podgrouper_p50_s=<s> scheduler_p50_s=<s> binder_p50_s=<s> running_p50_s=<s> reservation_p50_s=<s>``
(ratio = kai_fill_s / kube_fill_s at --nodes nodes; the stages' p50 of the KAI fill at --nodes nodes,
reservation_p50_s a group's reservation pod from Running to its GPU annotated). Exits 1 when a
check of the fractional fill fails or a fill does not finish in --timeout seconds.

usage: python tools/bench_fleet.py [--nodes 64] [--groups 64] [--request-mib 20000] [--timeout 600]
                                   [--sweep [--sweep-groups 32]] [--no-queues] [--fractions-only] [--svg PATH] [--keep]   (make bench-fleet)
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
import kai_scale  # noqa: E402  pylint: disable=wrong-import-position
from stage_watch import KAI_STAGES, KUBE_STAGES, RESERVATION_STAGES, StageWatch, bound_curve, stage_rows  # noqa: E402  pylint: disable=wrong-import-position

NAME = "fleet"
PROFILE = "a100"
FILL_QUEUE = "fleet-fill"
QUEUE_A, QUEUE_B = "fleet-a", "fleet-b"
KUBE_SCHEDULER = "default-scheduler"
POLL_SECONDS = 0.25
CREATE_THREADS = 8
# the sim_kai role's variables of each point of --sweep (the first: KAI's operator's defaults)
SWEEP = [
    ("binder QPS 20, burst 100; cycle 1s; scheduler QPS 50, burst 300 (as KAI's operator runs them)", "KAI's defaults", {}),
    ("binder QPS 500, burst 2000 (KAI's scale test)", "binder QPS 500",
     {"sim_kai_binder_qps": 500, "sim_kai_binder_burst": 2000}),
    ("scheduler cycle 250ms", "cycle 250ms", {"sim_kai_schedule_period": "250ms"}),
    ("scheduler QPS 500, burst 2000", "scheduler QPS 500", {"sim_kai_scheduler_qps": 500, "sim_kai_scheduler_burst": 2000}),
    ("binder and scheduler QPS 500, burst 2000", "both QPS 500",
     {"sim_kai_binder_qps": 500, "sim_kai_binder_burst": 2000, "sim_kai_scheduler_qps": 500, "sim_kai_scheduler_burst": 2000}),
]
KAI_DEFAULTS = {"sim_kai_binder_qps": 20, "sim_kai_binder_burst": 100, "sim_kai_schedule_period": "", "sim_kai_scheduler_qps": "",
                "sim_kai_scheduler_burst": ""}


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
        self.watch = None
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

    def up(self, nodes, kai=None):
        """Bring the cluster up with `nodes` GPU nodes, or grow it to that many; KAI (the sim_kai variables `kai`) and its queues."""
        queues = [{"name": "fleet-root", "resources": {"gpu": {"quota": -1, "limit": -1, "over_quota_weight": 1}}},
                  gpu_queue(FILL_QUEUE, 0)] + [gpu_queue(name, quota) for name, quota in sorted(queue_quotas(nodes * 8).items())]
        return self._play(dict(
            sim_cluster_state="present", sim_cluster_name=self.name, sim_cluster_workdir=self.simdir, sim_cluster_node_runtime="kwok",
            sim_cluster_kubeconfig=self.kubeconfig, sim_cluster_gpu_profile=PROFILE, sim_cluster_nodes=self.node_names(nodes),
            sim_cluster_kube_scheduler=True, sim_kai_nvml_stand_in=True, sim_kai_queues=queues, **dict(KAI_DEFAULTS, **(kai or {}))))

    def down(self):
        if self.watch is not None:
            self.watch.stop()
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

    def watching(self):
        """The stage watch of this cluster, started on first use (the cluster must be up)."""
        if self.watch is None:
            from kubernetes import client, config

            configuration = client.Configuration()
            config.load_kube_config(config_file=self.kubeconfig, client_configuration=configuration)
            self.watch = StageWatch(client.ApiClient(configuration)).start()
        return self.watch

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
        """Delete every pod of the namespace and wait until they are gone. Thousands of pods take the
        API server longer than its request timeout (a 504, while it goes on deleting): the call is
        made again every 30 s while pods are left."""
        from kubernetes.client.rest import ApiException
        deadline = time.monotonic() + timeout
        asked = 0.0
        while time.monotonic() < deadline:
            if time.monotonic() - asked >= 30:
                asked = time.monotonic()
                try:
                    self.core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
                except ApiException as error:
                    if error.status != 504:
                        raise
            if not self.pods(namespace):
                return
            time.sleep(1)


def pod(name, namespace, scheduler, queue=None, gpus=1, gpu_memory_mib=None, gpu_fraction=None):
    """A pod that asks for whole GPUs, or for gpu-memory or a gpu-fraction (a fraction KAI reserves)."""
    manifest = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "gpulab-fleet"}},
                "spec": {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "work", "image": "registry.k8s.io/pause:3.10"}]}}
    if queue:
        manifest["metadata"]["labels"][kai_parts.QUEUE_LABEL] = queue
    if gpu_memory_mib:
        manifest["metadata"]["annotations"] = {"gpu-memory": str(gpu_memory_mib)}
    elif gpu_fraction:
        manifest["metadata"]["annotations"] = {"gpu-fraction": str(gpu_fraction)}
    else:
        manifest["spec"]["containers"][0]["resources"] = {"limits": {kai_parts.GPU_RESOURCE: str(gpus)}}
    return manifest


def wait_bound(fleet, namespace, count, started, timeout, done=None):
    """Until `count` pods of the namespace are bound (or `done(points)` holds), as the stage watch sees them:
    seconds from `started` to the last bind (or to when `done` held), None when not in `timeout`."""
    watch = fleet.watching()
    deadline = started + timeout
    while time.monotonic() < deadline:
        points = watch.points(namespace)
        bound = [p["bound"] for p in points.values() if "bound" in p]
        if done is not None:
            if done(points):
                return time.monotonic() - started
        elif len(bound) >= count:
            return max(bound) - started
        time.sleep(POLL_SECONDS)
    return None


def timed_fill(fleet, namespace, manifests, timeout, stages):
    """Create the pods and wait until all are bound: seconds (None: not all), the stage rows and the bound curve."""
    fleet.watching()
    fleet.namespace(namespace)
    started = fleet.create(manifests)
    seconds = wait_bound(fleet, namespace, len(manifests), started, timeout)
    time.sleep(1)  # the last pods' Running
    points = fleet.watch.points(namespace)
    return {"seconds": seconds, "stages": stage_rows(points, stages, started), "curve": bound_curve(points, started), "started": started}


def whole_gpu_fill(fleet, scheduler, gpus, timeout, tag):
    """gpus single-GPU pods through `scheduler`: the timed fill (seconds from the first create to all bound, stages)."""
    kai = scheduler == kai_parts.SCHEDULER_NAME
    namespace = "fleet-%s-%s" % (tag, "kai" if kai else "kube")
    fill = timed_fill(fleet, namespace, [pod("fill-%04d" % i, namespace, scheduler, FILL_QUEUE if kai else None) for i in range(gpus)],
                      timeout, KAI_STAGES if kai else KUBE_STAGES)
    fleet.clear(namespace, timeout)
    return fill


def queues_at_scale(fleet, gpus, timeout):
    """Both queues ask for every GPU: what each got against its quota, and when."""
    namespace = "fleet-queues"
    fleet.namespace(namespace)
    quotas = queue_quotas(gpus)
    manifests = []
    for i in range(gpus):  # interleaved, as two teams submitting at once
        for queue in (QUEUE_A, QUEUE_B):
            manifests.append(pod("%s-%04d" % (queue, i), namespace, kai_parts.SCHEDULER_NAME, queue))

    def per_queue(points):
        counts = dict((q, 0) for q in quotas)
        for name, item in points.items():
            if "bound" in item:
                counts[name.rsplit("-", 1)[0]] += 1
        return counts

    fleet.watching()
    started = fleet.create(manifests)
    full_s = wait_bound(fleet, namespace, gpus, started, timeout)
    at_quota_s = wait_bound(fleet, namespace, gpus, started, timeout, done=lambda points: per_queue(points) == quotas)
    reached = per_queue(fleet.watch.points(namespace))
    fleet.clear(namespace, timeout)
    return dict(quotas=quotas, reached=reached, full_s=full_s, at_quota_s=at_quota_s)


def fractional_fill(fleet, groups, request_mib, timeout, namespace="fleet-fractions"):
    """2 x groups gpu-memory pods (two per GPU) through KAI's binder and its reservation apps: the timed fill
    (with each GPU group's reservation stages) and the namespace."""
    fill = timed_fill(fleet, namespace, [pod("shared-%04d" % i, namespace, kai_parts.SCHEDULER_NAME, FILL_QUEUE, gpu_memory_mib=request_mib)
                                         for i in range(2 * groups)], timeout, KAI_STAGES)
    group_points = fleet.watch.group_points(namespace, kai_parts.RESERVATION_NAMESPACE)
    fill["reservation_stages"] = stage_rows(group_points, RESERVATION_STAGES, fill["started"])
    return fill, namespace


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


def bulk_fractions(fleet, nodes, timeout, namespace="fleet-bulk-fractions"):
    """Every GPU asked for twice at once, as halves (gpu-fraction 0.5), against KAI's open bugs of fractions in
    bulk: (seconds to all bound or None, the counts of each rule, what breaks them)."""
    count = nodes * 8 * 2
    fill = timed_fill(fleet, namespace, [pod("half-%05d" % i, namespace, kai_parts.SCHEDULER_NAME, FILL_QUEUE, gpu_fraction=0.5)
                                         for i in range(count)], timeout, KAI_STAGES)
    time.sleep(5)  # late deletions of reservation pods, late refusals
    return (fill["seconds"],) + check_bulk_fractions(fleet, namespace, count)


def group_of(item):
    return (item["metadata"].get("labels") or {}).get(kai_parts.GPU_GROUP_LABEL)


def gone_at(points):
    """When the watch first saw a pod being deleted (or gone), None if never."""
    seen = [points[key] for key in ("deleting", "deleted") if key in points]
    return min(seen) if seen else None


def check_bulk_fractions(fleet, namespace, count):
    """The four rules of fractions in bulk, from the cluster and the stage watch: (counts, findings)."""
    findings = []
    pods = fleet.pods(namespace)
    reservations = fleet.pods(kai_parts.RESERVATION_NAMESPACE)
    # 1. every pod binds, or is refused with KAI's reason (PodScheduled False with a message)
    bound = [p for p in pods if p["spec"].get("nodeName")]
    refused = [p for p in pods if not p["spec"].get("nodeName") and any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("message") for c in (p.get("status") or {}).get("conditions") or [])]
    unexplained = [p["metadata"]["name"] for p in pods if not p["spec"].get("nodeName") and p not in refused]
    if len(pods) != count or unexplained:
        findings.append("%d of %d pods neither bound nor refused with a reason (e.g. %s)"
                        % (count - len(bound) - len(refused), count, ", ".join(unexplained[:3]) or "pods missing"))
    # 2. no GPU group is named twice: one live reservation pod a group, and no two groups on one GPU of a node
    by_group, by_gpu = {}, {}
    for item in reservations:
        if item["metadata"].get("deletionTimestamp"):
            continue
        by_group.setdefault(group_of(item), []).append(item["metadata"]["name"])
        uuid = (item["metadata"].get("annotations") or {}).get(kai_parts.GPU_INDEX_ANNOTATION)
        if uuid:
            by_gpu.setdefault((item["spec"].get("nodeName"), uuid), []).append(group_of(item))
    named_twice = dict((g, v) for g, v in by_group.items() if len(v) > 1)
    named_twice.update(dict(("%s %s" % key, v) for key, v in by_gpu.items() if len(v) > 1))
    if named_twice:
        findings.append("GPU groups named twice: %s" % dict(list(named_twice.items())[:3]))
    # 3. no GPU holds more than two halves
    on_gpu = {}
    gpu_of_group = dict((groups[0], key) for key, groups in by_gpu.items() if len(groups) == 1)
    for item in bound:
        key = gpu_of_group.get(group_of(item), (item["spec"]["nodeName"], "group %s" % group_of(item)))
        on_gpu[key] = on_gpu.get(key, 0) + 1
    over_two = dict((" ".join(key), n) for key, n in on_gpu.items() if n > 2)
    if over_two:
        findings.append("GPUs holding more than two halves: %s" % dict(list(over_two.items())[:3]))
    # 4. no reservation pod deleted while a shared pod still used its GPU (from the watch's times)
    shared = fleet.watch.points(namespace)
    in_use_deleted = []
    for name, points in fleet.watch.points(kai_parts.RESERVATION_NAMESPACE).items():
        gone = gone_at(points)
        if gone is None:
            continue
        # a shared pod of its group bound before it went, and not itself going by then
        users = [n for n, p in shared.items() if p.get("group") == points.get("group") and "bound" in p and p["bound"] < gone
                 and (gone_at(p) is None or gone_at(p) > gone)]
        if users:
            in_use_deleted.append("%s (group %s, used by %s)" % (name, points.get("group"), ", ".join(sorted(users)[:2])))
    if in_use_deleted:
        findings.append("reservation pods deleted while in use: %s" % "; ".join(in_use_deleted[:3]))
    counts = dict(pods=count, bound=len(bound), refused_with_reason=len(refused), unexplained=count - len(bound) - len(refused),
                  groups_named_twice=len(named_twice), gpus_over_two=len(over_two), reservations_deleted_in_use=len(in_use_deleted),
                  groups=len(by_group))
    return counts, findings


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


def seconds(value, digits=1, missing="-"):
    """A figure for the tables ("-" when it was not measured; the last line passes missing="nan")."""
    return ("%%.%df" % digits) % value if value is not None else missing


def print_stages(title, rows):
    print("%s:" % title)
    print("| stage | pods | p50 s | p90 s | max s | last passed at s |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print("| %s | %d | %s | %s | %s | %s |" % (
            row["stage"], row["count"], seconds(row["p50"], 2), seconds(row["p90"], 2), seconds(row["max"], 2), seconds(row["last_at"])))


def p50(rows, stage):
    found = [r["p50"] for r in rows if r["stage"] == stage and r["p50"] is not None]
    return "%.2f" % found[0] if found else "nan"


def draw(path, rows, sweep, frac=None, scale=None):
    """The SVG: bound pods over time for KAI and kube-scheduler at each size; the p50 of each stage of the
    whole-GPU fills (and the sweep's), and of the fractional fill; with the results of make kai-scale
    (``scale``), a second row: KAI's scale suite, each spec ours beside KAI's example report, and KAI's
    memory over it. False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        return False
    if scale:
        figure = pyplot.figure(figsize=(17, 11))
        grid = figure.add_gridspec(2, 3, width_ratios=[1.2, 1, 1], height_ratios=[5, 6])
        left, middle, right = (figure.add_subplot(grid[0, column]) for column in range(3))
        kai_scale.draw_on(figure.add_subplot(grid[1, :2]), figure.add_subplot(grid[1, 2]), scale)
    else:
        figure, (left, middle, right) = pyplot.subplots(1, 3, figsize=(17, 5), gridspec_kw={"width_ratios": [1.2, 1, 1]})
    colours = pyplot.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, (size, _gpus, _grew, kai, kube) in enumerate(rows):
        colour = colours[index % len(colours)]
        for fill, style, who in ((kai, "-", "KAI"), (kube, "--", "kube-scheduler")):
            curve = fill["curve"]
            left.plot([0.0] + curve, list(range(len(curve) + 1)), style, color=colour, drawstyle="steps-post",
                      label="%s, %d nodes" % (who, size))
    left.set_xlabel("seconds from the first create")
    left.set_ylabel("pods bound")
    left.set_title("Whole-GPU fill: one single-GPU pod per GPU")
    left.legend(fontsize="small")
    whole = [("%d nodes" % size, kai["stages"]) for size, _gpus, _grew, kai, _kube in rows]
    whole += [("sweep: " + short, fill["stages"]) for _label, short, fill, _shared in sweep]
    stacked(middle, whole, KAI_STAGES, colours, "Whole-GPU fill through KAI: p50 per stage")
    if frac is not None:
        groups = len(frac["curve"]) // 2
        stacked(right, [("each shared pod", frac["stages"])], KAI_STAGES, colours,
                "Fractional fill, %d GPU groups: p50 per stage" % groups)
        stacked(right, [("each group's reservation", frac["reservation_stages"])], RESERVATION_STAGES, colours[4:],
                None, row=1)
    figure.tight_layout()
    figure.savefig(path, format="svg")
    pyplot.close(figure)
    return True


def stacked(axes, bars, stages, colours, title, row=0):
    """Horizontal bars of stacked p50s, one per (label, stage rows), from `row` down."""
    bottoms = [0.0] * len(bars)
    for index, (stage, _begin, _end) in enumerate(stages):
        widths = [next((r["p50"] or 0.0 for r in found if r["stage"] == stage), 0.0) for _label, found in bars]
        axes.barh([row + n for n in range(len(bars))], widths, left=bottoms, color=colours[index % len(colours)], label=stage)
        bottoms = [b + w for b, w in zip(bottoms, widths)]
    ticks = list(axes.get_yticks()) if row else []
    labels = [t.get_text() for t in axes.get_yticklabels()] if row else []
    axes.set_yticks(ticks[:row] + [row + n for n in range(len(bars))])
    axes.set_yticklabels(labels[:row] + [label for label, _found in bars], fontsize="small")
    if title:
        axes.set_title(title)
        axes.invert_yaxis()
    axes.set_xlabel("p50 seconds")
    axes.legend(fontsize="small")


def scale_results(path):
    """make kai-scale's results.json, or None where it has not run."""
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64, help="GPU nodes of the largest fill (8 GPUs each)")
    parser.add_argument("--groups", type=int, default=64, help="GPU groups of the fractional fill (two pods each)")
    parser.add_argument("--request-mib", type=int, default=20000, help="each shared pod's gpu-memory, MiB (two fit one 40 GB GPU)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds each fill may take")
    parser.add_argument("--sweep", action="store_true", help="at --nodes nodes, fill through KAI again with the binder's limits and "
                        "the scheduler's cycle of each point of the sweep")
    parser.add_argument("--sweep-groups", type=int, default=32, help="GPU groups of each sweep point's fractional fill")
    parser.add_argument("--no-queues", action="store_true", help="leave out the queues at scale")
    parser.add_argument("--fractions-only", action="store_true", help="bring up --nodes nodes and run only the fractional fill")
    parser.add_argument("--bulk-fractions", action="store_true", help="bring up --nodes nodes and only submit 16 pods of gpu-fraction "
                        "0.5 a node at once (every GPU asked for twice); check no GPU holds more than two, no GPU group is named "
                        "twice, no reservation pod is deleted while in use, every pod binds or is refused with KAI's reason")
    parser.add_argument("--svg", default=os.path.join(ROOT, ".cache", "bench-fleet.svg"), help="where to write the picture")
    parser.add_argument("--scale-results", default=os.path.join(ROOT, "kai-scale-report", "results.json"),
                        help="the results of make kai-scale, drawn in the picture's second row when the file exists")
    parser.add_argument("--keep", action="store_true", help="leave the cluster up (take it down with playbooks/cleanup.yml)")
    args = parser.parse_args()
    if args.nodes < 1 or args.groups < 1:
        sys.exit("--nodes and --groups must be at least 1")
    if args.groups > args.nodes * 8:
        sys.exit("--groups %d needs %d GPUs; --nodes %d gives %d" % (args.groups, args.groups, args.nodes, args.nodes * 8))

    # SIGTERM, or SIGINT where a background job started it ignored, take the cluster down as an error does
    kai_scale.cleanup_on_sigterm()
    if args.bulk_fractions:
        return bulk_main(args)
    sizes = [] if args.fractions_only else sorted(set(n for n in (8, 32) if n < args.nodes) | {args.nodes})
    workdir = tempfile.mkdtemp(prefix="kai-hami-fleet-")
    fleet = Fleet(workdir)
    failed = []
    rows = []
    sweep = []
    peak = {"whole": 0.0}
    try:
        for size in sizes:
            print("growing the sim to %d GPU nodes (%d GPUs) ..." % (size, size * 8), flush=True)
            grew = fleet.up(size)
            gpus = size * 8
            kai = whole_gpu_fill(fleet, kai_parts.SCHEDULER_NAME, gpus, args.timeout, "n%d" % size)
            kube = whole_gpu_fill(fleet, KUBE_SCHEDULER, gpus, args.timeout, "n%d" % size)
            rows.append((size, gpus, grew, kai, kube))
            print("  up/grown in %.1f s; KAI filled %d GPUs in %s s, kube-scheduler in %s s"
                  % (grew, gpus, seconds(kai["seconds"]), seconds(kube["seconds"])), flush=True)
            if kai["seconds"] is None or kube["seconds"] is None:
                failed.append("the whole-GPU fill at %d nodes did not finish in %d s" % (size, args.timeout))
        gpus = args.nodes * 8
        queues = None
        if args.fractions_only:
            print("the sim with %d GPU nodes (%d GPUs) ..." % (args.nodes, gpus), flush=True)
            fleet.up(args.nodes)
        elif not args.no_queues:
            print("queues at scale: %s and %s ask for every GPU ..." % (QUEUE_A, QUEUE_B), flush=True)
            queues = queues_at_scale(fleet, gpus, args.timeout)
        baseline = memory_mib(sim_pids(fleet.simdir))
        print("fractional fill: %d pods of %d MiB on %d GPU groups ..." % (2 * args.groups, args.request_mib, args.groups), flush=True)
        frac, namespace = fractional_fill(fleet, args.groups, args.request_mib, args.timeout)
        problems, per_node = check_fractions(fleet, namespace, args.groups, args.request_mib)
        reservation_dir = os.path.join(fleet.simdir, "kai", "reservations")
        reservation_pids = sim_pids(fleet.simdir, under=reservation_dir)
        reservation_mib = memory_mib(reservation_pids)
        whole_mib = memory_mib(sim_pids(fleet.simdir))
        if frac["seconds"] is None:
            problems.insert(0, "not all %d shared pods bound in %d s" % (2 * args.groups, args.timeout))
        failed += problems
        fleet.clear(namespace, args.timeout)
        if args.sweep:
            for index, (label, short, kai_vars) in enumerate(SWEEP):
                print("sweep: %s ..." % label, flush=True)
                fleet.up(args.nodes, kai_vars)
                fill = whole_gpu_fill(fleet, kai_parts.SCHEDULER_NAME, gpus, args.timeout, "sweep%d" % index)
                shared, space = fractional_fill(fleet, args.sweep_groups, args.request_mib, args.timeout, "fleet-sweep%d-fractions" % index)
                fleet.clear(space, args.timeout)
                sweep.append((label, short, fill, shared))
                print("  KAI filled %d GPUs in %s s; %d shared pods bound in %s s"
                      % (gpus, seconds(fill["seconds"]), 2 * args.sweep_groups, seconds(shared["seconds"])), flush=True)
                if fill["seconds"] is None or shared["seconds"] is None:
                    failed.append("a fill of the sweep (%s) did not finish in %d s" % (label, args.timeout))
        peak["whole"] = whole_mib[0]
    finally:
        take_down(fleet, workdir, args.keep)

    print()
    print("| nodes | GPUs | cluster up/grown s | KAI fill s | KAI pods/s | kube-scheduler fill s | pods/s | KAI / kube-scheduler |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, count, grew, kai, kube in rows:
        kai_s, kube_s = kai["seconds"], kube["seconds"]
        print("| %d | %d | %.1f | %s | %s | %s | %s | %s |" % (
            size, count, grew, seconds(kai_s), seconds(count / kai_s if kai_s else None),
            seconds(kube_s), seconds(count / kube_s if kube_s else None), seconds(kai_s / kube_s if kai_s and kube_s else None, 2)))
    print()
    for size, count, _grew, kai, kube in rows:
        print_stages("KAI, %d nodes (%d pods)" % (size, count), kai["stages"])
        print_stages("kube-scheduler, %d nodes" % size, kube["stages"])
        print()
    if queues:
        print("queues at scale (%d GPUs): quota %s; allocated when full (%s s) and at the end: %s; at quota after %s s"
              % (gpus, queues["quotas"], seconds(queues["full_s"]), queues["reached"],
                 seconds(queues["at_quota_s"]) if queues["at_quota_s"] else "- (not reached)"))
    print("fractional fill: %d pods on %d GPU groups (%d nodes) bound in %s s" % (
        2 * args.groups, args.groups, len(per_node), seconds(frac["seconds"])))
    print_stages("fractional fill, each shared pod", frac["stages"])
    print_stages("fractional fill, each GPU group's reservation", frac["reservation_stages"])
    print("memory, MiB (RSS / PSS): %d reservation processes %.0f / %.0f (%.1f / %.1f per group); the whole sim %.0f / %.0f "
          "(%.0f / %.0f before the fill)" % (
              len(reservation_pids), reservation_mib[0], reservation_mib[1], reservation_mib[0] / args.groups,
              reservation_mib[1] / args.groups, whole_mib[0], whole_mib[1], baseline[0], baseline[1]))
    if sweep:
        print()
        print("sweep at %d nodes: %d whole-GPU pods, then %d shared pods on %d GPU groups, through KAI; p50 s per stage:"
              % (args.nodes, gpus, 2 * args.sweep_groups, args.sweep_groups))
        names = [name for name, _b, _e in KAI_STAGES]
        print("| setting | pods | fill s | pods/s | %s | reservation app: GPU |" % " | ".join(names))
        print("|---|---|---:|---:|%s---:|" % ("---:|" * len(names)))
        for label, _short, fill, shared in sweep:
            for kind, found, count in (("whole", fill, gpus), ("shared", shared, 2 * args.sweep_groups)):
                print("| %s | %s | %s | %s | %s | %s |" % (
                    label, kind, seconds(found["seconds"]), seconds(count / found["seconds"] if found["seconds"] else None),
                    " | ".join(p50(found["stages"], name) for name in names),
                    p50(found.get("reservation_stages", []), "reservation app: GPU") if kind == "shared" else "-"))
    if fleet.watch is not None and fleet.watch.errors:
        print("the stage watch restarted %d times (first: %s)" % (len(fleet.watch.errors), fleet.watch.errors[0]))
    if not rows:
        print("no picture: no whole-GPU fill ran")
    elif draw(args.svg, rows, sweep, frac, scale_results(args.scale_results)):
        print("picture: %s" % args.svg)
    else:
        print("no picture: matplotlib is not installed (pip install -r requirements/bench.txt; make bench-fleet does)")
    for problem in failed:
        print("FAILED: %s" % problem)
    last = rows[-1] if rows else (args.nodes, gpus, None, {"seconds": None, "stages": []}, {"seconds": None, "stages": []})
    kai_s, kube_s = last[3]["seconds"], last[4]["seconds"]
    print("bench-fleet nodes=%d gpus=%d kai_fill_s=%s kube_fill_s=%s ratio=%s frac_pods=%d frac_groups=%d frac_fill_s=%s rss_mib=%d "
          "podgrouper_p50_s=%s scheduler_p50_s=%s binder_p50_s=%s running_p50_s=%s reservation_p50_s=%s" % (
              last[0], last[1], seconds(kai_s, missing="nan"), seconds(kube_s, missing="nan"),
              seconds(kai_s / kube_s if kai_s and kube_s else None, 2, "nan"), 2 * args.groups, args.groups,
              seconds(frac["seconds"], missing="nan"), peak["whole"],
              p50(last[3]["stages"], "pod-grouper"), p50(last[3]["stages"], "scheduler"), p50(last[3]["stages"], "binder"),
              p50(last[3]["stages"], "kwok Running"), p50(frac["reservation_stages"], "reservation app: GPU")))
    return 1 if failed else 0


def take_down(fleet, workdir, keep):
    """Take the cluster down and remove its work dir, or with --keep say how to take it down later."""
    if keep:
        print("left up: ansible-playbook playbooks/cleanup.yml -e cleanup_cluster_name=%s -e sim_cluster_workdir=%s"
              % (fleet.name, fleet.simdir))
    else:
        fleet.down()
        shutil.rmtree(workdir, ignore_errors=True)


def bulk_main(args):
    """--bulk-fractions: the sim with --nodes nodes, every GPU asked for twice as halves at once, the four rules checked."""
    workdir = tempfile.mkdtemp(prefix="kai-hami-fleet-")
    fleet = Fleet(workdir)
    try:
        print("the sim with %d GPU nodes (%d GPUs) ..." % (args.nodes, args.nodes * 8), flush=True)
        fleet.up(args.nodes)
        baseline = memory_mib(sim_pids(fleet.simdir))
        print("%d pods of gpu-fraction 0.5 at once ..." % (args.nodes * 16), flush=True)
        fill_s, counts, findings = bulk_fractions(fleet, args.nodes, args.timeout)
        whole = memory_mib(sim_pids(fleet.simdir))
    finally:
        take_down(fleet, workdir, args.keep)
    print("bound %d of %d in %s s; refused with KAI's reason %d, neither %d; %d GPU groups; memory of the sim %.0f MiB RSS (%.0f before)"
          % (counts["bound"], counts["pods"], seconds(fill_s), counts["refused_with_reason"], counts["unexplained"], counts["groups"],
             whole[0], baseline[0]))
    for finding in findings:
        print("FINDING: %s" % finding)
    print("bench-fleet bulk-fractions nodes=%d pods=%d bound=%d refused_with_reason=%d unexplained=%d gpus_over_two=%d "
          "groups_named_twice=%d reservations_deleted_in_use=%d fill_s=%s" % (
              args.nodes, counts["pods"], counts["bound"], counts["refused_with_reason"], counts["unexplained"],
              counts["gpus_over_two"], counts["groups_named_twice"], counts["reservations_deleted_in_use"], seconds(fill_s, missing="nan")))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
