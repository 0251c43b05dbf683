"""Integration tests against the sim cluster: a real kube-apiserver, etcd and kwok.

This is the one place that knows how modules are driven. Plain module calls go through
pytest-ansible's ``ansible_module`` fixture; check mode and diff, which its dispatcher cannot
ask for, go through a one-task playbook that registers the result. Swapping pytest-ansible
out means changing ``ModuleRunner`` only.

The cluster (one GPU node shaped like the lab's, plus ``SIM_EXTRA_NODES`` more GPU nodes,
KAI's CRDs applied) is started once per session by the ``sim_cluster`` role and torn down
after the last test.
"""

import json
import os
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from simtools import (  # noqa: E402  pylint: disable=wrong-import-position,unused-import
    BIN,
    INVENTORY,
    PLAYBOOK,
    cluster_pids,
    listeners_of,
    run_playbook,
    session_members,
    sim_process_pids,
)

GPU_NODE = "kai-hami-test-control-plane"
EXTRA_NODES = int(os.environ.get("SIM_EXTRA_NODES", "200"))


@pytest.fixture(scope="session")
def sim_cluster(tmp_path_factory):
    """Start the sim cluster for the session; yield its facts; stop it at the end."""
    workdir = str(tmp_path_factory.mktemp("sim"))
    variables = dict(
        sim_cluster_name="itest",
        # the shared cluster's nodes are kwok's (the tests marked real_node make a real node of their own)
        sim_cluster_node_runtime="kwok",
        sim_cluster_workdir=workdir,
        sim_cluster_kubeconfig=os.path.join(workdir, "kubeconfig"),
        sim_cluster_nodes=[GPU_NODE] + ["itest-gpu-%d" % n for n in range(EXTRA_NODES)],
    )
    up = run_playbook(variables, dict(sim_cluster_state="present"))
    if up.returncode != 0:
        run_playbook(variables, dict(sim_cluster_state="absent"))
        pytest.fail("sim cluster did not come up:\n%s\n%s" % (up.stdout[-6000:], up.stderr[-3000:]))
    # The sim_cluster role gives its nodes GPU feature discovery's labels; the tests of gpu_node_label
    # and of the roles that label nodes start from nodes without them, as kind's node is before Step 3.
    from kubernetes import config, dynamic

    nodes = dynamic.DynamicClient(config.new_client_from_config(config_file=variables["sim_cluster_kubeconfig"])).resources.get(
        api_version="v1", kind="Node")
    for node in nodes.get(label_selector="nvidia.com/gpu.present=true").to_dict()["items"]:
        nodes.patch(name=node["metadata"]["name"], content_type="application/merge-patch+json",
                    body={"metadata": {"labels": {"nvidia.com/gpu.memory": None, "nvidia.com/gpu.product": None, "nvidia.com/gpu.count": None}}})
    previous = os.environ.get("K8S_AUTH_KUBECONFIG")
    os.environ["K8S_AUTH_KUBECONFIG"] = variables["sim_cluster_kubeconfig"]
    try:
        yield dict(variables, gpu_node=GPU_NODE, extra_nodes=EXTRA_NODES)
    finally:
        if previous is None:
            os.environ.pop("K8S_AUTH_KUBECONFIG", None)
        else:
            os.environ["K8S_AUTH_KUBECONFIG"] = previous
        down = run_playbook(variables, dict(sim_cluster_state="absent"))
        assert down.returncode == 0, down.stdout[-4000:]


@pytest.fixture(scope="session")
def kube(sim_cluster):
    """An independent kubernetes client, to check what the cluster really holds."""
    from kubernetes import config, dynamic

    api_client = config.new_client_from_config(config_file=sim_cluster["sim_cluster_kubeconfig"])
    return dynamic.DynamicClient(api_client)


class ModuleRunner:
    """Run one of our modules on localhost and return its result dict."""

    def __init__(self, ansible_module):
        self.ansible_module = ansible_module

    def __call__(self, module_name, check=False, diff=False, **args):
        fqcn = "gpulab.kai_hami.%s" % module_name
        if not check and not diff:
            results = getattr(self.ansible_module, fqcn)(**args)
            return dict(results["localhost"])
        with tempfile.TemporaryDirectory() as workdir:
            # A registered result keeps `diff` (the CLI's result callbacks drop it).
            saved = os.path.join(workdir, "result.json")
            play = [{
                "name": "module under test", "hosts": "localhost", "gather_facts": False,
                "tasks": [
                    {"name": "run", fqcn: args, "register": "result", "check_mode": check, "diff": diff, "ignore_errors": True},
                    {"name": "save", "ansible.builtin.copy": {"content": "{{ result | to_json }}", "dest": saved, "mode": "0600"},
                     "check_mode": False, "diff": False},
                ],
            }]
            playbook = os.path.join(workdir, "play.yml")
            with open(playbook, "w") as handle:
                json.dump(play, handle)
            done = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, playbook],
                                  capture_output=True, text=True, check=False)
            try:
                with open(saved) as handle:
                    return json.load(handle)
            except (OSError, ValueError):
                raise AssertionError("no result saved: %s %s" % (done.stdout[-2000:], done.stderr[-2000:]))


@pytest.fixture
def dead_kubeconfig(tmp_path):
    """The path of a kubeconfig whose API server (https://127.0.0.1:9) never answers."""
    import yaml

    kubeconfig = tmp_path / "dead-kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "dead",
        "clusters": [{"name": "dead", "cluster": {"server": "https://127.0.0.1:9", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "dead", "user": {"token": "x"}}],
        "contexts": [{"name": "dead", "context": {"cluster": "dead", "user": "dead"}}]}))
    return str(kubeconfig)


@pytest.fixture
def module(sim_cluster, ansible_module):
    """``module('kai_queue', name=..., check=True)`` -> the module's result on localhost."""
    return ModuleRunner(ansible_module)
