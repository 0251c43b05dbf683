"""KAI's own end-to-end suites against a sim cluster, with a report that counts every spec.

Builds the sim (roles/local_build/files/build.sh), reads the KAI version of the table (versions.env) and its list,
tests/kai_e2e/kai-<version>.yml, checks that the list names every Ginkgo suite of KAI's module,
builds the suites as Ginkgo test binaries from KAI's Go module (build.sh, KAI_E2E_SUITES: ``go test
-c``, the same module resolution as the sim's programs), lists every spec of each with
``--ginkgo.dry-run``, brings up a sim cluster with KAI and the NVML stand-in library and nothing of Lab 11
(tests/kai_e2e/cluster.yml), runs the suites the list runs with its label filter, skips and pinned
Ginkgo seed, and takes the cluster down again.

Writes ``<report dir>/``: ``junit/<suite>.xml`` (Ginkgo's), ``inventory/<suite>.xml`` (the dry runs),
``logs/<suite>.log``, ``results.json`` and ``report.md``: every spec of the suites counted, in one
class of passed / failed / skipped / excluded / not_run (tools/kai_e2e_report.py says what each
means), each failure and exclusion with its class (sim_limit, kai_<version> or ours) and reason.
Prints each suite's counts, the times and the peak memory, and last one machine-readable line:
``kai-e2e: passed=<n> failed=<n> skipped=<n> excluded=<n> not_run=<n> ours=<n> total=<n>``.
A full run counts every spec of KAI's e2e module; --gate and --suite count the suites they run.
Exits 1 when a failure counts as ours or a suite the list runs was not built; with --gate, also
when any spec fails or a gate suite's passed and skipped counts differ from the list's ``gate:``.

``--reclassify`` builds and runs nothing: it classifies the JUnit reports of an earlier run in the
report dir again with the list as it is now (after an entry was added), and rewrites the report.

usage: python tools/kai_e2e.py [--gate] [--suite allocate/quota ...] [--nodes 4] [--report-dir kai-e2e-report] [--keep] [--reclassify]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kai_e2e_report as report  # noqa: E402  (a tool beside this one)

ROOT = report.ROOT
sys.path.insert(0, os.path.join(ROOT, "plugins", "plugin_utils"))
import versions  # noqa: E402  (the collection's table of versions, plugins/plugin_utils/versions.py)

BIN = os.path.dirname(sys.executable)
BUILD = os.path.join(ROOT, "roles", "local_build", "files", "build.sh")
CLUSTER = "kai-e2e"
RESERVATIONS = "kai-resource-reservation"
REAL_NODE = "a real node: kubelet, containerd, NVIDIA's device plugin on the nvml-mock stand-in"


def binary_name(suite):
    return "kai-e2e/%s.test" % suite.replace("/", "-")


def build(suites):
    """Build the sim and the suites' test binaries: (bin dir, seconds, {suite: why it did not build})."""
    env = dict(os.environ, KAI_E2E_SUITES=" ".join(suites))
    started = time.monotonic()
    done = subprocess.run([BUILD], env=env, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    sys.stdout.write("".join(line + "\n" for line in done.stdout.splitlines()[:-1] if "kai-e2e/" in line))
    failed = re.search(r"FAILED: (.*) \(logs in (.*)\)", done.stderr)
    names = failed.group(1).split() if failed else []
    if done.returncode != 0 and (not names or any(not name.startswith("kai-e2e/") for name in names)):
        sys.exit("building the sim failed:\n%s%s" % (done.stdout[-3000:], done.stderr[-3000:]))
    not_built = dict((suite, "its test binary did not build (%s/%s.log)" % (failed.group(2), binary_name(suite)))
                     for suite in suites if binary_name(suite) in names)
    return done.stdout.splitlines()[-1], seconds, not_built


def kai_version():
    """The KAI version the sim builds (versions.env's KAI_BUILD_VERSION)."""
    return versions.read()["KAI_BUILD_VERSION"]


def module_dir(version):
    """KAI's module source in Go's module cache, under the module path versions.env gives it (KAI_BUILD_MODULE)."""
    path = versions.read()["KAI_BUILD_MODULE"]
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    escaped = re.sub(r"[A-Z]", lambda upper: "!" + upper.group(0).lower(), path)
    return os.path.join(cache, "%s@%s" % (escaped, version))


def playbook(path, extra):
    argv = [os.path.join(BIN, "ansible-playbook"), path, "-e", json.dumps(extra)]
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), ANSIBLE_NOCOLOR="1")
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-2000:])
    return done.returncode, time.monotonic() - started


class MemorySampler(threading.Thread):
    """The machine's peak memory in use (MemTotal - MemAvailable), sampled every second."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak_mib = 0
        self.baseline_mib = self.used_mib()
        self.stopped = threading.Event()

    @staticmethod
    def used_mib():
        info = {}
        with open("/proc/meminfo") as handle:
            for line in handle:
                key, value = line.split(":", 1)
                info[key] = int(value.split()[0])
        return (info["MemTotal"] - info["MemAvailable"]) // 1024

    def run(self):
        while not self.stopped.wait(1.0):
            self.peak_mib = max(self.peak_mib, self.used_mib())


def ginkgo_argv(binary, suite, spec, junit, timeout_minutes):
    argv = [binary, "--ginkgo.junit-report=" + junit, "--ginkgo.no-color", "--ginkgo.timeout=%dm" % timeout_minutes,
            "--ginkgo.seed=%d" % spec["seed"], "-test.timeout=0"]
    if spec.get("label_filter"):
        argv.append("--ginkgo.label-filter=" + spec["label_filter"])
    skips = [entry["match"] for entry in suite.get("skip") or []]
    if skips:
        argv.append("--ginkgo.skip=" + "|".join("(%s)" % match for match in skips))
    return argv


def list_specs(binary, junit, cwd):
    """Every spec of a suite's test binary, from a Ginkgo dry run (no cluster needed); None if it cannot list them."""
    if not os.path.exists(binary):
        return None
    subprocess.run([binary, "--ginkgo.dry-run", "--ginkgo.junit-report=" + junit, "--ginkgo.no-color", "-test.timeout=0"],
                   cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=300)
    return report.inventory(junit) if os.path.exists(junit) else None


def reclassify(report_dir):
    """Classify an earlier run's JUnit reports again with the list as it is now; rewrite its report."""
    with open(os.path.join(report_dir, "results.json")) as handle:
        earlier = json.load(handle)
    spec = report.load(report.list_path(earlier["kai_version"]))
    meta = dict((key, earlier[key]) for key in ("kai_version", "cluster", "seed", "date", "build_s", "cluster_s", "run_s",
                                                "peak_mib", "baseline_mib", "scope"))
    suites = set(earlier["suites_counted"])
    records, setup = [], []
    for entry in spec["suites"] + spec.get("excluded_suites", []):
        if entry["suite"] not in suites:
            continue
        name = entry["suite"].replace("/", "-")
        listed = os.path.join(report_dir, "inventory", name + ".xml")
        specs = report.inventory(listed) if os.path.exists(listed) else None
        if "class" in entry:
            records += report.excluded_suite(entry, specs)
        else:
            found, failed_setup = report.outcomes(os.path.join(report_dir, "junit", name + ".xml"), entry, spec, specs)
            records += found
            setup += failed_setup
    counts = report.write_report(report_dir, records, setup, dict(meta, suites_counted=sorted(suites)))
    print(report.summary_line(counts))
    return 1 if counts["ours"] else 0


SANDBOX = re.compile(r'RunPodSandbox for name:\\"([^\\"]+)\\" uid:\\"([^\\"]+)\\" namespace:\\"([^\\"]+)\\" returns sandbox id')


def real_node_pods(workdir):
    """``{namespace: pods}`` the real node ran during the run, from containerd's log (one sandbox a pod)."""
    pods = {}
    try:
        with open(os.path.join(workdir, "node", "logs", "containerd.log"), errors="replace") as handle:
            for line in handle:
                found = SANDBOX.search(line)
                if found:
                    pods.setdefault(found.group(3), set()).add(found.group(2))
    except OSError:
        pass
    return {namespace: len(uids) for namespace, uids in pods.items()}


def scale_results(path, version):
    """make kai-scale's results.json for this KAI version, or None."""
    try:
        with open(path) as handle:
            found = json.load(handle)
    except (OSError, ValueError):
        return None
    return found if found.get("kai_version") == version and found.get("specs") else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gate", action="store_true", help="only the suites with gate: counts (make test runs these); any "
                        "failure, or passed/skipped counts other than the list's, fails")
    parser.add_argument("--suite", action="append", default=[], help="run this suite of the list (repeatable)")
    parser.add_argument("--nodes", type=int, default=4, help="sim nodes of 8 GPUs")
    parser.add_argument("--node-runtime", default="kubelet", choices=["kubelet", "kwok"],
                        help="the first GPU node: a real node (kubelet, containerd; as root), or one kwok plays like the others")
    parser.add_argument("--timeout", type=int, default=20, help="minutes per suite (Ginkgo's --ginkgo.timeout)")
    parser.add_argument("--report-dir", default=os.path.join(ROOT, "kai-e2e-report"))
    parser.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    parser.add_argument("--reclassify", action="store_true", help="classify the report dir's JUnit reports again; run nothing")
    parser.add_argument("--build-only", action="store_true", help="build the sim and the suites' test binaries; run nothing")
    parser.add_argument("--scale-results", default=os.path.join(ROOT, "kai-scale-report", "results.json"),
                        help="make kai-scale's results: a full run counts the scale suite's specs as that run classed them")
    args = parser.parse_args()
    if args.reclassify:
        return reclassify(args.report_dir)

    bin_dir, build_s = build([])[:2]
    version = kai_version()
    try:
        spec = report.load(report.list_path(version))
        report.check_covers(spec, module_dir(version))
    except ValueError as problem:
        sys.exit(str(problem))
    unknown = set(args.suite) - set(suite["suite"] for suite in spec["suites"])
    if unknown:
        sys.exit("not among the suites %s runs: %s" % (report.list_path(version), ", ".join(sorted(unknown))))
    suites = [suite for suite in spec["suites"] if (not args.gate or suite.get("gate")) and (not args.suite or suite["suite"] in args.suite)]
    # A full run counts every spec of KAI's e2e module: the suites the list excludes are built to list theirs.
    excluded = [] if args.gate or args.suite else list(spec.get("excluded_suites") or [])
    scope = "the gate's suites" if args.gate else "the suites asked for" if args.suite else "every suite of KAI's e2e module"
    if args.build_only:
        bin_dir, more_s, not_built = build([entry["suite"] for entry in suites + excluded])
        print("KAI %s: %d suites' test binaries in %s/kai-e2e, built in %.0f s%s" % (
            version, len(suites + excluded) - len(not_built), bin_dir, build_s + more_s,
            "".join("; %s: %s" % item for item in sorted(not_built.items()))))
        return 1 if not_built else 0
    print("KAI %s; list %s; Ginkgo seed %d; counting %s" % (version, os.path.relpath(report.list_path(version), ROOT), spec["seed"], scope))
    shutil.rmtree(args.report_dir, ignore_errors=True)
    for sub in ("junit", "logs", "inventory"):
        os.makedirs(os.path.join(args.report_dir, sub))

    bin_dir, more_s, not_built = build([entry["suite"] for entry in suites + excluded])
    build_s += more_s
    work = tempfile.mkdtemp(prefix="kai-e2e-")
    specs = {}
    for entry in suites + excluded:
        name = entry["suite"].replace("/", "-")
        specs[entry["suite"]] = list_specs(os.path.join(bin_dir, binary_name(entry["suite"])),
                                           os.path.join(args.report_dir, "inventory", name + ".xml"), work)
    memory = MemorySampler()
    memory.start()
    extra = dict(kai_e2e_cluster=CLUSTER, kai_e2e_workdir=os.path.join(work, "sim"), kai_e2e_nodes=args.nodes,
                 kai_e2e_node_runtime=args.node_runtime)
    cleanup = dict(cleanup_cluster_name=CLUSTER, sim_cluster_workdir=os.path.join(work, "sim"))
    records, setup, run_s, cluster_s = [], [], 0.0, 0.0
    try:
        code, cluster_s = playbook(os.path.join(ROOT, "tests", "kai_e2e", "cluster.yml"), extra)
        if code != 0:
            sys.exit("the sim cluster for KAI's e2e suites did not come up")
        print("cluster %s up in %.0f s (%d nodes x 8 GPUs, the first %s, KAI %s, NVML stand-in)"
              % (CLUSTER, cluster_s, args.nodes, REAL_NODE if args.node_runtime == "kubelet" else "played by kwok", version))
        env = dict(os.environ, KUBECONFIG=os.path.join(work, "sim", "kubeconfig"))
        for suite in suites:
            name = suite["suite"].replace("/", "-")
            junit = os.path.join(args.report_dir, "junit", name + ".xml")
            binary = os.path.join(bin_dir, binary_name(suite["suite"]))
            started = time.monotonic()
            if suite["suite"] in not_built:
                found, failed_setup = report.not_run(suite, not_built[suite["suite"]]), []
            else:
                with open(os.path.join(args.report_dir, "logs", name + ".log"), "w") as log:
                    subprocess.run(ginkgo_argv(binary, suite, spec, junit, args.timeout),
                                   cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
                found, failed_setup = report.outcomes(junit, suite, spec, specs[suite["suite"]])
            seconds = time.monotonic() - started
            run_s += seconds
            records += found
            setup += failed_setup
            counts = report.totals(found, failed_setup)
            print("%-32s %6.0f s  %s" % (suite["suite"], seconds, report.summary_line(counts)[len("kai-e2e: "):]))
        if args.node_runtime == "kubelet":
            ran = real_node_pods(os.path.join(work, "sim"))
            ours = ("kube-system", "kai-scheduler", "kai-resource-isolator", RESERVATIONS)
            spec_pods = {namespace: n for namespace, n in ran.items() if namespace not in ours}
            print("the real node ran, in containers: %d pods of KAI's specs (in %d of their namespaces), %d of KAI's reservation pods,"
                  " and %d of the cluster's own (the device plugin; KAI's operator, components and chart hooks)"
                  % (sum(spec_pods.values()), len(spec_pods), ran.get(RESERVATIONS, 0), sum(n for namespace, n in ran.items() if namespace in ours[:3])))
    finally:
        memory.stopped.set()
        if not args.keep:
            playbook(os.path.join(ROOT, "playbooks", "cleanup.yml"), cleanup)
            shutil.rmtree(work, ignore_errors=True)
    scale = scale_results(args.scale_results, version)
    for entry in excluded:
        if entry["suite"] == "scale" and scale and specs[entry["suite"]]:
            records += report.scale_suite(entry, specs[entry["suite"]], scale, spec)
            print("the scale suite's specs as make kai-scale classed them (%s, %d nodes, %s)" % (args.scale_results, scale["nodes"], scale["date"]))
        else:
            records += report.excluded_suite(entry, specs[entry["suite"]], not_built.get(entry["suite"]))
    cluster = "%d sim nodes of 8 GPUs (the first %s), the NVML stand-in library, the fixtures of tests/kai_e2e/fixtures.yaml.j2" % (
        args.nodes, REAL_NODE if args.node_runtime == "kubelet" else "played by kwok")
    meta = dict(kai_version=version, seed=spec["seed"], date=time.strftime("%Y-%m-%d"), scope=scope,
                cluster=cluster, build_s=build_s, cluster_s=cluster_s,
                run_s=run_s, peak_mib=memory.peak_mib, baseline_mib=memory.baseline_mib,
                suites_counted=sorted(entry["suite"] for entry in suites + excluded))
    counts = report.write_report(args.report_dir, records, setup, meta)
    print("report: %s (build %.0f s, cluster %.0f s, suites %.0f s, peak memory in use %d MiB, %d MiB before)"
          % (os.path.join(args.report_dir, "report.md"), build_s, cluster_s, run_s, memory.peak_mib, memory.baseline_mib))
    failing = [suite["suite"] for suite in suites if suite["suite"] in not_built]
    if failing:
        print("suites the list runs that did not build: %s" % ", ".join(failing))
    problems = report.gate_problems(spec, records, setup) if args.gate else []
    for problem in problems:
        print("gate: " + problem)
    print(report.summary_line(counts))
    return 1 if counts["ours"] or failing or problems else 0


if __name__ == "__main__":
    sys.exit(main())
