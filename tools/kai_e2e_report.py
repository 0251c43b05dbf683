"""The accounting of KAI's own e2e suites: the list of a KAI version, every spec of KAI's e2e module,
each spec's class, the gate's expected counts and the report.

Every spec of KAI's e2e module (the Ginkgo suites under ``test/e2e``, found in the module's source)
ends in exactly one class:

- ``passed``;
- ``failed``: the spec failed, panicked, timed out, was interrupted or aborted, or Ginkgo skipped it
  because something else failed (a collateral skip: after the suite's timeout or an abort, after a
  failure in an Ordered container, after a failed BeforeAll or BeforeSuite); a collateral skip is
  a failure of the spec (or setup node) that caused it, and takes that one's class;
- ``skipped``: the spec skipped itself (``Skip(...)``, with Ginkgo's message) or is pending in KAI's
  source;
- ``excluded``: the list leaves it out (a label, a name, or its whole suite), with the reason;
- ``not_run``: its suite's test binary was not built or could not list its specs (one record
  for the suite, its specs unknown); or, classifying an earlier run's report again, that run's list
  left the spec out and the list no longer does.

Failures carry a class of the list: ``sim_limit``, ``kai_<version>`` or ``ours`` (any failure the
list does not know). Used by tools/kai_e2e.py; tested on recorded JUnit reports.
"""

import json
import os
import re
import xml.etree.ElementTree as ET

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
LIST_DIR = os.path.join(ROOT, "tests", "kai_e2e")
STATUSES = ("passed", "failed", "skipped", "excluded", "not_run")
# Ginkgo's spec states that are failures (reporters/junit_report.go: failure or error elements).
FAILED_STATES = ("failed", "panicked", "interrupted", "timedout", "aborted")
# Ginkgo's messages for a spec it skipped because an earlier one failed (internal/group.go).
COLLATERAL_MESSAGES = ("Spec skipped because an earlier spec in an ordered container failed",
                       "Spec skipped because a BeforeAll node failed")


def list_path(version):
    """The list of a KAI version: tests/kai_e2e/kai-<version>.yml."""
    return os.path.join(LIST_DIR, "kai-%s.yml" % version)


def classes(spec):
    return ("sim_limit", "kai_%s" % spec["kai_version"], "ours")


def load(path):
    """A version's list, checked: its version, seed, every class and reason, every label the filter drops."""
    if not os.path.exists(path):
        known = sorted(name[4:-4] for name in os.listdir(LIST_DIR) if re.match(r"kai-v.*\.yml$", name))
        raise ValueError("%s does not exist: KAI's e2e suites are listed for %s only; a list is written for each"
                         " KAI version built (start from the nearest one, run, classify)" % (path, ", ".join(known)))
    with open(path) as handle:
        spec = yaml.safe_load(handle)
    version = os.path.basename(path)[4:-4]
    if spec.get("kai_version") != version:
        raise ValueError("%s: kai_version must be %s (the version its name gives)" % (path, version))
    if not isinstance(spec.get("seed"), int) or spec["seed"] <= 0:
        raise ValueError("%s: seed must be a positive integer (Ginkgo's --ginkgo.seed, pinned)" % path)
    allowed = classes(spec)
    entries = list(spec.get("excluded_suites") or []) + list(spec.get("known_failures") or [])
    entries += list((spec.get("label_exclusions") or {}).values())
    for suite in spec.get("excluded_suites") or []:
        entries += suite.get("skip") or []  # what make kai-scale leaves out of the scale suite
    for suite in spec.get("suites") or []:
        entries += suite.get("skip") or []
        gate = suite.get("gate")
        if gate is not None and not (isinstance(gate, dict) and set(gate) == {"passed", "skipped"}
                                     and all(isinstance(value, int) for value in gate.values())):
            raise ValueError("%s: %s: gate must be {passed: <n>, skipped: <n>} (the counts the gate expects)"
                             % (path, suite["suite"]))
    for entry in entries:
        if entry.get("class") not in allowed or not entry.get("reason"):
            raise ValueError("%s: %r needs a class (one of %s) and a reason" % (path, entry, ", ".join(allowed)))
    dropped = re.findall(r"!\s*([A-Za-z0-9_.-]+)", spec.get("label_filter") or "")
    unexplained = sorted(set(dropped) - set(spec.get("label_exclusions") or {}))
    if unexplained:
        raise ValueError("%s: the label filter drops %s without an entry in label_exclusions" % (path, ", ".join(unexplained)))
    names = suite_names(spec)
    if len(names) != len(set(names)):
        raise ValueError("%s: a suite is named twice" % path)
    return spec


def suite_names(spec):
    return [suite["suite"] for suite in spec.get("suites") or []] + [entry["suite"] for entry in spec.get("excluded_suites") or []]


def module_suites(module_dir):
    """KAI's Ginkgo suites in its module's source: packages under test/e2e with a test file that calls
    RunSpecs, named relative to test/e2e/suites (the one outside it, test/e2e/scale, as ``scale``)."""
    e2e = os.path.join(module_dir, "test", "e2e")
    if not os.path.isdir(e2e):
        raise ValueError("%s has no test/e2e directory" % module_dir)
    found = []
    for folder, _subfolders, files in os.walk(e2e):
        tests = [name for name in files if name.endswith("_test.go")]
        if any("RunSpecs(" in open(os.path.join(folder, name), errors="replace").read() for name in tests):
            relative = os.path.relpath(folder, e2e).replace(os.sep, "/")
            found.append(relative[len("suites/"):] if relative.startswith("suites/") else relative)
    return sorted(found)


def check_covers(spec, module_dir):
    """The list names every suite of KAI's module once, and nothing else."""
    listed, there = set(suite_names(spec)), set(module_suites(module_dir))
    problems = []
    if there - listed:
        problems.append("not in the list: %s" % ", ".join(sorted(there - listed)))
    if listed - there:
        problems.append("not in KAI %s's module: %s" % (spec["kai_version"], ", ".join(sorted(listed - there))))
    if problems:
        raise ValueError("the list of KAI %s and KAI's e2e suites differ (%s): %s"
                         % (spec["kai_version"], module_dir, "; ".join(problems)))


def test_cases(junit_path):
    """(leaf node type, name, Ginkgo state, skip or failure message, seconds, detail) per testcase, in run order."""
    cases = []
    for case in ET.parse(junit_path).getroot().iter("testcase"):
        name = case.get("name") or ""
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        skipped = case.find("skipped")
        fallback = "failed" if failure is not None else "skipped" if skipped is not None else "passed"
        state = case.get("status") or fallback
        message = ""
        if failure is not None:
            message = failure.get("message") or ""
        elif skipped is not None:
            message = skipped.get("message") or ""
        detail = (failure.text or "") if failure is not None else ""
        leaf = re.match(r"\[([A-Za-z]+)\]", name)
        cases.append((leaf.group(1) if leaf else "", name, state, message, float(case.get("time") or 0.0), detail))
    return cases


def left_out_by_run(junit_path):
    """A test of whether the run that wrote a JUnit report left a spec out itself: its skip strings
    and the labels its label filter drops (Ginkgo records both among the report's properties)."""
    properties = dict((item.get("name"), item.get("value") or "") for item in ET.parse(junit_path).getroot().iter("property"))
    skip = properties.get("SkipStrings") or ""
    dropped = set(re.findall(r"!\s*([A-Za-z0-9_.-]+)", properties.get("LabelFilter") or ""))

    def left_out(name):
        labels = re.findall(r"\[([^\]]+)\]\s*$", name)
        carried = set(label.strip() for group in labels for label in group.split(","))
        return bool(carried & dropped) or bool(skip and re.search(skip, name))
    return left_out


def inventory(junit_path):
    """The spec names of a suite's dry-run JUnit report (every spec, in Ginkgo's order)."""
    return [case[1] for case in test_cases(junit_path) if case[0] == "It"]


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


def known_failure(name, suite, spec):
    """A known failure, or a spec the list now leaves out (a report of an earlier run, --reclassify)."""
    known = next((entry for entry in spec.get("known_failures") or [] if re.search(entry["match"], name)), None)
    return known or exclusion_of(name, suite, spec)


def record(suite, name, status, cls="", reason="", message="", seconds=0.0, cause=""):
    return dict(suite=suite["suite"], spec=name, status=status, cls=cls, reason=reason, message=message[:2000],
                seconds=seconds, cause=cause)


def outcomes(junit_path, suite, spec, specs=None):
    """(spec records, failed setup-node records) of a suite's JUnit report; specs, the suite's dry-run
    inventory, names the specs the report must hold (one missing is a failure of ours)."""
    if not os.path.exists(junit_path):
        why = "the suite's test binary wrote no JUnit report (see its log)"
        if not specs:
            return not_run(suite, why), []
        return [record(suite, name, "failed", "ours", why) for name in specs], []
    found, setup, cause = [], [], None
    left_out = left_out_by_run(junit_path)
    for leaf, name, state, message, seconds, detail in test_cases(junit_path):
        full = (message + "\n" + detail).strip()
        if state in FAILED_STATES:
            known = known_failure(name, suite, spec)
            cls, reason = (known["class"], known["reason"]) if known else ("ours", "not understood yet")
            failed = record(suite, name, "failed", cls, reason, full, seconds)
            failed["ginkgo_state"] = state
            (found if leaf == "It" else setup).append(failed)
            cause = failed
            continue
        if leaf != "It":
            continue  # a setup node (BeforeSuite, ...) counts only when it fails
        if state == "passed":
            found.append(record(suite, name, "passed", seconds=seconds))
        elif state == "pending":
            found.append(record(suite, name, "skipped", reason="pending in KAI's source"))
        elif state == "skipped":
            said = message[len("skipped - "):] if message.startswith("skipped - ") else ""
            exclusion = exclusion_of(name, suite, spec)
            if exclusion and not said:
                found.append(record(suite, name, "excluded", exclusion["class"], exclusion["reason"]))
            elif not said and left_out(name):
                # an earlier run's report (--reclassify): that run's list left the spec out, this one does not
                found.append(record(suite, name, "not_run", reason="the run that wrote this report left it out "
                                    "(its skip strings or label filter); the list runs it now: run the suite again"))
            elif said and said not in COLLATERAL_MESSAGES:
                found.append(record(suite, name, "skipped", reason=said))
            else:
                found.append(collateral(suite, name, said or "Ginkgo skipped it after the suite's timeout, "
                                        "an interrupt or an abort", cause))
        else:
            found.append(record(suite, name, "failed", "ours", "Ginkgo state %r not understood" % state, full, seconds))
    reported = set(item["spec"] for item in found)
    for name in specs or []:
        if name not in reported:
            found.append(record(suite, name, "failed", "ours", "listed by the suite's dry run, absent from its JUnit report"))
    return found, setup


def collateral(suite, name, why, cause):
    """A spec Ginkgo skipped because something else failed: a failure of that one, in its class."""
    if cause is None:
        return record(suite, name, "failed", "ours", "%s, with no failure before it in the report" % why, why)
    return record(suite, name, "failed", cause["cls"], "collateral: %s; caused by %s (%s)" % (why, cause["spec"], cause["reason"]),
                  why, cause=cause["spec"])


def not_run(suite_entry, why):
    """The one record of a suite whose specs are unknown: its test binary was not built or listed nothing."""
    return [record(suite_entry, "(every spec of the suite)", "not_run", reason=why)]


def excluded_suite(suite_entry, specs, why=None):
    """The records of a suite the list does not run: each spec excluded with the suite's reason."""
    if specs is None:
        return not_run(suite_entry, "%s; excluded: %s" % (why or "its test binary listed no specs", suite_entry["reason"]))
    return [record(suite_entry, name, "excluded", suite_entry["class"], suite_entry["reason"]) for name in specs]


def plain_name(name):
    """A spec's text without Ginkgo's leaf type and labels: ``[It] A B c [scale]`` -> ``A B c``."""
    return re.sub(r"\s*(\[[^\]]*\]\s*)+$", "", re.sub(r"^\[[A-Za-z]+\]\s*", "", name)).strip()


def scale_suite(suite_entry, specs, scale_results, spec):
    """The records of the scale suite from make kai-scale's results (tools/kai_scale.py): each spec in the class
    that run gave it, at its node count; a spec that run did not count is excluded with the suite's reason."""
    rows = dict((row["spec"], row) for row in scale_results["specs"])
    at = "make kai-scale at %d nodes, %s" % (scale_results["nodes"], scale_results["date"])
    found = []
    for name in specs or []:
        row = rows.get(plain_name(name))
        if row is None or row["state"] == "-":
            found.append(record(suite_entry, name, "excluded", suite_entry["class"], suite_entry["reason"]))
        elif row["state"] == "passed":
            found.append(record(suite_entry, name, "passed", reason=at, seconds=row["seconds"]))
        elif row["state"] == "excluded":
            cls, _colon, why = row["reason"].partition(": ")
            found.append(record(suite_entry, name, "excluded", cls, "%s (%s)" % (why, at)))
        elif row["state"] == "not run":
            found.append(record(suite_entry, name, "not_run", reason="%s did not run it%s" % (
                at, " (%s)" % row["reason"] if row.get("reason") else "")))
        else:
            known = known_failure(name, suite_entry, spec)
            found.append(record(suite_entry, name, "failed", known["class"] if known else "ours",
                                known["reason"] if known else "failed in %s" % at, message=row.get("reason") or "", seconds=row["seconds"]))
    return found


def totals(records, setup=()):
    """Counts per status over the specs, total, and ours: the failures of class ours (failed setup nodes too)."""
    counts = dict((key, 0) for key in STATUSES + ("ours", "total"))
    for item in records:
        counts[item["status"]] += 1
        counts["total"] += 1
        if item["status"] == "failed" and item["cls"] == "ours":
            counts["ours"] += 1
    counts["ours"] += sum(1 for item in setup if item["cls"] == "ours")
    return counts


def summary_line(counts):
    return ("kai-e2e: passed=%(passed)d failed=%(failed)d skipped=%(skipped)d excluded=%(excluded)d "
            "not_run=%(not_run)d ours=%(ours)d total=%(total)d" % counts)


def gate_problems(spec, records, setup=()):
    """Why a gate run fails: a failure, a failed setup node, or a gate suite whose passed or skipped
    count is not the one the list expects (a sim that stops offering what a spec needs makes the
    spec skip itself, and the gate fails)."""
    problems = ["%s: %s failed (%s)" % (item["suite"], item["spec"], item["reason"]) for item in records if item["status"] == "failed"]
    problems += ["%s: %s failed (%s)" % (item["suite"], item["spec"], item["reason"]) for item in setup]
    for suite in spec.get("suites") or []:
        expected = suite.get("gate")
        if not expected:
            continue
        mine = [item for item in records if item["suite"] == suite["suite"]]
        got = dict((key, sum(1 for item in mine if item["status"] == key)) for key in ("passed", "skipped"))
        if got != expected:
            problems.append("%s: expected passed=%d skipped=%d, got passed=%d skipped=%d%s" % (
                suite["suite"], expected["passed"], expected["skipped"], got["passed"], got["skipped"],
                "".join("; skipped: %s (%s)" % (item["spec"], item["reason"]) for item in mine if item["status"] == "skipped")))
    return problems


def write_report(report_dir, records, setup, meta):
    """results.json and report.md of a run; returns the counts."""
    counts = totals(records, setup)
    with open(os.path.join(report_dir, "results.json"), "w") as handle:
        json.dump(dict(meta, totals=counts, specs=records, setup_failures=list(setup)), handle, indent=2)
    per_suite = {}
    for item in records:
        per_suite.setdefault(item["suite"], []).append(item)
    heading = "KAI %s, %s; Ginkgo seed %d; %s; counting %s. " % (
        meta["kai_version"], meta["cluster"], meta["seed"], meta["date"], meta["scope"])
    heading += "Built in %.0f s, cluster up in %.0f s, suites run in %.0f s, peak memory in use %d MiB (%d MiB before the cluster). " % (
        meta["build_s"], meta["cluster_s"], meta["run_s"], meta["peak_mib"], meta["baseline_mib"])
    heading += "Specs counted: %d (each suite's test binary lists its specs with --ginkgo.dry-run)." % counts["total"]
    lines = ["# KAI's own e2e suites on the sim", "", heading,
             "", "| passed | failed | skipped | excluded | not run | failures of class ours | total |", "|---|---|---|---|---|---|---|",
             "| %(passed)d | %(failed)d | %(skipped)d | %(excluded)d | %(not_run)d | %(ours)d | %(total)d |" % counts, "",
             "| suite | passed | failed | skipped | excluded | not run | ours | total |", "|---|---|---|---|---|---|---|---|"]
    for name, items in per_suite.items():
        lines.append("| %s | %d | %d | %d | %d | %d | %d | %d |" % ((name,) + tuple(
            sum(1 for item in items if item["status"] == key) for key in STATUSES) + (
            sum(1 for item in items if item["status"] == "failed" and item["cls"] == "ours"), len(items))))
    lines += ["", "| suite | spec | result | class | why |", "|---|---|---|---|---|"]
    for item in records:
        why = (item["reason"] or "").replace("|", "\\|").replace("\n", " ")
        lines.append("| %s | %s | %s | %s | %s |" % (item["suite"], item["spec"].replace("|", "\\|"), item["status"], item["cls"], why))
    failures = [item for item in records if item["status"] == "failed" and not item["cause"]] + list(setup)
    if failures:
        lines += ["", "## Failures", ""]
        for item in failures:
            lines += ["### %s: %s (%s)" % (item["suite"], item["spec"], item["cls"]), "", "```", item["message"][:1500], "```", ""]
    with open(os.path.join(report_dir, "report.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return counts
