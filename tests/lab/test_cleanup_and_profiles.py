"""A lab whose node kwok plays, on other GPUs, a kubeconfig outside its work dir, a dead kwok-controller, and cleanup by name.

One lab, made from nothing, that is not the lab's defaults: its GPU node played by kwok (KAI's
programs and the isolator's stand-in as local processes), 4 x 80 GiB A100s per node (the real
node meets this profile in Molecule's sim_crossed scenario), the NVML stand-in boundary (C9), and a
kubeconfig in a directory of its own outside the cluster's work dir. Its claims follow the profile; its kwok-controller is
killed and a keep-the-cluster cleanup starts it again instead of waiting on it; a re-run
converges; then a cleanup given only the cluster's name leaves no process, listener or file of
it, and a second cleanup of that name says there is nothing to remove.
"""

import json
import math
import os
import re
import signal

from conftest import ROOT, cluster_pids, listeners_of, run_playbook, session_members, sim_process_pids
from simtools import processes_under

LAB = os.path.join(ROOT, "playbooks", "lab11.yml")
CLEANUP = os.path.join(ROOT, "playbooks", "cleanup.yml")
NAME = "lab11-profile"
WORKDIR = os.path.join(os.path.expanduser("~"), ".cache", "gpulab-kai-hami", "sim", NAME)  # the sim_cluster role's rule
GPUS = dict(name="a100", product="NVIDIA A100-SXM4-80GB", memory_mib=81920, count=4)


def fraction(request_mib, label_mib):
    """KAI's arithmetic, written out by the test independently of the collection: floor the label to 100 MiB, round up to 0.01."""
    return math.ceil(request_mib / (label_mib - label_mib % 100) * 100) / 100


def claims(report_dir):
    with open(os.path.join(report_dir, "claims.json")) as handle:
        return {c["id"]: c for c in json.load(handle)["claims"]}


def test_the_lab_follows_its_gpu_profile_and_cleanup_by_name_leaves_nothing(tmp_path):
    kubeconfig_dir = tmp_path / "kubeconfig-dir"
    kubeconfig_dir.mkdir()
    report = str(tmp_path / "report")
    variables = dict(lab11_platform="sim", lab11_cluster_name=NAME, lab11_sim_node_runtime="kwok", lab11_gpu_profile=GPUS, lab11_boundary="library_stand_in",
                     lab11_kubeconfig=str(kubeconfig_dir / "kubeconfig"), lab11_report_dir=report, lab11_wait_timeout=120)
    pids = []
    try:
        up = run_playbook(variables, playbook=LAB)
        assert up.returncode == 0, up.stdout[-6000:]
        found = claims(report)
        assert [c for c in found if not found[c]["ok"]] == [], json.dumps(found, indent=1)
        assert found["C1"]["evidence"] == ["node %s-control-plane allocatable nvidia.com/gpu: 4 (expected 4)" % NAME]
        first, second = fraction(20480, 81920), fraction(20000, 81920)
        assert (first, second) == (0.26, 0.25)  # the arithmetic above, on 80 GiB: not the lab's 0.51 and 0.49
        assert "expected 1 + kai_gpu_fraction(20480, 81920) + kai_gpu_fraction(20000, 81920) = %s" % round(1 + first + second, 2) \
            in found["C6"]["evidence"][0]
        assert "CUDA_DEVICE_MEMORY_LIMIT=%dm" % int(81920 * first) in found["C9"]["evidence"][0]
        assert "CUDA_DEVICE_MEMORY_LIMIT=%dm" % int(81920 * second) in found["C9"]["evidence"][1]
        # every file of the cluster is under its work dir; beside the kubeconfig there is only the kubeconfig
        assert sorted(os.listdir(str(kubeconfig_dir))) == ["kubeconfig"]
        assert {"kai", "tls", "ports.json", "made.json"} <= set(os.listdir(WORKDIR)) and "node" not in os.listdir(WORKDIR)  # kwok's node

        pids = cluster_pids(WORKDIR, NAME)
        leaders = [pid for part in ("kai", "kai-resource-isolator", "agent") for pid in sim_process_pids(os.path.join(WORKDIR, part))]
        pids += session_members(leaders)
        assert listeners_of(pids), "the lab listens nowhere"

        # kwok-controller finalizes pod deletion: dead, a cleanup that needs the API starts it again first
        with open(os.path.join(WORKDIR, "kwok", "clusters", NAME, "pids", "kwok-controller.pid")) as handle:
            os.kill(int(handle.read()), signal.SIGKILL)
        inside = run_playbook(dict(cleanup_cluster_name=NAME, cleanup_keep_cluster=True), playbook=CLEANUP)
        assert inside.returncode == 0, inside.stdout[-6000:]
        assert "started again on their data: kwok-controller" in inside.stdout
        assert not os.path.exists(os.path.join(WORKDIR, "kai")) and os.path.exists(os.path.join(WORKDIR, "made.json"))

        again = run_playbook(variables, playbook=LAB)
        assert again.returncode == 0, again.stdout[-6000:]
        found = claims(report)
        assert [c for c in found if not found[c]["ok"]] == [], json.dumps(found, indent=1)
        pids = cluster_pids(WORKDIR, NAME) + session_members(
            [pid for part in ("kai", "kai-resource-isolator", "agent") for pid in sim_process_pids(os.path.join(WORKDIR, part))])
    finally:
        down = run_playbook(dict(cleanup_cluster_name=NAME), playbook=CLEANUP)
    assert down.returncode == 0, down.stdout[-6000:]
    assert re.search(r"Removed sim cluster %s: stopped \d+ processes" % NAME, down.stdout), down.stdout[-3000:]
    assert "and %s" % (kubeconfig_dir / "kubeconfig") in down.stdout
    assert processes_under(WORKDIR) == []
    assert not any(os.path.exists("/proc/%d" % pid) for pid in pids)
    assert listeners_of(pids) == []
    assert not os.path.exists(WORKDIR)
    assert os.listdir(str(kubeconfig_dir)) == []

    gone = run_playbook(dict(cleanup_cluster_name=NAME, cleanup_platform="sim"), playbook=CLEANUP)
    assert gone.returncode == 0 and re.search(r"localhost\s*:.*changed=0\s", gone.stdout), gone.stdout[-3000:]
    assert "No cluster named %s to remove: no sim work dir at %s and no process under it. Nothing was changed." % (NAME, WORKDIR) \
        in gone.stdout, gone.stdout[-3000:]
    assert "Lab 11" not in gone.stdout and "A100" not in gone.stdout

    unknown = run_playbook(dict(cleanup_cluster_name="no-such-lab", cleanup_docker_socket=str(tmp_path / "no-docker.sock"),
                                cleanup_podman_dir=str(tmp_path / "no-podman")), playbook=CLEANUP)
    assert unknown.returncode == 0 and re.search(r"localhost\s*:.*changed=0\s", unknown.stdout), unknown.stdout[-3000:]
    assert ("No cluster named no-such-lab to remove: no sim work dir at %s and no process under it, no Docker engine answers on %s"
            " and no kind node of that name runs in the collection's podman (%s). Nothing was changed."
            % (WORKDIR.replace(NAME, "no-such-lab"), tmp_path / "no-docker.sock", tmp_path / "no-podman")) in unknown.stdout, \
        unknown.stdout[-3000:]
