"""tools/kai_e2e.py: the suite list is complete, and Ginkgo's JUnit reports become classified outcomes."""

import importlib.util
import os

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SPEC = importlib.util.spec_from_file_location("kai_e2e", os.path.join(ROOT, "tools", "kai_e2e.py"))
kai_e2e = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(kai_e2e)

JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="6" failures="2">
  <testsuite name="Resources Suite" tests="6">
    <testcase name="[BeforeSuite]" classname="Resources Suite" status="passed" time="0.1"></testcase>
    <testcase name="[It] Schedule pod GPU Resources Whole GPU request" classname="Resources Suite" status="passed" time="3.5"></testcase>
    <testcase name="[It] Schedule pod GPU Resources Fraction GPU request [reservationPod]" classname="Resources Suite" status="failed" time="60">
      <failure message="Timed out after 60s" type="failed">pod never bound</failure>
    </testcase>
    <testcase name="[It] Schedule pod Dynamic Resources Allocate simple request" classname="Resources Suite" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[It] Schedule pod reconfigures the shard [operated]" classname="Resources Suite" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[It] Schedule pod CPU Resources Other Resource Request" classname="Resources Suite" status="skipped" time="0">
      <skipped message="skipped - The current cluster doesn't have enough resources"></skipped>
    </testcase>
    <testcase name="[It] Schedule pod Dynamic Resources ran before the list left it out" classname="Resources Suite" status="failed" time="9">
      <failure message="no ResourceSlice" type="failed"></failure>
    </testcase>
    <testcase name="[It] Schedule pod known bug" classname="Resources Suite" status="failed" time="5">
      <failure message="pending pods counted twice" type="failed"></failure>
    </testcase>
  </testsuite>
</testsuites>
"""

LIST = {
    "label_filter": "!operated",
    "label_exclusions": {"operated": {"class": "sim_limit", "reason": "needs KAI's operator"}},
    "suites": [{"suite": "allocate/resources", "skip": [{"match": "Dynamic Resources", "class": "sim_limit", "reason": "no DRA driver"}]}],
    "excluded_suites": [{"suite": "upgrade", "class": "sim_limit", "reason": "Helm"}],
    "known_failures": [{"match": "known bug", "class": "kai_v0.16.0", "reason": "fixed in a later KAI"}],
}


def test_outcomes_classify_failures_exclusions_and_skips(tmp_path):
    junit = tmp_path / "r.xml"
    junit.write_text(JUNIT)
    found = dict((record["spec"], record) for record in kai_e2e.outcomes(str(junit), LIST["suites"][0], LIST))
    assert "[BeforeSuite]" not in found  # a setup node counts only when it fails
    assert found["[It] Schedule pod GPU Resources Whole GPU request"]["status"] == "passed"
    fraction = found["[It] Schedule pod GPU Resources Fraction GPU request [reservationPod]"]
    assert (fraction["status"], fraction["cls"]) == ("failed", "ours") and "pod never bound" in fraction["message"]
    known = found["[It] Schedule pod known bug"]
    assert (known["status"], known["cls"], known["reason"]) == ("failed", "kai_v0.16.0", "fixed in a later KAI")
    dra = found["[It] Schedule pod Dynamic Resources Allocate simple request"]
    assert (dra["status"], dra["cls"], dra["reason"]) == ("excluded", "sim_limit", "no DRA driver")
    operated = found["[It] Schedule pod reconfigures the shard [operated]"]
    assert (operated["status"], operated["reason"]) == ("excluded", "needs KAI's operator")
    other = found["[It] Schedule pod CPU Resources Other Resource Request"]
    assert other["status"] == "skipped" and other["cls"] == "" and "enough resources" in other["reason"]
    ran = found["[It] Schedule pod Dynamic Resources ran before the list left it out"]
    assert (ran["status"], ran["cls"], ran["reason"]) == ("failed", "sim_limit", "no DRA driver")
    assert kai_e2e.totals(found.values()) == dict(passed=1, failed=3, skipped=1, excluded=2, ours=1)


def test_a_suite_without_a_report_is_a_failure_of_ours(tmp_path):
    (record,) = kai_e2e.outcomes(str(tmp_path / "missing.xml"), LIST["suites"][0], LIST)
    assert (record["status"], record["cls"]) == ("failed", "ours")


def test_the_ginkgo_arguments_carry_the_label_filter_and_the_skips():
    argv = kai_e2e.ginkgo_argv("/bin/x.test", LIST["suites"][0], LIST, "/tmp/r.xml", 15)
    assert "--ginkgo.label-filter=!operated" in argv and "--ginkgo.skip=(Dynamic Resources)" in argv
    assert "--ginkgo.junit-report=/tmp/r.xml" in argv and "--ginkgo.timeout=15m" in argv


@pytest.mark.parametrize("broken", [
    {"excluded_suites": [{"suite": "upgrade", "reason": "Helm"}]},
    {"known_failures": [{"match": "x", "class": "flaky", "reason": "?"}]},
    {"suites": [{"suite": "preempt", "skip": [{"match": "x", "class": "ours"}]}]},
])
def test_every_exclusion_and_known_failure_needs_a_class_and_a_reason(tmp_path, broken):
    path = tmp_path / "suites.yml"
    path.write_text(yaml.safe_dump(dict(LIST, **broken)))
    with pytest.raises(ValueError, match="needs a class"):
        kai_e2e.load(str(path))


def test_the_list_of_the_collection_loads_and_names_each_suite_once():
    spec = kai_e2e.load()
    names = [suite["suite"] for suite in spec["suites"]] + [entry["suite"] for entry in spec["excluded_suites"]]
    assert len(names) == len(set(names))
    assert [suite["suite"] for suite in spec["suites"] if suite.get("gate")], "make test needs a gate subset"
