"""playbooks/lab11.yml and playbooks/cleanup.yml on the sim platform, end to end.

The sim's GPU node is a real node (kubelet, containerd): KAI (the version the module proxy
serves) is installed on it by its own chart and operator, from images built from its module; the
isolator's stand-in runs there in a pod, behind its Service. On the lab Molecule's sim scenario converged (and found
idempotent), these tests assert what the cluster really did (every claim holds, C8 as the
expected failure), ``--tags verify``, the isolator's opt-outs through the admission chain, each
of the sim's processes killed in turn showing up as failing claims that name it and coming back
on a re-run with nothing lost, the lab's Step 3 warning about late labels, and that cleanup leaves no object, process, listener or work dir
behind; and the bad inputs refused before anything exists.
"""

import json
import math
import os
import re
import signal
import subprocess
import time

import pytest
from kubernetes import config, dynamic

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.versions import read as read_versions

from conftest import MOLECULE_SIM_NAME, BIN, alive, cluster_pids, listeners_of, pid_files, run_playbook, session_members, sim_process_pids, step_succeeded
from simtools import sigint_as_from_a_terminal

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAB = os.path.join(ROOT, "playbooks", "lab11.yml")
CLEANUP = os.path.join(ROOT, "playbooks", "cleanup.yml")
NAME = MOLECULE_SIM_NAME
NODE = NAME + "-control-plane"
# nvml-mock's a100 profile, the lab's default (lab11_gpu_profile: a100), as its chart defines it.
PROFILE = dict(product="NVIDIA A100-SXM4-40GB", memory_mib=40960, count=8)
PODS = ("kai-whole-gpu", "gpu-sharing-with-isolation", "lab11-missing-queue-probe")
KAI_DEPLOYMENTS = ["admission", "binder", "kai-operator", "kai-scheduler-default", "pod-grouper", "podgroup-controller", "queue-controller"]
WEBHOOK_CONFIGURATIONS = {"mutating-kai-admission", "validating-kai-admission", "kai-queue-validation-v2",
                          "kai-podgroup-validation-v2alpha2", "kai-resource-isolator-mutating"}


def lab_vars(tmp_path, **more):
    workdir = str(tmp_path / "sim")
    return dict(dict(lab11_platform="sim", lab11_cluster_name=NAME, sim_cluster_workdir=workdir,
                     lab11_kubeconfig=os.path.join(workdir, "kubeconfig"),
                     lab11_report_dir=str(tmp_path / "report"), lab11_wait_timeout=120), **more)


def expected_allocation(request_mib, label_mib):
    """KAI's arithmetic, written out in this test independently of the collection's filters."""
    node = label_mib - label_mib % 100
    return round(1 + math.ceil(request_mib / node * 100) / 100, 2)


def sim_leaders(workdir, parts=("kai", "kai-resource-isolator", "agent")):
    """Pids of the processes the lab started besides kwokctl's (KAI, the stand-ins, the sim's agent)."""
    return [pid for sub in parts for pid in sim_process_pids(os.path.join(workdir, sub))]


def pinned_versions():
    """The collection's table of versions (versions.env), by name."""
    return read_versions()


def exec_in(workdir, pod, *command):
    """``kubectl exec`` into a pod of the lab's default namespace: what the command printed."""
    done = subprocess.run([os.path.join(BIN, "kubectl"), "--kubeconfig", os.path.join(workdir, "kubeconfig"), "exec", "-n", "default", pod, "--"]
                          + list(command), capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, (pod, command, done.stderr)
    return done.stdout


def helm(workdir, *args):
    """``helm <args> -o json`` with the helm the helm_binary role installs (its pinned version), its output read."""
    version = pinned_versions()["HELM_VERSION"]
    binary = os.path.join(os.path.expanduser("~"), ".cache", "gpulab-kai-hami", "helm", version, "bin", "helm")
    done = subprocess.run([binary, "--kubeconfig", os.path.join(workdir, "kubeconfig")] + list(args) + ["-o", "json"],
                          capture_output=True, text=True, check=True, timeout=60)
    return json.loads(done.stdout)


def helm_releases(workdir, namespace):
    """``helm list`` in ``namespace``."""
    return helm(workdir, "list", "-n", namespace)


def claims_of(tmp_path):
    return {c["id"]: c for c in json.loads((tmp_path / "report" / "claims.json").read_text())["claims"]}


@pytest.mark.real_node
def test_molecule_test_sim(molecule_sim):
    """The lab as written on the sim: create, converge, idempotence (0 changed), verify (all eight
    claims, C8 the expected failure). Its destroy runs at the end of this module (conftest)."""
    returncode, output = molecule_sim["returncode"], molecule_sim["output"]
    assert returncode == 0, output[-6000:]
    failed = [step for step in ("syntax", "create", "converge", "idempotence", "verify") if not step_succeeded(output, "sim", step)]
    assert failed == [], output[-6000:]
    # verify's own verdict on the claims report (molecule/sim/vars/lab11.yml says which must hold)
    assert "holding: ['C1', 'C2', 'C3', 'C4', 'C5', 'C6', 'C7', 'C8']" in output, output[-6000:]


# Every playbook-level variable with a wrong type or value, and the words the refusal must say.
# Each is refused before anything exists: no sim work dir, no report, no process.
BAD_INPUTS = [
    # the platform
    (dict(lab11_platform="docker"), "value of lab11_platform must be one of: auto, kind, sim, existing, got: docker"),
    (dict(lab11_platform=7), "value of lab11_platform must be one of: auto, kind, sim, existing, got: 7"),
    (dict(lab11_platform="existing", lab11_kubeconfig="/nonexistent/kubeconfig"),
     "lab11_kubeconfig /nonexistent/kubeconfig is not a file: lab11_platform=existing needs the kubeconfig"),
    (dict(lab11_platform="existing", lab11_boundary="library_stand_in", lab11_kubeconfig="/nonexistent/kubeconfig"),
     "lab11_boundary library_stand_in needs the NVML stand-in library where KAI's reservation app runs"),
    (dict(lab11_boundary="crossed"), "value of lab11_boundary must be one of: library_missing, library_stand_in, mock_nvml, got: crossed"),
    # the cluster name
    (dict(lab11_cluster_name="Bad_Name"), "lab11_cluster_name must be a DNS label of at most 32 characters"),
    (dict(lab11_cluster_name=""), "lab11_cluster_name must be a DNS label of at most 32 characters"),
    (dict(lab11_cluster_name="a" * 40), "lab11_cluster_name must be a DNS label of at most 32 characters"),
    # the GPU profile and its counts
    (dict(lab11_gpu_profile="h200"), "lab11_gpu_profile must be one of a100, or a dict with name, product, memory_mib, count (got 'h200')"),
    (dict(lab11_gpu_profile={"name": "mine", "count": 8, "product": "x"}), "lab11_gpu_profile needs lab11_gpu_profile.memory_mib"),
    (dict(lab11_gpu_profile={"name": "a100", "count": "eight"}), "lab11_gpu_profile.count must be a whole number, got 'eight'"),
    (dict(lab11_gpu_profile={"name": "a100", "count": 0}), "lab11_gpu_profile.count must be 1 to 64, got 0"),
    (dict(lab11_gpu_profile={"name": "a100", "count": -2}), "lab11_gpu_profile.count must be a whole number, got -2"),
    (dict(lab11_gpu_profile={"name": "a100", "memory_mib": 50}), "lab11_gpu_profile.memory_mib must be at least 100, got 50"),
    (dict(lab11_gpu_profile={"name": "a100", "memory_mib": "lots"}), "lab11_gpu_profile.memory_mib must be a whole number, got 'lots'"),
    (dict(lab11_gpu_profile={"name": "a100", "cores": 4}), "lab11_gpu_profile has unknown fields cores; it takes name, product, memory_mib, count"),
    (dict(lab11_gpu_profile=7), "lab11_gpu_profile must be a profile name (a100) or a dict"),
    # the nodes
    (dict(lab11_nodes=[]), "lab11_nodes must be a non-empty list of nodes"),
    (dict(lab11_nodes=[{"name": "Bad_Node"}]), "lab11_nodes[0].name must be a node name"),
    (dict(lab11_nodes=["n1", {"name": "n2", "gpu_profile": "t4"}]), "lab11_nodes[1].gpu_profile must be one of a100"),
    (dict(lab11_nodes="bad-control-plane"), "lab11_nodes must be a non-empty list of nodes, each {name: ..., gpu_profile: ...} (got 'bad-control-plane')"),
    # the timeouts
    (dict(lab11_reservation_timeout="soon"), "argument 'lab11_reservation_timeout' is of type str and we were unable to convert to int"),
    (dict(lab11_reservation_timeout=0), "lab11_reservation_timeout and lab11_wait_timeout must be positive numbers of seconds (got 0 and"),
    (dict(lab11_reservation_timeout=-5), "must be positive numbers of seconds (got -5 and"),
    (dict(lab11_wait_timeout="later"), "argument 'lab11_wait_timeout' is of type str and we were unable to convert to int"),
    (dict(lab11_wait_timeout=0), "must be positive numbers of seconds (got 40 and 0)"),
    # the report directory and the kubeconfig
    (dict(lab11_report_dir="/etc/hostname"), "lab11_report_dir /etc/hostname cannot be written"),
    (dict(lab11_report_dir="/nonexistent-parent/report"), "lab11_report_dir /nonexistent-parent/report cannot be written"),
    (dict(lab11_report_dir={"a": 1}), "lab11_report_dir, lab11_kubeconfig and lab11_docker_socket must be paths (got dict"),
    (dict(lab11_kubeconfig=["/tmp/kubeconfig"]), "must be paths (got str"),
    # the queues
    (dict(lab11_queue="Team_A"), "lab11_queue must be a queue name: lowercase letters, digits, '-' and '.' (got Team_A)"),
    (dict(lab11_queue="team-b"), "one of the queues lab11_queues makes (default, default-queue)"),
    (dict(lab11_queue=""), "lab11_queue must be a queue name: lowercase letters, digits, '-' and '.' (got )"),
    (dict(lab11_queues="default"), "Elements value for option 'lab11_queues' is of type str and we were unable to convert to dict"),
    (dict(lab11_queues=[{"name": "default"}, {"name": "default-queue", "parent_queue": "default"},
                        {"name": "team-a", "parent_queue": "default-queue"}]),
     "and a leaf: KAI runs workloads only in leaf queues (parents: default, default-queue)"),
    # the switches
    (dict(lab11_fail_on_claims="maybe"), "argument 'lab11_fail_on_claims' is of type str and we were unable to convert to bool"),
]


@pytest.mark.parametrize("more, message", BAD_INPUTS, ids=["%s=%r" % next(iter(case[0].items())) for case in BAD_INPUTS])
def test_bad_input_is_refused_before_anything_exists(tmp_path, more, message):
    variables = lab_vars(tmp_path, **dict(dict(lab11_cluster_name="bad"), **more))
    done = run_playbook(variables, playbook=LAB)
    if os.path.exists(str(tmp_path / "sim")):  # not refused: take down what it started, then fail below
        run_playbook(variables, playbook=CLEANUP)
    assert done.returncode != 0
    assert message in done.stdout, done.stdout[-3000:]
    assert not os.path.exists(str(tmp_path / "sim")), "a cluster was started before the input was refused"
    assert not os.path.exists(str(tmp_path / "report")), "a report was written before the input was refused"
    name = variables["lab11_cluster_name"]
    assert not (isinstance(name, str) and name and os.path.exists(os.path.expanduser("~/.cache/gpulab-kai-hami/sim/" + name))), \
        "a work dir was made before the input was refused"


def test_the_boundarys_name_before_0_3_0_is_read_with_a_deprecation_warning(tmp_path):
    """lab11_boundary=mock_nvml means library_stand_in (on an existing cluster refused, before anything exists)."""
    variables = lab_vars(tmp_path, lab11_cluster_name="bad", lab11_platform="existing", lab11_boundary="mock_nvml",
                         lab11_kubeconfig="/nonexistent/kubeconfig")
    done = run_playbook(variables, playbook=LAB)
    refused = "lab11_boundary library_stand_in needs the NVML stand-in library where KAI's reservation app runs"
    assert done.returncode != 0 and refused in done.stdout, done.stdout[-3000:]
    output = " ".join((done.stdout + done.stderr).split())
    assert "lab11_boundary=mock_nvml is renamed lab11_boundary=library_stand_in since gpulab.kai_hami 0.3.0" in output, output[-3000:]
    assert not os.path.exists(str(tmp_path / "sim")) and not os.path.exists(str(tmp_path / "report"))


def test_auto_without_docker_and_without_go_is_refused(tmp_path):
    path = [BIN] + [p for p in os.environ["PATH"].split(os.pathsep) if not os.path.exists(os.path.join(p, "go"))]
    env = dict(os.environ, PATH=os.pathsep.join(path))
    done = run_playbook(lab_vars(tmp_path, lab11_platform="auto", lab11_docker_socket=str(tmp_path / "no-docker.sock")),
                        playbook=LAB, env=env)
    assert done.returncode != 0
    assert "lab11_platform=auto found no Docker engine on %s" % (tmp_path / "no-docker.sock") in done.stdout, done.stdout[-3000:]
    assert "and no Go toolchain" in done.stdout
    assert not os.path.exists(str(tmp_path / "sim"))


def client(kubeconfig):
    return dynamic.DynamicClient(config.new_client_from_config(config_file=kubeconfig))


def names(kube, api_version, kind, namespace=None):
    return sorted(item["metadata"]["name"] for item in kube.resources.get(api_version=api_version, kind=kind).get(namespace=namespace).to_dict()["items"])


# What each part of the sim serves, by claim (the lab's library_missing boundary: C1-C8). Every
# claim needs the cluster; the real node's kubelet and containerd advertise C1's GPUs, run C5's
# and C8's pods, and run KAI, installed by its chart, and the isolator's stand-in (C4, C7) in
# their containers: every claim needs them. No process of the sim's own stands for KAI or the
# isolator, and the agent (which keeps the readiness of Deployments that stand for local
# processes) decides no claim.
CLAIMS_NEEDING = {"cluster": {"C%d" % n for n in range(1, 9)}, "agent": set(), "node": {"C%d" % n for n in range(1, 9)}}
BESIDE = "lab11-beside"  # the second lab's cluster name
# kube-apiserver before etcd: with etcd gone first, the API server would hang each request on it.
CLUSTER_KILL_ORDER = ["kwok-controller", "kube-controller-manager", "kube-apiserver", "etcd"]


def sim_processes(workdir, cluster_name=NAME):
    """Every process of a lab on the sim by part, from its pid file: [(part, name, pid)], in the order the crash test kills them."""
    # (kai and isolator: local processes where kwok plays every node; none with a real node)
    dirs = [("kai", os.path.join(workdir, "kai")), ("isolator", os.path.join(workdir, "kai-resource-isolator")),
            ("agent", os.path.join(workdir, "agent")), ("node", os.path.join(workdir, "node", "processes")),
            ("cluster", os.path.join(workdir, "kwok", "clusters", cluster_name, "pids"))]
    found = []
    for part, directory in dirs:
        pids = pid_files(directory)
        names = sorted(pids, key=lambda n: CLUSTER_KILL_ORDER.index(n) if n in CLUSTER_KILL_ORDER else -1) if part == "cluster" else pids
        found += [(part, name, pids[name]) for name in names]
    return found


def lab_state(kube):
    """What must survive a crash: the queues, the GPU node's labels and the lab's pods, by uid."""
    queues = {q["metadata"]["name"]: q["metadata"]["uid"]
              for q in kube.resources.get(api_version="scheduling.run.ai/v2", kind="Queue").get().to_dict()["items"]}
    labels = kube.resources.get(api_version="v1", kind="Node").get(name=NODE).to_dict()["metadata"]["labels"]
    pods = {p["metadata"]["name"]: p["metadata"]["uid"] for p in kube.resources.get(api_version="v1", kind="Pod").get(namespace="default").to_dict()["items"]}
    return dict(queues=queues, labels={k: v for k, v in labels.items() if k.startswith("nvidia.com/")}, pods={n: pods.get(n) for n in PODS})


@pytest.mark.real_node
def test_each_killed_process_fails_the_claims_needing_it_and_a_rerun_restarts_it_on_its_data(molecule_sim, tmp_path):
    """Kill every process of the sim in turn (the agent, the real node's
    containerd and kubelet, then kwok, kube-controller-manager, kube-apiserver and etcd): after
    each kill, --tags verify fails the claims that need it, naming it with its pid, while the
    claims needing nothing killed yet still hold (with the agent killed, every claim holds: KAI,
    installed by its chart, does not need it); then a plain re-run starts each again, on the same
    etcd data, and every claim holds."""
    assert molecule_sim["returncode"] == 0, "molecule test -s sim failed: see test_molecule_test_sim"
    workdir = molecule_sim["workdir"]
    variables = dict(lab11_platform="sim", lab11_cluster_name=NAME, lab11_report_dir=str(tmp_path / "report"), lab11_wait_timeout=120)
    (tmp_path / "report").mkdir()
    kube = client(os.path.join(workdir, "kubeconfig"))
    before = lab_state(kube)
    assert before["queues"] and before["labels"] and all(before["pods"].values()), before
    processes = sim_processes(workdir)
    assert {part for part, _n, _p in processes} == set(CLAIMS_NEEDING) and len(processes) >= 8, processes
    assert {name for part, name, _p in processes if part == "node"} == {"containerd", "kubelet"}, processes
    killed, killed_parts = [], set()
    try:
        for part, name, pid in processes:
            assert alive(pid), "%s (pid %d) was not running before the test killed it" % (name, pid)
            if part == "cluster":
                os.kill(pid, signal.SIGKILL)
            else:
                os.killpg(pid, signal.SIGKILL)  # sim_process leads a session: the program and its wrapper
            deadline = time.time() + 10
            while alive(pid) and time.time() < deadline:
                time.sleep(0.2)
            killed.append((part, name, pid))
            killed_parts.add(part)
            started = time.time()
            verify = run_playbook(variables, dict(lab11_wait_timeout=5), playbook=LAB, options=["--tags", "verify"])
            failing = set().union(*(CLAIMS_NEEDING[k] for k in killed_parts))
            assert (verify.returncode != 0) == bool(failing), "verify %s with %s killed" % ("passed" if failing else "failed", name)
            # --tags verify reads only: it starts nothing again (the roles it asks only name their parts); its one
            # change is the report, whose outcome the kill changed
            assert tasks_changed(verify.stdout) <= {VERIFY_TASK}, tasks_changed(verify.stdout)
            assert "TASK [gpulab.kai_hami.sim_cluster : Start the dead ones again" not in verify.stdout
            report = json.loads((tmp_path / "report" / "claims.json").read_text())
            claims = {c["id"]: c for c in report["claims"]}
            line = "not running: %s (%s, pid %d)" % (name, part, pid)
            for claim_id in CLAIMS_NEEDING[part]:
                assert claims[claim_id]["verdict"] == "fails" and line in claims[claim_id]["evidence"], (name, claims[claim_id])
            untouched = {c for c in claims if not any(c in CLAIMS_NEEDING[k] for k in killed_parts)}
            assert all(claims[c]["ok"] for c in untouched), (name, {c: claims[c] for c in untouched})
            # the report names the dead processes that a claim depends on
            assert {n for p, n, _pid in killed if CLAIMS_NEEDING[p]} <= set(report["processes_not_running"]), report["processes_not_running"]
            print("killed %-30s %-8s verify %.0f s: failing %s" % (name, part, time.time() - started, sorted(c for c in claims if not claims[c]["ok"])))
    finally:
        rerun = run_playbook(variables, playbook=LAB)
    assert rerun.returncode == 0, rerun.stdout[-6000:]
    assert "started again on their data: " in rerun.stdout
    assert [c for c, v in claims_of(tmp_path).items() if not v["ok"]] == []
    assert not any(alive(pid) for _part, _name, pid in killed)
    assert all(alive(pid) for _part, _name, pid in sim_processes(workdir))
    after = lab_state(client(os.path.join(workdir, "kubeconfig")))
    assert after == before, "the restart lost or remade objects"


VERIFY_TASK = "gpulab.kai_hami.lab11 : Prove the claims (C1-C8, and C9 with the NVML stand-in library) and write the report"


def tasks_changed(stdout):
    """The names of the tasks a play's output reports changed."""
    return set(re.findall(r"^TASK \[(.*)\] \**\n(?:(?!TASK \[).*\n)*?changed: ", stdout, re.M))


# Each tagged step of playbooks/lab11.yml by the banner of the task that begins it.
STEP_BANNERS = {
    "cluster": "TASK [Start the sim cluster",
    "gpu": "TASK [Fake GPUs with nvml-mock (Step 2)]",
    "kai": "TASK [KAI on the sim, by its own chart and operator",
    "isolator": "TASK [The isolator webhook's stand-in (Step 5; on the sim, and on kind from local images)]",
    "workloads": "TASK [gpulab.kai_hami.lab11 : Run the lab's workloads (Step 6, Step 7 and C3's probe)]",
    "verify": "TASK [gpulab.kai_hami.lab11 : Prove the claims from live evidence and write the report]",
}


def interrupted_run(variables, step):
    """playbooks/lab11.yml, interrupted as Ctrl-C does (SIGINT to its process group) when the first
    task inside ``step`` begins; returns (returncode, output).

    ansible-core can lose a Ctrl-C that lands while it forks a worker (its KeyboardInterrupt is
    raised in an after-fork hook, where Python prints and ignores it), and the run goes on. A user
    then presses Ctrl-C again; so does this, at each next task until the run ends."""
    command = [os.path.join(BIN, "ansible-playbook"), "-i", os.path.join(ROOT, "tests", "integration", "inventory.yml"), LAB,
               "-e", json.dumps(variables)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"), preexec_fn=sigint_as_from_a_terminal)
    output, in_step, sent = [], False, False
    for line in proc.stdout:
        output.append(line)
        if line.startswith(STEP_BANNERS[step]):
            in_step = True
        elif in_step and line.startswith("TASK ["):
            try:
                os.killpg(proc.pid, signal.SIGINT)
            except ProcessLookupError:  # the run has ended; its last lines are still being read
                pass
            sent = True
    proc.wait()
    assert sent, "the run never reached the step %s:\n%s" % (step, "".join(output[-60:]))
    return proc.returncode, "".join(output)


@pytest.mark.real_node
def test_runs_interrupted_at_each_step_converge(molecule_sim, tmp_path):
    """Ctrl-C at the first task of each step in turn (gpu, kai, isolator, workloads, verify), each
    run on what the interrupted one before it left: each gets through the step the one before was
    interrupted in, and the next plain run converges with every claim holding. (The cluster step
    is interrupted on a lab made from nothing, in the test of two labs side by side.)"""
    assert molecule_sim["returncode"] == 0, "molecule test -s sim failed: see test_molecule_test_sim"
    variables = dict(lab11_platform="sim", lab11_cluster_name=NAME, lab11_report_dir=str(tmp_path / "report"), lab11_wait_timeout=120)
    steps = ["gpu", "kai", "isolator", "workloads", "verify"]
    for before, step in zip([None] + steps, steps):
        returncode, output = interrupted_run(variables, step)
        assert returncode != 0, output[-3000:]  # ansible-core says "User interrupted execution", or ends in a traceback of its own
        reached = output.split(STEP_BANNERS[step], maxsplit=1)[0]
        assert "fatal:" not in reached, "the run failed before it reached %s (after one interrupted at %s)" % (step, before)
    rerun = run_playbook(variables, playbook=LAB)
    assert rerun.returncode == 0, rerun.stdout[-6000:]
    assert [c for c, v in claims_of(tmp_path).items() if not v["ok"]] == []


def lab_pids(workdir, cluster_name=NAME):
    """Every process of a lab on the sim: its cluster's, and the members of its other processes' sessions."""
    processes = sim_processes(workdir, cluster_name)
    cluster = [pid for part, _n, pid in processes if part == "cluster"]
    return cluster + session_members([pid for part, _n, pid in processes if part != "cluster"])


def lab_listeners(workdir, cluster_name=NAME):
    """The TCP listeners of every process of a lab on the sim."""
    return listeners_of(lab_pids(workdir, cluster_name))


@pytest.mark.real_node
def test_a_second_lab_beside_the_first_clashes_with_nothing_and_its_cleanup_leaves_the_first_healthy(molecule_sim, tmp_path):
    """Two lab11_cluster_names on one machine. A second real node is refused before anything of
    it is created, naming the first's kubelet (kubelets share the host's device plugin
    directory). The second lab with a node kwok plays, made from nothing by a run interrupted
    (Ctrl-C) as its cluster starts and a re-run, comes up beside the first with every claim
    holding, neither shares a listener port or a file with the other, and cleaning the second
    leaves the first's processes (same pids), listeners and claims as they were."""
    assert molecule_sim["returncode"] == 0, "molecule test -s sim failed: see test_molecule_test_sim"
    first_dir = molecule_sim["workdir"]
    first = dict(lab11_platform="sim", lab11_cluster_name=NAME, lab11_report_dir=str(tmp_path / "first" / "report"),
                 lab11_wait_timeout=120)
    (tmp_path / "first").mkdir()
    first_processes, first_listeners = sim_processes(first_dir), lab_listeners(first_dir)
    real = lab_vars(tmp_path / "real", lab11_cluster_name=BESIDE)
    (tmp_path / "real").mkdir()
    refused = run_playbook(real, playbook=LAB)
    kubelet = [pid for part, name, pid in first_processes if (part, name) == ("node", "kubelet")]
    assert refused.returncode != 0 and "another real node runs on the host (pid %d:" % kubelet[0] in refused.stdout, refused.stdout[-4000:]
    assert "lab11_sim_node_runtime=kwok" in refused.stdout and "Nothing was created" in refused.stdout
    assert not os.path.exists(real["sim_cluster_workdir"]) and not (tmp_path / "real" / "report").exists()
    second = lab_vars(tmp_path / "second", lab11_cluster_name=BESIDE, lab11_sim_node_runtime="kwok")
    second_dir = second["sim_cluster_workdir"]
    try:
        (tmp_path / "second").mkdir()
        returncode, output = interrupted_run(second, "cluster")  # Ctrl-C as the second lab's cluster starts
        assert returncode != 0, output[-3000:]
        up = run_playbook(second, playbook=LAB)
        assert up.returncode == 0, up.stdout[-6000:]
        assert [c for c, v in claims_of(tmp_path / "second").items() if not v["ok"]] == []
        # its node's runtime was chosen when it was made: asking for a real node now changes nothing
        before = sim_processes(second_dir, BESIDE)
        switched = run_playbook(dict(second, lab11_sim_node_runtime="kubelet"), playbook=LAB)
        assert switched.returncode != 0 and "sim cluster %s was made with its GPU node played by kwok" % BESIDE in switched.stdout, \
            switched.stdout[-3000:]
        assert "Nothing was changed" in switched.stdout and sim_processes(second_dir, BESIDE) == before
        second_listeners = lab_listeners(second_dir, BESIDE)
        print("listeners: first %s; second %s" % (sorted(a for a, _p in first_listeners), sorted(a for a, _p in second_listeners)))
        assert second_listeners and not {a for a, _p in first_listeners} & {a for a, _p in second_listeners}
        first_pids, second_pids = lab_pids(first_dir), lab_pids(second_dir, BESIDE)
        assert not set(first_pids) & set(second_pids)
        for pids, other_dir, says in ((second_pids, first_dir, "the second lab uses the first's files"),
                                      (first_pids, second_dir, "the first lab uses the second's files")):
            open_files = {path for pid in pids for path in files_open_by(pid)}
            assert not [path for path in open_files if path.startswith(other_dir + os.sep)], says
        assert run_playbook(first, playbook=LAB, options=["--tags", "verify"]).returncode == 0
    finally:
        down = run_playbook(second, playbook=CLEANUP)
    assert down.returncode == 0, down.stdout[-4000:]
    assert not os.path.exists(second_dir)
    assert sim_processes(first_dir) == first_processes and all(alive(pid) for _part, _n, pid in first_processes)
    assert sorted(lab_listeners(first_dir)) == sorted(first_listeners)
    verify = run_playbook(first, playbook=LAB, options=["--tags", "verify"])
    assert verify.returncode == 0, verify.stdout[-4000:]
    assert [c for c, v in claims_of(tmp_path / "first").items() if not v["ok"]] == []


def files_open_by(pid):
    """Paths of the files a process holds open (from /proc/<pid>/fd)."""
    paths = []
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                paths.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
            except OSError:
                pass
    except OSError:
        pass
    return paths


@pytest.mark.real_node
def test_the_lab_on_the_sim_holds_and_is_cleaned_up(molecule_sim, tmp_path):
    assert molecule_sim["returncode"] == 0, "molecule test -s sim failed: see test_molecule_test_sim"
    workdir = molecule_sim["workdir"]
    variables = dict(lab11_platform="sim", lab11_cluster_name=molecule_sim["name"], lab11_report_dir=str(tmp_path / "report"),
                     lab11_wait_timeout=120)
    pids, leaders = [], []
    try:
        first = run_playbook(variables, playbook=LAB, options=["--tags", "verify"])
        assert first.returncode == 0, first.stdout[-6000:]
        assert "Lab 11 runs on the sim platform (asked for)" in first.stdout
        report = json.loads((tmp_path / "report" / "claims.json").read_text())
        claims = {c["id"]: c for c in report["claims"]}
        assert [c for c in claims if not claims[c]["ok"]] == [], json.dumps(report, indent=1)
        assert claims["C8"]["verdict"] == "holds (expected failure)"
        assert any("unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND" in line for line in claims["C8"]["evidence"])
        assert report["platform"] == "sim" and report["kai_version"].startswith("v0.1")
        # the GPU node is real: its kubelet and containerd as built (versions.env), the GPUs advertised by
        # NVIDIA's device plugin on the nvml-mock stand-in, and the stand-ins named
        versions = pinned_versions()
        assert report["node"] == "kubelet %s, containerd %s" % (versions["K8S_VERSION"], versions["CONTAINERD_VERSION"].lstrip("v")), report
        assert claims["C1"]["decided_by"].startswith("NVIDIA's device plugin %s through the kubelet's device manager"
                                                     % versions["DEVICE_PLUGIN_VERSION"]), claims["C1"]["decided_by"]
        assert claims["C1"]["decided_by"].endswith(": node %s's allocatable nvidia.com/gpu" % NODE), claims["C1"]["decided_by"]
        assert "stand-in" in report["isolator"] and report["isolator"] in report["stand_ins"]
        assert [s for s in report["stand_ins"] if "nvml-mock stand-in" in s] and len(report["stand_ins"]) == 3, report["stand_ins"]
        assert [s for s in report["stand_ins"] if "NVIDIA container runtime stand-in" in s], report["stand_ins"]
        assert report["kai_version"] in claims["C6"]["decided_by"] and "stand-in" in claims["C4"]["decided_by"]
        # KAI by its own chart and operator, as the lab's Step 4 installs it: the release of KAI's chart at
        # the version the sim built, the operator and the six components it made Running in containers
        kai = report["kai_version"]
        assert report["kai"] == "KAI %s (chart kai-scheduler-%s, operator %s)" % (kai, kai, kai), report["kai"]
        assert [(r["name"], r["chart"], r["app_version"], r["status"]) for r in helm_releases(workdir, "kai-scheduler")] == [
            ("kai-scheduler", "kai-scheduler-" + kai, kai, "deployed")]
        assert claims["C2"]["evidence"][3] == "without a Running pod: none" and claims["C2"]["decided_by"].startswith(report["kai"])

        kube = client(os.path.join(workdir, "kubeconfig"))
        node = kube.resources.get(api_version="v1", kind="Node").get(name=NODE).to_dict()
        labels = node["metadata"]["labels"]
        assert (labels["nvidia.com/gpu.memory"], labels["nvidia.com/gpu.product"], labels["nvidia.com/gpu.count"]) == (
            str(PROFILE["memory_mib"]), "-".join(PROFILE["product"].split()), str(PROFILE["count"]))  # GFD's label: '-' for spaces
        # C6 from the cluster's own words, against arithmetic done in this test
        expected = expected_allocation(20480, int(labels["nvidia.com/gpu.memory"]))
        assert "expected 1 + kai_gpu_fraction(20480, %s) = %s" % (labels["nvidia.com/gpu.memory"], expected) in claims["C6"]["evidence"][0]
        assert "allocated: <%s>" % expected in claims["C6"]["evidence"][1]
        # C5: bound by KAI through a BindRequest, not by anyone naming a node
        whole = kube.resources.get(api_version="v1", kind="Pod").get(name="kai-whole-gpu", namespace="default").to_dict()
        assert whole["status"]["phase"] == "Running" and whole["spec"]["nodeName"] == NODE
        bind = kube.resources.get(api_version="scheduling.run.ai/v1alpha2", kind="BindRequest").get(name="kai-whole-gpu", namespace="default").to_dict()
        assert bind["spec"]["selectedNode"] == NODE
        # C3: the missing-queue pod stays Pending with KAI's own reason
        probe = kube.resources.get(api_version="v1", kind="Pod").get(name="lab11-missing-queue-probe", namespace="default").to_dict()
        assert probe["status"]["phase"] == "Pending"
        events = kube.resources.get(api_version="v1", kind="Event").get(
            namespace="default", field_selector="involvedObject.name=lab11-missing-queue-probe").to_dict()["items"]
        assert any(e["reason"] == "Unschedulable" and "QueueDoesNotExist" in e["message"] for e in events), events
        # C7: the shared pod as the API server stored it: KAI's admission and the stand-in both acted
        shared = kube.resources.get(api_version="v1", kind="Pod").get(name="gpu-sharing-with-isolation", namespace="default").to_dict()
        container = shared["spec"]["containers"][0]
        assert shared["spec"]["runtimeClassName"] == "nvidia"
        env = {e["name"]: e for e in container["env"]}
        assert "configMapKeyRef" in env["CUDA_DEVICE_MEMORY_LIMIT"]["valueFrom"]
        assert env["CONTAINER_VGPU_MOUNT"]["value"] == "/usr/local/vgpu"
        mounts = {(m["mountPath"], m.get("subPath")) for m in container["volumeMounts"]}
        assert {("/etc/ld.so.preload", "ld.so.preload"), ("/usr/local/vgpu", None)} <= mounts
        isolator_opt_outs(kube)
        queues = {q["metadata"]["name"]: q["spec"].get("parentQueue") for q in
                  kube.resources.get(api_version="scheduling.run.ai/v2", kind="Queue").get().to_dict()["items"]}
        assert queues == {"default": None, "default-queue": "default", "default-parent-queue": None}
        assert set(names(kube, "apps/v1", "Deployment", "kai-scheduler")) == set(KAI_DEPLOYMENTS)
        kai_pods = kube.resources.get(api_version="v1", kind="Pod").get(namespace="kai-scheduler").to_dict()["items"]
        running = {p["metadata"]["ownerReferences"][0]["name"].rsplit("-", 1)[0]: p for p in kai_pods if p["status"]["phase"] == "Running"}
        assert set(running) == set(KAI_DEPLOYMENTS), sorted(running)
        for deployment, pod in running.items():
            status = pod["status"]["containerStatuses"][0]
            assert pod["spec"]["nodeName"] == NODE and status["ready"] and status["containerID"].startswith("containerd://"), (deployment, status)
            assert pod["spec"]["containers"][0]["image"].endswith(":" + kai), pod["spec"]["containers"][0]["image"]
        # the operator's webhooks name their Services (as KAI's operator registers them), not URLs
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for configuration in kube.resources.get(api_version="admissionregistration.k8s.io/v1", kind=kind).get().to_dict()["items"]:
                if configuration["metadata"]["name"] in WEBHOOK_CONFIGURATIONS and "kai-resource-isolator" not in configuration["metadata"]["name"]:
                    assert all(w["clientConfig"]["service"]["namespace"] == "kai-scheduler" for w in configuration["webhooks"]), configuration
        # the isolator's stand-in runs as its chart runs the webhook: a pod of the real node, Ready in a
        # container, behind the Service its webhook configuration names; C4 read the pod's own log
        isolator = kube.resources.get(api_version="admissionregistration.k8s.io/v1", kind="MutatingWebhookConfiguration").get(
            name="kai-resource-isolator-mutating").to_dict()
        assert [w["clientConfig"].get("service") for w in isolator["webhooks"]] == [
            {"name": "kai-resource-isolator-webhook", "namespace": "kai-resource-isolator", "path": "/mutate", "port": 443}], isolator
        (webhook_pod,) = kube.resources.get(api_version="v1", kind="Pod").get(namespace="kai-resource-isolator").to_dict()["items"]
        status = webhook_pod["status"]["containerStatuses"][0]
        assert webhook_pod["spec"]["nodeName"] == NODE and status["ready"] and status["containerID"].startswith("containerd://"), status
        assert webhook_pod["metadata"]["annotations"]["gpulab.kai-hami/runs"] == report["isolator"]
        assert claims["C4"]["evidence"][0].startswith("webhook log: ") and "listen=:8443" in claims["C4"]["evidence"][0], claims["C4"]
        assert WEBHOOK_CONFIGURATIONS <= set(names(kube, "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")
                                             + names(kube, "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"))

        # Every listener of the cluster and of the lab's own processes is on 127.0.0.1 (KAI's pods
        # listen inside their own network namespaces), but the kubelet's API, on the node's own
        # address (its bridge's), as on a kind node.
        pids = cluster_pids(workdir, NAME)
        leaders = sim_leaders(workdir, ("kai", "kai-resource-isolator", "agent", os.path.join("node", "processes")))
        listening = listeners_of(pids + session_members(leaders))
        print("listeners: %s" % listening)
        internal_ip = [a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"][0]
        assert internal_ip.startswith("10.") and "%s:%s" % (internal_ip, node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]) in {
            address for address, _pid in listening}, listening
        assert len(listening) >= 10 and all(address.startswith("127.0.0.1:") for address, pid in listening
                                            if not address.startswith(internal_ip + ":")), listening
        # C5's pod runs its command (sleep) in a container of the real node: the container's PID 1
        spec = kube.resources.get(api_version="v1", kind="Pod").get(name="kai-whole-gpu", namespace="default").to_dict()["spec"]["containers"][0]
        command = (spec.get("command") or []) + (spec.get("args") or [])
        assert command[0] == "sleep" and exec_in(workdir, "kai-whole-gpu", "cat", "/proc/1/cmdline").split("\0")[:-1] == command

        every_claim_can_fail(variables, tmp_path)

        late_label_experiment(kube, variables, workdir)

        # A re-run finds KAI's release deployed with the chart version and values asked for: helm is not
        # run, and the output says so. A changed value is not skipped: helm upgrades the release with it.
        (release,) = helm_releases(workdir, "kai-scheduler")
        same = run_playbook(variables, playbook=LAB, options=["--tags", "kai"])
        assert same.returncode == 0, same.stdout[-4000:]
        assert ("helm not run: release kai-scheduler in kai-scheduler is deployed with chart kai-scheduler-%s (revision %s)"
                % (kai, release["revision"])) in same.stdout, same.stdout[-4000:]
        assert helm_releases(workdir, "kai-scheduler")[0]["revision"] == release["revision"]
        chart_values = {"global": {"nodeSelector": {"kubernetes.io/hostname": NODE}}, "gpulabProbe": "a changed value"}
        changed = run_playbook(variables, dict(sim_kai_chart_values=chart_values), playbook=LAB, options=["--tags", "kai"])
        assert changed.returncode == 0, changed.stdout[-4000:]
        assert "helm not run" not in changed.stdout
        (upgraded,) = helm_releases(workdir, "kai-scheduler")
        assert (int(upgraded["revision"]), upgraded["status"]) == (int(release["revision"]) + 1, "deployed"), upgraded
        assert helm(workdir, "get", "values", "kai-scheduler", "-n", "kai-scheduler")["gpulabProbe"] == "a changed value"

        lab_processes = sim_leaders(workdir, ("kai",))
        inside = run_playbook(variables, dict(cleanup_keep_cluster=True), playbook=CLEANUP)
        assert inside.returncode == 0, inside.stdout[-4000:]
        assert not set(PODS) & set(names(kube, "v1", "Pod", "default"))
        assert names(kube, "scheduling.run.ai/v2", "Queue") == []
        assert names(kube, "node.k8s.io/v1", "RuntimeClass") == []
        assert names(kube, "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") == []
        assert names(kube, "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") == []
        assert not {"kai-scheduler", "kai-resource-reservation", "kai-resource-isolator"} & set(names(kube, "v1", "Namespace"))
        # the release is gone, and with it every cluster-wide object of KAI's chart and operator
        assert [n for n in names(kube, "rbac.authorization.k8s.io/v1", "ClusterRole") if n.startswith("kai-")] == []
        assert [n for n in names(kube, "scheduling.k8s.io/v1", "PriorityClass") if n in ("train", "build", "inference", "build-preemptible")] == []
        # the GPU labels are the node's own on the sim (the sim_cluster role made it so, as GPU feature discovery would): they stay
        labels = kube.resources.get(api_version="v1", kind="Node").get(name=NODE).to_dict()["metadata"]["labels"]
        assert labels["nvidia.com/gpu.count"] == str(PROFILE["count"])
        assert not os.path.exists(os.path.join(workdir, "kai")) and not os.path.exists(os.path.join(workdir, "kai-resource-isolator"))
        assert session_members(lab_processes) == [], "a process of KAI's survived cleanup"
    finally:
        leaders = leaders or sim_leaders(workdir)
        down = run_playbook(variables, playbook=CLEANUP)
    assert down.returncode == 0, down.stdout[-4000:]
    assert not any(os.path.exists("/proc/%d" % pid) for pid in pids)
    assert session_members(leaders) == []
    assert listeners_of(pids) == []
    assert not os.path.exists(workdir)


def every_claim_can_fail(variables, tmp_path):
    """Each claim fails, with its evidence, for the reason it exists - on the running lab, by
    asking it to expect something the cluster does not do (nothing in the lab is changed except
    C3's extra probe pod, which is deleted again)."""
    wrong = dict(
        lab11_gpu_profile={"name": "a100", "count": PROFILE["count"] + 1},   # C1: one GPU more than the node has
        lab11_whole_gpu_pod="kai-no-such-pod",                                # C5: a whole-GPU pod that never ran
        lab11_shared_request_mib=10240,                                       # C6: another allocation than KAI's
        lab11_expected_boundary="reserved",                                   # C8: the boundary crossed
        lab11_wait_timeout=5,
    )
    done = run_playbook(variables, wrong, playbook=LAB, options=["--tags", "verify"])
    assert done.returncode != 0
    claims = claims_of(tmp_path)
    verdicts = dict((c, claims[c]["verdict"]) for c in claims)
    assert verdicts == {"C1": "fails", "C2": "holds", "C3": "holds", "C4": "holds", "C5": "fails", "C6": "fails",
                        "C7": "holds", "C8": "fails"}, verdicts
    assert claims["C1"]["evidence"] == ["node %s allocatable nvidia.com/gpu: %d (expected %d)" % (NODE, PROFILE["count"], PROFILE["count"] + 1)]
    assert claims["C5"]["evidence"][0].startswith("pod default/kai-no-such-pod is missing")
    fraction = math.ceil(10240 / (PROFILE["memory_mib"] - PROFILE["memory_mib"] % 100) * 100) / 100
    assert "expected 1 + kai_gpu_fraction(10240, %d) = %s" % (PROFILE["memory_mib"], 1 + fraction) in claims["C6"]["evidence"][0]
    # C8: the reservation failed, as KAI's binder tells it at the moment of reading: the app's NVML
    # error while a reservation pod runs, or only the binder's timeout between two of its attempts
    # (it deletes the timed-out reservation pod, and its log with it, before it makes the next).
    c8 = claims["C8"]["evidence"]
    assert c8[0].startswith("verdict: nvml_unavailable (expected reserved)") or c8[0].startswith(
        "verdict: reservation_timeout (expected reserved)"), c8
    if "nvml_unavailable" in c8[0]:
        assert any("ERROR_LIBRARY_NOT_FOUND" in line for line in c8), c8
    else:
        assert any("failed waiting for GPU reservation pod to allocate" in line for line in c8), c8
    # C7: a pod the isolator and KAI's admission never touched (the whole-GPU pod) as the shared pod
    done = run_playbook(variables, dict(lab11_shared_pod="kai-whole-gpu", lab11_wait_timeout=5), playbook=LAB, options=["--tags", "verify"])
    claims = claims_of(tmp_path)
    assert claims["C7"]["verdict"] == "fails" and claims["C7"]["evidence"][0].endswith("missing"), claims["C7"]
    # C3: a probe pod whose queue exists is scheduled - no QueueDoesNotExist
    done = run_playbook(variables, dict(lab11_probe_pod="lab11-queue-exists-probe", lab11_missing_queue="default-queue", lab11_wait_timeout=5),
                        playbook=LAB, options=["--tags", "workloads,verify"])
    claims = claims_of(tmp_path)
    assert claims["C3"]["verdict"] == "fails" and "no QueueDoesNotExist event" in claims["C3"]["evidence"][1], claims["C3"]
    kube = client(os.path.join(os.path.expanduser("~"), ".cache", "gpulab-kai-hami", "sim", NAME, "kubeconfig"))
    kube.resources.get(api_version="v1", kind="Pod").delete(name="lab11-queue-exists-probe", namespace="default", body={"gracePeriodSeconds": 0})


def isolator_opt_outs(kube):
    """Through the real admission chain (server-side dry-runs): a pod annotated
    kai-resource-isolator.io/inject "false", and a pod in a namespace labelled
    kai-resource-isolator.io/webhook: ignore, get none of the isolator's changes - while KAI's
    admission still gives them runtimeClassName nvidia - and an annotated pod gets them all."""
    pods = kube.resources.get(api_version="v1", kind="Pod")
    namespaces = kube.resources.get(api_version="v1", kind="Namespace")

    def dry_run(namespace, annotations):
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "lab11-opt-out", "annotations": annotations},
                "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "app", "image": "busybox:1.37"}]}}
        created = pods.create(body=body, namespace=namespace, dry_run="All").to_dict()
        volumes = [v["name"] for v in created["spec"].get("volumes", []) if v["name"].startswith("kai-resource-isolator-")]
        env = [e["name"] for e in created["spec"]["containers"][0].get("env", [])]
        return created["spec"].get("runtimeClassName"), volumes, env

    runtime, volumes, env = dry_run("default", {"gpu-memory": "1024"})
    assert runtime == "nvidia" and len(volumes) == 3 and "CONTAINER_VGPU_MOUNT" in env
    runtime, volumes, env = dry_run("default", {"gpu-memory": "1024", "kai-resource-isolator.io/inject": "false"})
    assert runtime == "nvidia" and volumes == [] and "CONTAINER_VGPU_MOUNT" not in env
    namespaces.create(body={"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": "lab11-isolator-ignored", "labels": {"kai-resource-isolator.io/webhook": "ignore"}}})
    try:
        runtime, volumes, env = dry_run("lab11-isolator-ignored", {"gpu-memory": "1024"})
        assert runtime == "nvidia" and volumes == [] and "CONTAINER_VGPU_MOUNT" not in env
    finally:
        namespaces.delete(name="lab11-isolator-ignored")


def scheduler_container(pods):
    """KAI's scheduler's pod and container, as (pod uid, containerID, restarts): the same while it was not restarted."""
    found = [p for p in pods.get(namespace="kai-scheduler").to_dict()["items"]
             if p["metadata"]["name"].startswith("kai-scheduler-default-") and p["status"]["phase"] == "Running"]
    assert len(found) == 1, [p["metadata"]["name"] for p in found]
    status = found[0]["status"]["containerStatuses"][0]
    return found[0]["metadata"]["uid"], status["containerID"], status["restartCount"]


def late_label_experiment(kube, variables, workdir):
    """The lab's Step 3 warns that a gpu.memory label added after KAI starts is never seen
    without a scheduler restart. Remove the label, submit a gpu-memory pod, label the node
    again, and see whether KAI's running scheduler (same container) schedules it."""
    nodes = kube.resources.get(api_version="v1", kind="Node")
    pods = kube.resources.get(api_version="v1", kind="Pod")
    scheduler = scheduler_container(pods)
    bind_requests = kube.resources.get(api_version="scheduling.run.ai/v1alpha2", kind="BindRequest")
    label = nodes.get(name=NODE).to_dict()["metadata"]["labels"]["nvidia.com/gpu.memory"]
    image = pods.get(name="kai-whole-gpu", namespace="default").to_dict()["spec"]["containers"][0]["image"]  # one the node has
    nodes.patch(name=NODE, body={"metadata": {"labels": {"nvidia.com/gpu.memory": None}}}, content_type="application/merge-patch+json")
    pods.create(namespace="default", body={
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "lab11-late-label", "labels": {"kai.scheduler/queue": "default-queue"}, "annotations": {"gpu-memory": "4096"}},
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "app", "image": image, "command": ["sleep", "3600"]}]}})
    try:
        time.sleep(10)
        unlabelled = [b["metadata"]["name"] for b in bind_requests.get(namespace="default").to_dict()["items"]
                      if b["metadata"]["name"] == "lab11-late-label"]
        nodes.patch(name=NODE, body={"metadata": {"labels": {"nvidia.com/gpu.memory": label}}}, content_type="application/merge-patch+json")
        deadline, bound = time.time() + 60, []
        while time.time() < deadline and not bound:
            time.sleep(2)
            bound = [b for b in bind_requests.get(namespace="default").to_dict()["items"] if b["metadata"]["name"] == "lab11-late-label"]
        print("late label: without the label: BindRequests %s; after labelling: %s; scheduler container %s before, %s after"
              % (unlabelled, [b["spec"].get("receivedGPU") for b in bound], scheduler, scheduler_container(pods)))
        assert unlabelled == [], "KAI scheduled a gpu-memory pod on a node without nvidia.com/gpu.memory"
        assert bound, "KAI never scheduled the gpu-memory pod after the label came back (without a restart)"
        assert bound[0]["spec"]["receivedGPU"]["portion"] == "%.2f" % (math.ceil(4096 / (int(label) - int(label) % 100) * 100) / 100)
        assert scheduler_container(pods) == scheduler, "the scheduler was restarted"
    finally:
        pods.delete(name="lab11-late-label", namespace="default", body={"gracePeriodSeconds": 0})


def test_the_default_report_dir_can_be_written_from_a_fresh_directory(tmp_path):
    """`make lab` in a fresh clone: the default lab11_report_dir (under $PWD) passes the check."""
    playbook = os.path.join(ROOT, "tests", "integration", "playbooks", "lab11_validate_inputs.yml")
    done = run_playbook(playbook=playbook, env=dict(os.environ, PWD=str(tmp_path)))
    assert done.returncode == 0, done.stdout[-3000:]
    refused = run_playbook(playbook=playbook, env=dict(os.environ, PWD=str(tmp_path / "missing")))
    assert refused.returncode != 0 and "lab11_report_dir %s/missing/lab11-report cannot be written" % tmp_path in refused.stdout
