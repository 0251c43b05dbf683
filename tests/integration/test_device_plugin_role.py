"""The device_plugin role against the sim's real API server.

The sim has no kubelet, so the device plugin itself never runs on it: what is checked is that
the API server accepts our DaemonSet, that the role waits on what the node really advertises,
and that it restarts device-plugin pods older than nvml-mock's newest pod.
"""

import os
import time

from kubernetes.dynamic.exceptions import NotFoundError

from conftest import run_playbook

PLAYBOOK = os.path.join(os.path.dirname(__file__), "playbooks", "device_plugin.yml")
NAME, NAMESPACE = "nvidia-device-plugin-mock", "kube-system"


def daemonset(kube):
    try:
        return kube.resources.get(api_version="apps/v1", kind="DaemonSet").get(name=NAME, namespace=NAMESPACE).to_dict()
    except NotFoundError:
        return None


def advertised(kube, node):
    return int(kube.resources.get(api_version="v1", kind="Node").get(name=node).to_dict()["status"]["allocatable"]["nvidia.com/gpu"])


def test_check_mode_is_a_server_side_dry_run(kube, sim_cluster):
    done = run_playbook(dict(device_plugin_node_name=sim_cluster["gpu_node"]), playbook=PLAYBOOK, options=["--check"])
    assert done.returncode == 0, done.stdout[-3000:]
    assert "changed: [localhost]" in done.stdout  # the API server accepted the DaemonSet in a dry-run
    assert daemonset(kube) is None


def test_apply_waits_on_what_the_node_advertises_then_absent(kube, sim_cluster):
    node = sim_cluster["gpu_node"]
    gpus = advertised(kube, node)
    try:
        done = run_playbook(dict(device_plugin_node_name=node, device_plugin_expected_gpus=gpus), playbook=PLAYBOOK)
        assert done.returncode == 0, done.stdout[-3000:]
        spec = daemonset(kube)["spec"]["template"]["spec"]
        assert "--nvidia-driver-root=/var/lib/nvml-mock/driver" in spec["containers"][0]["args"]
        assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}

        wrong = run_playbook(dict(device_plugin_node_name=node, device_plugin_expected_gpus=gpus + 1, device_plugin_wait_timeout=5),
                             playbook=PLAYBOOK)
        assert wrong.returncode != 0
        assert "advertises %d nvidia.com/gpu after 5 s, expected %d" % (gpus, gpus + 1) in wrong.stdout, wrong.stdout[-3000:]
    finally:
        gone = run_playbook(dict(device_plugin_state="absent"), playbook=PLAYBOOK)
    assert gone.returncode == 0
    assert daemonset(kube) is None


def test_plugin_pods_older_than_nvml_mock_are_restarted(kube, sim_cluster):
    node = sim_cluster["gpu_node"]
    pods = kube.resources.get(api_version="v1", kind="Pod")

    def pod(name, namespace, labels):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}}

    def started(name, namespace):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status = pods.get(name=name, namespace=namespace).to_dict().get("status") or {}
            if status.get("startTime"):
                return status["startTime"]
            time.sleep(0.5)
        raise AssertionError("kwok never started %s/%s" % (namespace, name))

    # Owned by another controller, so the DaemonSet controller cannot adopt (and replace) it:
    # only the role's restart can delete it.
    owner = kube.resources.get(api_version="v1", kind="ConfigMap").create(
        namespace=NAMESPACE, body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "old-plugin-owner"}}).to_dict()
    old_plugin = pod("old-plugin", NAMESPACE, {"name": NAME})
    old_plugin["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "old-plugin-owner",
                                                  "uid": owner["metadata"]["uid"], "controller": True}]
    pods.create(body=old_plugin, namespace=NAMESPACE)
    old = started("old-plugin", NAMESPACE)
    time.sleep(1.1)  # startTime has one-second resolution
    pods.create(body=pod("nvml-mock-x", "default", {"app.kubernetes.io/name": "nvml-mock"}), namespace="default")
    assert started("nvml-mock-x", "default") > old
    try:
        done = run_playbook(dict(device_plugin_node_name=node, device_plugin_expected_gpus=advertised(kube, node)), playbook=PLAYBOOK)
        assert done.returncode == 0, done.stdout[-3000:]
        names = [p["metadata"]["name"] for p in pods.get(namespace=NAMESPACE, label_selector="name=" + NAME).to_dict()["items"]]
        assert "old-plugin" not in names
    finally:
        pods.delete(name="nvml-mock-x", namespace="default", body={"gracePeriodSeconds": 0})
        kube.resources.get(api_version="v1", kind="ConfigMap").delete(name="old-plugin-owner", namespace=NAMESPACE)
        run_playbook(dict(device_plugin_state="absent"), playbook=PLAYBOOK)
