"""tools/kai_e2e.py and kai_e2e_report.py: every spec counted in one class, collateral skips counted as
failures of their cause, the gate's counts asserted, the list keyed to a KAI version."""

import importlib.util
import os
from xml.sax.saxutils import quoteattr

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def load_tool(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tools", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


report = load_tool("kai_e2e_report")
kai_e2e = load_tool("kai_e2e")


def case(name, status, inner=""):
    return '    <testcase name="%s" classname="S" status="%s" time="1">%s</testcase>\n' % (name, status, inner)


def skipped(message):
    return '<skipped message="%s"></skipped>' % message


def failure(message, kind="failed"):
    return '<failure message="%s" type="%s">at spec.go:10</failure>' % (message, kind)


def junit(tmp_path, *cases, name="r.xml", properties=None):
    path = tmp_path / name
    props = "".join('<property name="%s" value=%s></property>' % (key, quoteattr(value)) for key, value in (properties or {}).items())
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n  <testsuite name="S">\n    <properties>%s</properties>\n'
                    '%s  </testsuite>\n</testsuites>\n' % (props, "".join(cases)))
    return str(path)


LIST = {
    "kai_version": "v0.16.0",
    "seed": 7,
    "label_filter": "!operated",
    "label_exclusions": {"operated": {"class": "sim_limit", "reason": "needs KAI's operator"}},
    "suites": [{"suite": "allocate/resources", "gate": {"passed": 2, "skipped": 0},
                "skip": [{"match": "Dynamic Resources", "class": "sim_limit", "reason": "no DRA driver"}]}],
    "excluded_suites": [{"suite": "upgrade", "class": "sim_limit", "reason": "Helm"}],
    "known_failures": [{"match": "known bug", "class": "kai_v0.16.0", "reason": "fixed in a later KAI"}],
}
SUITE = LIST["suites"][0]


def by_spec(records):
    return dict((item["spec"], item) for item in records)


def test_outcomes_classify_passes_failures_exclusions_and_self_skips(tmp_path):
    path = junit(tmp_path,
                 case("[BeforeSuite]", "passed"),
                 case("[It] GPU whole request", "passed"),
                 case("[It] GPU fraction request [reservationPod]", "failed", failure("Timed out after 60s")),
                 case("[It] Dynamic Resources simple request", "skipped", skipped("skipped")),
                 case("[It] reconfigures the shard [operated]", "skipped", skipped("skipped")),
                 case("[It] Other Resource Request", "skipped", skipped("skipped - The cluster doesn't have enough resources")),
                 case("[It] known bug", "failed", failure("pending pods counted twice")),
                 case("[It] marked pending", "pending", skipped("pending")))
    records, setup = report.outcomes(path, SUITE, LIST)
    found = by_spec(records)
    assert "[BeforeSuite]" not in found and setup == []  # a setup node counts only when it fails
    assert found["[It] GPU whole request"]["status"] == "passed"
    fraction = found["[It] GPU fraction request [reservationPod]"]
    assert (fraction["status"], fraction["cls"]) == ("failed", "ours") and "Timed out" in fraction["message"]
    assert (found["[It] known bug"]["status"], found["[It] known bug"]["cls"]) == ("failed", "kai_v0.16.0")
    assert (found["[It] Dynamic Resources simple request"]["status"], found["[It] Dynamic Resources simple request"]["reason"]) == \
        ("excluded", "no DRA driver")
    assert found["[It] reconfigures the shard [operated]"]["reason"] == "needs KAI's operator"
    other = found["[It] Other Resource Request"]
    assert (other["status"], other["reason"]) == ("skipped", "The cluster doesn't have enough resources")
    assert found["[It] marked pending"]["status"] == "skipped"
    assert report.totals(records) == dict(passed=1, failed=2, skipped=2, excluded=2, not_run=0, ours=1, total=7)


def test_a_collateral_skip_is_a_failure_of_the_spec_that_caused_it(tmp_path):
    ordered = "skipped - Spec skipped because an earlier spec in an ordered container failed"
    path = junit(tmp_path,
                 case("[It] Ordered first step", "failed", failure("Expected pod to be Running")),
                 case("[It] Ordered second step", "skipped", skipped(ordered)),
                 case("[It] reclaim maintain over-quota weight proportion", "timedout", failure("A suite timeout occurred", "timedout")),
                 case("[It] after the timeout", "skipped", skipped("skipped")),
                 case("[It] a later filtered spec [operated]", "skipped", skipped("skipped")))
    records = report.outcomes(path, SUITE, LIST)[0]
    found = by_spec(records)
    second = found["[It] Ordered second step"]
    assert (second["status"], second["cls"], second["cause"]) == ("failed", "ours", "[It] Ordered first step")
    later = found["[It] after the timeout"]
    assert (later["status"], later["cause"]) == ("failed", "[It] reclaim maintain over-quota weight proportion")
    assert found["[It] a later filtered spec [operated]"]["status"] == "excluded"
    counts = report.totals(records)
    assert (counts["skipped"], counts["failed"], counts["excluded"]) == (0, 4, 1)


def test_a_collateral_skip_takes_the_class_of_its_cause(tmp_path):
    path = junit(tmp_path,
                 case("[It] known bug", "failed", failure("x")),
                 case("[It] next in the ordered container", "skipped",
                      skipped("skipped - Spec skipped because an earlier spec in an ordered container failed")))
    records = report.outcomes(path, SUITE, LIST)[0]
    assert [(item["status"], item["cls"]) for item in records] == [("failed", "kai_v0.16.0"), ("failed", "kai_v0.16.0")]
    assert report.totals(records)["ours"] == 0


def test_an_aborted_spec_is_a_failure_and_the_specs_after_it_are_its_collateral(tmp_path):
    path = junit(tmp_path,
                 case("[It] aborts the suite", "aborted", failure("cluster unusable", "aborted")),
                 case("[It] never ran", "skipped", skipped("skipped")))
    records = report.outcomes(path, SUITE, LIST)[0]
    assert [(item["status"], item["cause"]) for item in records] == [("failed", ""), ("failed", "[It] aborts the suite")]
    assert report.totals(records) == dict(passed=0, failed=2, skipped=0, excluded=0, not_run=0, ours=2, total=2)


def test_a_failed_before_suite_is_the_cause_of_every_skip_and_is_counted_in_ours_not_in_total(tmp_path):
    path = junit(tmp_path,
                 case("[BeforeSuite]", "failed", failure("no connectivity")),
                 case("[It] one", "skipped", skipped("skipped")),
                 case("[It] two", "skipped", skipped("skipped")))
    records, setup = report.outcomes(path, SUITE, LIST)
    assert [item["cause"] for item in records] == ["[BeforeSuite]", "[BeforeSuite]"]
    assert [item["spec"] for item in setup] == ["[BeforeSuite]"]
    assert report.totals(records, setup) == dict(passed=0, failed=2, skipped=0, excluded=0, not_run=0, ours=3, total=2)


def test_a_spec_an_earlier_run_left_out_and_the_list_now_runs_is_not_run_not_a_failure(tmp_path):
    earlier = junit(tmp_path, case("[It] Reclaim DRA elastic (DRA)", "skipped", skipped("skipped")),
                    case("[It] needs a scale cluster [scale]", "skipped", skipped("skipped")),
                    properties={"SkipStrings": "(DRA)", "LabelFilter": "!operated && !scale"})
    records = report.outcomes(earlier, dict(SUITE, skip=[]), dict(LIST, label_exclusions={}))[0]
    assert [item["status"] for item in records] == ["not_run", "not_run"]
    # the same report without the run's filters: nothing left them out, so Ginkgo skipped them after a failure
    bare = junit(tmp_path, case("[It] Reclaim DRA elastic (DRA)", "skipped", skipped("skipped")), name="bare.xml")
    (item,) = report.outcomes(bare, dict(SUITE, skip=[]), LIST)[0]
    assert item["status"] == "failed"


def test_a_suite_without_a_report_fails_every_spec_its_dry_run_listed(tmp_path):
    records = report.outcomes(str(tmp_path / "missing.xml"), SUITE, LIST, specs=["[It] a", "[It] b"])[0]
    assert [(item["status"], item["cls"]) for item in records] == [("failed", "ours")] * 2
    (unlisted,) = report.outcomes(str(tmp_path / "missing.xml"), SUITE, LIST)[0]
    assert unlisted["status"] == "not_run"


def test_a_spec_the_dry_run_listed_but_the_report_lacks_is_a_failure(tmp_path):
    path = junit(tmp_path, case("[It] a", "passed"))
    records = report.outcomes(path, SUITE, LIST, specs=["[It] a", "[It] b"])[0]
    assert [(item["spec"], item["status"]) for item in records] == [("[It] a", "passed"), ("[It] b", "failed")]


def test_a_missing_suite_is_counted_not_run_and_an_excluded_one_spec_by_spec(tmp_path):
    entry = LIST["excluded_suites"][0]
    listed = report.inventory(junit(tmp_path, case("[BeforeSuite]", "passed"), case("[It] upgrades", "passed"),
                                    case("[It] rolls back", "passed")))
    records = report.excluded_suite(entry, listed) + report.excluded_suite(dict(entry, suite="timeaware"), None)
    assert [(item["suite"], item["status"]) for item in records] == [("upgrade", "excluded"), ("upgrade", "excluded"),
                                                                     ("timeaware", "not_run")]
    counts = report.totals(records)
    assert (counts["excluded"], counts["not_run"], counts["total"]) == (2, 1, 3)
    assert report.summary_line(counts) == "kai-e2e: passed=0 failed=0 skipped=0 excluded=2 not_run=1 ours=0 total=3"


def test_the_gate_fails_when_its_gpu_specs_skip_themselves(tmp_path):
    ran = junit(tmp_path, case("[It] whole GPU", "passed"), case("[It] fraction", "passed"))
    records = report.outcomes(ran, SUITE, LIST)[0]
    assert report.gate_problems(LIST, records) == []
    no_gpus = junit(tmp_path, case("[It] whole GPU", "skipped", skipped("skipped - no node has nvidia.com/gpu")),
                    case("[It] fraction", "passed"), name="no-gpus.xml")
    records = report.outcomes(no_gpus, SUITE, LIST)[0]
    assert report.totals(records)["failed"] == 0  # passes on failures alone...
    (problem,) = report.gate_problems(LIST, records)  # ...but not on the gate's counts
    assert "expected passed=2 skipped=0, got passed=1 skipped=1" in problem and "nvidia.com/gpu" in problem


def test_the_ginkgo_arguments_carry_the_seed_the_label_filter_and_the_skips():
    argv = kai_e2e.ginkgo_argv("/bin/x.test", SUITE, LIST, "/tmp/r.xml", 15)
    assert "--ginkgo.label-filter=!operated" in argv and "--ginkgo.skip=(Dynamic Resources)" in argv
    assert "--ginkgo.junit-report=/tmp/r.xml" in argv and "--ginkgo.timeout=15m" in argv and "--ginkgo.seed=7" in argv


def write_list(tmp_path, version, body):
    path = tmp_path / ("kai-%s.yml" % version)
    path.write_text(yaml.safe_dump(body))
    return str(path)


@pytest.mark.parametrize("broken, message", [
    ({"excluded_suites": [{"suite": "upgrade", "reason": "Helm"}]}, "needs a class"),
    ({"known_failures": [{"match": "x", "class": "flaky", "reason": "?"}]}, "needs a class"),
    ({"known_failures": [{"match": "x", "class": "kai_v0.17.0", "reason": "a bug of another version"}]}, "needs a class"),
    ({"suites": [{"suite": "preempt", "skip": [{"match": "x", "class": "ours"}]}]}, "needs a class"),
    ({"excluded_suites": [{"suite": "scale", "class": "sim_limit", "reason": "own run", "skip": [{"match": "x", "class": "slow"}]}]},
     "needs a class"),
    ({"suites": [{"suite": "preempt", "gate": True}]}, "gate must be"),
    ({"seed": None}, "seed"),
    ({"kai_version": "v0.17.0"}, "kai_version must be v0.16.0"),
    ({"label_filter": "!operated && !nightly"}, "drops nightly"),
    ({"excluded_suites": [{"suite": "allocate/resources", "class": "ours", "reason": "twice"}]}, "named twice"),
])
def test_a_list_is_checked(tmp_path, broken, message):
    with pytest.raises(ValueError, match=message):
        report.load(write_list(tmp_path, "v0.16.0", dict(LIST, **broken)))


def test_a_version_without_a_list_is_refused_naming_the_lists_there_are():
    with pytest.raises(ValueError, match="listed for v0.16.0"):
        report.load(report.list_path("v9.9.9"))


def test_module_suites_are_the_packages_that_run_ginkgo(tmp_path):
    for folder, text in [("test/e2e/suites/allocate/quota", "RunSpecs(t, \"Quota\")"), ("test/e2e/scale", "RunSpecs(t, \"Scale\")"),
                         ("test/e2e/modules/wait", "func TestPatch(t *testing.T) {}")]:
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "x_test.go").write_text(text)
    (tmp_path / "test/e2e/suites/allocate/quota/helpers.go").write_text("RunSpecs(")  # not a test file
    assert report.module_suites(str(tmp_path)) == ["allocate/quota", "scale"]
    report.check_covers(dict(LIST, suites=[{"suite": "allocate/quota"}], excluded_suites=[
        {"suite": "scale", "class": "sim_limit", "reason": "r"}]), str(tmp_path))
    with pytest.raises(ValueError, match="not in the list: scale; not in KAI v0.16.0's module: upgrade"):
        report.check_covers(dict(LIST, suites=[{"suite": "allocate/quota"}]), str(tmp_path))


def test_the_collection_keeps_one_list_per_kai_version_each_with_a_gate():
    lists = sorted(name for name in os.listdir(report.LIST_DIR) if name.startswith("kai-v"))
    assert lists, "no list of KAI's e2e suites"
    for name in lists:
        spec = report.load(os.path.join(report.LIST_DIR, name))
        assert [suite for suite in spec["suites"] if suite.get("gate")], "make test needs a gate subset in %s" % name


def test_a_suite_whose_binary_did_not_build_is_not_run_with_the_log_named(tmp_path, monkeypatch):
    script = tmp_path / "build.sh"
    script.write_text("#!/bin/sh\necho 'kai-e2e/upgrade.test built 3.0s'\n"
                      "echo 'build.sh: FAILED: kai-e2e/scale.test (logs in /cache/logs)' >&2\necho /cache/bin\nexit 1\n")
    script.chmod(0o755)
    monkeypatch.setattr(kai_e2e, "BUILD", str(script))
    bin_dir, _seconds, not_built = kai_e2e.build(["upgrade", "scale"])
    assert bin_dir == "/cache/bin" and not_built == {"scale": "its test binary did not build (/cache/logs/kai-e2e/scale.test.log)"}
    (item,) = report.excluded_suite(dict(LIST["excluded_suites"][0], suite="scale"), None, not_built["scale"])
    assert item["status"] == "not_run" and item["reason"].startswith("its test binary did not build (/cache/logs/")


def test_a_failed_build_of_the_sim_itself_stops_the_run(tmp_path, monkeypatch):
    script = tmp_path / "build.sh"
    script.write_text("#!/bin/sh\necho 'build.sh: FAILED: kai-scheduler (logs in /cache/logs)' >&2\necho /cache/bin\nexit 1\n")
    script.chmod(0o755)
    monkeypatch.setattr(kai_e2e, "BUILD", str(script))
    with pytest.raises(SystemExit, match="building the sim failed"):
        kai_e2e.build(["upgrade"])


def test_the_pods_the_real_node_ran_are_counted_once_each_from_containerds_log(tmp_path):
    """One sandbox a pod: a pod whose sandbox was made again (same uid) counts once; the request
    lines (without 'returns sandbox id') and other lines count nothing."""
    logs = tmp_path / "node" / "logs"
    logs.mkdir(parents=True)

    def sandbox(name, uid, namespace, returns=True):
        tail = ' returns sandbox id \\"%s\\""' % ("f" * 64) if returns else '"'
        return ('time="2026-12-05T06:09:00Z" level=info msg="RunPodSandbox for name:\\"%s\\" uid:\\"%s\\" namespace:\\"%s\\"%s\n'
                % (name, uid, namespace, tail))

    (logs / "containerd.log").write_text(
        sandbox("job-a", "u1", "kai-q1", returns=False) + sandbox("job-a", "u1", "kai-q1") + sandbox("job-a", "u1", "kai-q1")
        + sandbox("job-b", "u2", "kai-q1") + sandbox("plugin", "u3", "kube-system") + 'level=info msg="something else"\n')
    assert kai_e2e.real_node_pods(str(tmp_path)) == {"kai-q1": 2, "kube-system": 1}
    assert kai_e2e.real_node_pods(str(tmp_path / "missing")) == {}


def test_the_scale_suites_specs_take_the_class_make_kai_scale_gave_them():
    entry = {"suite": "scale", "class": "sim_limit", "reason": "runs in make kai-scale"}
    spec = {"known_failures": [{"match": "very large", "class": "kai_v0.16.0", "reason": "a known KAI failure"}]}
    inventory = ["[It] K T ran [scale]", "[It] K T left [scale]", "[It] K T not reached [scale]", "[It] K T very large [scale]",
                 "[It] K T broke [scale]", "[It] K T new [scale]"]
    results = {"nodes": 10, "date": "2026-12-07", "specs": [
        {"spec": "K T ran", "state": "passed", "seconds": 3.0, "reason": ""},
        {"spec": "K T left", "state": "excluded", "seconds": 0, "reason": "sim_limit: takes hours"},
        {"spec": "K T not reached", "state": "not run", "seconds": 0, "reason": "the suite's --timeout ended the run before it"},
        {"spec": "K T very large", "state": "failed", "seconds": 9.0, "reason": "timed out"},
        {"spec": "K T broke", "state": "interrupted", "seconds": 9.0, "reason": "interrupted"},
        {"spec": "K gone", "state": "-", "seconds": 0, "reason": "not a spec of this version of the suite"}]}
    found = dict((item["spec"], item) for item in report.scale_suite(entry, inventory, results, spec))
    assert [found[name]["status"] for name in inventory] == ["passed", "excluded", "not_run", "failed", "failed", "excluded"]
    assert found["[It] K T left [scale]"]["cls"] == "sim_limit" and found["[It] K T left [scale]"]["reason"].startswith("takes hours")
    assert found["[It] K T very large [scale]"]["cls"] == "kai_v0.16.0"
    assert found["[It] K T broke [scale]"]["cls"] == "ours"  # a failure no entry names is ours
    assert found["[It] K T new [scale]"]["reason"] == "runs in make kai-scale"  # not in that run: the suite's exclusion
    assert found["[It] K T not reached [scale]"]["reason"].endswith("did not run it (the suite's --timeout ended the run before it)")
    assert report.plain_name("[It] A B c [scale, nccl]") == "A B c"
