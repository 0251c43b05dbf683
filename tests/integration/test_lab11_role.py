"""The lab11 role's workloads, claims and report on the sim, as far as it goes without KAI.

In these tests the role runs alone on a cluster where neither KAI nor the isolator is installed, so the
report must say exactly that: C1 holds (the node advertises the profile's GPUs), C2-C8 fail,
each with the evidence that decided it, and the play fails. (The whole lab, with KAI, is
tests/lab/test_lab11_playbook.py.)
"""

import json
import os
import re
from xml.etree import ElementTree

import pytest
from kubernetes.dynamic.exceptions import NotFoundError

from conftest import run_playbook

PLAYBOOK = os.path.join(os.path.dirname(__file__), "playbooks", "lab11.yml")
PODS = ("kai-whole-gpu", "gpu-sharing-with-isolation", "lab11-missing-queue-probe")


@pytest.fixture
def runtime_class(kube):
    """RuntimeClass nvidia, as the kai_scheduler role creates it (Step 6's pod names it)."""
    api = kube.resources.get(api_version="node.k8s.io/v1", kind="RuntimeClass")
    api.create(body={"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "runc"})
    yield
    api.delete(name="nvidia")


@pytest.fixture
def lab_pods(kube):
    yield
    api = kube.resources.get(api_version="v1", kind="Pod")
    for name in PODS:
        try:
            api.delete(name=name, namespace="default", body={"gracePeriodSeconds": 0})
        except NotFoundError:
            pass


def pods_present(kube):
    api = kube.resources.get(api_version="v1", kind="Pod")
    return [p["metadata"]["name"] for p in api.get(namespace="default").to_dict()["items"] if p["metadata"]["name"] in PODS]


def test_report_says_what_holds_without_kai_and_what_decided_it(kube, sim_cluster, runtime_class, lab_pods, tmp_path):
    node = kube.resources.get(api_version="v1", kind="Node").get(name=sim_cluster["gpu_node"]).to_dict()
    gpus = int(node["status"]["allocatable"]["nvidia.com/gpu"])
    report_dir = tmp_path / "report"
    variables = dict(lab11_report_dir=str(report_dir), lab11_wait_timeout=5, lab11_gpu_count=gpus, lab11_node_name=sim_cluster["gpu_node"])

    done = run_playbook(variables, playbook=PLAYBOOK)
    assert done.returncode != 0
    assert "claims that do not hold: C2, C3, C4, C5, C6, C7, C8" in done.stdout, done.stdout[-4000:]
    # the role alone checks its inputs once
    assert done.stdout.count("TASK [gpulab.kai_hami.lab11 : Check the GPU counts, the shared request and the namespace]") == 1
    assert sorted(pods_present(kube)) == sorted(PODS)

    report = json.loads((report_dir / "claims.json").read_text())
    assert report["ok"] is False
    claims = {c["id"]: c for c in report["claims"]}
    assert list(claims) == ["C%d" % i for i in range(1, 9)]
    assert claims["C1"]["ok"] is True and claims["C1"]["verdict"] == "holds"
    assert claims["C1"]["evidence"] == ["node %s allocatable nvidia.com/gpu: %d (expected %d)" % (sim_cluster["gpu_node"], gpus, gpus)]
    assert all(claims[c]["verdict"] == "fails" and claims[c]["evidence"] for c in claims if c != "C1")
    assert "missing or not available: admission, binder, kai-operator" in claims["C2"]["evidence"][1]
    assert "no QueueDoesNotExist event" in claims["C3"]["evidence"][1]
    # the dry-run pod was accepted by the API server, just not mutated (no isolator on the sim)
    assert claims["C4"]["evidence"][1] == "isolator volumes in the dry-run pod: none"
    assert "has no nvidia.com/gpu.memory label" in claims["C6"]["evidence"][0]
    assert claims["C8"]["evidence"][0].startswith("verdict: pending (expected nvml_unavailable)")
    # with KAI not running (C2), the claims that wait for KAI to act are decided at once, and say so
    assert [c for c in claims if claims[c]["evidence"][-1] == "not waited for: C2 found KAI not running"] == ["C3", "C5", "C6", "C8"]

    assert all("\n" not in line for c in claims.values() for line in c["evidence"])
    # the report names what decided each claim; in this test nothing of KAI or the isolator exists
    assert report["kai"] == "KAI (not found)" and report["isolator"] == "kai-resource-isolator (not found)"
    assert claims["C6"]["decided_by"] == "KAI (not found): kai-scheduler's log"
    table = (report_dir / "report.md").read_text().splitlines()
    assert table[2].startswith("Platform: unspecified. KAI (not found); isolator: kai-resource-isolator (not found).")
    assert "| Claim | Evidence | Verdict | Decided by |" in table
    assert len([line for line in table if re.match(r"^\| C[1-8] ", line)]) == 8
    suite = ElementTree.parse(str(report_dir / "junit.xml")).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("8", "7", "0")

    # the workloads are idempotent, and the report can be asked for without failing the play
    again = run_playbook(dict(variables, lab11_fail_on_claims=False), playbook=PLAYBOOK, options=["--tags", "workloads"])
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout[-2000:]
    verify = run_playbook(dict(variables, lab11_fail_on_claims=False), playbook=PLAYBOOK, options=["--tags", "verify"])
    assert verify.returncode == 0, verify.stdout[-2000:]


@pytest.mark.parametrize(
    "variables, message",
    [
        (dict(lab11_whole_gpu_count=None), "argument 'lab11_whole_gpu_count' is of type NoneType"),
        (dict(lab11_gpu_count=8, lab11_whole_gpu_count=8), "lab11_whole_gpu_count must be >= 1 and leave the shared pods a GPU, so at most"
                                                           " lab11_gpu_count - 1 (got 8 of 8)"),
        (dict(lab11_report_dir="{tmp}/a-file"), "lab11_report_dir {tmp}/a-file cannot be written"),
        (dict(lab11_report_dir="{tmp}/missing/report"), "lab11_report_dir {tmp}/missing/report cannot be written"),
        (dict(lab11_queue="default"), "lab11_queue default is not a leaf queue"),
        (dict(lab11_expected_boundary="running"), "value of lab11_expected_boundary must be one of: reserved, nvml_unavailable"),
    ],
)
def test_bad_input_fails_before_anything_is_created(kube, sim_cluster, lab_pods, tmp_path, variables, message):
    (tmp_path / "a-file").write_text("not a directory")
    variables = dict((k, v.format(tmp=tmp_path) if isinstance(v, str) else v) for k, v in variables.items())
    done = run_playbook(dict(dict(lab11_report_dir=str(tmp_path / "r")), **variables), playbook=PLAYBOOK)
    message = message.format(tmp=tmp_path)
    assert done.returncode != 0
    assert message in done.stdout, done.stdout[-3000:]
    assert pods_present(kube) == []


def test_queue_with_children_in_the_cluster_is_refused(kube, sim_cluster, lab_pods, tmp_path):
    queues = kube.resources.get(api_version="scheduling.run.ai/v2", kind="Queue")
    for name, parent in (("lab11-team", None), ("lab11-team-a", "lab11-team")):
        spec = {"resources": {r: {"quota": 0, "limit": -1, "overQuotaWeight": 1} for r in ("cpu", "gpu", "memory")}}
        if parent:
            spec["parentQueue"] = parent
        queues.create(body={"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec})
    try:
        done = run_playbook(dict(lab11_report_dir=str(tmp_path / "r"), lab11_queue="lab11-team"), playbook=PLAYBOOK)
        assert done.returncode != 0
        assert "lab11_queue lab11-team is not a leaf queue: queues ['lab11-team-a'] name it as their parent" in done.stdout, done.stdout[-3000:]
        assert pods_present(kube) == []
    finally:
        queues.delete(name="lab11-team-a")
        queues.delete(name="lab11-team")


def test_claims_whose_reads_fail_are_errors_not_failures(kube, sim_cluster, tmp_path, dead_kubeconfig):
    """With an API server that does not answer, every claim's own tasks fail: each is recorded as
    an error (the exception as evidence) in report.md, claims.json and junit.xml, never as an
    ordinary failure with made-up evidence."""
    report_dir = tmp_path / "report"
    variables = dict(lab11_report_dir=str(report_dir), lab11_wait_timeout=5, lab11_kubeconfig=dead_kubeconfig)
    done = run_playbook(variables, playbook=PLAYBOOK, options=["--tags", "verify"])
    assert done.returncode != 0
    assert "claims whose evidence could not be read (error): C1, C2, C3, C4, C5, C6, C7, C8" in done.stdout, done.stdout[-3000:]
    claims = json.loads((report_dir / "claims.json").read_text())["claims"]
    assert [(c["id"], c["verdict"], c["ok"]) for c in claims] == [("C%d" % i, "error", False) for i in range(1, 9)]
    assert all(c["evidence"] and c["evidence"][0] for c in claims)
    assert len(re.findall(r"^\| C[1-8] .* \| error \|", (report_dir / "report.md").read_text(), re.M)) == 8
    suite = ElementTree.parse(str(report_dir / "junit.xml")).getroot()
    assert (suite.get("errors"), suite.get("failures")) == ("8", "0")
    assert all(c.find("error") is not None and c.find("failure") is None for c in suite.findall("testcase"))
