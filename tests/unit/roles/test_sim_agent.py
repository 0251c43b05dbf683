"""The sim agent's own decisions: CRI log lines, placeholders' readiness, and which GPU a reservation app reports."""

import argparse
import importlib.util
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def load(path, name):
    """A module of the roles' files, by path (they are programs, not a package)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sys.path.insert(0, os.path.join(ROOT, "roles", "sim_agent", "files"))  # the agent's modules import each other
cri_log = load("roles/sim_agent/files/cri_log.py", "cri_log")
placeholders = load("roles/sim_agent/files/placeholders.py", "placeholders")
pod_netns = load("roles/sim_agent/files/pod_netns.py", "pod_netns")
runner_module = load("roles/sim_agent/files/kai_reservation_runner.py", "kai_reservation_runner")

UUIDS = ["GPU-%d" % i for i in range(3)]


def test_cri_lines_are_what_kwok_reads():
    line = cri_log.cri_line(b"hello world\n")
    assert re.match(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z stdout F hello world\n$", line), line


def reservation(name, node="n1", group=None, uuid=None):
    meta = {"name": name, "namespace": "kai-resource-reservation", "uid": name, "labels": {}, "annotations": {}}
    if group:
        meta["labels"]["runai-gpu-group"] = group
    if uuid:
        meta["annotations"]["run.ai/reserve_for_gpu_index"] = uuid
    return {"metadata": meta, "spec": {"nodeName": node}}


def runner(tmp_path):
    args = argparse.Namespace(state_dir=str(tmp_path), nvml_stand_in_dir="/lib", gpu_uuid=UUIDS)
    return runner_module.Reservations(api=None, args=args)


def test_a_new_group_gets_the_first_gpu_no_other_group_holds(tmp_path):
    r = runner(tmp_path)
    first = reservation("r1", group="g1")
    assert r.choose_gpu(first, [first]) == "GPU-0"
    second = reservation("r2", group="g2")
    assert r.choose_gpu(second, [first, second]) == "GPU-1"
    # the same group again (a restarted runner, a re-run): the same GPU
    assert runner(tmp_path).choose_gpu(first, [first, second]) == "GPU-0"


def test_a_group_that_already_reported_keeps_its_uuid_and_a_gone_group_frees_its_gpu(tmp_path):
    r = runner(tmp_path)
    old = reservation("r0", group="g0", uuid="GPU-2")
    new = reservation("r1", group="g0")
    assert r.choose_gpu(new, [old, new]) == "GPU-2"
    other = reservation("r2", group="g5")
    assert r.choose_gpu(other, [other]) == "GPU-0"  # g0 has no pods left: its GPU is free again


def test_gpus_are_per_node_and_none_when_all_are_held(tmp_path):
    r = runner(tmp_path)
    pods = [reservation("a%d" % i, group="g%d" % i, uuid=UUIDS[i]) for i in range(3)]
    elsewhere = reservation("b", node="n2", group="h")
    assert r.choose_gpu(elsewhere, pods + [elsewhere]) == "GPU-0"
    late = reservation("c", group="g9")
    assert r.choose_gpu(late, pods + [late]) is None


class FakeApi(object):
    """The placeholder pods the agent sees, and what it asked the API to change."""

    def __init__(self, pods):
        self.items = pods
        self.logs, self.ready = [], []

    def pods(self, label_selector=None, namespace=None):
        return self.items

    def ensure_logs(self, pod, log_file):
        self.logs.append((pod["metadata"]["name"], log_file))
        return True

    def set_ready(self, pod, ready, message):
        self.ready.append((pod["metadata"]["name"], ready))
        for condition in pod["status"]["conditions"]:
            if condition["type"] == "Ready":
                condition["status"] = "True" if ready else "False"


def placeholder(name, url, ready=True, phase="Running"):
    return {"metadata": {"name": name, "namespace": "kai-scheduler", "uid": name, "labels": {placeholders.STANDS_FOR_LABEL: name},
                         "annotations": {placeholders.LOG_FILE_ANNOTATION: "/logs/%s.log" % name, placeholders.HEALTH_URL_ANNOTATION: url}},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def test_a_placeholder_is_ready_only_while_its_process_answers(monkeypatch):
    health = {"http://up": (True, "answered 200"), "http://down": (False, "connection refused")}
    monkeypatch.setattr(placeholders, "check_health", lambda url, ca=None: health[url])
    api = FakeApi([placeholder("alive", "http://up"), placeholder("dead", "http://down"), placeholder("new", "http://down", phase="Pending")])
    known = {}
    placeholders.placeholder_step(api, known)
    assert api.ready == [("dead", False)]  # the live one stays Ready; a Pending pod is kwok's to make Running
    assert sorted(api.logs) == [("alive", "/logs/alive.log"), ("dead", "/logs/dead.log")]
    health["http://down"] = (True, "answered 200")
    placeholders.placeholder_step(api, known)
    assert api.ready == [("dead", False), ("dead", True)]
    assert len(api.logs) == 2  # one Logs object per pod


def test_a_program_started_in_a_namespace_reaches_the_host_port_and_binds_its_own(tmp_path):
    """The reservation apps' way of running: the program is the started process itself (exec, no
    wrapper beside it), reaches the host's 127.0.0.1:PORT through this process's relay, binds a port
    the host already uses (its namespace is its own), and its output lands in the CRI log."""
    import socket
    import subprocess
    import threading
    import time

    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen(4)
    port = host.getsockname()[1]

    def answer():
        conn, _addr = host.accept()
        conn.sendall(b"from the host")
        conn.close()

    threading.Thread(target=answer, daemon=True).start()
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    program = ("import os, socket\n"
               "print('pid', os.getpid(), flush=True)\n"
               "s = socket.create_connection(('127.0.0.1', %d)); print(s.recv(100).decode(), flush=True)\n"
               "b = socket.socket(); b.bind(('127.0.0.1', %d)); print('bound', flush=True)\n" % (port, taken.getsockname()[1]))
    log_path = str(tmp_path / "app.log")
    log = cri_log.CriLog(log_path)
    proc, listeners = pod_netns.start_in_namespace([sys.executable, "-c", program], dict(os.environ), str(tmp_path), [port], log)
    try:
        assert proc.wait(timeout=30) == 0
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    finally:
        host.close()
        taken.close()
    deadline = time.monotonic() + 5
    text = ""
    while "bound" not in text and time.monotonic() < deadline:
        with open(log_path) as handle:
            text = handle.read()
    assert re.search(r" stdout F from the host\n", text), text
    assert re.search(r" stdout F bound\n", text), text
    assert " stdout F pid %d\n" % proc.pid in text, text  # the started process is the program itself
    assert len(listeners) == 1
    log.close()
