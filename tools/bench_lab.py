"""Benchmark: the lab, step by step (warm binaries), as users run it.

Runs, on a cluster of its own (the sim's, with the lab's default GPU node, the real one; or kind's):
playbooks/lab11.yml from nothing to the report, the same again
(the idempotent re-run), ``--tags verify`` alone, then playbooks/cleanup.yml. Prints one table:
seconds per step (role; the lab11 role's claims task, and under it each claim as the report times it) for each run, the totals, the
changed-task counts, the re-run and verify runs as ratios of the first run, and the reservation
timeout on a line of its own, beside the time C8 took.

Then what the runs' module calls cost: for each run, its module runs to Kubernetes, its other module
runs and its controller-side tasks, with their seconds; and, measured in the same process on the same
cluster before its cleanup, the cost of one plain module task (ansible.builtin.stat) and of one
kubernetes.core.k8s_info task, 20 of each. Those costs times the re-run's runs are what the re-run
spends on calls alone, however little each call does.

Then, for each run, the slowest tasks (summed over their loops), to show where the time goes, and
last one machine-readable line:
``bench-lab platform=<sim-kubelet|sim-kwok|kind> first_s=<s> rerun_s=<s> rerun_ratio=<x> verify_s=<s> cleanup_s=<s>``.

usage: python tools/bench_lab.py [--platform sim|kind] [--boundary library_stand_in|library_missing] [--node-runtime kubelet|kwok]
                                [--reservation-timeout 40] [--slowest 10]
       (make bench-lab BENCH_ARGS='...'; the sim's real node and kind need root; --node-runtime kwok: kwok plays the sim's GPU node)
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))
from ansible_collections.gpulab.kai_hami.plugins.module_utils.cache_dir import cache_dir  # noqa: E402  pylint: disable=wrong-import-position

BIN = os.path.dirname(sys.executable)
NAME = "bench-lab"


def run(playbook, extra, out, tags=None):
    """One ansible-playbook run (a playbook of playbooks/, or one by its absolute path) with the step timer; returns (wall seconds, its JSON, returncode)."""
    argv = [os.path.join(BIN, "ansible-playbook"), os.path.join(ROOT, "playbooks", playbook), "-e", json.dumps(extra)]
    if tags:
        argv += ["--tags", tags]
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_PLUGINS=os.path.join(ROOT, "tools", "callback_plugins"),
               ANSIBLE_CALLBACKS_ENABLED="step_timer", STEP_TIMER_OUT=out)
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-2000:])
    with open(out) as handle:
        timed = json.load(handle)
    # each claim's own seconds, from the report the run wrote (lab_claim times each claim)
    report = os.path.join(extra.get("lab11_report_dir", ""), "claims.json")
    if os.path.exists(report) and os.path.getmtime(report) >= time.time() - wall - 1:
        with open(report) as handle:
            for record in json.load(handle)["claims"]:
                timed["steps"]["  " + record["id"]] = record.get("seconds", 0.0)
    return wall, timed, done.returncode


PER_CALL_PLAYBOOK = """
- name: The cost of one module call, plain and to Kubernetes
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: A plain module
      ansible.builtin.stat:
        path: /
      loop: "{{ range(20) | list }}"
    - name: A module that talks to Kubernetes
      kubernetes.core.k8s_info:
        kubeconfig: "{{ lab11_kubeconfig }}"
        kind: Namespace
        name: default
      loop: "{{ range(20) | list }}"
"""


def per_call(extra, work):
    """Seconds per run of a plain module and of a Kubernetes module, on the bench's cluster."""
    playbook = os.path.join(work, "per_call.yml")
    with open(playbook, "w") as handle:
        handle.write(PER_CALL_PLAYBOOK)
    _wall, timed, returncode = run(playbook, extra, os.path.join(work, "per_call.json"))
    kinds = timed["kinds"]
    if returncode != 0 or not kinds["module"]["runs"] or not kinds["kubernetes"]["runs"]:
        return None
    return {kind: kinds[kind]["seconds"] / kinds[kind]["runs"] for kind in ("module", "kubernetes")}


def changed(timed):
    return sum(totals.get("changed", 0) for totals in timed["totals"].values())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="sim", choices=["sim", "kind"],
                        help="the sim, or kind (with a Docker engine, or podman and the node image and images built locally)")
    parser.add_argument("--boundary", default="library_missing", choices=["library_missing", "library_stand_in"])
    parser.add_argument("--node-runtime", default="kubelet", choices=["kubelet", "kwok"],
                        help="the sim's GPU node: a real node (kubelet and containerd; root), the lab's default, or played by kwok")
    parser.add_argument("--reservation-timeout", type=int, default=40)
    parser.add_argument("--slowest", type=int, default=10, help="how many of each run's slowest tasks to list")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-lab-")
    extra = dict(lab11_platform=args.platform, lab11_cluster_name=NAME, lab11_report_dir=os.path.join(work, "report"),
                 lab11_boundary=args.boundary, lab11_reservation_timeout=args.reservation_timeout)
    if args.platform == "sim":
        sim = os.path.join(work, "sim")
        extra.update(sim_cluster_workdir=sim, lab11_kubeconfig=os.path.join(sim, "kubeconfig"), lab11_sim_node_runtime=args.node_runtime)
    else:
        # kind keeps its kubeconfig where the lab's playbooks look for a kind cluster of that name
        extra.update(lab11_kubeconfig=cache_dir("kind", NAME, "kubeconfig"))
    runs = []
    cost = None
    try:
        for label, playbook, tags in (("first run", "lab11.yml", None), ("re-run", "lab11.yml", None),
                                      ("--tags verify", "lab11.yml", "verify"), ("cleanup", "cleanup.yml", None)):
            if label == "cleanup":
                cost = per_call(extra, work)
            wall, timed, returncode = run(playbook, extra, os.path.join(work, "%d.json" % len(runs)), tags)
            runs.append((label, wall, timed, returncode))
    finally:
        if not runs or runs[-1][0] != "cleanup":
            run("cleanup.yml", extra, os.path.join(work, "cleanup.json"))
        shutil.rmtree(work, ignore_errors=True)

    steps = []
    for _label, _wall, timed, _rc in runs:
        steps += [step for step in timed["steps"] if step not in steps]
    width = max(len(step) for step in steps + ["wall time (whole run)"])
    if args.platform == "kind":
        where = "kind"
    else:
        where = "the sim, GPU node %s" % ("real (kubelet, containerd)" if args.node_runtime == "kubelet" else "played by kwok")
    print("Lab 11 on %s, boundary %s, seconds (warm binaries)" % (where, args.boundary))
    print("%-*s" % (width, "step") + "".join("%15s" % label for label, _w, _t, _rc in runs))
    for step in steps:
        print("%-*s" % (width, step) + "".join("%15.1f" % timed["steps"].get(step, 0.0) for _l, _w, timed, _rc in runs))
    print("%-*s" % (width, "wall time (whole run)") + "".join("%15.1f" % wall for _l, wall, _t, _rc in runs))
    print("%-*s" % (width, "changed tasks") + "".join("%15d" % changed(timed) for _l, _w, timed, _rc in runs))
    print("%-*s" % (width, "exit code") + "".join("%15d" % rc for _l, _w, _t, rc in runs))
    first = runs[0][1]
    print("ratio re-run / first run: %.2f; --tags verify / first run: %.2f" % (runs[1][1] / first, runs[2][1] / first))
    print("reservation timeout: %d s (the most KAI's binder waits for a reservation pod); the first run's C8 took %.1f s"
          % (args.reservation_timeout, runs[0][2]["steps"].get("  C8", 0.0)))
    print("what the runs spend, by kind of task (runs: each loop item and retry; seconds: from each task's start to the next's)")
    for kind, says in (("kubernetes", "module runs to Kubernetes"), ("module", "other module runs"),
                       ("controller", "controller-side tasks")):
        counted = "tasks" if kind == "controller" else "runs"
        cells = ["%d in %.1f s" % (timed["kinds"][kind][counted], timed["kinds"][kind]["seconds"]) for _l, _w, timed, _rc in runs]
        print("%-*s" % (width, says) + "".join("%15s" % cell for cell in cells))
    if cost:
        kinds = runs[1][2]["kinds"]
        floor = kinds["kubernetes"]["runs"] * cost["kubernetes"] + kinds["module"]["runs"] * cost["module"]
        print("one call, measured in this process: a plain module %.2f s, a Kubernetes module %.2f s (%.1fx); the re-run's calls at those"
              " costs: %.1f s of its %.1f s (%.2f of the first run)"
              % (cost["module"], cost["kubernetes"], cost["kubernetes"] / cost["module"], floor, runs[1][1], floor / first))
    for label, _wall, timed, _rc in runs:
        slowest = sorted(timed.get("tasks", {}).items(), key=lambda item: -item[1])[:args.slowest]
        print("slowest tasks, %s:" % label)
        for task, seconds in slowest:
            print("  %6.1f  %s" % (seconds, task))
    walls = dict((label, wall) for label, wall, _t, _rc in runs)
    platform = "kind" if args.platform == "kind" else "sim-" + args.node_runtime
    print("bench-lab platform=%s first_s=%.1f rerun_s=%.1f rerun_ratio=%.2f verify_s=%.1f cleanup_s=%.1f"
          % (platform, first, walls["re-run"], walls["re-run"] / first, walls["--tags verify"], walls["cleanup"]))
    return 0 if all(rc == 0 for _l, _w, _t, rc in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
