"""tools/kai_scale.py: bad parameters refused before anything is built, each results entry given to the spec
that ran when it appeared, and every spec of the suite counted once, in one class."""

import importlib.util
import json
import os
import signal
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools"))
_spec = importlib.util.spec_from_file_location("kai_scale", os.path.join(ROOT, "tools", "kai_scale.py"))
kai_scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kai_scale)


@pytest.mark.parametrize("argv, field", [
    (["--nodes", "19"], "--nodes (NODE_COUNT)"),
    (["--nodes", "5001"], "--nodes (NODE_COUNT)"),
    (["--nodes", "ten"], "--nodes (NODE_COUNT)"),
    (["--timeout", "0"], "--timeout"),
    (["--focus", "("], "--focus"),
])
def test_bad_parameters_are_refused_naming_the_field_and_nothing_is_built(argv, field, tmp_path):
    report_dir = tmp_path / "report"
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "kai_scale.py"), "--report-dir", str(report_dir)] + argv,
                          capture_output=True, text=True, check=False, env=dict(os.environ, SIM_BIN_ROOT=str(tmp_path / "bin")))
    assert done.returncode == 2
    assert field in done.stderr and "Nothing was built or created." in done.stderr, done.stderr
    assert not report_dir.exists() and not (tmp_path / "bin").exists()


def test_node_count_comes_from_the_environment_as_make_passes_it(monkeypatch):
    monkeypatch.setenv("NODE_COUNT", "1000")
    assert kai_scale.parse_args([]).nodes == 1000
    assert kai_scale.parse_args(["--nodes", "20"]).nodes == 20


def spec(leaf, start, end, state="passed", hierarchy=("Kwok scale test", "Big cluster"), message=""):
    return {"ContainerHierarchyTexts": list(hierarchy), "LeafNodeText": leaf, "LeafNodeType": "It", "State": state,
            "StartTime": start, "EndTime": end, "RunTime": 10 * 10 ** 9, "Failure": {"Message": message}}


def test_each_results_entry_goes_to_the_spec_that_ran_when_it_appeared():
    specs = {"A first": spec("first", "2026-12-07T10:00:00Z", "2026-12-07T10:05:00Z"),
             "A second": spec("second", "2026-12-07T10:05:01.5Z", "2026-12-07T10:09:00+00:00")}
    at = kai_scale.parse_time
    seen = [(at("2026-12-07T10:04:58Z"), 1), (at("2026-12-07T10:08:59Z"), 2)]
    results = [{"test_name": "Fill", "details": {"nodes": 10, "time": "1m"}}, {"test_name": "Reclaim", "details": {"nodes": 10}}]
    found = kai_scale.our_metrics(specs, results, seen)
    assert found == {"A first": [{"nodes": 10, "time": "1m", "test_name": "Fill"}], "A second": [{"nodes": 10, "test_name": "Reclaim"}]}
    # an entry seen when no spec ran is kept, under its own name
    assert list(kai_scale.our_metrics(specs, results[:1], [(at("2026-12-07T11:00:00Z"), 1)])) == ["(no spec: Fill)"]


def test_every_spec_is_counted_once_in_one_class(tmp_path):
    ours = {
        "K B ran": spec("ran", "2026-12-07T10:00:00Z", "2026-12-07T10:01:00Z"),
        "K B broke": spec("broke", "2026-12-07T10:01:00Z", "2026-12-07T10:02:00Z", state="failed", message="timed out"),
        "K B left out": spec("left out", "2026-12-07T10:02:00Z", "2026-12-07T10:02:00Z", state="skipped"),
        "K B not asked": spec("not asked", "2026-12-07T10:02:00Z", "2026-12-07T10:02:00Z", state="skipped"),
    }
    theirs = dict(ours, **{"K B only in theirs": spec("only in theirs", "2026-03-06T06:00:00Z", "2026-03-06T06:10:00Z")})
    theirs["K B ran"] = dict(theirs["K B ran"], ReportEntries=[{"Name": "Test Metrics", "Value": {"AsJSON": json.dumps({"nodes": 500})}}])
    meta = {"kai_version": "vX", "nodes": 10, "cluster": "c", "date": "d", "example": "e"}
    usage = {"peak_mib": {"etcd": 300, "kube-apiserver": 900}, "cpu_s": {"etcd": 12.0}}
    counts, rows = kai_scale.write_report(str(tmp_path), meta, ours, theirs, {"K B ran": [{"nodes": 10}]},
                                          [("left out", "sim_limit: a reason")], usage)
    assert counts == {"passed": 1, "failed": 1, "excluded": 1, "not_run": 1, "total": 4}  # the specs of the suite run
    by_spec = dict((row["spec"], row) for row in rows)
    assert by_spec["K B only in theirs"]["state"] == "-" and by_spec["K B only in theirs"]["kai_state"] == "passed"
    assert by_spec["K B left out"]["reason"] == "sim_limit: a reason"
    assert by_spec["K B ran"]["kai_figures"] == {"nodes": 500} and by_spec["K B ran"]["figures"] == [{"nodes": 10}]
    text = (tmp_path / "report.md").read_text()
    assert "| K B broke | failed (timed out) |" in text and "| kube-apiserver | 900 | 0 |" in text
    assert json.loads((tmp_path / "results.json").read_text())["counts"] == counts


def test_a_run_that_wrote_no_report_fails_every_spec(tmp_path):
    theirs = {"K B ran": spec("ran", "2026-03-06T06:00:00Z", "2026-03-06T06:10:00Z")}
    meta = {"kai_version": "vX", "nodes": 10, "cluster": "c", "date": "d", "example": "e"}
    counts, rows = kai_scale.write_report(str(tmp_path), meta, {}, theirs, {}, [], {"peak_mib": {}, "cpu_s": {}})
    assert counts["failed"] == 1 and counts["total"] == 1 and "no report" in rows[0]["reason"]


def test_a_spec_whose_container_moved_is_paired_by_its_own_text_when_that_names_one():
    ours = {"K B W Burst Runs": spec("Runs", "t", "t", hierarchy=("K", "B", "W", "Burst")),
            "K S fill": spec("fill", "t", "t", hierarchy=("K", "S")), "K T fill": spec("fill", "t", "t", hierarchy=("K", "T"))}
    theirs = {"K B Burst Runs": spec("Runs", "t", "t", hierarchy=("K", "B", "Burst")),
              "K S2 fill": spec("fill", "t", "t", hierarchy=("K", "S2")), "K T2 fill": spec("fill", "t", "t", hierarchy=("K", "T2"))}
    pairs, unpaired = kai_scale.paired(ours, theirs)
    assert pairs == {"K B W Burst Runs": theirs["K B Burst Runs"]}  # two specs named "fill" on each side: not paired
    assert sorted(unpaired) == ["K S2 fill", "K T2 fill"]


def test_each_spec_gets_the_peak_memory_of_kai_s_programs_while_it_ran(tmp_path):
    at = kai_scale.parse_time
    start, end = at("2026-12-07T10:00:00Z"), at("2026-12-07T10:01:00Z")
    scheduler = [[start - 30, 900], [start + 10, 400], [start + 50, 700], [end + 60, 1200]]  # 900 and 1200: outside the spec
    binder = [[start + 20, 150]]
    series = {"KAI kai-scheduler-default": scheduler, "KAI binder": binder, "kube-apiserver": [[start + 20, 2000]]}
    expected = {"KAI kai-scheduler-default": max(mib for t, mib in scheduler if start <= t <= end), "KAI binder": 150}
    assert kai_scale.peaks_between(series, start, end) == expected  # only KAI's programs, only inside the spec
    assert kai_scale.peaks_between(series, None, end) == {}
    ours = {"K B ran": spec("ran", "2026-12-07T10:00:00Z", "2026-12-07T10:01:00Z")}
    meta = {"kai_version": "vX", "nodes": 20, "cluster": "c", "date": "d", "example": "e"}
    usage = {"peak_mib": {"KAI binder": 150}, "cpu_s": {}, "series": series}
    _counts, rows = kai_scale.write_report(str(tmp_path), meta, ours, {}, {}, [], usage)
    assert rows[0]["kai_peak_mib"] == expected
    assert "| K B ran | passed | 10.0 | - | %d, %d |" % (expected["KAI binder"], expected["KAI kai-scheduler-default"]) \
        in (tmp_path / "report.md").read_text()


def test_the_picture_draws_both_panels_from_the_results_or_says_it_cannot(tmp_path):
    results = {"kai_version": "vX", "nodes": 20, "specs": [
        {"spec": "K B ran", "state": "passed", "seconds": 12.0, "kai_seconds": 80.0, "start": 100.0, "end": 112.0},
        {"spec": "K B broke", "state": "failed", "seconds": 3.0, "kai_seconds": 0, "start": 112.0, "end": 115.0}],
        "usage": {"series": {"KAI binder": [[100.0, 150], [110.0, 160]], "kube-apiserver": [[100.0, 900]], "etcd": [[100.0, 5]]}}}
    path = tmp_path / "scale.svg"
    try:
        import matplotlib  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError:  # requirements/bench.txt, which make kai-scale installs: without it, no picture and False
        assert kai_scale.draw(str(path), results) is False and not path.exists()
        return
    assert kai_scale.draw(str(path), results)
    text = path.read_text()
    assert "K B ran" in text and "K B broke" in text and "KAI binder" in text and "kube-apiserver" in text
    assert "etcd" not in text  # the memory panel shows KAI's scheduler and binder and the API server only


def test_specs_the_suite_s_timeout_ended_are_not_run_with_the_reason_not_failed(tmp_path):
    ginkgo = tmp_path / "ginkgo.json"
    ginkgo.write_text(json.dumps([{"SpecialSuiteFailureReasons": ["Interrupted by Timeout"], "SpecReports": []}]))
    assert kai_scale.suite_timed_out(str(ginkgo))
    ginkgo.write_text(json.dumps([{"SpecialSuiteFailureReasons": [], "SpecReports": []}]))
    assert not kai_scale.suite_timed_out(str(ginkgo)) and not kai_scale.suite_timed_out(str(tmp_path / "none.json"))
    ours = {"K B ran": spec("ran", "2026-12-07T10:00:00Z", "2026-12-07T10:01:00Z"),
            "K B running": spec("running", "2026-12-07T10:01:00Z", "2026-12-07T10:02:00Z", state="interrupted",
                                message="Interrupted by Timeout"),
            "K B later": spec("later", "2026-12-07T10:02:00Z", "2026-12-07T10:02:00Z", state="skipped",
                              message="Spec skipped because interrupted by Timeout"),
            "K B broke": spec("broke", "2026-12-07T10:00:00Z", "2026-12-07T10:00:30Z", state="failed", message="Expected")}
    ours["T not asked"] = spec("not asked", "2026-12-07T10:00:00Z", "2026-12-07T10:00:00Z", state="skipped")
    meta = {"kai_version": "vX", "nodes": 500, "cluster": "c", "date": "d", "example": "e", "timed_out": True, "timeout_min": 80,
            "focus": "K B"}
    counts, rows = kai_scale.write_report(str(tmp_path), meta, ours, {}, {}, [], {"peak_mib": {}, "cpu_s": {}})
    by_spec = dict((row["spec"], row) for row in rows)
    assert counts == {"passed": 1, "failed": 1, "excluded": 0, "not_run": 3, "total": 5}
    assert "--timeout of 80 minutes ended the run during it" in by_spec["K B running"]["reason"]
    assert "before it" in by_spec["K B later"]["reason"]
    assert by_spec["T not asked"]["reason"] == "not asked for (--focus K B)"  # --focus left it out, not the timeout
    # without the suite's timeout, an interrupted spec is a failure
    counts, _rows = kai_scale.write_report(str(tmp_path), dict(meta, timed_out=False), ours, {}, {}, [], {"peak_mib": {}, "cpu_s": {}})
    assert counts["failed"] == 3 and counts["not_run"] == 1


def test_bench_fleet_s_picture_gains_the_scale_suite_as_a_second_row_or_says_it_cannot(tmp_path):
    import bench_fleet  # pylint: disable=import-outside-toplevel
    stages = [{"stage": name, "p50": 1.0} for name, _begin, _end in bench_fleet.KAI_STAGES]
    fill = {"curve": [0.5, 1.0, 1.5], "stages": stages}
    rows = [(8, 64, None, fill, fill)]
    scale = {"kai_version": "vX", "nodes": 500, "specs": [
        {"spec": "K B fill the cluster", "state": "passed", "seconds": 90.0, "kai_seconds": 80.0, "start": 100.0, "end": 190.0}],
        "usage": {"series": {"KAI binder": [[100.0, 150], [110.0, 160]]}}}
    with_scale, without = tmp_path / "with.svg", tmp_path / "without.svg"
    drawn = bench_fleet.draw(str(with_scale), rows, [], None, scale)
    assert drawn == bench_fleet.draw(str(without), rows, [], None, None)
    if not drawn:  # without matplotlib (requirements/bench.txt): no picture
        assert not with_scale.exists() and not without.exists()
        return
    assert "K B fill the cluster" in with_scale.read_text() and "K B fill the cluster" not in without.read_text()


def ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_a_signal_ends_the_run_through_its_cleanup_even_when_sigint_came_ignored(tmp_path, signum):
    marker = tmp_path / "cleaned"
    program = ("import os, signal, sys, time\n"
               "sys.path.insert(0, %r)\n"
               "import kai_scale\n"
               "kai_scale.cleanup_on_sigterm()\n"
               "try:\n"
               "    os.kill(os.getpid(), signal.%s)\n"
               "    time.sleep(30)\n"
               "finally:\n"
               "    open(%r, 'w').close()\n") % (os.path.join(ROOT, "tools"), signum, str(marker))
    # started as a background job starts it: SIGINT ignored
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False,
                          preexec_fn=ignore_sigint)
    assert marker.exists(), done.stderr  # the finally ran: main's cleanup would have
    assert done.returncode == 128 + int(getattr(signal, signum))
