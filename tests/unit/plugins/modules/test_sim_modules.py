"""sim_process, sim_ports and sim_tls, run through their main() as local processes (no cluster).

They start real processes and bind real ports; what is asserted is what happened on the
machine (pids alive or gone, files written, a certificate that verifies), not calls made.
"""

import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ansible_collections.gpulab.kai_hami.plugins.module_utils import sim_process as sp
from ansible_collections.gpulab.kai_hami.plugins.modules import sim_ports, sim_process, sim_process_info, sim_tls


@pytest.fixture
def run(capsys):
    from ansible.module_utils.testing import patch_module_args

    def call(main, args, check=False):
        args = dict(args)
        if check:
            args["_ansible_check_mode"] = True
        with patch_module_args(args):
            with pytest.raises(SystemExit) as exit_info:
                main()
        return json.loads(capsys.readouterr().out), exit_info.value.code

    return call


@pytest.fixture
def state_dir(tmp_path):
    directory = str(tmp_path / "state")
    yield directory
    # stop whatever a test left running
    for entry in os.listdir(directory) if os.path.isdir(directory) else []:
        if entry.endswith(".pid"):
            pid = sp.read_pid(os.path.join(directory, entry))
            if pid and sp.is_alive(pid):
                sp.stop(pid, 2)


SLEEPER = [sys.executable, "-c", "import time, sys; print('started', flush=True); time.sleep(600)"]


def test_start_then_no_change_then_restart_on_a_new_spec_then_stop(run, state_dir):
    first, code = run(sim_process.main, dict(name="p", state_dir=state_dir, argv=SLEEPER))
    assert code == 0 and first["changed"] and first["action"] == "started"
    pid = first["pid"]
    assert sp.is_alive(pid) and sp.cmdline(pid) == SLEEPER

    again, dummy = run(sim_process.main, dict(name="p", state_dir=state_dir, argv=SLEEPER))
    assert again["changed"] is False and again["pid"] == pid

    other = SLEEPER[:2] + [SLEEPER[2] + " # v2"]
    checked, dummy = run(sim_process.main, dict(name="p", state_dir=state_dir, argv=other), check=True)
    assert checked["changed"] and checked["action"] == "restarted" and sp.is_alive(pid)

    restarted, dummy = run(sim_process.main, dict(name="p", state_dir=state_dir, argv=other))
    assert restarted["action"] == "restarted" and restarted["pid"] != pid
    assert not sp.is_alive(pid) and sp.is_alive(restarted["pid"])

    with open(first["log_file"]) as handle:
        assert handle.read().count("started") == 2  # appended across restarts

    stopped, dummy = run(sim_process.main, dict(name="p", state_dir=state_dir, state="absent"))
    assert stopped["changed"] and stopped["action"] == "stopped"
    assert not sp.is_alive(restarted["pid"])
    again, dummy = run(sim_process.main, dict(name="p", state_dir=state_dir, state="absent"))
    assert again["changed"] is False


def test_a_changed_spec_file_restarts_it(run, state_dir, tmp_path):
    config = tmp_path / "config"
    config.write_text("one")
    first, dummy = run(sim_process.main, dict(name="p", state_dir=state_dir, argv=SLEEPER, spec_files=[str(config)]))
    same, dummy = run(sim_process.main, dict(name="p", state_dir=state_dir, argv=SLEEPER, spec_files=[str(config)]))
    assert same["changed"] is False
    config.write_text("two")
    changed, dummy = run(sim_process.main, dict(name="p", state_dir=state_dir, argv=SLEEPER, spec_files=[str(config)]))
    assert changed["action"] == "restarted" and not sp.is_alive(first["pid"])


def test_a_dead_process_is_started_again(run, state_dir):
    first, dummy = run(sim_process.main, dict(name="p", state_dir=state_dir, argv=SLEEPER))
    sp.stop(first["pid"], 2)
    again, dummy = run(sim_process.main, dict(name="p", state_dir=state_dir, argv=SLEEPER))
    assert again["action"] == "started" and again["pid"] != first["pid"] and sp.is_alive(again["pid"])


def test_sim_process_info_tells_running_from_dead_and_from_a_recycled_pid(run, state_dir, tmp_path):
    live, dummy = run(sim_process.main, dict(name="live", state_dir=state_dir, argv=SLEEPER))
    dead, dummy = run(sim_process.main, dict(name="dead", state_dir=state_dir, argv=SLEEPER))
    recycled, dummy = run(sim_process.main, dict(name="recycled", state_dir=state_dir, argv=SLEEPER))
    sp.stop(dead["pid"], 2)
    # a pid file whose pid now runs another program: the spec's argv no longer matches
    with open(os.path.join(state_dir, "recycled.spec.json")) as handle:
        spec = json.load(handle)
    spec["argv"] = spec["argv"] + ["--another-program"]
    with open(os.path.join(state_dir, "recycled.spec.json"), "w") as handle:
        json.dump(spec, handle)
    # kwokctl's pid files have no spec: a live pid runs, a pid no process has does not
    pids = tmp_path / "pids"
    pids.mkdir()
    (pids / "kube-apiserver.pid").write_text(str(os.getpid()))
    (pids / "etcd.pid").write_text(str(dead["pid"]))
    (pids / "garbled.pid").write_text("not a pid")
    result, code = run(sim_process_info.main, dict(state_dirs=dict(kai=state_dir, cluster=str(pids), gone=str(tmp_path / "missing"))),
                       check=True)
    assert code == 0 and result["changed"] is False
    assert [(p["part"], p["name"], p["running"]) for p in result["processes"]] == [
        ("cluster", "etcd", False), ("cluster", "garbled", False), ("cluster", "kube-apiserver", True),
        ("kai", "dead", False), ("kai", "live", True), ("kai", "recycled", False)]
    assert result["down"] == ["etcd", "garbled", "dead", "recycled"]
    assert [p["pid"] for p in result["processes"] if p["name"] in ("live", "garbled")] == [0, live["pid"]]
    run(sim_process.main, dict(name="recycled", state_dir=state_dir, state="absent"))


def test_sim_process_info_bad_input(run):
    result, code = run(sim_process_info.main, dict(state_dirs=dict(kai=["a"])))
    assert code == 1 and result["msg"] == "state_dirs.kai must be a directory's path, got ['a']"
    result, code = run(sim_process_info.main, dict(mentioning=["relative/dir"]))
    assert code == 1 and result["msg"] == "mentioning must list absolute paths, got 'relative/dir'"


def test_sim_process_info_finds_every_process_under_a_directory_pid_file_or_not(run, tmp_path):
    """A cleanup must see what still runs of a cluster even when its pid file is gone."""
    inside, beside = tmp_path / "sim" / "lab", tmp_path / "sim" / "lab-two"
    inside.mkdir(parents=True)
    beside.mkdir(parents=True)
    by_cwd = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=str(inside))
    by_argument = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--data-dir=%s/etcd" % inside])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=str(beside))
    try:
        result, code = run(sim_process_info.main, dict(mentioning=[str(inside)]))
        assert code == 0
        assert sorted(p["pid"] for p in result["mentioning"]) == sorted([by_cwd.pid, by_argument.pid])
        assert other.pid not in [p["pid"] for p in result["mentioning"]]  # lab-two is not under lab
    finally:
        for proc in (by_cwd, by_argument, other):
            proc.kill()
            proc.wait()
    result, code = run(sim_process_info.main, dict(mentioning=[str(inside)]))
    assert code == 0 and result["mentioning"] == []


def test_sim_process_info_finds_a_cluster_by_name_wherever_its_work_dir_is(run, tmp_path):
    """kwokctl's cluster dir in a command line names the cluster and its work dir; another name's is left out."""
    workdir = tmp_path / "beside-the-playbook" / "fairlab-state"
    etcd = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--data-dir=%s/kwok/clusters/fairlab/etcd" % workdir])
    apiserver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--cert-dir", "%s/kwok/clusters/fairlab" % workdir])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--data-dir=%s/kwok/clusters/fairlab2/etcd" % workdir])
    try:
        result, code = run(sim_process_info.main, dict(cluster="fairlab"))
        assert code == 0
        assert sorted((p["pid"], p["workdir"]) for p in result["cluster_processes"]) == sorted(
            [(etcd.pid, str(workdir)), (apiserver.pid, str(workdir))])
    finally:
        for proc in (etcd, apiserver, other):
            proc.kill()
            proc.wait()
    result, code = run(sim_process_info.main, dict(cluster="fairlab"))
    assert code == 0 and result["cluster_processes"] == []


def test_a_program_that_exits_at_start_fails_with_its_last_lines_and_leaves_nothing(run, state_dir):
    argv = [sys.executable, "-c", "print('loading config'); print('fatal: no such flag --x'); raise SystemExit(3)"]
    result, code = run(sim_process.main, dict(name="bad", state_dir=state_dir, argv=argv, start_grace=3))
    assert code == 1
    assert "bad exited with code 3" in result["msg"]
    assert "fatal: no such flag --x" in result["msg"]
    assert result["pid"] is None
    assert not os.path.exists(os.path.join(state_dir, "bad.pid"))


def test_a_taken_port_fails_naming_its_holder_and_starts_nothing(run, state_dir):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        result, code = run(sim_process.main, dict(name="p", state_dir=state_dir, argv=SLEEPER, ports=[port]))
    finally:
        holder.close()
    assert code == 1
    assert "p was not started: port 127.0.0.1:%d is already in use by pid %d" % (port, os.getpid()) in result["msg"]
    assert not os.path.exists(os.path.join(state_dir, "p.pid"))


class _Health(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):
        self.send_response(self.status)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_it_waits_for_the_health_url_and_fails_when_it_never_answers(run, state_dir):
    server = HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/healthz" % server.server_address[1]
    try:
        ok, code = run(sim_process.main, dict(name="h", state_dir=state_dir, argv=SLEEPER, health_url=url))
        assert code == 0 and ok["health"] == "%s answered 200" % url
        _Health.status = 503
        bad, code = run(sim_process.main, dict(name="h2", state_dir=state_dir, argv=SLEEPER, health_url=url, wait_timeout=2))
        assert code == 1 and "did not answer within 2 s" in bad["msg"] and "answered 503" in bad["msg"]
        assert not os.path.exists(os.path.join(state_dir, "h2.pid"))
    finally:
        _Health.status = 200
        server.shutdown()


def test_processes_start_together_converge_and_one_failure_stops_what_the_call_started(run, state_dir):
    failing = [sys.executable, "-c", "print('cannot bind'); raise SystemExit(4)"]
    running_before, dummy = run(sim_process.main, dict(name="kept", state_dir=state_dir, argv=SLEEPER))
    processes = [dict(name="kept", argv=SLEEPER), dict(name="a", argv=SLEEPER), dict(name="b", argv=SLEEPER + ["b"])]
    first, code = run(sim_process.main, dict(state_dir=state_dir, processes=processes, start_grace=0.5))
    assert code == 0 and first["changed"]
    assert [(p["name"], p["action"]) for p in first["processes"]] == [("kept", "none"), ("a", "started"), ("b", "started")]
    assert first["processes"][0]["pid"] == running_before["pid"]
    pids = dict((p["name"], p["pid"]) for p in first["processes"])
    assert all(sp.is_alive(pid) for pid in pids.values())
    assert sp.cmdline(pids["b"]) == SLEEPER + ["b"]

    again, dummy = run(sim_process.main, dict(state_dir=state_dir, processes=processes))
    assert again["changed"] is False and [p["pid"] for p in again["processes"]] == [pids["kept"], pids["a"], pids["b"]]

    # b gets a new spec (restarted), c cannot start: the call stops what it started (b, c), leaves kept and a
    broken = processes[:2] + [dict(name="b", argv=SLEEPER + ["b2"]), dict(name="c", argv=failing)]
    result, code = run(sim_process.main, dict(state_dir=state_dir, processes=broken, start_grace=1))
    assert code == 1 and "c exited with code 4" in result["msg"] and "cannot bind" in result["msg"]
    by_name = dict((p["name"], p) for p in result["processes"])
    assert by_name["b"]["pid"] is None and by_name["c"]["pid"] is None
    assert not sp.is_alive(pids["b"]) and sp.is_alive(pids["kept"]) and sp.is_alive(pids["a"])
    assert not os.path.exists(os.path.join(state_dir, "b.pid")) and not os.path.exists(os.path.join(state_dir, "c.pid"))

    stopped, dummy = run(sim_process.main, dict(state_dir=state_dir, state="absent", processes=[dict(name=n) for n in ("kept", "a", "b")]))
    assert [(p["name"], p["action"]) for p in stopped["processes"]] == [("kept", "stopped"), ("a", "stopped"), ("b", "none")]
    assert not sp.is_alive(pids["kept"]) and not sp.is_alive(pids["a"])


def test_processes_of_several_state_dirs_stop_in_one_call(run, state_dir, tmp_path):
    other = str(tmp_path / "other")
    # the same name in two directories is two processes
    one, dummy = run(sim_process.main, dict(name="p", state_dir=state_dir, argv=SLEEPER))
    two, dummy = run(sim_process.main, dict(name="p", state_dir=other, argv=SLEEPER + ["other"]))
    assert sp.is_alive(one["pid"]) and sp.is_alive(two["pid"]) and one["pid"] != two["pid"]
    stopped, code = run(sim_process.main, dict(state_dir=state_dir, state="absent",
                                               processes=[dict(name="p"), dict(name="p", state_dir=other), dict(name="gone", state_dir=other)]))
    assert code == 0 and stopped["changed"]
    assert [(p["name"], p["action"]) for p in stopped["processes"]] == [("p", "stopped"), ("p", "stopped"), ("gone", "none")]
    assert not sp.is_alive(one["pid"]) and not sp.is_alive(two["pid"])
    assert not os.path.exists(os.path.join(other, "p.pid")) and not os.path.exists(os.path.join(state_dir, "p.pid"))


@pytest.mark.parametrize("args, fragment", [
    (dict(), "one of name or processes is required"),
    (dict(processes=[]), "processes must name at least one process"),
    (dict(processes=[dict(name="p", argv=["true"])], argv=["true"]), "argv belongs in each entry of processes"),
    (dict(processes=[dict(name="p", argv=["true"]), dict(name="p", argv=["true"])]), "processes[1]: the name 'p' is given twice"),
    (dict(processes=[dict(name="p", argv=["true"]), dict(name="q")]), "processes[1] (q): argv is required with state=present"),
    (dict(processes=[dict(name="p", argv=["true"], ports=[0])]), "processes[0] (p): ports must be TCP ports"),
    (dict(processes=[dict(argv=["true"])]), "name"),
])
def test_sim_process_list_bad_input_starts_nothing(run, state_dir, args, fragment):
    result, code = run(sim_process.main, dict(args, state_dir=state_dir))
    assert code == 1 and fragment in result["msg"], result
    assert not os.path.exists(state_dir)


@pytest.mark.parametrize("args, fragment", [
    (dict(name="../x", argv=["true"]), "name '../x' must be letters"),
    (dict(name="p"), "argv is required with state=present"),
    (dict(name="p", argv=["true"], wait_timeout=0), "wait_timeout must be a positive number"),
    (dict(name="p", argv=["true"], ports=[70000]), "ports must be TCP ports (1-65535), got 70000"),
    (dict(name="p", argv=["true"], health_url="127.0.0.1:80/healthz"), "health_url must start with http:// or https://"),
    (dict(name="p", argv=["true"], state="paused"), "state"),
])
def test_sim_process_bad_input(run, state_dir, args, fragment):
    result, code = run(sim_process.main, dict(args, state_dir=state_dir))
    assert code == 1 and fragment in result["msg"], result
    assert not os.path.exists(state_dir)


def test_sim_ports_picks_free_ports_and_remembers_them(run, tmp_path):
    path = str(tmp_path / "ports.json")
    first, dummy = run(sim_ports.main, dict(path=path, names=["a", "b"]))
    ports = first["ports"]
    assert first["changed"] and set(ports) == {"a", "b"} and ports["a"] != ports["b"]
    assert all(20000 <= p <= 29999 and sp.port_in_use(p) is None for p in ports.values())
    again, dummy = run(sim_ports.main, dict(path=path, names=["a", "b"]))
    assert again == dict(first, changed=False)
    more, dummy = run(sim_ports.main, dict(path=path, names=["a", "c"], fixed={"b": 23456}))
    assert more["ports"]["a"] == ports["a"] and more["ports"]["b"] == 23456 and "c" in more["ports"]
    with open(path) as handle:
        assert json.load(handle) == more["ports"]


def test_sim_ports_check_mode_writes_nothing(run, tmp_path):
    path = str(tmp_path / "ports.json")
    result, dummy = run(sim_ports.main, dict(path=path, names=["a"]), check=True)
    assert result["changed"] and not os.path.exists(path)


@pytest.mark.parametrize("args, fragment", [
    (dict(names=["a"], fixed={"a": "x"}), "fixed.a must be a TCP port"),
    (dict(names=["a"], fixed={"a": 2000, "b": 2000}), "fixed gives one port to several names"),
    (dict(names=["a"], range_start=30000, range_end=20000), "range_start <= range_end"),
])
def test_sim_ports_bad_input(run, tmp_path, args, fragment):
    result, code = run(sim_ports.main, dict(args, path=str(tmp_path / "ports.json")))
    assert code == 1 and fragment in result["msg"]


def test_sim_ports_refuses_a_missing_directory(run, tmp_path):
    result, code = run(sim_ports.main, dict(path=str(tmp_path / "nope" / "ports.json"), names=["a"]))
    assert code == 1 and "does not exist" in result["msg"]


def test_sim_tls_issues_certificates_that_verify_and_is_idempotent(run, tmp_path):
    path = str(tmp_path / "tls")
    first, dummy = run(sim_tls.main, dict(path=path, common_name="test CA", servers=[{"name": "hook"}]))
    assert first["changed"]
    cert = os.path.join(first["servers"]["hook"], "tls.crt")
    key = os.path.join(first["servers"]["hook"], "tls.key")
    assert oct(os.stat(key).st_mode & 0o777) == "0o600"
    again, dummy = run(sim_tls.main, dict(path=path, common_name="test CA", servers=[{"name": "hook"}]))
    assert again["changed"] is False and again["ca_bundle"] == first["ca_bundle"]

    # a TLS server with that certificate verifies against the CA for 127.0.0.1
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve():
        conn, dummy = listener.accept()
        with server_context.wrap_socket(conn, server_side=True) as tls:
            tls.sendall(b"hello")

    threading.Thread(target=serve, daemon=True).start()
    client = ssl.create_default_context(cafile=first["ca_file"])
    with socket.create_connection(listener.getsockname()) as raw:
        with client.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.recv(5) == b"hello"
    listener.close()

    other, dummy = run(sim_tls.main, dict(path=path, common_name="test CA", servers=[{"name": "hook", "names": ["127.0.0.1", "example.test"]}]))
    assert other["changed"] and other["ca_bundle"] == first["ca_bundle"]


def test_sim_tls_check_mode_writes_nothing(run, tmp_path):
    result, dummy = run(sim_tls.main, dict(path=str(tmp_path / "tls"), common_name="x", servers=[{"name": "a"}]), check=True)
    assert result["changed"] and result["ca_bundle"] == "" and not os.path.exists(str(tmp_path / "tls"))


def test_sim_tls_links_each_certificate_directory_where_asked(run, tmp_path):
    link = tmp_path / "tmp" / "hook" / "k8s-webhook-server" / "serving-certs"
    args = dict(path=str(tmp_path / "tls"), common_name="x", servers=[{"name": "hook", "link": str(link)}])
    checked, dummy = run(sim_tls.main, args, check=True)
    assert checked["changed"] and not os.path.lexists(str(link))
    first, dummy = run(sim_tls.main, args)
    assert first["changed"] and os.readlink(str(link)) == first["servers"]["hook"]
    assert os.path.isfile(str(link / "tls.crt"))
    again, dummy = run(sim_tls.main, args)
    assert again["changed"] is False
    os.unlink(str(link))
    os.symlink(str(tmp_path), str(link))  # a link to elsewhere is put right
    fixed, dummy = run(sim_tls.main, args)
    assert fixed["changed"] and os.readlink(str(link)) == first["servers"]["hook"]


def test_sim_tls_refuses_a_link_path_that_is_not_a_link(run, tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    result, code = run(sim_tls.main, dict(path=str(tmp_path / "tls"), common_name="x", servers=[{"name": "a", "link": str(taken)}]))
    assert code == 1 and "servers[0].link %s exists and is not a symbolic link" % taken in result["msg"]
    assert not os.path.exists(str(tmp_path / "tls"))


def test_sim_tls_bad_server_name(run, tmp_path):
    result, code = run(sim_tls.main, dict(path=str(tmp_path / "tls"), common_name="x", servers=[{"name": "../up"}]))
    assert code == 1 and "servers[0].name '../up'" in result["msg"]
    assert not os.path.exists(str(tmp_path / "tls"))


def test_stop_reaches_the_whole_session(state_dir, run):
    argv = [sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); time.sleep(600)"]
    started, dummy = run(sim_process.main, dict(name="tree", state_dir=state_dir, argv=argv))
    time.sleep(1)
    children = [int(p) for p in os.listdir("/proc") if p.isdigit() and _session(int(p)) == started["pid"]]
    assert len(children) >= 2
    run(sim_process.main, dict(name="tree", state_dir=state_dir, state="absent"))
    time.sleep(0.5)
    assert not [p for p in children if sp.is_alive(p)]


def _session(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[3])
    except (OSError, ValueError, IndexError):
        return None
