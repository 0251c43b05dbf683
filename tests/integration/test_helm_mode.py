"""The Helm mode's plumbing, on the sim: a pinned helm built by the helm_binary role, and the
nvml_mock role installing, re-applying and uninstalling a release through kubernetes.core.helm.

The test suite pulls no real chart (it needs no registry), so the chart is ours
(tests/integration/charts/values-echo): it writes the values it was given into a ConfigMap, so
the test sees exactly what the role handed Helm.
"""

import json
import os
import re
import subprocess

import pytest
import yaml
from kubernetes.dynamic.exceptions import NotFoundError

from conftest import run_playbook

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.versions import read as read_versions

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHART = os.path.join(os.path.dirname(__file__), "charts", "values-echo")
HELM_VERSION = read_versions()["HELM_VERSION"]
HELM_DIR = os.path.join(ROOT, ".cache", "helm", HELM_VERSION, "bin")
PLAYBOOK = os.path.join(os.path.dirname(__file__), "playbooks", "nvml_mock.yml")


def changed(stdout):
    return int(re.search(r"localhost\s*:\s*ok=\d+\s+changed=(\d+)", stdout).group(1))


@pytest.fixture(scope="module")
def helm():
    """helm built by the helm_binary role (cached in .cache/helm/<version>, like the sim binaries)."""
    done = run_playbook(dict(helm_binary_dir=HELM_DIR), playbook=os.path.join(os.path.dirname(__file__), "playbooks", "helm_binary.yml"))
    assert done.returncode == 0, done.stdout[-4000:]
    version = subprocess.run([os.path.join(HELM_DIR, "helm"), "version", "--short"], capture_output=True, text=True, check=True).stdout.strip()
    assert version == HELM_VERSION or version.startswith(HELM_VERSION + "+"), version
    again = run_playbook(dict(helm_binary_dir=HELM_DIR), playbook=os.path.join(os.path.dirname(__file__), "playbooks", "helm_binary.yml"))
    assert again.returncode == 0 and changed(again.stdout) == 0, again.stdout[-3000:]
    return HELM_DIR


def test_nvml_mock_helm_mode_hands_helm_its_pinned_values(kube, sim_cluster, helm):
    variables = dict(nvml_mock_mode="helm", nvml_mock_chart_ref=CHART, nvml_mock_release="nvml-mock-test",
                     nvml_mock_node_name=sim_cluster["gpu_node"], nvml_mock_wait_timeout=30, helm_binary_dir=helm)
    defaults = yaml.safe_load(open(os.path.join(ROOT, "roles", "nvml_mock", "defaults", "main.yml")))
    configmaps = kube.resources.get(api_version="v1", kind="ConfigMap")
    try:
        first = run_playbook(variables, playbook=PLAYBOOK)
        assert first.returncode == 0, first.stdout[-4000:]
        values = json.loads(configmaps.get(name="nvml-mock-test-values", namespace="default").to_dict()["data"]["values.json"])
        # the image's defaults name the table's entries
        pinned = read_versions()
        assert values["image"] == {"repository": pinned["NVML_MOCK_IMAGE"], "tag": pinned["NVML_MOCK_IMAGE_TAG"], "pullPolicy": "IfNotPresent"}
        assert values["gpu"] == {"profile": defaults["nvml_mock_profile"], "count": ""}

        again = run_playbook(variables, playbook=PLAYBOOK)
        assert again.returncode == 0 and changed(again.stdout) == 0, again.stdout[-4000:]

        more = run_playbook(variables, dict(nvml_mock_values={"gpu": {"count": 4}}), playbook=PLAYBOOK)
        assert more.returncode == 0 and changed(more.stdout) == 1, more.stdout[-4000:]
        values = json.loads(configmaps.get(name="nvml-mock-test-values", namespace="default").to_dict()["data"]["values.json"])
        assert values["gpu"] == {"profile": defaults["nvml_mock_profile"], "count": 4}
    finally:
        gone = run_playbook(variables, dict(nvml_mock_state="absent"), playbook=PLAYBOOK)
    assert gone.returncode == 0, gone.stdout[-4000:]
    with pytest.raises(NotFoundError):
        configmaps.get(name="nvml-mock-test-values", namespace="default")


def test_nvml_mock_helm_mode_fails_clearly_when_the_node_never_gets_the_label(kube, sim_cluster, helm):
    variables = dict(nvml_mock_mode="helm", nvml_mock_chart_ref=CHART, nvml_mock_release="nvml-mock-nolabel",
                     nvml_mock_node_name="no-such-node", nvml_mock_wait_timeout=1, helm_binary_dir=helm)
    try:
        done = run_playbook(variables, playbook=PLAYBOOK)
        assert done.returncode != 0
        assert "node no-such-node does not exist after 1 s" in done.stdout, done.stdout[-3000:]
        assert 'it logs "Mock GPU environment ready. Sleeping..."' in done.stdout
    finally:
        run_playbook(variables, dict(nvml_mock_state="absent"), playbook=PLAYBOOK)
