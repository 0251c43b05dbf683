"""lab_claim on the sim cluster without KAI: what it decides from the node it reads, what a dead
process or a dead API server makes of a claim. (Its bad inputs: tests/unit/plugins/modules/test_bad_input.py.)

(With KAI, every claim is proved by the lab: tests/lab/test_lab11_playbook.py.)
"""

import json
import re
import subprocess

SHARED = [{"name": "lab-claim-shared", "request_mib": 20480}]


def allocatable_gpus(kube, node):
    node = kube.resources.get(api_version="v1", kind="Node").get(name=node).to_dict()
    return int(node["status"]["allocatable"]["nvidia.com/gpu"])


def lab(sim_cluster, **more):
    return dict(dict(gpu_node=sim_cluster["gpu_node"], shared_pods=SHARED), **more)


def test_c1_holds_for_the_nodes_count_and_fails_for_another(module, kube, sim_cluster):
    gpus = allocatable_gpus(kube, sim_cluster["gpu_node"])
    held = module("lab_claim", claim="C1", lab=lab(sim_cluster, gpu_count=gpus))
    assert not held.get("failed"), held
    assert held["changed"] is False
    assert (held["record"]["id"], held["record"]["ok"], held["record"]["verdict"]) == ("C1", True, "holds")
    assert held["record"]["evidence"] == ["node %s allocatable nvidia.com/gpu: %d (expected %d)" % (sim_cluster["gpu_node"], gpus, gpus)]
    assert held["record"]["decided_by"] == ("the node's status as written for the node kwok plays: node %s's allocatable nvidia.com/gpu"
                                            % sim_cluster["gpu_node"])

    failed = module("lab_claim", claim="C1", lab=lab(sim_cluster, gpu_count=gpus + 1))
    assert not failed.get("failed"), failed
    assert (failed["record"]["ok"], failed["record"]["verdict"]) == (False, "fails")
    assert failed["record"]["evidence"] == ["node %s allocatable nvidia.com/gpu: %d (expected %d)" % (sim_cluster["gpu_node"], gpus, gpus + 1)]


def test_without_kai_c2_fails_naming_each_workload_and_the_waiting_claims_do_not_wait(module, sim_cluster):
    workloads = ["binder", "kai-scheduler-default"]
    c2 = module("lab_claim", claim="C2", lab=lab(sim_cluster), kai=dict(namespace="no-kai", workloads=workloads))
    assert c2["record"]["verdict"] == "fails"
    assert c2["record"]["evidence"] == ["available in no-kai: none", "missing or not available: %s" % ", ".join(workloads),
                                        "Running pods: none", "without a Running pod: %s" % ", ".join(workloads)]
    assert c2["provenance"]["kai"] == "KAI (not found)"
    # C5 would wait wait_timeout seconds for KAI to run the pod; without KAI it decides at once
    c5 = module("lab_claim", claim="C5", lab=lab(sim_cluster, whole_gpu_pod="no-such-pod"), kai=dict(namespace="no-kai"), wait_timeout=600)
    assert c5["record"]["verdict"] == "fails"
    assert c5["record"]["evidence"][0].startswith("pod default/no-such-pod is missing on node none")
    assert c5["record"]["evidence"][-1] == "not waited for: C2 found KAI not running"


def test_a_dead_process_fails_the_claim_whatever_the_api_shows(module, kube, sim_cluster, tmp_path):
    gpus = allocatable_gpus(kube, sim_cluster["gpu_node"])
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / "etcd.pid").write_text("%d\n" % dead.pid)
    record = module("lab_claim", claim="C1", lab=lab(sim_cluster, gpu_count=gpus), state_dirs={"cluster": str(tmp_path)})
    assert record["processes"] == [{"name": "etcd", "part": "cluster", "pid": dead.pid, "running": False}]
    assert record["record"]["verdict"] == "fails"
    assert record["record"]["evidence"][0] == "not running: etcd (cluster, pid %d)" % dead.pid
    # C1 depends on the cluster's processes only: the isolator's are not its business
    other = module("lab_claim", claim="C1", lab=lab(sim_cluster, gpu_count=gpus), state_dirs={"isolator": str(tmp_path)})
    assert other["processes"] == [] and other["record"]["verdict"] == "holds"


def test_an_api_server_that_does_not_answer_is_an_error_not_a_failure(module, sim_cluster, dead_kubeconfig):
    result = module("lab_claim", claim="C8", lab=lab(sim_cluster), kubeconfig=dead_kubeconfig, wait_timeout=5)
    assert not result.get("failed"), result
    assert (result["record"]["verdict"], result["record"]["ok"]) == ("error", False)
    assert "127.0.0.1:9" in result["record"]["evidence"][0] or "connect" in result["record"]["evidence"][0], result["record"]


def test_c4s_dry_run_pod_is_never_stored(module, kube, sim_cluster):
    for check in (False, True):
        result = module("lab_claim", claim="C4", lab=lab(sim_cluster), check=check)
        assert result["record"]["evidence"][1] == "isolator volumes in the dry-run pod: none", result
        assert result["changed"] is False
    pods = kube.resources.get(api_version="v1", kind="Pod").get(namespace="default").to_dict()["items"]
    assert [p["metadata"]["name"] for p in pods if p["metadata"]["name"] == "lab11-isolator-dry-run"] == []


def test_the_report_is_written_from_the_records_in_the_same_call_and_not_in_check_mode(module, kube, sim_cluster, tmp_path):
    gpus = allocatable_gpus(kube, sim_cluster["gpu_node"])
    report = dict(dir=str(tmp_path / "report"), title="A lab of C1 and C2", platform="the sim")
    checked = module("lab_claim", check=True, claims=["C1", "C2"], lab=lab(sim_cluster, gpu_count=gpus), report=report)
    assert not checked.get("failed"), checked
    assert "C1" in checked["report"] and not (tmp_path / "report").exists()

    done = module("lab_claim", claims=["C1", "C2"], lab=lab(sim_cluster, gpu_count=gpus), kai=dict(namespace="no-kai"), report=report)
    assert not done.get("failed"), done
    # a report where there was none is a change; the same outcome again is not (this run's evidence is rewritten)
    assert done["changed"] is True
    again = module("lab_claim", claims=["C1", "C2"], lab=lab(sim_cluster, gpu_count=gpus), kai=dict(namespace="no-kai"), report=report)
    assert again["changed"] is False and [r["ok"] for r in again["records"]] == [r["ok"] for r in done["records"]]
    assert sorted(done["report_files"]) == sorted(str(tmp_path / "report" / name) for name in ("claims.json", "junit.xml", "report.md"))
    written = json.loads((tmp_path / "report" / "claims.json").read_text())
    assert written["lab"] == "A lab of C1 and C2"
    assert [(c["id"], c["ok"], c["evidence"]) for c in written["claims"]] == [(r["id"], r["ok"], r["evidence"]) for r in done["records"]]
    assert written["ok"] is False and [c["ok"] for c in written["claims"]] == [True, False]  # no KAI in namespace no-kai
    text = (tmp_path / "report" / "report.md").read_text()
    assert text == done["report"] and text.splitlines()[2].startswith("Platform: the sim. ")
    rows = [line.split(" | ")[0] + " |" for line in text.splitlines() if re.match(r"\| C\d ", line)]
    assert rows == ["| %s %s |" % (r["id"], r["claim"]) for r in done["records"]]


def test_a_report_dir_that_cannot_be_made_is_refused_before_anything_is_read(module, sim_cluster, tmp_path):
    refused = module("lab_claim", claims=["C1"], lab=lab(sim_cluster),
                     report=dict(dir=str(tmp_path / "missing" / "report"), title="t", platform="p"))
    assert refused.get("failed") and refused["msg"].startswith("report.dir %s cannot be created" % (tmp_path / "missing" / "report")), refused
    assert "records" not in refused
    missing = module("lab_claim", claims=["C1"], lab=lab(sim_cluster), report=dict(dir=str(tmp_path)))
    assert missing.get("failed") and "title" in missing["msg"] and "platform" in missing["msg"], missing
