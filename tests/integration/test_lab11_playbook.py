"""playbooks/lab11.yml and playbooks/cleanup.yml on the sim platform, end to end.

KAI's and the isolator's programs cannot be built in this workplace (their Go modules are not
served), so on the sim the playbook refuses to go on without them unless told to
(``lab11_sim_without_kai``); told to, it brings up everything else and the report says C1 holds
and C2-C8 fail. These tests assert that, the idempotent re-run, ``--tags verify``, the bad
inputs refused before anything exists, and that cleanup leaves nothing behind.
"""

import json
import os
import re

import pytest
import yaml
from kubernetes import config, dynamic

from conftest import BIN, cluster_pids, listeners_of, run_playbook

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAB = os.path.join(ROOT, "playbooks", "lab11.yml")
CLEANUP = os.path.join(ROOT, "playbooks", "cleanup.yml")
NAME = "pbtest"
NODE = NAME + "-control-plane"
with open(os.path.join(ROOT, "playbooks", "vars", "lab11.yml")) as _handle:
    PROFILE = yaml.safe_load(_handle)["lab11_profiles"]["a100"]
PODS = ("kai-whole-gpu", "gpu-sharing-with-isolation", "lab11-missing-queue-probe")
KAI_PROGRAMS = "scheduler, binder, admission, podgrouper, podgroupcontroller, queuecontroller, resourcereservation"


def lab_vars(tmp_path, **more):
    workdir = str(tmp_path / "sim")
    return dict(dict(lab11_platform="sim", lab11_cluster_name=NAME, sim_cluster_workdir=workdir,
                     lab11_kubeconfig=os.path.join(workdir, "kubeconfig"),
                     sim_cluster_bin_dir=os.environ.get("SIM_BIN_DIR", ""),
                     lab11_report_dir=str(tmp_path / "report"), lab11_wait_timeout=5), **more)


def changed_count(stdout):
    found = re.search(r"localhost\s*:\s*ok=\d+\s+changed=(\d+)", stdout)
    assert found, stdout[-2000:]
    return int(found.group(1))


@pytest.mark.parametrize(
    "more, message",
    [
        (dict(lab11_platform="docker"), "lab11_platform must be one of auto, kind, sim, existing (got docker)"),
        (dict(lab11_profiles={"a100": {"count": 8, "product": "x"}}), "its profile needs memory_mib"),
        (dict(lab11_profile="h200"), "lab11_profile must be one of a100 (got h200)"),
        (dict(lab11_report_dir="/etc/hostname"), "lab11_report_dir /etc/hostname cannot be written"),
        (dict(lab11_report_dir="/nonexistent-parent/report"), "lab11_report_dir /nonexistent-parent/report cannot be written"),
        (dict(kai_scheduler_queues=[{"name": "default"}, {"name": "default-queue", "parent_queue": "default"},
                                    {"name": "team-a", "parent_queue": "default-queue"}]),
         "lab11_queue default-queue is not a leaf queue: kai_scheduler_queues makes it the parent of ['team-a']"),
    ],
)
def test_bad_input_is_refused_before_anything_exists(tmp_path, more, message):
    done = run_playbook(lab_vars(tmp_path, lab11_cluster_name="bad", **more), playbook=LAB)
    assert done.returncode != 0
    assert message in done.stdout, done.stdout[-3000:]
    assert not os.path.exists(str(tmp_path / "sim")), "a cluster was started before the input was refused"


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


def test_the_lab_on_the_sim_idempotent_verifiable_and_cleaned_up(tmp_path):
    variables = lab_vars(tmp_path)
    workdir = variables["sim_cluster_workdir"]
    try:
        # Without the opt-in, the sim refuses to pretend KAI runs.
        strict = run_playbook(variables, playbook=LAB)
        assert strict.returncode != 0
        assert "KAI's programs are not running on the sim platform: missing %s" % KAI_PROGRAMS in strict.stdout, strict.stdout[-3000:]

        first = run_playbook(variables, dict(lab11_sim_without_kai=True, lab11_fail_on_claims=False), playbook=LAB)
        assert first.returncode == 0, first.stdout[-5000:]
        assert "Lab 11 runs on the sim platform (asked for)" in first.stdout
        report = json.loads((tmp_path / "report" / "claims.json").read_text())
        assert [c["id"] for c in report["claims"] if c["ok"]] == ["C1"]

        kube = client(variables["lab11_kubeconfig"])
        node = kube.resources.get(api_version="v1", kind="Node").get(name=NODE).to_dict()
        labels = node["metadata"]["labels"]
        assert (labels["nvidia.com/gpu.memory"], labels["nvidia.com/gpu.product"], labels["nvidia.com/gpu.count"]) == (
            str(PROFILE["memory_mib"]), PROFILE["product"], str(PROFILE["count"]))
        queues = {q["metadata"]["name"]: q["spec"].get("parentQueue") for q in
                  kube.resources.get(api_version="scheduling.run.ai/v2", kind="Queue").get().to_dict()["items"]}
        assert queues == {"default": None, "default-queue": "default", "default-parent-queue": None}
        runtime_class = kube.resources.get(api_version="node.k8s.io/v1", kind="RuntimeClass").get(name="nvidia").to_dict()
        assert runtime_class["handler"] == "runc"
        assert {"kai-scheduler", "kai-resource-reservation", "kai-resource-isolator"} <= set(names(kube, "v1", "Namespace"))
        assert set(PODS) <= set(names(kube, "v1", "Pod", "default"))

        again = run_playbook(variables, dict(lab11_sim_without_kai=True, lab11_fail_on_claims=False), playbook=LAB)
        assert again.returncode == 0, again.stdout[-4000:]
        assert changed_count(again.stdout) == 0, again.stdout[-6000:]

        (tmp_path / "report" / "claims.json").unlink()
        verify = run_playbook(variables, dict(lab11_sim_without_kai=True), playbook=LAB, options=["--tags", "verify"])
        assert verify.returncode != 0
        assert "claims that do not hold: C2, C3, C4, C5, C6, C7, C8" in verify.stdout, verify.stdout[-3000:]
        assert "TASK [gpulab.kai_hami.kai_scheduler" not in verify.stdout and "TASK [gpulab.kai_hami.sim_cluster" not in verify.stdout
        assert json.loads((tmp_path / "report" / "claims.json").read_text())["claims"][0]["ok"] is True

        inside = run_playbook(variables, dict(lab11_cleanup_cluster=False), playbook=CLEANUP)
        assert inside.returncode == 0, inside.stdout[-4000:]
        assert not set(PODS) & set(names(kube, "v1", "Pod", "default"))
        assert names(kube, "scheduling.run.ai/v2", "Queue") == []
        assert names(kube, "node.k8s.io/v1", "RuntimeClass") == []
        assert names(kube, "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") == []
        assert names(kube, "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") == []
        assert not {"kai-scheduler", "kai-resource-reservation", "kai-resource-isolator"} & set(names(kube, "v1", "Namespace"))
        labels = kube.resources.get(api_version="v1", kind="Node").get(name=NODE).to_dict()["metadata"]["labels"]
        assert not {"nvidia.com/gpu.memory", "nvidia.com/gpu.product", "nvidia.com/gpu.count"} & set(labels)

        pids = cluster_pids(workdir, NAME)
        assert pids and all(address.startswith("127.0.0.1:") for address, pid in listeners_of(pids))
    finally:
        down = run_playbook(variables, playbook=CLEANUP)
    assert down.returncode == 0, down.stdout[-4000:]
    assert not any(os.path.exists("/proc/%d" % pid) for pid in pids)
    assert listeners_of(pids) == []
    assert not os.path.exists(workdir)


def test_the_default_report_dir_can_be_written_from_a_fresh_directory(tmp_path):
    """`make lab` in a fresh clone: the default lab11_report_dir (under $PWD) passes the check."""
    playbook = os.path.join(os.path.dirname(__file__), "playbooks", "lab11_validate_inputs.yml")
    done = run_playbook(playbook=playbook, env=dict(os.environ, PWD=str(tmp_path)))
    assert done.returncode == 0, done.stdout[-3000:]
    refused = run_playbook(playbook=playbook, env=dict(os.environ, PWD=str(tmp_path / "missing")))
    assert refused.returncode != 0 and "lab11_report_dir %s/missing/lab11-report cannot be written" % tmp_path in refused.stdout
