"""The isolator stand-in, rule by rule: an AdmissionReview in, the exact patch (or denial) out.

Each rule is the kai-resource-isolator v1.1.0 behaviour the stand-in must reproduce (trigger
annotations, opt-out, target container, three hostPath volumes, four mounts, three env vars,
the JSON Patch shape, the denials). Expected patches are written out from those rules by the tests,
not produced by the code under test.
"""

import base64
import importlib.util
import json
import os
import socket
import ssl
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(ROOT, "roles", "sim_isolator", "files", "isolator_standin.py")
_spec = importlib.util.spec_from_file_location("isolator_standin", SCRIPT)
standin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(standin)

VGPU = {"name": "kai-resource-isolator-vgpu", "hostPath": {"path": "/usr/local/vgpu", "type": "DirectoryOrCreate"}}
CONTAINERS = {"name": "kai-resource-isolator-containers", "hostPath": {"path": "/usr/local/vgpu/containers", "type": "DirectoryOrCreate"}}
LOCK = {"name": "kai-resource-isolator-vgpulock", "hostPath": {"path": "/tmp/vgpulock", "type": "DirectoryOrCreate"}}
M_VGPU = {"name": "kai-resource-isolator-vgpu", "mountPath": "/usr/local/vgpu"}
M_PRELOAD = {"name": "kai-resource-isolator-vgpu", "mountPath": "/etc/ld.so.preload", "subPath": "ld.so.preload", "readOnly": True}
M_CONTAINERS = {"name": "kai-resource-isolator-containers", "mountPath": "/usr/local/vgpu/containers"}
M_LOCK = {"name": "kai-resource-isolator-vgpulock", "mountPath": "/tmp/vgpulock"}


def env_for(container, mount="/usr/local/vgpu"):
    return [
        {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
        {"name": "CONTAINER_NAME", "value": container},
        {"name": "CONTAINER_VGPU_MOUNT", "value": mount},
    ]


def pod(annotations=None, containers=None, init=None, volumes=None):
    spec = {"containers": containers if containers is not None else [{"name": "app", "image": "busybox"}]}
    if init is not None:
        spec["initContainers"] = init
    if volumes is not None:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "annotations": annotations or {}}, "spec": spec}


def admission(obj, uid="u-1"):
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": uid, "namespace": "ns", "operation": "CREATE", "object": obj}}).encode()


def decide(obj, mount="/usr/local/vgpu"):
    status, payload, line = standin.review(admission(obj), mount)
    assert status == 200, payload
    assert payload["apiVersion"] == "admission.k8s.io/v1" and payload["kind"] == "AdmissionReview"
    response = payload["response"]
    assert response["uid"] == "u-1"
    patch = json.loads(base64.b64decode(response["patch"])) if "patch" in response else None
    if patch is not None:
        assert response["patchType"] == "JSONPatch"
    return response, patch, line


FULL_REGULAR = [
    {"op": "add", "path": "/spec/volumes", "value": [VGPU, CONTAINERS, LOCK]},
    {"op": "add", "path": "/spec/containers/0/volumeMounts", "value": [M_VGPU, M_PRELOAD, M_CONTAINERS, M_LOCK]},
    {"op": "add", "path": "/spec/containers/0/env", "value": env_for("app")},
]


@pytest.mark.parametrize("annotation", [{"gpu-memory": "20480"}, {"gpu-fraction": "0.5"}, {"gpu-memory": ""}])
def test_either_annotation_triggers_the_full_injection(annotation):
    response, patch, line = decide(pod(annotation))
    assert response["allowed"] is True
    assert patch == FULL_REGULAR
    assert line.startswith("mutate uid=u-1 ns=ns pod=p injected: patchBytes=")
    assert int(line.rsplit("=", 1)[1]) == len(base64.b64decode(response["patch"]))


def test_no_trigger_no_patch():
    response, patch, line = decide(pod({"other": "x"}))
    assert response == {"uid": "u-1", "allowed": True} and patch is None
    assert line == 'mutate uid=u-1 ns=ns pod=p skipped: missing annotations "gpu-fraction" or "gpu-memory"'


@pytest.mark.parametrize("value", ["false", "FALSE", "False", "fAlSe"])
def test_opt_out_false_in_any_case(value):
    response, patch, line = decide(pod({"gpu-memory": "1", "kai-resource-isolator.io/inject": value}))
    assert response == {"uid": "u-1", "allowed": True} and patch is None
    assert line == "mutate uid=u-1 ns=ns pod=p skipped: annotation kai-resource-isolator.io/inject=false"


def test_opt_out_with_another_value_still_injects():
    dummy, patch, dummy = decide(pod({"gpu-memory": "1", "kai-resource-isolator.io/inject": "true"}))
    assert patch == FULL_REGULAR


def test_container_name_annotation_picks_a_regular_container():
    containers = [{"name": "sidecar"}, {"name": "gpu", "env": [{"name": "X", "value": "1"}], "volumeMounts": [{"name": "data", "mountPath": "/d"}]}]
    dummy, patch, dummy = decide(pod({"gpu-fraction": "0.5", "gpu-fraction-container-name": "gpu"}, containers=containers))
    assert patch == [
        {"op": "add", "path": "/spec/volumes", "value": [VGPU, CONTAINERS, LOCK]},
        {"op": "add", "path": "/spec/containers/1/volumeMounts/-", "value": M_VGPU},
        {"op": "add", "path": "/spec/containers/1/volumeMounts/-", "value": M_PRELOAD},
        {"op": "add", "path": "/spec/containers/1/volumeMounts/-", "value": M_CONTAINERS},
        {"op": "add", "path": "/spec/containers/1/volumeMounts/-", "value": M_LOCK},
        {"op": "add", "path": "/spec/containers/1/env/-", "value": env_for("gpu")[0]},
        {"op": "add", "path": "/spec/containers/1/env/-", "value": env_for("gpu")[1]},
        {"op": "add", "path": "/spec/containers/1/env/-", "value": env_for("gpu")[2]},
    ]


def test_an_init_container_of_that_name_wins_and_gets_only_the_vgpu_volume_and_two_mounts():
    init = [{"name": "gpu"}]
    containers = [{"name": "gpu"}]
    dummy, patch, dummy = decide(pod({"gpu-memory": "100", "gpu-fraction-container-name": "gpu"}, containers=containers, init=init))
    assert patch == [
        {"op": "add", "path": "/spec/volumes", "value": [VGPU]},
        {"op": "add", "path": "/spec/initContainers/0/volumeMounts", "value": [M_VGPU, M_PRELOAD]},
    ]


def test_a_missing_named_container_is_denied():
    response, patch, line = decide(pod({"gpu-memory": "1", "gpu-fraction-container-name": "nope"}))
    assert patch is None
    assert response["allowed"] is False
    assert response["status"] == {"code": 500, "message": "container with name nope not found for fraction request"}
    assert line.endswith("denied: container with name nope not found for fraction request")


def test_a_pod_without_containers_is_denied():
    response, dummy, dummy = decide(pod({"gpu-memory": "1"}, containers=[]))
    assert response["allowed"] is False
    assert response["status"] == {"code": 500, "message": "pod has no containers"}


def test_existing_volume_mount_and_env_of_the_same_name_are_left_as_they_are():
    container = {
        "name": "app",
        "volumeMounts": [dict(M_VGPU), {"name": "kai-resource-isolator-vgpulock", "mountPath": "/elsewhere"}],
        "env": [{"name": "CONTAINER_VGPU_MOUNT", "value": "/mine"}, {"name": "POD_UID", "value": "fixed"}],
    }
    volumes = [{"name": "kai-resource-isolator-containers", "emptyDir": {}}]
    dummy, patch, dummy = decide(pod({"gpu-memory": "1"}, containers=[container], volumes=volumes))
    assert patch == [
        {"op": "add", "path": "/spec/volumes/-", "value": VGPU},
        {"op": "add", "path": "/spec/volumes/-", "value": LOCK},
        # the vgpu mount exists (same name, path, subPath); the lock mount differs in its path
        {"op": "add", "path": "/spec/containers/0/volumeMounts/-", "value": M_PRELOAD},
        {"op": "add", "path": "/spec/containers/0/volumeMounts/-", "value": M_CONTAINERS},
        {"op": "add", "path": "/spec/containers/0/volumeMounts/-", "value": M_LOCK},
        {"op": "add", "path": "/spec/containers/0/env/-", "value": env_for("app")[1]},
    ]


def test_everything_present_gives_no_patch():
    container = {"name": "app", "volumeMounts": [M_VGPU, M_PRELOAD, M_CONTAINERS, M_LOCK], "env": env_for("app")}
    response, patch, line = decide(pod({"gpu-memory": "1"}, containers=[container], volumes=[VGPU, CONTAINERS, LOCK]))
    assert response == {"uid": "u-1", "allowed": True} and patch is None
    assert line.endswith("injected: patchBytes=0")


def test_the_mount_flag_moves_the_host_paths_and_the_env():
    dummy, patch, dummy = decide(pod({"gpu-memory": "1"}), mount="/opt/hami")
    assert patch[0]["value"][0]["hostPath"]["path"] == "/opt/hami"
    assert patch[0]["value"][1]["hostPath"]["path"] == "/opt/hami/containers"
    assert patch[0]["value"][2]["hostPath"]["path"] == "/tmp/vgpulock"
    assert patch[1]["value"][0]["mountPath"] == "/usr/local/vgpu"
    assert patch[2]["value"][2] == {"name": "CONTAINER_VGPU_MOUNT", "value": "/opt/hami"}


def test_the_operation_is_not_checked():
    body = json.loads(admission(pod({"gpu-memory": "1"})))
    body["request"]["operation"] = "UPDATE"
    status, payload, dummy = standin.review(json.dumps(body).encode())
    assert status == 200 and "patch" in payload["response"]


def test_an_undecodable_pod_is_denied_with_400():
    status, payload, line = standin.review(admission("not a pod"))
    assert status == 200
    assert payload["response"]["allowed"] is False and payload["response"]["status"]["code"] == 400
    assert "denied: failed to decode pod" in line


@pytest.mark.parametrize("body", [b"{}", b"not json", json.dumps({"request": {"object": {}}}).encode(),
                                  json.dumps({"request": {"uid": "", "object": {}}}).encode()])
def test_a_review_without_request_uid_is_refused(body):
    status, payload, dummy = standin.review(body)
    assert status == 400 and "request.uid is required" in payload


def test_flags_and_the_env_default(monkeypatch):
    monkeypatch.setenv("CONTAINER_VGPU_MOUNT", "/from/env")
    args = standin.parse_args(["-listen", "127.0.0.1:9443", "--tls-cert-file=c", "-tls-private-key-file=k"])
    assert (args.listen, args.tls_cert_file, args.tls_private_key_file, args.container_vgpu_mount) == ("127.0.0.1:9443", "c", "k", "/from/env")
    monkeypatch.delenv("CONTAINER_VGPU_MOUNT")
    assert standin.parse_args([]).container_vgpu_mount == "/usr/local/vgpu"
    assert standin.parse_args(["--container-vgpu-mount", "/x"]).container_vgpu_mount == "/x"


# --- the program itself, over TLS ------------------------------------------------------------

def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))
    from ansible_collections.gpulab.kai_hami.plugins.module_utils import sim_tls

    directory = str(tmp_path_factory.mktemp("tls"))
    ca_cert, ca_key, dummy = sim_tls.ensure_ca(directory, "test CA")
    sim_tls.ensure_server(directory, "isolator", ["127.0.0.1"], ca_cert, ca_key)
    return directory


def start(args):
    return subprocess.Popen([sys.executable, SCRIPT] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_it_serves_healthz_and_mutate_over_tls_and_logs_the_startup_line(certs):
    port = free_port()
    proc = start(["--listen", "127.0.0.1:%d" % port, "--tls-cert-file", os.path.join(certs, "isolator", "tls.crt"),
                  "--tls-private-key-file", os.path.join(certs, "isolator", "tls.key")])
    try:
        notice = proc.stdout.readline()
        startup = proc.stdout.readline()
        assert "stand-in" in notice and "not the isolator's own program" in notice
        assert startup.split(" ", 2)[2].strip() == (
            "webhook starting listen=127.0.0.1:%d containerVgpuMount=/usr/local/vgpu annotationKeys=gpu-fraction|gpu-memory" % port)
        context = ssl.create_default_context(cafile=os.path.join(certs, "ca.crt"))
        import http.client

        def call(method, path, body=None):
            conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            return response.status, response.read()

        assert call("GET", "/healthz") == (200, b"ok")
        assert call("GET", "/mutate")[0] == 405
        # the API server adds ?timeout=10s to the webhook's URL
        status, data = call("POST", "/mutate?timeout=10s", admission(pod({"gpu-memory": "20480"})))
        assert status == 200
        assert json.loads(base64.b64decode(json.loads(data)["response"]["patch"])) == FULL_REGULAR
        assert "mutate uid=u-1 ns=ns pod=p injected: patchBytes=" in proc.stdout.readline()
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("which", ["missing", "unreadable"])
def test_a_cert_file_that_cannot_be_read_stops_it_at_start(certs, tmp_path, which):
    if which == "missing":
        cert = str(tmp_path / "nope.crt")
    else:
        cert = str(tmp_path / "dir.crt")
        os.mkdir(cert)
    port = free_port()
    proc = start(["--listen", "127.0.0.1:%d" % port, "--tls-cert-file", cert,
                  "--tls-private-key-file", os.path.join(certs, "isolator", "tls.key")])
    output, dummy = proc.communicate(timeout=20)
    assert proc.returncode == 1
    assert "cannot read --tls-cert-file %s" % cert in output
    with socket.socket() as sock:
        sock.settimeout(1)
        assert sock.connect_ex(("127.0.0.1", port)) != 0
    time.sleep(0)
