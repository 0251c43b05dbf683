"""KAI's own scale suite (KAI's test/e2e/scale, unchanged) on a sim cluster, with its figures beside KAI's example report.

Builds the suite as a Ginkgo test binary from KAI's Go module with run.ai's kwok-operator (the version
KAI's go.mod requires; roles/local_build/files/build.sh), brings up the cluster of
tests/kai_scale/cluster.yml (the cluster of KAI's e2e suites with one real GPU node running KAI's
operator, kwok-operator and KAI's managed NodePool, and the gpu-operator stand-in of gpulab.kai_hami
in place of run.ai's fake-gpu-operator), runs the suite with its own parameters (``NODE_COUNT``
nodes of 8 GPUs; the Topology specs make 512 nodes whatever it is), and takes the cluster down.

Writes ``<report dir>/``: ``kwok_scale_test.json`` (the suite's own results file), ``ginkgo.json``
and ``junit.xml`` (Ginkgo's reports), ``suite.log``, ``usage.json`` (each component's peak memory
and CPU time, sampled every 2 s from /proc: kube-apiserver, etcd, kwok, kwok-operator, the stand-in,
each KAI program) and ``report.md``: every spec of the suite with its state, time and figures,
beside KAI's example report (docs/scale-tests/example-report.json in KAI's module). A spec the list
(tests/kai_e2e/kai-<version>.yml, the scale suite's ``skip:``) leaves out is counted as excluded, with
its reason. Prints the table and, last, one machine-readable line:
``kai-scale: passed=<n> failed=<n> excluded=<n> not_run=<n> total=<n> nodes=<n>`` (not_run: specs
--focus did not ask for, or that the run did not reach).

usage: python tools/kai_scale.py [--nodes 500] [--timeout 360] [--report-dir kai-scale-report] [--keep]
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kai_e2e  # noqa: E402  (a tool beside this one: the build, KAI's module, the playbooks)
import kai_e2e_report as report  # noqa: E402

ROOT = report.ROOT
CLUSTER = "kai-scale"
SUITE = "scale"
# KAI's suite: its consolidation spec runs (nodes/10 x 50 GPUs) / 60 distributed jobs of 10 pods; with fewer
# than 20 nodes there are none, and the spec panics on an empty list (so do the distributed-jobs specs below 10).
# Kubernetes supports clusters of at most 5,000 nodes.
MIN_NODES, MAX_NODES = 20, 5000
RESULTS = "kwok_scale_test.json"
SERIES_EVERY = 10.0  # seconds between two points of the memory series in usage.json
# what a process is, from its command line: (component, pattern); the first match names it
COMPONENTS = (
    ("gpu-operator stand-in", re.compile(r"sim_agent\.py gpu-operator-stand-in\b")),
    ("kwok-operator", re.compile(r"(^|/)kwok-operator\b")),
    ("kube-apiserver", re.compile(r"(^|/)kube-apiserver\b")),
    ("kube-controller-manager", re.compile(r"(^|/)kube-controller-manager\b")),
    ("kube-scheduler", re.compile(r"(^|/)kube-scheduler\b")),
    ("etcd", re.compile(r"(^|/)etcd\b")),
    ("kwok", re.compile(r"(^|/)kwok\b")),
    ("kubelet", re.compile(r"(^|/)kubelet\b")),
    ("containerd", re.compile(r"(^|/)containerd\b")),
    ("the scale suite", re.compile(r"(^|/)scale\.test\b")),
)
# KAI's programs run in containers on the real node, each as /workspace/app: named by their pod's Deployment
KAI_APP = "/workspace/app"
POD_UID = re.compile(r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default=os.environ.get("NODE_COUNT") or "500",
                        help="the suite's NODE_COUNT: nodes of 8 GPUs in its big cluster (default 500, as KAI's)")
    parser.add_argument("--timeout", default="360", help="minutes for the whole suite (Ginkgo's --ginkgo.timeout)")
    parser.add_argument("--focus", default="", help="run only the specs whose full text matches this regular expression")
    parser.add_argument("--report-dir", default=os.path.join(ROOT, "kai-scale-report"))
    parser.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    args = parser.parse_args(argv)
    problems = []
    if not re.fullmatch(r"[0-9]+", str(args.nodes)) or not MIN_NODES <= int(args.nodes) <= MAX_NODES:
        problems.append("--nodes (NODE_COUNT) must be a whole number from %d to %d, not %r: the suite's consolidation spec"
                        " runs (nodes/10 x 50) / 60 distributed jobs (none below %d nodes, and it panics), and Kubernetes"
                        " supports at most %d nodes in a cluster" % (MIN_NODES, MAX_NODES, args.nodes, MIN_NODES, MAX_NODES))
    if not re.fullmatch(r"[0-9]+", str(args.timeout)) or int(args.timeout) < 1:
        problems.append("--timeout must be a whole number of minutes, at least 1, not %r" % args.timeout)
    if args.focus:
        try:
            re.compile(args.focus)
        except re.error as error:
            problems.append("--focus must be a regular expression (%s): %r" % (error, args.focus))
    if problems:
        parser.error("; ".join(problems) + ". Nothing was built or created.")
    args.nodes, args.timeout = int(args.nodes), int(args.timeout)
    return args


class UsageSampler(threading.Thread):
    """Each component's peak resident memory and CPU time, from /proc every 2 s; and the times the results file grew."""

    def __init__(self, results_file):
        super().__init__(daemon=True)
        self.results_file = results_file
        self.kubeconfig = None  # set once the cluster is up: KAI's containers are named by their pods
        self.pod_names = {}
        self.pods_listed = 0.0
        self.peak_mib = {}
        self.cpu_s = {}
        self.last_cpu = {}
        self.results_seen = []  # (time, number of entries) each time the suite's results file gained entries
        self.series = {}  # component: [[epoch seconds, MiB], ...], one point every SERIES_EVERY seconds
        self.series_at = 0.0
        self.stopped = threading.Event()
        self.tick = os.sysconf("SC_CLK_TCK")

    def component(self, pid, cmdline):
        for name, pattern in COMPONENTS:
            if pattern.search(cmdline):
                return name
        if cmdline.split(" ", 1)[0] != KAI_APP:
            return None
        try:
            with open("/proc/%s/cgroup" % pid) as handle:
                found = POD_UID.search(handle.read())
        except OSError:
            return None
        if not found:
            return None
        uid = found.group(1).replace("_", "-")
        if uid not in self.pod_names and self.kubeconfig and time.monotonic() - self.pods_listed > 5:
            self.list_pods()
        # a Deployment's pod is <deployment>-<replica set hash>-<suffix>
        return "KAI " + re.sub(r"-[a-z0-9]{6,10}-[a-z0-9]{5}$", "", self.pod_names.get(uid, "container " + uid[:8]))

    def list_pods(self):
        self.pods_listed = time.monotonic()
        try:
            from kubernetes import client, config

            api = client.CoreV1Api(config.new_client_from_config(config_file=self.kubeconfig))
            listing = json.loads(api.list_pod_for_all_namespaces(_preload_content=False, _request_timeout=10).data)
            self.pod_names.update((p["metadata"]["uid"], p["metadata"]["name"]) for p in listing["items"])
        except Exception:  # pylint: disable=broad-exception-caught
            pass  # the next sample asks again

    def sample(self):
        totals = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as handle:
                    cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
                name = self.component(pid, cmdline)
                if not name:
                    continue
                with open("/proc/%s/stat" % pid) as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                with open("/proc/%s/status" % pid) as handle:
                    rss_kib = next((int(line.split()[1]) for line in handle if line.startswith("VmRSS:")), 0)
            except (OSError, StopIteration, IndexError, ValueError):
                continue
            cpu = (int(fields[11]) + int(fields[12])) / float(self.tick)
            self.last_cpu[pid] = (name, cpu)
            totals[name] = totals.get(name, 0) + rss_kib
        for name, rss_kib in totals.items():
            self.peak_mib[name] = max(self.peak_mib.get(name, 0), rss_kib // 1024)
        now = time.time()
        if now - self.series_at >= SERIES_EVERY:
            self.series_at = now
            for name, rss_kib in totals.items():
                self.series.setdefault(name, []).append([round(now, 1), rss_kib // 1024])

    def cpu_by_component(self):
        out = {}
        for name, cpu in self.last_cpu.values():
            out[name] = out.get(name, 0.0) + cpu
        return out

    def watch_results(self):
        try:
            with open(self.results_file) as handle:
                entries = len(json.load(handle).get("tests") or [])
        except (OSError, ValueError):
            return
        if not self.results_seen or self.results_seen[-1][1] != entries:
            self.results_seen.append((time.time(), entries))

    def run(self):
        while not self.stopped.wait(2.0):
            self.sample()
            self.watch_results()


def parse_time(text):
    """Ginkgo's RFC 3339 times (nanoseconds and all) as epoch seconds."""
    found = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", text or "")
    if not found:
        return None
    import calendar
    seconds = calendar.timegm(time.strptime(found.group(1), "%Y-%m-%dT%H:%M:%S"))
    if found.group(3) != "Z":
        sign = 1 if found.group(3)[0] == "+" else -1
        seconds -= sign * (int(found.group(3)[1:3]) * 3600 + int(found.group(3)[4:6]) * 60)
    return seconds + float(found.group(2) or 0)


def suite_timed_out(ginkgo_json):
    """Whether the suite's own --ginkgo.timeout ended the run (Ginkgo's special suite failure reasons say so)."""
    try:
        with open(ginkgo_json) as handle:
            suites = json.load(handle)
    except (OSError, ValueError):
        return False
    return any(re.search(r"timeout", reason, re.I) for suite in suites for reason in suite.get("SpecialSuiteFailureReasons") or [])


def spec_name(spec):
    return " ".join(list(spec.get("ContainerHierarchyTexts") or []) + [spec.get("LeafNodeText") or ""]).strip()


def specs_of(ginkgo_json):
    """The It specs of a Ginkgo JSON report: {full text: spec report}."""
    with open(ginkgo_json) as handle:
        suites = json.load(handle)
    return dict((spec_name(spec), spec) for suite in suites for spec in suite.get("SpecReports") or []
                if spec.get("LeafNodeType") == "It")


def kai_metrics(spec):
    """The figures KAI's example report gives a spec (its Test Metrics entry)."""
    for entry in spec.get("ReportEntries") or []:
        if entry.get("Name") == "Test Metrics":
            try:
                return json.loads((entry.get("Value") or {}).get("AsJSON") or "{}")
            except ValueError:
                return {}
    return {}


def our_metrics(specs, results, results_seen):
    """Attribute each entry of the suite's results file to the spec that ran when it appeared: {spec: [details]}."""
    found = {}
    for index, entry in enumerate(results):
        seen_at = next((at for at, count in results_seen if count > index), None)
        owner = None
        if seen_at is not None:
            for name, spec in specs.items():
                start, end = parse_time(spec.get("StartTime")), parse_time(spec.get("EndTime"))
                if start is not None and end is not None and start - 1 <= seen_at <= end + 3:
                    owner = name
        details = dict(entry.get("details") or {}, test_name=entry.get("test_name"))
        found.setdefault(owner or "(no spec: %s)" % entry.get("test_name"), []).append(details)
    return found


def figures(details):
    return ", ".join("%s %s" % (key, value) for key, value in sorted(details.items()) if key != "test_name")


def paired(ours, theirs):
    """KAI's example report keyed by our spec names: by full text, else by the spec's own text when that names one
    spec unmatched on each side (the example report comes from another version of the suite, its containers moved)."""
    pairs = dict((name, theirs[name]) for name in ours if name in theirs)
    left_ours = [name for name in ours if name not in theirs]
    left_theirs = [name for name in theirs if name not in ours]
    for name in left_ours:
        leaf = ours[name].get("LeafNodeText")
        mine = [n for n in left_ours if ours[n].get("LeafNodeText") == leaf]
        candidates = [n for n in left_theirs if theirs[n].get("LeafNodeText") == leaf]
        if len(mine) == 1 and len(candidates) == 1:
            pairs[name] = theirs[candidates[0]]
    unpaired = dict((n, theirs[n]) for n in theirs if all(theirs[n] is not found for found in pairs.values()))
    return pairs, unpaired


def is_scheduler_or_binder(component):
    """KAI's scheduler (one Deployment a shard) and binder, by the names the sampler gives KAI's containers."""
    return component.startswith("KAI ") and ("scheduler" in component or "binder" in component)


def peaks_between(series, start, end):
    """Each KAI program's peak resident memory (MiB) between two times, from the sampler's series: {component: MiB}."""
    if start is None or end is None:
        return {}
    peaks = {}
    for name, points in series.items():
        inside = [mib for at, mib in points if start <= at <= end + SERIES_EVERY]
        if name.startswith("KAI ") and inside:
            peaks[name] = max(inside)
    return peaks


def write_report(report_dir, meta, ours, theirs, metrics, excluded, usage):
    """report.md and results.json: each spec of the suite, ours beside KAI's example report."""
    theirs, only_theirs = paired(ours, theirs) if ours else (theirs, {})
    rows, counts = [], {"passed": 0, "failed": 0, "excluded": 0, "not_run": 0}
    for name in sorted(set(ours) | set(theirs), key=lambda n: (parse_time((ours.get(n) or theirs.get(n) or {}).get("StartTime")) or 0, n)):
        spec = ours.get(name) or ({} if ours else {"State": "failed", "Failure": {"Message": "the suite wrote no report (suite.log)"}})
        state = spec.get("State", "not run")
        reason = next((why for pattern, why in excluded if re.search(pattern, name)), None)
        if reason and state in ("skipped", "not run"):
            state = "excluded"
        elif meta.get("focus") and state in ("skipped", "not run") and not re.search(meta["focus"], name):
            reason, state = "not asked for (--focus %s)" % meta["focus"], "not run"
        elif meta.get("timed_out") and state in ("interrupted", "timedout", "skipped"):
            # the suite's own --timeout ended the run: this spec was running then, or never started
            reason = "not finished: the suite's --timeout of %d minutes ended the run%s" % (
                meta.get("timeout_min", 0), " during it" if state != "skipped" else " before it")
            state = "not run"
        elif state in ("skipped", "not run") and not (spec.get("Failure") or {}).get("Message"):
            # not asked for (--focus) or not reached (the run ended first)
            state = "not run"
        counts["passed" if state == "passed" else "excluded" if state == "excluded" else "not_run" if state == "not run" else "failed"] += 1
        theirs_spec = theirs.get(name) or {}
        rows.append({
            "spec": name, "state": state, "seconds": round((spec.get("RunTime") or 0) / 1e9, 1),
            "start": parse_time(spec.get("StartTime")), "end": parse_time(spec.get("EndTime")),
            "kai_peak_mib": peaks_between(usage.get("series") or {}, parse_time(spec.get("StartTime")),
                                          parse_time(spec.get("EndTime"))),
            "figures": metrics.get(name) or [], "reason": reason or ((spec.get("Failure") or {}).get("Message") or "")[:300],
            "kai_state": theirs_spec.get("State", "-"), "kai_seconds": round((theirs_spec.get("RunTime") or 0) / 1e9, 1),
            "kai_figures": kai_metrics(theirs_spec),
        })
    counts["total"] = len(rows)
    for name, theirs_spec in sorted(only_theirs.items()):
        rows.append({"spec": name, "state": "-", "seconds": 0, "figures": [], "reason": "not a spec of this version of the suite",
                     "kai_state": theirs_spec.get("State", "-"), "kai_seconds": round((theirs_spec.get("RunTime") or 0) / 1e9, 1),
                     "kai_figures": kai_metrics(theirs_spec)})
    with open(os.path.join(report_dir, "results.json"), "w") as handle:
        json.dump(dict(meta, counts=counts, specs=rows, usage=usage), handle, indent=1)
    lines = ["# KAI %s's scale suite on the sim, %d nodes" % (meta["kai_version"], meta["nodes"]), "",
             "%s. Run %s; KAI's example report: %s." % (meta["cluster"], meta["date"], meta["example"]), "",
             "| spec | ours | seconds | figures | KAI's scheduler, binder: peak MiB | KAI's example | seconds | figures |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["spec"], row["state"] + (" (%s)" % row["reason"].replace("|", "/").replace("\n", " ") if row["reason"] else ""),
            row["seconds"], "; ".join(figures(d) for d in row["figures"]) or "-",
            ", ".join("%d" % mib for name, mib in sorted(row.get("kai_peak_mib", {}).items()) if is_scheduler_or_binder(name)) or "-",
            row["kai_state"], row["kai_seconds"], figures(row["kai_figures"]) or "-"))
    lines += ["", "Peak resident memory and CPU time per component (sampled every 2 s):", "",
              "| component | peak MiB | CPU s |", "|---|---|---|"]
    for name in sorted(usage["peak_mib"], key=lambda n: -usage["peak_mib"][n]):
        lines.append("| %s | %d | %.0f |" % (name, usage["peak_mib"][name], usage["cpu_s"].get(name, 0)))
    with open(os.path.join(report_dir, "report.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return counts, rows


def short_spec(name, width=48):
    """A spec's full text cut to fit a chart's label: its leaf text, with its container when there is room."""
    return name if len(name) <= width else "..." + name[-(width - 3):]


def draw_on(times_axes, memory_axes, results):
    """The scale suite's figures on two matplotlib axes: each spec's seconds, ours beside KAI's example report;
    KAI's scheduler's and binder's (and the API server's) resident memory over the run, the specs shaded."""
    rows = [row for row in results.get("specs") or [] if row.get("state") not in ("-", None)]
    labels = [short_spec(row["spec"]) for row in rows]
    places = list(range(len(rows)))
    times_axes.barh([p - 0.2 for p in places], [row["seconds"] for row in rows], height=0.4,
                    label="ours, %d nodes" % results.get("nodes", 0))
    times_axes.barh([p + 0.2 for p in places], [row["kai_seconds"] for row in rows], height=0.4,
                    label="KAI's example report")
    for place, row in zip(places, rows):
        if row["state"] != "passed":
            times_axes.text(max(row["seconds"], 1), place - 0.2, " " + row["state"], va="center", fontsize="x-small")
    times_axes.set_yticks(places)
    times_axes.set_yticklabels(labels, fontsize="x-small")
    times_axes.invert_yaxis()
    times_axes.set_xscale("symlog", linthresh=10)
    times_axes.set_xlabel("seconds per spec")
    times_axes.set_title("KAI %s's scale suite: ours beside KAI's example report" % results.get("kai_version", ""))
    times_axes.legend(fontsize="small")
    series = (results.get("usage") or {}).get("series") or {}
    shown = sorted(name for name in series if is_scheduler_or_binder(name) or name == "kube-apiserver")
    begin = min([points[0][0] for points in series.values() if points] or [0])
    for name in shown:
        memory_axes.plot([(at - begin) / 60.0 for at, _mib in series[name]], [mib for _at, mib in series[name]], label=name)
    ran = [row for row in rows if row.get("start") and row.get("end") and begin <= row["start"] < row["end"]]
    for index, row in enumerate(ran):  # a spec that never started has Go's zero time
        if index % 2 == 0:
            memory_axes.axvspan((row["start"] - begin) / 60.0, (row["end"] - begin) / 60.0, color="0.92")
    memory_axes.set_xlabel("minutes from the cluster's start (shaded: every other spec)")
    memory_axes.set_ylabel("resident MiB")
    memory_axes.set_title("Resident memory over the suite, %d nodes" % results.get("nodes", 0))
    if shown:
        memory_axes.legend(fontsize="small")


def draw(path, results):
    """The scale suite's SVG (draw_on's two panels). False without matplotlib (requirements/bench.txt)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        return False
    figure, (times_axes, memory_axes) = pyplot.subplots(1, 2, figsize=(17, 6), gridspec_kw={"width_ratios": [1.3, 1]})
    draw_on(times_axes, memory_axes, results)
    figure.tight_layout()
    figure.savefig(path, format="svg")
    pyplot.close(figure)
    return True


def cleanup_on_sigterm():
    """SIGTERM (and SIGINT, which a background job inherits as ignored) end the run as an error does: the running
    child is killed and the cluster taken down (main's finally), rather than left up."""
    def stop(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cleanup_on_sigterm()
    version = kai_e2e.kai_version()
    spec = report.load(report.list_path(version))
    entry = next((e for e in (spec.get("excluded_suites") or []) + spec["suites"] if e["suite"] == SUITE), {})
    excluded = [(item["match"], "%s: %s" % (item["class"], item["reason"])) for item in entry.get("skip") or []]
    module = kai_e2e.module_dir(version)
    example = os.path.join(module, "docs", "scale-tests", "example-report.json")
    nodepool = os.path.join(module, "test", "e2e", "scale", "base_kwok_managed_nodepool.yaml")

    bin_dir, build_s, not_built = kai_e2e.build([SUITE])
    if not_built or not os.path.exists(os.path.join(bin_dir, "kwok-operator")):
        sys.exit("KAI's scale suite or kwok-operator did not build: %s" % ("; ".join(not_built.values()) or "no kwok-operator"))
    shutil.rmtree(args.report_dir, ignore_errors=True)
    os.makedirs(args.report_dir)
    work = tempfile.mkdtemp(prefix="kai-scale-")
    sampler = UsageSampler(os.path.join(args.report_dir, RESULTS))
    sampler.start()
    cluster_s = run_s = 0.0
    extra = dict(kai_e2e_workdir=os.path.join(work, "sim"), kai_scale_nodepool_file=nodepool)
    try:
        code, cluster_s = kai_e2e.playbook(os.path.join(ROOT, "tests", "kai_scale", "cluster.yml"), extra)
        if code != 0:
            sys.exit("the sim cluster for KAI's scale suite did not come up")
        sampler.kubeconfig = os.path.join(work, "sim", "kubeconfig")
        print("cluster %s up in %.0f s (KAI %s by its chart on a real node, kwok-operator, the gpu-operator stand-in)"
              % (CLUSTER, cluster_s, version))
        argv = [os.path.join(bin_dir, kai_e2e.binary_name(SUITE)), "--ginkgo.no-color", "--ginkgo.v",
                "--ginkgo.timeout=%dm" % args.timeout, "--ginkgo.seed=%d" % spec["seed"], "-test.timeout=0",
                "--ginkgo.json-report=" + os.path.join(args.report_dir, "ginkgo.json"),
                "--ginkgo.junit-report=" + os.path.join(args.report_dir, "junit.xml")]
        if excluded:
            argv.append("--ginkgo.skip=" + "|".join("(%s)" % pattern for pattern, _reason in excluded))
        if args.focus:
            argv.append("--ginkgo.focus=" + args.focus)
        env = dict(os.environ, KUBECONFIG=os.path.join(work, "sim", "kubeconfig"), NODE_COUNT=str(args.nodes))
        started = time.monotonic()
        with open(os.path.join(args.report_dir, "suite.log"), "w") as log:
            subprocess.run(argv, cwd=args.report_dir, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
        run_s = time.monotonic() - started
    finally:
        sampler.stopped.set()
        sampler.join(timeout=5)
        if not args.keep:
            kai_e2e.playbook(os.path.join(ROOT, "playbooks", "cleanup.yml"),
                             dict(cleanup_cluster_name=CLUSTER, cleanup_workdir=os.path.join(work, "sim")))
            shutil.rmtree(work, ignore_errors=True)
    ours = specs_of(os.path.join(args.report_dir, "ginkgo.json")) if os.path.exists(os.path.join(args.report_dir, "ginkgo.json")) else {}
    theirs = specs_of(example) if os.path.exists(example) else {}
    try:
        with open(os.path.join(args.report_dir, RESULTS)) as handle:
            results = json.load(handle).get("tests") or []
    except (OSError, ValueError):
        results = []
    usage = {"peak_mib": sampler.peak_mib, "cpu_s": sampler.cpu_by_component(), "series": sampler.series}
    with open(os.path.join(args.report_dir, "usage.json"), "w") as handle:
        json.dump(usage, handle, indent=1)
    meta = dict(kai_version=version, nodes=args.nodes, date=time.strftime("%Y-%m-%d"), seed=spec["seed"],
                timeout_min=args.timeout, focus=args.focus, timed_out=suite_timed_out(os.path.join(args.report_dir, "ginkgo.json")),
                build_s=build_s, cluster_s=cluster_s, run_s=run_s,
                example=os.path.relpath(example, module) + " of KAI " + version,
                cluster="KAI %s by its chart and operator on a real node; kwok plays %d nodes of 8 GPUs (kwok-operator's"
                        " NodePools); the gpu-operator stand-in of gpulab.kai_hami gives them their GPUs, not run.ai's"
                        " fake-gpu-operator" % (version, args.nodes))
    counts, rows = write_report(args.report_dir, meta, ours, theirs, our_metrics(ours, results, sampler.results_seen), excluded, usage)
    for row in rows:
        shown = ("  [%s]" % "; ".join(figures(d) for d in row["figures"])) if row["figures"] else ""
        print("%-9s %7.0f s  %s%s" % (row["state"], row["seconds"], row["spec"], shown))
    with open(os.path.join(args.report_dir, "results.json")) as handle:
        if draw(os.path.join(args.report_dir, "kai-scale.svg"), json.load(handle)):
            print("picture: %s" % os.path.join(args.report_dir, "kai-scale.svg"))
    print("report: %s (build %.0f s, cluster %.0f s, suite %.0f s; peak MiB: %s)" % (
        os.path.join(args.report_dir, "report.md"), build_s, cluster_s, run_s,
        ", ".join("%s %d" % item for item in sorted(usage["peak_mib"].items(), key=lambda item: -item[1])[:6])))
    print("kai-scale: passed=%d failed=%d excluded=%d not_run=%d total=%d nodes=%d" % (
        counts["passed"], counts["failed"], counts["excluded"], counts["not_run"], counts["total"], args.nodes))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
