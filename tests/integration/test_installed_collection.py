"""The collection as users get it: built, installed into a new venv by the documented sequence
without Ansible Galaxy, playbooks run by FQCN."""

import json
import os
import re
import shutil
import subprocess
from xml.etree import ElementTree

import pytest

from conftest import BIN
from simtools import alive, listeners_of, processes_under

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OWN_LAB = os.path.join(ROOT, "docs", "own-lab.md")
REGISTRY = os.path.join(os.path.expanduser("~"), ".cache", "gpulab-kai-hami", "clusters")


def documented_install():
    """The lines of own-lab.md's install-without-galaxy block."""
    with open(OWN_LAB) as handle:
        text = handle.read()
    block = re.search(r"<!-- install-without-galaxy[^>]*-->\n```bash\n(.*?)```", text, re.S)
    assert block, "own-lab.md has no install-without-galaxy block"
    return [line for line in block.group(1).splitlines() if line.strip()]


class Installed(object):
    """A new venv with the collection installed into a collections dir of its own."""

    def __init__(self, venv, collections):
        self.venv, self.collections = str(venv), str(collections)
        self.root = os.path.join(self.collections, "ansible_collections", "gpulab", "kai_hami")

    def run(self, playbook, *args, cwd=None):
        """ansible-playbook of the venv by FQCN, with only its collections dir on the path, run from
        elsewhere (no inventory: the implicit localhost, whose modules run in the venv's Python)."""
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=self.collections, VIRTUAL_ENV=self.venv,
                   PATH=os.path.join(self.venv, "bin") + os.pathsep + os.environ["PATH"])
        env.pop("PYTHONPATH", None)
        env["PWD"] = cwd or self.collections  # as a shell that cd'ed there has it (reports default to $PWD)
        return subprocess.run([os.path.join(self.venv, "bin", "ansible-playbook"), playbook] + list(args),
                              capture_output=True, text=True, check=False, env=env, cwd=cwd or self.collections)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build the tarball, then run own-lab.md's install-without-galaxy lines as written, with the
    venv, the collections dir and the tarball put in places of the test's own."""
    build = tmp_path_factory.mktemp("build")
    done = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", ROOT, "--output-path", str(build)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (tarball,) = [p for p in os.listdir(build) if p.endswith(".tar.gz")]
    with open(os.path.join(ROOT, "galaxy.yml")) as handle:
        version = re.search(r"^version: (\S+)$", handle.read(), re.M).group(1)
    assert tarball == "gpulab-kai_hami-%s.tar.gz" % version
    place = tmp_path_factory.mktemp("user")
    venv, collections = place / "lab-venv", place / "collections"
    script = ["set -euxo pipefail"]
    for line in documented_install():
        line = line.replace("~/lab-venv", str(venv)).replace("~/.ansible/collections", str(collections))
        script.append(line.replace(tarball, str(build / tarball)))
    env = dict(os.environ)
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "ANSIBLE_COLLECTIONS_PATH"):
        env.pop(name, None)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if os.path.abspath(p) != os.path.abspath(BIN))
    done = subprocess.run(["bash", "-c", "\n".join(script)], capture_output=True, text=True, check=False, env=env, cwd=str(place))
    assert done.returncode == 0, "\n".join(script) + "\n" + done.stdout[-3000:] + done.stderr[-3000:]
    assert (venv / "bin" / "ansible-playbook").exists() and not str(venv).startswith(os.path.dirname(BIN))
    return Installed(venv, collections)


def run_fqcn(installed, playbook, *args):
    """ansible-playbook of the installed venv by FQCN."""
    return installed.run(playbook, *args)


def test_installed_collection_has_the_playbooks_and_roles(installed):
    root = __import__("pathlib").Path(installed.root)
    for path in ("playbooks/lab11.yml", "playbooks/cleanup.yml", "playbooks/vars/lab11.yml", "playbooks/tasks/lab11_setup.yml",
                 "playbooks/example_team_queues.yml", "roles/local_build/files/build.sh", "roles/kai_scheduler/meta/argument_specs.yml",
                 "roles/sim_kai/meta/argument_specs.yml", "roles/sim_isolator/files/isolator_standin.py",
                 "roles/sim_isolator/files/python_image_files.py", "roles/local_build/files/oci_image.py", "roles/sim_agent/files/kai_reservation_runner.py",
                 "tools/install_kubernetes_core.py", "versions.env", "requirements.txt", "playbooks/cleanup_caches.yml",
                 "docs/porting.md"):
        assert (root / path).exists(), path
    assert not (root / ".cache").exists() and not (root / ".venv").exists()
    # kubernetes.core came from the tool, at the version versions.env pins, beside the collection
    manifest = os.path.join(installed.collections, "ansible_collections", "kubernetes", "core", "MANIFEST.json")
    with open(manifest) as handle:
        core = json.load(handle)["collection_info"]["version"]
    with open(root / "versions.env") as handle:
        assert "KUBERNETES_CORE_VERSION=%s" % core in handle.read()


def test_lab11_by_fqcn_checks_its_inputs(installed):
    done = run_fqcn(installed, "gpulab.kai_hami.lab11", "-e", "lab11_platform=docker")
    assert done.returncode != 0
    assert "value of lab11_platform must be one of: auto, kind, sim, existing, got: docker" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def test_lab11_and_cleanup_by_fqcn_pass_a_syntax_check(installed):
    for playbook in ("gpulab.kai_hami.lab11", "gpulab.kai_hami.cleanup"):
        done = run_fqcn(installed, playbook, "--syntax-check")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_lab11_by_fqcn_refuses_a_variable_of_0_1_0_naming_its_replacement(installed):
    done = run_fqcn(installed, "gpulab.kai_hami.lab11", "-e", "lab11_profile=a100")
    assert done.returncode != 0
    assert "lab11_profile is gone since gpulab.kai_hami 0.2.0: use lab11_gpu_profile" in done.stdout, done.stdout[-3000:]


def recorded(name):
    path = os.path.join(REGISTRY, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def lab_listeners(workdir):
    return sorted(listeners_of(processes_under(workdir)))


def test_the_example_lab_beside_you_from_the_tarball_reads_kai_reports_and_is_cleaned_up_by_name(installed, tmp_path):
    """A lab of one's own from the docs: the example by FQCN with its state beside the playbook, twice
    (nothing changes the second time); its checks read KAI's decisions through kai_pod_schedule_info and
    kai_queue_info and end up in its own report. Another lab (its state elsewhere too) runs beside it:
    cleanup of the first by name (keeping the cluster, then not) never touches the second's processes,
    and a name that is not recorded fails, naming what runs. Then nothing of the first is left."""
    mine, other = tmp_path / "teamlab", tmp_path / "otherlab"
    mine.mkdir()
    other.mkdir()
    workdir, other_workdir = str(mine / "teamlab-state"), str(other / "otherlab-state")
    try:
        up_other = installed.run("gpulab.kai_hami.example_team_queues", "-e", "example_cluster=otherlab",
                                 "-e", "example_workdir=%s" % other_workdir, cwd=str(other))
        assert up_other.returncode == 0, up_other.stdout[-6000:] + up_other.stderr[-2000:]
        other_pids = sorted(processes_under(other_workdir))
        assert other_pids

        first = installed.run("gpulab.kai_hami.example_team_queues", "-e", "example_workdir=%s" % workdir, cwd=str(mine))
        assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-2000:]
        assert recorded("teamlab")["workdir"] == workdir and recorded("otherlab")["workdir"] == other_workdir
        halves = re.search(r"team-b-notebook-1 \(team-b\) bound on (teamlab-gpu-[12]); team-b-notebook-2 \(team-b\) bound on (teamlab-gpu-[12]);",
                           first.stdout)
        assert halves and halves.group(1) == halves.group(2), first.stdout[-4000:]
        trainers = re.findall(r"team-a-trainer-[12] \(team-a\) (bound on teamlab-gpu-[12]|unschedulable \((\w+)\));", first.stdout)
        assert sorted(t[0].split()[0] for t in trainers) == ["bound", "unschedulable"], first.stdout[-4000:]
        for queue, gpus in (("dept", 2), ("team-a", 1), ("team-b", 1)):
            assert "queue %s holds %d GPUs" % (queue, gpus) in first.stdout, first.stdout[-4000:]

        report = mine / "teamlab-report"
        claims = json.loads((report / "claims.json").read_text())
        assert claims["ok"] is True and [c["id"] for c in claims["claims"]] == ["T1", "T2", "T3", "T4"]
        assert [t[1] for t in trainers if t[1]] == ["OverLimit"]
        assert any(re.search(r"unschedulable\s+OverLimit: team-a quota", line) for line in claims["claims"][0]["evidence"]), claims["claims"][0]
        suite = ElementTree.parse(str(report / "junit.xml")).getroot()
        assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "0", "0")
        assert "| T3 the queues hold what runs" in (report / "report.md").read_text()

        second = installed.run("gpulab.kai_hami.example_team_queues", "-e", "example_workdir=%s" % workdir, cwd=str(mine))
        assert second.returncode == 0 and re.search(r"localhost\s*:.*changed=0\s", second.stdout), second.stdout[-3000:]

        kept = installed.run("gpulab.kai_hami.cleanup", "-e", "cleanup_cluster_name=teamlab", "-e", "cleanup_keep_cluster=true")
        assert kept.returncode == 0, kept.stdout[-4000:]
        assert processes_under(workdir) and sorted(processes_under(other_workdir)) == other_pids

        # Not recorded: cleanup by name finds the cluster's processes anyway, names them and fails.
        record = os.path.join(REGISTRY, "teamlab.json")
        shutil.move(record, str(tmp_path / "teamlab.json"))
        try:
            unrecorded = installed.run("gpulab.kai_hami.cleanup", "-e", "cleanup_cluster_name=teamlab")
        finally:
            shutil.move(str(tmp_path / "teamlab.json"), record)
        assert unrecorded.returncode != 0
        assert "sim cluster teamlab is not recorded" in unrecorded.stdout and "-e cleanup_workdir=%s" % workdir in unrecorded.stdout, \
            unrecorded.stdout[-3000:]
        assert "No cluster named" not in unrecorded.stdout and processes_under(workdir)
        listeners = lab_listeners(workdir)
        assert listeners

        down = installed.run("gpulab.kai_hami.cleanup", "-e", "cleanup_cluster_name=teamlab")
        assert down.returncode == 0, down.stdout[-4000:]
        assert "Removed sim cluster teamlab" in down.stdout and "Lab 11" not in down.stdout
        assert processes_under(workdir) == [] and not os.path.exists(workdir) and recorded("teamlab") is None
        held = {line.split()[3] for line in subprocess.run(["ss", "-ltnH"], capture_output=True, text=True, check=True).stdout.splitlines()}
        assert [address for address, _pid in listeners if address in held] == []
        assert sorted(processes_under(other_workdir)) == other_pids and all(alive(pid) for pid in other_pids)
    finally:
        downs = [installed.run("gpulab.kai_hami.cleanup", "-e", "cleanup_cluster_name=%s" % name) for name in ("teamlab", "otherlab")]
    assert [d.returncode for d in downs] == [0, 0], [d.stdout[-3000:] for d in downs]
    assert processes_under(other_workdir) == [] and not os.path.exists(other_workdir) and recorded("otherlab") is None


def test_cleanup_caches_refuses_while_a_cluster_is_left_and_says_what_it_would_remove(installed, tmp_path):
    """--check changes nothing; with a cluster recorded it is refused, naming it."""
    registry = tmp_path / "cache" / "clusters"
    registry.mkdir(parents=True)
    (registry / "fairlab.json").write_text('{"name": "fairlab", "workdir": "/nowhere"}')
    (tmp_path / "cache" / "sim-bin").mkdir()
    refused = installed.run("gpulab.kai_hami.cleanup_caches", "-e", "cleanup_cache_root=%s" % (tmp_path / "cache"))
    assert refused.returncode != 0 and "kept while these clusters are left: fairlab" in refused.stdout, refused.stdout[-3000:]
    assert (tmp_path / "cache" / "sim-bin").is_dir()
    (registry / "fairlab.json").unlink()
    # a kind cluster's directory beside kind's own version directory
    (tmp_path / "cache" / "kind" / "v0.33.0" / "bin").mkdir(parents=True)
    (tmp_path / "cache" / "kind" / "kindlab").mkdir()
    refused = installed.run("gpulab.kai_hami.cleanup_caches", "-e", "cleanup_cache_root=%s" % (tmp_path / "cache"))
    assert refused.returncode != 0 and "kept while these clusters are left: kindlab" in refused.stdout, refused.stdout[-3000:]
    (tmp_path / "cache" / "kind" / "kindlab").rmdir()
    checked = installed.run("gpulab.kai_hami.cleanup_caches", "--check", "-e", "cleanup_cache_root=%s" % (tmp_path / "cache"))
    assert checked.returncode == 0 and "Would remove the collection's caches" in checked.stdout, checked.stdout[-3000:]
    assert (tmp_path / "cache" / "sim-bin").is_dir()
    removed = installed.run("gpulab.kai_hami.cleanup_caches", "-e", "cleanup_cache_root=%s" % (tmp_path / "cache"))
    assert removed.returncode == 0 and "Removed the collection's caches" in removed.stdout, removed.stdout[-3000:]
    assert os.listdir(str(tmp_path / "cache")) == []
