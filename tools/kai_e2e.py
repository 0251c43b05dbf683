"""KAI's own end-to-end suites against a sim cluster, with a conformance report.

Builds the suites of tests/kai_e2e/suites.yml as Ginkgo test binaries from KAI's Go module at the
version the sim runs (roles/sim_cluster/files/sim-bin/build.sh, KAI_E2E_SUITES: ``go test -c``, the
same module resolution as the sim's programs), brings up a sim cluster with KAI and the mock NVML
library and nothing of Lab 11 (tests/kai_e2e/cluster.yml), runs each suite with the file's label
filter and skips, and takes the cluster down again.

Writes ``<report dir>/``: ``junit/<suite>.xml`` (Ginkgo's), ``logs/<suite>.log``, ``results.json`` and
``report.md`` (suite, spec, passed / failed / skipped / excluded, and for every failure and
exclusion its class: sim_limit, kai_v0.16.0 or ours; a failure the file does not know counts as
ours). Prints the table's totals, the times and the peak memory, and last one machine-readable line:
``kai-e2e: passed=<n> failed=<n> skipped=<n> excluded=<n> ours=<n>``. Exits 1 when a failure
counts as ours (with --gate: when any spec fails, whatever its class).

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
import xml.etree.ElementTree as ET

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.path.dirname(sys.executable)
LIST = os.path.join(ROOT, "tests", "kai_e2e", "suites.yml")
BUILD = os.path.join(ROOT, "roles", "sim_cluster", "files", "sim-bin", "build.sh")
CLUSTER = "kai-e2e"
CLASSES = ("sim_limit", "kai_v0.16.0", "ours")


def load(path=LIST):
    """The suite list, checked: every exclusion and known failure has a class and a reason."""
    with open(path) as handle:
        spec = yaml.safe_load(handle)
    entries = list(spec.get("excluded_suites") or []) + list(spec.get("known_failures") or [])
    entries += list((spec.get("label_exclusions") or {}).values())
    for suite in spec.get("suites") or []:
        entries += suite.get("skip") or []
    for entry in entries:
        if entry.get("class") not in CLASSES or not entry.get("reason"):
            raise ValueError("%s: %r needs a class (one of %s) and a reason" % (path, entry, ", ".join(CLASSES)))
    return spec


def binary_name(suite):
    return "kai-e2e/%s.test" % suite.replace("/", "-")


def build(suites):
    """Build the suites' test binaries (and anything of the sim missing); the bin dir and the seconds it took."""
    env = dict(os.environ, KAI_E2E_SUITES=" ".join(suites))
    started = time.monotonic()
    done = subprocess.run([BUILD], env=env, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    sys.stdout.write("".join(line + "\n" for line in done.stdout.splitlines()[:-1] if "kai-e2e/" in line))
    if done.returncode != 0:
        sys.exit("building KAI's e2e suites failed:\n%s%s" % (done.stdout[-3000:], done.stderr[-3000:]))
    return done.stdout.splitlines()[-1], seconds


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
            "-test.timeout=0"]
    if spec.get("label_filter"):
        argv.append("--ginkgo.label-filter=" + spec["label_filter"])
    skips = [entry["match"] for entry in suite.get("skip") or []]
    if skips:
        argv.append("--ginkgo.skip=" + "|".join("(%s)" % match for match in skips))
    return argv


def outcomes(junit_path, suite, spec):
    """Each spec of a suite's JUnit report: {suite, spec, status, class, reason, message, seconds}."""
    found = []
    if not os.path.exists(junit_path):
        return [dict(suite=suite["suite"], spec="(the suite did not run: no JUnit report)", status="failed",
                     cls="ours", reason="the test binary wrote no report (see its log)", message="", seconds=0.0)]
    for case in ET.parse(junit_path).getroot().iter("testcase"):
        name = case.get("name") or ""
        if not name.startswith("[It]") and case.find("failure") is None and case.find("error") is None:
            continue  # setup nodes (BeforeSuite, ...) count only when they fail
        fallback = "failed" if case.find("failure") is not None else "skipped" if case.find("skipped") is not None else "passed"
        status = case.get("status") or fallback
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        message = ((failure.get("message") or "") + "\n" + (failure.text or "")).strip() if failure is not None else ""
        record = dict(suite=suite["suite"], spec=name, status=status, cls="", reason="", message=message[:2000],
                      seconds=float(case.get("time") or 0.0))
        if status in ("failed", "panicked", "interrupted", "timedout"):
            record["status"] = "failed"
            # a known failure, or a spec the list now leaves out (a report of an earlier run, --reclassify)
            known = next((entry for entry in spec.get("known_failures") or [] if re.search(entry["match"], name)), None)
            known = known or exclusion_of(name, suite, spec)
            record["cls"], record["reason"] = (known["class"], known["reason"]) if known else ("ours", "not understood yet")
        elif status in ("skipped", "pending"):
            exclusion = exclusion_of(name, suite, spec)
            if exclusion:
                record.update(status="excluded", cls=exclusion["class"], reason=exclusion["reason"])
            else:
                record["reason"] = (case.find("skipped").get("message") if case.find("skipped") is not None else "") or "skipped by the spec"
        found.append(record)
    return found


def exclusion_of(name, suite, spec):
    """The list's entry that left this spec out (a skip match, or one of the excluded labels it carries)."""
    for entry in suite.get("skip") or []:
        if re.search(entry["match"], name):
            return entry
    labels = re.findall(r"\[([^\]]+)\]\s*$", name)
    carried = set(label.strip() for group in labels for label in group.split(","))
    for label, entry in (spec.get("label_exclusions") or {}).items():
        if label in carried:
            return entry
    return None


def totals(records):
    counts = dict((key, 0) for key in ("passed", "failed", "skipped", "excluded", "ours"))
    for record in records:
        counts[record["status"]] += 1
        if record["status"] == "failed" and record["cls"] == "ours":
            counts["ours"] += 1
    return counts


def write_report(report_dir, records, excluded_suites, meta):
    counts = totals(records)
    with open(os.path.join(report_dir, "results.json"), "w") as handle:
        json.dump(dict(meta, totals=counts, specs=records, excluded_suites=excluded_suites), handle, indent=2)
    lines = ["# KAI's own e2e suites on the sim", "",
             "KAI %s (its own programs, as local processes), %d sim nodes of 8 GPUs, the mock NVML library; the isolator is not part of "
             "this run. Built in %.0f s, cluster up in %.0f s, suites run in %.0f s, peak memory in use %d MiB (%d MiB before the cluster)."
             % (meta["kai_version"], meta["nodes"], meta["build_s"], meta["cluster_s"], meta["run_s"], meta["peak_mib"], meta["baseline_mib"]),
             "", "| passed | failed | skipped | excluded | failures of class ours |", "|---|---|---|---|---|",
             "| %(passed)d | %(failed)d | %(skipped)d | %(excluded)d | %(ours)d |" % counts, "",
             "| suite | spec | result | class | why |", "|---|---|---|---|---|"]
    for record in records:
        why = (record["reason"] or "").replace("|", "\\|").replace("\n", " ")
        lines.append("| %s | %s | %s | %s | %s |" % (record["suite"], record["spec"].replace("|", "\\|"), record["status"], record["cls"], why))
    lines += ["", "Suites not run:", ""]
    lines += ["- `%s` (%s): %s" % (entry["suite"], entry["class"], entry["reason"]) for entry in excluded_suites]
    failures = [record for record in records if record["status"] == "failed"]
    if failures:
        lines += ["", "## Failures", ""]
        for record in failures:
            lines += ["### %s: %s (%s)" % (record["suite"], record["spec"], record["cls"]), "", "```",
                      record["message"][:1500], "```", ""]
    with open(os.path.join(report_dir, "report.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return counts


def reclassify(report_dir):
    """Classify an earlier run's JUnit reports again with the list as it is now; rewrite its report."""
    spec = load()
    with open(os.path.join(report_dir, "results.json")) as handle:
        earlier = json.load(handle)
    meta = dict((key, earlier[key]) for key in ("kai_version", "nodes", "build_s", "cluster_s", "run_s", "peak_mib", "baseline_mib"))
    ran = set(record["suite"] for record in earlier["specs"])
    records = []
    for suite in spec["suites"]:
        if suite["suite"] in ran:
            records += outcomes(os.path.join(report_dir, "junit", suite["suite"].replace("/", "-") + ".xml"), suite, spec)
    counts = write_report(report_dir, records, earlier.get("excluded_suites") or [], meta)
    print("kai-e2e: passed=%(passed)d failed=%(failed)d skipped=%(skipped)d excluded=%(excluded)d ours=%(ours)d" % counts)
    return 1 if counts["ours"] else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gate", action="store_true", help="only the suites marked gate: true (make test runs these); any failure fails")
    parser.add_argument("--suite", action="append", default=[], help="run this suite of the list (repeatable)")
    parser.add_argument("--nodes", type=int, default=4, help="sim nodes of 8 GPUs")
    parser.add_argument("--timeout", type=int, default=20, help="minutes per suite (Ginkgo's --ginkgo.timeout)")
    parser.add_argument("--report-dir", default=os.path.join(ROOT, "kai-e2e-report"))
    parser.add_argument("--keep", action="store_true", help="leave the cluster up afterwards")
    parser.add_argument("--reclassify", action="store_true", help="classify the report dir's JUnit reports again; run nothing")
    args = parser.parse_args()
    if args.reclassify:
        return reclassify(args.report_dir)

    spec = load()
    suites = [suite for suite in spec["suites"] if (not args.gate or suite.get("gate")) and (not args.suite or suite["suite"] in args.suite)]
    unknown = set(args.suite) - set(suite["suite"] for suite in spec["suites"])
    if unknown:
        sys.exit("not in %s: %s" % (LIST, ", ".join(sorted(unknown))))
    shutil.rmtree(args.report_dir, ignore_errors=True)
    for sub in ("junit", "logs"):
        os.makedirs(os.path.join(args.report_dir, sub))

    bin_dir, build_s = build([suite["suite"] for suite in suites])
    kai_version = subprocess.run([os.path.join(bin_dir, "kai-crds"), "--version"], capture_output=True, text=True,
                                 check=False).stdout.split()[2:3] or ["?"]
    memory = MemorySampler()
    memory.start()
    work = tempfile.mkdtemp(prefix="kai-e2e-")
    extra = dict(kai_e2e_cluster=CLUSTER, kai_e2e_workdir=os.path.join(work, "sim"), kai_e2e_nodes=args.nodes)
    cleanup = dict(cleanup_cluster_name=CLUSTER, sim_cluster_workdir=os.path.join(work, "sim"))
    records, run_s = [], 0.0
    try:
        code, cluster_s = playbook(os.path.join(ROOT, "tests", "kai_e2e", "cluster.yml"), extra)
        if code != 0:
            sys.exit("the sim cluster for KAI's e2e suites did not come up")
        print("cluster %s up in %.0f s (%d nodes x 8 GPUs, KAI %s, mock NVML)" % (CLUSTER, cluster_s, args.nodes, kai_version[0]))
        env = dict(os.environ, KUBECONFIG=os.path.join(work, "sim", "kubeconfig"))
        for suite in suites:
            name = suite["suite"].replace("/", "-")
            junit = os.path.join(args.report_dir, "junit", name + ".xml")
            started = time.monotonic()
            with open(os.path.join(args.report_dir, "logs", name + ".log"), "w") as log:
                subprocess.run(ginkgo_argv(os.path.join(bin_dir, binary_name(suite["suite"])), suite, spec, junit, args.timeout),
                               cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
            seconds = time.monotonic() - started
            run_s += seconds
            found = outcomes(junit, suite, spec)
            records += found
            counts = totals(found)
            print("%-32s %6.0f s  passed=%d failed=%d skipped=%d excluded=%d ours=%d"
                  % (suite["suite"], seconds, counts["passed"], counts["failed"], counts["skipped"], counts["excluded"], counts["ours"]))
    finally:
        memory.stopped.set()
        if not args.keep:
            playbook(os.path.join(ROOT, "playbooks", "cleanup.yml"), cleanup)
            shutil.rmtree(work, ignore_errors=True)
    excluded_suites = [] if args.gate or args.suite else list(spec.get("excluded_suites") or [])
    meta = dict(kai_version=kai_version[0], nodes=args.nodes, build_s=build_s, cluster_s=cluster_s, run_s=run_s,
                peak_mib=memory.peak_mib, baseline_mib=memory.baseline_mib)
    counts = write_report(args.report_dir, records, excluded_suites, meta)
    print("report: %s (build %.0f s, cluster %.0f s, suites %.0f s, peak memory in use %d MiB, %d MiB before)"
          % (os.path.join(args.report_dir, "report.md"), build_s, cluster_s, run_s, memory.peak_mib, memory.baseline_mib))
    print("kai-e2e: passed=%(passed)d failed=%(failed)d skipped=%(skipped)d excluded=%(excluded)d ours=%(ours)d" % counts)
    return 1 if counts["ours"] or (args.gate and counts["failed"]) else 0


if __name__ == "__main__":
    sys.exit(main())
