"""The sim_kai role refuses bad input clearly and leaves nothing half-started.

Fake KAI programs (small scripts in a directory of the test's) stand in for the real ones where
a case needs a program to misbehave; the cluster is the session's sim cluster.
"""

import os
import socket
import stat
import sys

import pytest

from conftest import run_playbook, session_members, sim_process_pids

PLAYBOOK = os.path.join(os.path.dirname(__file__), "playbooks", "sim_kai.yml")
PROGRAMS = ["scheduler", "binder", "admission", "podgrouper", "podgroupcontroller", "queuecontroller", "resourcereservation"]


def fake_bin(directory, version="v0.16.0", scheduler="import time; time.sleep(600)", **programs):
    """KAI's binaries as Python scripts: kai-crds says ``version``; kai-scheduler runs ``scheduler``, other programs their body in ``programs``."""
    os.makedirs(directory)
    bodies = dict((p, "import time; time.sleep(600)") for p in PROGRAMS)
    bodies.update(programs, scheduler=scheduler)
    bodies["crds"] = "print('kai-crds github.com/kai-scheduler/KAI-scheduler %s')" % version
    for name, body in bodies.items():
        path = os.path.join(directory, "kai-" + name)
        with open(path, "w") as handle:
            handle.write("#!/usr/bin/env python3\n%s\n" % body)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return directory


def role_vars(sim_cluster, tmp_path, **more):
    cluster = {k: v for k, v in sim_cluster.items() if k.startswith("sim_cluster_")}
    return dict(cluster, sim_kai_workdir=str(tmp_path / "kai"), sim_kai_wait_timeout=20, **more)


def namespaces(kube):
    return {n["metadata"]["name"] for n in kube.resources.get(api_version="v1", kind="Namespace").get().to_dict()["items"]}


def test_a_kai_version_the_sim_has_no_flags_for_is_refused(kube, sim_cluster, tmp_path):
    bins = fake_bin(str(tmp_path / "bin"), version="v0.15.0")
    # a versions.env whose KAI_BUILD_VERSION the sim has no flags for (the version the role reads from it)
    done = run_playbook(role_vars(sim_cluster, tmp_path, sim_kai_bin_dir=bins, sim_kai_version="v0.15.0"), playbook=PLAYBOOK)
    assert done.returncode != 0
    assert "KAI v0.15.0 (the sim cluster's, KAI_BUILD_VERSION of the collection's versions.env) is not a version the sim knows " \
        "its operator's flags for: v0.16.0, v0.17.0. Nothing was changed." in " ".join(done.stdout.split()), done.stdout[-3000:]
    assert not os.path.exists(str(tmp_path / "kai"))
    assert "kai-scheduler" not in namespaces(kube)


def test_a_program_that_exits_at_start_fails_with_its_last_lines_and_nothing_is_left_running(kube, sim_cluster, tmp_path):
    bins = fake_bin(str(tmp_path / "bin"), scheduler="print('unknown flag: --scheduler-conf'); raise SystemExit(2)")
    done = run_playbook(role_vars(sim_cluster, tmp_path, sim_kai_bin_dir=bins), playbook=PLAYBOOK)
    assert done.returncode != 0
    assert "kai-scheduler-default exited with code 2" in done.stdout, done.stdout[-3000:]
    assert "unknown flag: --scheduler-conf" in done.stdout
    assert sim_process_pids(str(tmp_path / "kai")) == []
    assert "kai-scheduler" not in namespaces(kube), "the cluster was changed before the programs answered"


def test_a_port_already_taken_is_named_and_nothing_starts(kube, sim_cluster, tmp_path):
    bins = fake_bin(str(tmp_path / "bin"))
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        done = run_playbook(role_vars(sim_cluster, tmp_path, sim_kai_bin_dir=bins,
                                      sim_kai_ports={"kai-scheduler-default-metrics": port}), playbook=PLAYBOOK)
    finally:
        holder.close()
    assert done.returncode != 0
    assert "kai-scheduler-default was not started: port 127.0.0.1:%d is already in use by pid %d" % (port, os.getpid()) in done.stdout, done.stdout[-3000:]
    leaders = sim_process_pids(str(tmp_path / "kai"))
    assert leaders == [] and session_members(leaders) == []


@pytest.mark.parametrize("timeout, message", [
    (0, "sim_kai_reservation_timeout must be a positive whole number of seconds (got 0)"),
    (-5, "sim_kai_reservation_timeout must be a positive whole number of seconds (got -5)"),
    ("40s", "sim_kai_reservation_timeout"),
    (2.5, "sim_kai_reservation_timeout"),
])
def test_a_reservation_timeout_that_is_not_positive_seconds_is_refused(kube, sim_cluster, tmp_path, timeout, message):
    bins = fake_bin(str(tmp_path / "bin"))
    done = run_playbook(role_vars(sim_cluster, tmp_path, sim_kai_bin_dir=bins, sim_kai_reservation_timeout=timeout),
                        playbook=PLAYBOOK)
    assert done.returncode != 0
    assert message in done.stdout, done.stdout[-3000:]
    assert not os.path.exists(str(tmp_path / "kai"))


@pytest.mark.parametrize("name, value, message", [
    ("sim_kai_binder_qps", 0, "sim_kai_binder_qps and sim_kai_binder_burst must be whole numbers >= 1 (got 0, 100)"),
    # the role's argument spec refuses it first
    ("sim_kai_binder_burst", "lots", "argument 'sim_kai_binder_burst' is of type str and we were unable to convert to int"),
    ("sim_kai_schedule_period", "250", "sim_kai_schedule_period a Go duration such as 250ms or 2s, or empty for KAI's default 1s (got '250')"),
    ("sim_kai_schedule_period", "fast", "(got 'fast')"),
    ("sim_kai_scheduler_qps", 100, "sim_kai_scheduler_qps and sim_kai_scheduler_burst both whole numbers >= 1 or both empty (got '100', '')"),
])
def test_client_limits_or_a_cycle_that_are_not_valid_are_refused(kube, sim_cluster, tmp_path, name, value, message):
    bins = fake_bin(str(tmp_path / "bin"))
    done = run_playbook(role_vars(sim_cluster, tmp_path, sim_kai_bin_dir=bins, **{name: value}), playbook=PLAYBOOK)
    assert done.returncode != 0
    assert message in done.stdout, done.stdout[-3000:]
    assert not os.path.exists(str(tmp_path / "kai"))
    assert "kai-scheduler" not in namespaces(kube)


# a fake program that writes its arguments to a file and answers on :8080 (the scheduler's and the binder's health port)
RECORD_AND_SERVE = """import http.server, sys
with open(%r, "w") as handle:
    handle.write("\\n".join(sys.argv[1:]))
class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")
http.server.HTTPServer(("", 8080), Answer).serve_forever()
"""


def test_the_binders_client_limits_and_the_schedulers_cycle_reach_their_command_lines(sim_cluster, tmp_path):
    bins = fake_bin(str(tmp_path / "bin"), scheduler=RECORD_AND_SERVE % str(tmp_path / "scheduler.args"),
                    binder=RECORD_AND_SERVE % str(tmp_path / "binder.args"))
    flags = dict(sim_kai_binder_qps=500, sim_kai_binder_burst=2000, sim_kai_schedule_period="250ms", sim_kai_scheduler_qps=400,
                 sim_kai_scheduler_burst=900)
    done = run_playbook(dict(role_vars(sim_cluster, tmp_path, sim_kai_bin_dir=bins, **flags), sim_kai_wait_timeout=10), playbook=PLAYBOOK)
    # the scheduler and the binder start and answer; the fake admission does not, so the role stops them all and fails
    assert done.returncode != 0 and "admission" in done.stdout, done.stdout[-3000:]
    with open(str(tmp_path / "binder.args")) as handle:
        binder = handle.read().splitlines()
    with open(str(tmp_path / "scheduler.args")) as handle:
        scheduler = handle.read().splitlines()
    assert "--qps=500" in binder and "--burst=2000" in binder and not [a for a in binder if a in ("--qps=20", "--burst=100")]
    assert "--schedule-period=250ms" in scheduler and "--qps=400" in scheduler and "--burst=900" in scheduler
    assert sim_process_pids(str(tmp_path / "kai")) == []


def test_without_the_sim_clusters_facts_the_role_names_what_it_needs(tmp_path):
    done = run_playbook(dict(sim_kai_workdir=str(tmp_path / "kai")), playbook=os.path.join(os.path.dirname(__file__), "playbooks", "sim_kai_alone.yml"))
    assert done.returncode != 0
    assert "sim_kai_cluster must be the fact the sim_cluster role publishes (sim_cluster_made" in done.stdout, done.stdout[-3000:]
    assert not os.path.exists(str(tmp_path / "kai"))


def test_a_reservation_runner_started_under_its_name_before_0_3_0_is_stopped_first(kube, sim_cluster, tmp_path, module):
    # Before 0.3.0 the runner's process was named kai-operator; a second runner would run each reservation pod twice.
    state_dir = str(tmp_path / "kai")
    old = module("sim_process", name="kai-operator", state_dir=state_dir, argv=[sys.executable, "-c", "import time; time.sleep(600)"])
    assert old.get("changed") and not old.get("failed"), old
    old_pids = sim_process_pids(state_dir)
    assert len(old_pids) == 1
    bins = fake_bin(str(tmp_path / "bin"), scheduler="raise SystemExit(2)")
    done = run_playbook(role_vars(sim_cluster, tmp_path, sim_kai_bin_dir=bins), playbook=PLAYBOOK)
    assert done.returncode != 0 and "kai-scheduler-default exited with code 2" in done.stdout, done.stdout[-3000:]
    assert sim_process_pids(state_dir) == [] and session_members(old_pids) == []
