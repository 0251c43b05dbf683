# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sim platform's agent: what a kubelet would do for the pods that stand for local processes.

On the sim, KAI's programs (and the isolator's stand-in) run as local processes, while kwok
plays the kubelet for the nodes. This agent ties the two together, through the API only:

``run --log FILE -- PROGRAM ARGS...``
    Runs a program with its output written to FILE in the container-runtime log format
    (``<time> stdout F <line>``), which kwok serves as a pod's log.

``pod --log FILE [--reach PORT]... [--expose HOST_PORT:POD_PORT]... -- PROGRAM ARGS...``
    Runs a program like a pod: in a network namespace of its own (only its own loopback), so
    whatever it binds (``:8080``, ``:9443`` on all interfaces) stays inside. ``--reach`` makes
    the host's 127.0.0.1:PORT (the API server) reachable at the same address inside;
    ``--expose`` makes the program's PORT reachable on the host's 127.0.0.1:HOST_PORT. Its
    output goes to FILE as with ``run``.

``netns-exec --control-fd FD [--reach PORT]... -- PROGRAM ARGS...``
    Enters a network namespace of its own, hands the listening sockets for the ``--reach``
    ports to the process that started it (over the Unix socket FD), and becomes PROGRAM
    (exec): nothing of ours stays beside the program; the starter relays the connections.

``placeholders --kubeconfig K --health-address 127.0.0.1:P``
    For every pod labelled ``gpulab.kai-hami/stands-for`` (a placeholder Deployment's pod):
    keeps a kwok ``Logs`` object pointing at the process's log file, so ``kubectl logs`` on the
    pod shows the process's own log, and sets the pod Ready only while the process answers
    its health URL (NotReady within seconds after it dies).

``reservations --kubeconfig K --program kai-resourcereservation --state-dir D ...``
    For every pod KAI's binder creates in its reservation namespace on a sim node, runs KAI's
    real reservation app as a local process (like a pod: in a network namespace of its own,
    started through ``netns-exec``, the API server reached through this runner's relay) with
    that pod's POD_NAME and POD_NAMESPACE; its output is the pod's log; stops it when the pod
    goes away.

Placeholder pods carry these annotations (set in their Deployment's pod template):
``gpulab.kai-hami/log-file`` (the CRI-format log), ``gpulab.kai-hami/health-url`` and
optionally ``gpulab.kai-hami/health-ca-file``.
"""

from __future__ import absolute_import, division, print_function

import argparse
import datetime
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

STANDS_FOR_LABEL = "gpulab.kai-hami/stands-for"
LOG_FILE_ANNOTATION = "gpulab.kai-hami/log-file"
HEALTH_URL_ANNOTATION = "gpulab.kai-hami/health-url"
HEALTH_CA_ANNOTATION = "gpulab.kai-hami/health-ca-file"
LOGS_API = ("kwok.x-k8s.io", "v1alpha1", "logs")
GPU_GROUP_LABEL = "runai-gpu-group"
GPU_INDEX_ANNOTATION = "run.ai/reserve_for_gpu_index"
POLL_SECONDS = 1.0


# --- logging -------------------------------------------------------------------------------

def cri_line(text, stream=b"stdout"):
    """One line of the container-runtime log format kwok reads (``<RFC3339Nano> stdout F text``)."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ").encode()
    if isinstance(text, str):
        text = text.encode("utf-8", "replace")
    return now + b" " + stream + b" F " + text.rstrip(b"\r\n") + b"\n"


class CriLog(object):
    """A log file in the container-runtime format, safe to write from several threads."""

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        self._handle = open(path, "ab", buffering=0)

    def write(self, text):
        with self._lock:
            self._handle.write(cri_line(text))

    def close(self):
        self._handle.close()


def say(text):
    """The agent's own log line (its stdout is a CRI log of its own when run under ``run``)."""
    sys.stdout.write("%s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), text))
    sys.stdout.flush()


def pump(stream, log):
    """Copy a child's output into a CRI log, line by line, until it closes."""
    for line in iter(stream.readline, b""):
        log.write(line)


def run(log_path, argv):
    """Run ``argv`` with its output in ``log_path`` (CRI format); return its exit code."""
    log = CriLog(log_path)
    try:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as error:
        log.write("cannot start %s: %s" % (argv[0], error))
        return 127

    def forward(signum, _frame):
        try:
            child.send_signal(signum)
        except OSError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    pump(child.stdout, log)
    code = child.wait()
    log.close()
    return code if code >= 0 else 128 - code


# --- a network namespace per program ("like a pod") ----------------------------------------

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


class NamespaceError(Exception):
    """No network namespace could be made; the message says why."""


def enter_new_network_namespace():
    """unshare(2) into a new network namespace (in a user namespace when not privileged); lo up."""
    import ctypes
    import fcntl
    import socket
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        first = ctypes.get_errno()
        uid, gid = os.getuid(), os.getgid()
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
            raise NamespaceError("unshare(CLONE_NEWNET) failed (%s) and so did unshare(CLONE_NEWUSER|CLONE_NEWNET) (%s): "
                                 "the kernel gives this user no network namespace (neither as root nor through a user namespace)"
                                 % (os.strerror(first), os.strerror(ctypes.get_errno())))
        for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", "0 %d 1" % uid), ("/proc/self/gid_map", "0 %d 1" % gid)):
            with open(path, "w") as handle:
                handle.write(text)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))
    except OSError as error:
        raise NamespaceError("cannot bring up the loopback interface of the new network namespace: %s" % error)
    finally:
        sock.close()


def relay(one, other):
    """Copy bytes both ways between two connected sockets until both sides are done."""
    import socket

    def copy(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    threads = [threading.Thread(target=copy, args=(one, other), daemon=True),
               threading.Thread(target=copy, args=(other, one), daemon=True)]
    for thread in threads:
        thread.start()

    def close():
        for thread in threads:
            thread.join()
        one.close()
        other.close()

    threading.Thread(target=close, daemon=True).start()


def _listen(port):
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock


def _connect(port):
    import socket

    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn.settimeout(None)
    return conn


def reach_loop(listener, port):
    """Relay every connection accepted inside a namespace to the host's 127.0.0.1:port, until the listener closes."""
    while True:
        try:
            conn, _addr = listener.accept()
        except OSError:
            return
        try:
            relay(conn, _connect(port))
        except OSError:
            conn.close()


def enter_and_hand_over(control, reach):
    """Enter a new network namespace and send a listener for each ``reach`` port over ``control`` (``L<port>``)."""
    import socket

    enter_new_network_namespace()
    for port in reach:
        listener = _listen(port)
        socket.send_fds(control, [b"L%d" % port], [listener.fileno()])
        listener.close()


def receive_handover(control):
    """One message and its descriptors from the Unix socket ``control``; (b"", []) once it is closed."""
    import socket

    try:
        message, fds, _flags, _addr = socket.recv_fds(control, 256, 4)
    except OSError:
        return b"", []
    return message, fds


def serve_reach(fd, message):
    """Relay what a listener handed over as ``L<port>`` accepts to the host's port; returns the listener."""
    import socket

    listener = socket.socket(fileno=fd)
    threading.Thread(target=reach_loop, args=(listener, int(message[1:])), daemon=True).start()
    return listener


def exec_in_namespace(control_fd, reach, argv):
    """Enter a network namespace of its own, hand the ``reach`` listeners over ``control_fd``, become ``argv``.

    Returns only when that fails (the exit code, the reason on stdout).
    """
    import socket

    control = socket.socket(fileno=control_fd)
    try:
        enter_and_hand_over(control, reach)
    except (NamespaceError, OSError) as error:
        say("netns-exec: %s" % error)
        return 127
    control.close()
    try:
        os.execvp(argv[0], argv)
    except OSError as error:
        say("cannot start %s: %s" % (argv[0], error))
    return 127


def start_in_namespace(argv, env, cwd, reach, log):
    """Start ``argv`` through ``netns-exec``; relay its ``reach`` listeners and pump its output into ``log``, in this process.

    Returns (the program's Popen, its listeners: a list filled as they arrive, to shut down when it stops).
    """
    import socket

    control, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    command = [sys.executable, os.path.abspath(__file__), "netns-exec", "--control-fd=%d" % child_end.fileno()]
    command += ["--reach=%d" % port for port in reach] + ["--"] + list(argv)
    try:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env, cwd=cwd, pass_fds=(child_end.fileno(),))
    finally:
        child_end.close()
    listeners = []

    def receive():
        while True:
            message, fds = receive_handover(control)
            if not message:
                control.close()
                return
            listeners.append(serve_reach(fds[0], message))

    threading.Thread(target=receive, daemon=True).start()
    threading.Thread(target=pump, args=(proc.stdout, log), daemon=True).start()
    return proc, listeners


def pod(log_path, reach, expose, argv):
    """Run ``argv`` in a network namespace of its own; relay ``reach`` and ``expose`` ports.

    This process stays in the host's namespace and relays; a child enters the new namespace,
    hands over listening sockets for the ``reach`` ports and connects to the program's ports
    on request (sockets keep the namespace they were made in, and are passed over a Unix
    socket pair). The program is the child's child. Returns the program's exit code.
    """
    import socket

    log = CriLog(log_path)
    control, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    out_read, out_write = os.pipe()
    helper = os.fork()
    if helper == 0:  # the helper: enters the namespace, starts the program, connects on request
        control.close()
        os.close(out_read)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            enter_and_hand_over(child_end, reach)
        except (NamespaceError, OSError) as error:
            os.write(out_write, ("pod: %s\n" % error).encode())
            child_end.send(b"X127")
            os._exit(127)
        program = os.fork()
        if program == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            child_end.close()
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(out_write, 1)
            os.dup2(out_write, 2)
            try:
                os.execvp(argv[0], argv)
            except OSError as error:
                os.write(2, ("cannot start %s: %s\n" % (argv[0], error)).encode())
            os._exit(127)
        os.close(out_write)
        child_end.send(b"G%d" % program)

        def wait_program():
            code = _exit_code(os.waitpid(program, 0)[1])
            try:
                child_end.send(b"X%d" % code)
            finally:
                os._exit(0)

        threading.Thread(target=wait_program, daemon=True).start()
        while True:
            try:
                message = child_end.recv(64)
            except OSError:
                message = b""
            if not message:
                try:
                    os.kill(program, signal.SIGKILL)
                except OSError:
                    pass
                os._exit(0)
            if message.startswith(b"C"):
                try:
                    conn = _connect(int(message[1:]))
                    conn.setblocking(True)  # the flag travels with the descriptor
                    socket.send_fds(child_end, [b"R"], [conn.fileno()])
                    conn.close()
                except OSError as error:
                    child_end.send(b"E" + str(error).encode()[:200])

    # the relay, in the host's namespace
    child_end.close()
    os.close(out_write)
    state = {"program": None, "code": None}
    asking = threading.Lock()
    answers = []
    answered = threading.Condition()
    done = threading.Event()

    def from_helper():
        while True:
            message, fds = receive_handover(control)
            if not message:
                done.set()
                return
            kind = message[:1]
            if kind == b"L":
                serve_reach(fds[0], message)
            elif kind == b"G":
                state["program"] = int(message[1:])
            elif kind == b"X":
                state["code"] = int(message[1:])
                done.set()
                return
            else:  # R (a connection) or E (an error), answering ask()
                with answered:
                    answers.append((message, fds))
                    answered.notify()

    def ask(port):
        with asking:
            control.send(b"C%d" % port)
            with answered:
                while not answers and not done.is_set():
                    answered.wait(1)
                if not answers:
                    raise OSError("the namespace helper is gone")
                message, fds = answers.pop(0)
        if message.startswith(b"R"):
            conn = socket.socket(fileno=fds[0])
            conn.setblocking(True)
            return conn
        raise OSError(message[1:].decode("utf-8", "replace"))

    def expose_loop(listener, port):
        while True:
            conn, _addr = listener.accept()
            try:
                relay(conn, ask(port))
            except OSError:
                conn.close()

    def forward(signum, _frame):
        if state["program"]:
            try:
                os.kill(state["program"], signum)
            except OSError:
                pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    threading.Thread(target=from_helper, daemon=True).start()
    for host_port, pod_port in expose:
        threading.Thread(target=expose_loop, args=(_listen(host_port), pod_port), daemon=True).start()
    reader = threading.Thread(target=pump, args=(os.fdopen(out_read, "rb"), log), daemon=True)
    reader.start()
    while not done.wait(1):
        pass
    reader.join(timeout=5)
    control.close()
    try:
        os.waitpid(helper, 0)
    except OSError:
        pass
    log.close()
    return state["code"] if state["code"] is not None else 1


def _exit_code(status):
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return 128 + os.WTERMSIG(status)


# --- the API -------------------------------------------------------------------------------

class Api(object):
    """The few API calls the agent makes, over the kubernetes client."""

    def __init__(self, kubeconfig):
        from kubernetes import client, config

        self.client = client
        api_client = config.new_client_from_config(config_file=kubeconfig)
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)

    def pods(self, label_selector=None, namespace=None):
        if namespace:
            items = self.core.list_namespaced_pod(namespace, label_selector=label_selector or "", _request_timeout=10).items
        else:
            items = self.core.list_pod_for_all_namespaces(label_selector=label_selector or "", _request_timeout=10).items
        return [self.core.api_client.sanitize_for_serialization(p) for p in items]

    def ensure_logs(self, pod, log_file):
        """A kwok Logs object for ``pod`` (same name and namespace, owned by the pod)."""
        meta = pod["metadata"]
        body = {
            "apiVersion": "%s/%s" % LOGS_API[:2],
            "kind": "Logs",
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}],
            },
            "spec": {"logs": [{"containers": [], "logsFile": log_file}]},
        }
        try:
            self.custom.create_namespaced_custom_object(LOGS_API[0], LOGS_API[1], meta["namespace"], LOGS_API[2], body, _request_timeout=10)
            return True
        except self.client.exceptions.ApiException as error:
            if error.status == 409:
                return False
            raise

    def set_ready(self, pod, ready, message):
        """Set the pod's Ready/ContainersReady conditions and containers' ready flags."""
        status = "True" if ready else "False"
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        conditions = []
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition["type"] in ("Ready", "ContainersReady"):
                condition = dict(condition, status=status, lastTransitionTime=now,
                                 reason=None if ready else "ProcessNotHealthy", message=None if ready else message)
                condition = dict((k, v) for k, v in condition.items() if v is not None)
            conditions.append(condition)
        statuses = [dict(s, ready=ready) for s in (pod.get("status") or {}).get("containerStatuses") or []]
        body = {"status": {"conditions": conditions, "containerStatuses": statuses}}
        self.core.patch_namespaced_pod_status(pod["metadata"]["name"], pod["metadata"]["namespace"], body, _request_timeout=10)

    def set_terminated(self, pod, exit_code):
        """Record that the pod's container exited (the pod stays; KAI decides what happens to it)."""
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        statuses = []
        for container in (pod.get("status") or {}).get("containerStatuses") or []:
            started = ((container.get("state") or {}).get("running") or {}).get("startedAt", now)
            statuses.append(dict(container, ready=False, started=False, state={"terminated": {
                "exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error", "startedAt": started, "finishedAt": now}}))
        conditions = [dict(c, status="False", lastTransitionTime=now, reason="PodCompleted" if exit_code == 0 else "ContainersNotReady")
                      if c["type"] in ("Ready", "ContainersReady") else c for c in (pod.get("status") or {}).get("conditions") or []]
        body = {"status": {"conditions": conditions, "containerStatuses": statuses}}
        self.core.patch_namespaced_pod_status(pod["metadata"]["name"], pod["metadata"]["namespace"], body, _request_timeout=10)


def is_ready(pod):
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return condition["status"] == "True"
    return False


def check_health(url, ca_file=None, timeout=1.0):
    """``(ok, detail)``: does ``url`` answer 2xx now?"""
    from urllib.request import urlopen
    from urllib.error import HTTPError, URLError

    context = None
    if url.startswith("https://"):
        context = ssl.create_default_context(cafile=ca_file) if ca_file else ssl._create_unverified_context()
    try:
        response = urlopen(url, timeout=timeout, context=context)
        return 200 <= response.status < 300, "%s answered %d" % (url, response.status)
    except HTTPError as error:
        return False, "%s answered %d" % (url, error.code)
    except (URLError, OSError, ssl.SSLError) as error:
        return False, "%s: %s" % (url, getattr(error, "reason", error))


def serve_health(address, text):
    """Answer ``GET /healthz`` with 200 on ``address`` (host:port) in a background thread."""
    host, _sep, port = address.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = text.encode() if self.path == "/healthz" else b"not found"
            self.send_response(200 if self.path == "/healthz" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):  # pylint: disable=redefined-builtin
            pass

    server = HTTPServer((host, int(port)), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


# --- placeholders --------------------------------------------------------------------------

def placeholder_step(api, known):
    """One pass over the placeholder pods; ``known`` maps pod uid -> last health verdict."""
    pods = api.pods(label_selector=STANDS_FOR_LABEL)
    seen = set()
    for pod in pods:
        meta = pod["metadata"]
        annotations = meta.get("annotations") or {}
        if meta.get("deletionTimestamp") or (pod.get("status") or {}).get("phase") != "Running":
            continue
        if any(container.get("readinessProbe") for container in (pod.get("spec") or {}).get("containers") or []):
            continue  # on a real node: its kubelet probes the process, its container follows the log
        seen.add(meta["uid"])
        process = (meta.get("labels") or {}).get(STANDS_FOR_LABEL)
        log_file = annotations.get(LOG_FILE_ANNOTATION)
        if log_file and meta["uid"] not in known:
            if api.ensure_logs(pod, log_file):
                say("pod %s/%s: log is %s (process %s)" % (meta["namespace"], meta["name"], log_file, process))
        url = annotations.get(HEALTH_URL_ANNOTATION)
        healthy, detail = check_health(url, annotations.get(HEALTH_CA_ANNOTATION)) if url else (False, "no health URL")
        if is_ready(pod) != healthy:
            api.set_ready(pod, healthy, "process %s: %s" % (process, detail))
            say("pod %s/%s %s: process %s %s" % (meta["namespace"], meta["name"], "Ready" if healthy else "NotReady", process, detail))
        known[meta["uid"]] = healthy
    for uid in list(known):
        if uid not in seen:
            del known[uid]


def placeholders(args):
    api = Api(args.kubeconfig)
    serve_health(args.health_address, "ok")
    say("sim agent: placeholder pods (label %s) are Ready only while their process answers its health URL;"
        " their log is the process's log" % STANDS_FOR_LABEL)
    known = {}
    while True:
        try:
            placeholder_step(api, known)
        except Exception as error:  # pylint: disable=broad-exception-caught
            say("placeholders: %s" % error)
        time.sleep(POLL_SECONDS)


# --- reservation pods ----------------------------------------------------------------------

class Reservations(object):
    """KAI's reservation pods, each run as a local process of KAI's reservation app."""

    def __init__(self, api, args):
        self.api = api
        self.args = args
        self.running = {}  # pod uid -> (Popen, pod name, log path, CriLog, reach listeners)
        self.finished = set()
        self.without_gpu = set()

    def _pid_file(self, uid):
        return os.path.join(self.args.state_dir, uid + ".pid")

    def stop_leftovers(self):
        """Stop the apps a previous run of this runner left behind (it was killed)."""
        for entry in os.listdir(self.args.state_dir):
            if entry.endswith(".pid"):
                path = os.path.join(self.args.state_dir, entry)
                try:
                    with open(path) as handle:
                        os.kill(int(handle.read().strip()), signal.SIGTERM)
                except (OSError, ValueError):
                    pass
                os.unlink(path)

    def environment(self, pod, uuid=None):
        env = dict((k, os.environ[k]) for k in ("PATH", "HOME", "LANG") if k in os.environ)
        env.update(POD_NAME=pod["metadata"]["name"], POD_NAMESPACE=pod["metadata"]["namespace"], KUBECONFIG=self.args.kubeconfig)
        env.update(self.args.env)
        if self.args.mock_nvml_dir:
            env.update(LD_LIBRARY_PATH=self.args.mock_nvml_dir, MOCK_NVML_UUID=uuid, MOCK_NVML_MEMORY_MIB=str(self.args.gpu_memory_mib))
            if self.args.gpu_name:
                env.update(MOCK_NVML_NAME=self.args.gpu_name)
        return env

    def choose_gpu(self, pod, pods):
        """The UUID a reservation pod's app reports with the mock NVML library.

        Reservation pods of one GPU group share one GPU. A group keeps the UUID it was given
        (remembered in the state directory, so a restarted runner gives the same); a new group
        gets the node's first GPU that no other group on that node holds. None when all are held.
        """
        path = os.path.join(self.args.state_dir, "gpus.json")
        try:
            with open(path) as handle:
                remembered = json.load(handle)
        except (OSError, ValueError):
            remembered = {}
        live = {}
        for other in pods:
            node = (other.get("spec") or {}).get("nodeName")
            group = ((other["metadata"].get("labels") or {}).get(GPU_GROUP_LABEL))
            if node and group:
                annotated = (other["metadata"].get("annotations") or {}).get(GPU_INDEX_ANNOTATION)
                live.setdefault(node, {})
                if annotated or group not in live[node]:
                    live[node][group] = annotated or live[node].get(group)
        mapping = {}
        for node, groups in live.items():
            for group, annotated in groups.items():
                uuid = annotated or remembered.get(node, {}).get(group)
                if uuid:
                    mapping.setdefault(node, {})[group] = uuid
        node = pod["spec"]["nodeName"]
        group = (pod["metadata"].get("labels") or {}).get(GPU_GROUP_LABEL)
        uuid = mapping.get(node, {}).get(group)
        if uuid is None:
            held = set(mapping.get(node, {}).values())
            uuid = next((u for u in self.args.gpu_uuid if u not in held), None)
            if uuid is not None:
                mapping.setdefault(node, {})[group] = uuid
        with open(path + ".tmp", "w") as handle:
            json.dump(mapping, handle, indent=1, sort_keys=True)
        os.rename(path + ".tmp", path)
        return uuid

    def start(self, pod, pods):
        """Run the app like the pod would: in a network namespace of its own (``pod`` above)."""
        meta = pod["metadata"]
        uuid = None
        if self.args.mock_nvml_dir:
            uuid = self.choose_gpu(pod, pods)
            if uuid is None:
                if meta["uid"] not in self.without_gpu:
                    self.without_gpu.add(meta["uid"])
                    say("reservation pod %s/%s: every GPU of node %s is held by another GPU group; its app is not started"
                        % (meta["namespace"], meta["name"], pod["spec"].get("nodeName")))
                return
        log_path = os.path.join(self.args.state_dir, "%s.log" % meta["name"])
        log = CriLog(log_path)
        proc, listeners = start_in_namespace([self.args.program], self.environment(pod, uuid), self.args.state_dir, self.args.reach, log)
        with open(self._pid_file(meta["uid"]), "w") as handle:
            handle.write("%d\n" % proc.pid)
        self.running[meta["uid"]] = (proc, meta["name"], log_path, log, listeners)
        self.api.ensure_logs(pod, log_path)
        say("reservation pod %s/%s on node %s: started %s (pid %d)%s" % (
            meta["namespace"], meta["name"], pod["spec"].get("nodeName"), os.path.basename(self.args.program), proc.pid,
            ", with the mock NVML library reporting %s" % uuid if uuid else ", with no NVML library on its path"))

    def stop(self, uid, reason):
        import socket

        proc, name, log_path, log, listeners = self.running.pop(uid)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for listener in listeners:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        log.close()
        for path in (self._pid_file(uid), log_path):
            try:
                os.unlink(path)
            except OSError:
                pass
        say("reservation pod %s: stopped its app (%s)" % (name, reason))

    def step(self):
        pods = self.api.pods(label_selector=self.args.selector, namespace=self.args.namespace)
        current = {}
        for pod in pods:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") or not (pod.get("spec") or {}).get("nodeName"):
                continue
            if pod["spec"]["nodeName"] in self.args.skip_node:
                continue  # a real node's kubelet runs it in a container
            if (pod.get("status") or {}).get("phase") != "Running":
                continue
            current[meta["uid"]] = pod
            if meta["uid"] not in self.running and meta["uid"] not in self.finished:
                self.start(pod, pods)
        for uid in list(self.running):
            if uid not in current:
                self.stop(uid, "its pod is gone")
                continue
            proc, name = self.running[uid][0], self.running[uid][1]
            code = proc.poll()
            if code is not None and uid not in self.finished:
                self.finished.add(uid)
                say("reservation pod %s: its app exited with code %d" % (name, code))
                try:
                    self.api.set_terminated(current[uid], code)
                except Exception as error:  # pylint: disable=broad-exception-caught
                    say("reservation pod %s: cannot record the exit: %s" % (name, error))
        self.finished &= set(current) | set(self.running)

    def stop_all(self, *_args):
        for uid in list(self.running):
            self.stop(uid, "the runner stops")
        sys.exit(0)


def reservations(args):
    api = Api(args.kubeconfig)
    if not os.path.isdir(args.state_dir):
        os.makedirs(args.state_dir, 0o700)
    runner = Reservations(api, args)
    runner.stop_leftovers()
    signal.signal(signal.SIGTERM, runner.stop_all)
    signal.signal(signal.SIGINT, runner.stop_all)
    serve_health(args.health_address, "ok")
    for line in args.notice:
        say(line)
    say("reservation runner: pods labelled %s in %s are run as local processes of %s" % (
        args.selector, args.namespace, args.program))
    while True:
        try:
            runner.step()
        except Exception as error:  # pylint: disable=broad-exception-caught
            say("reservations: %s" % error)
        time.sleep(POLL_SECONDS)


# --- command line --------------------------------------------------------------------------

def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0], allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True)

    run_cmd = commands.add_parser("run", help="run a program with its output in a CRI-format log")
    run_cmd.add_argument("--log", required=True, help="the log file (appended)")
    run_cmd.add_argument("argv", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")

    pod_cmd = commands.add_parser("pod", help="run a program in a network namespace of its own")
    pod_cmd.add_argument("--log", required=True, help="the log file (appended)")
    pod_cmd.add_argument("--reach", action="append", type=int, default=[], help="host 127.0.0.1 port reachable inside")
    pod_cmd.add_argument("--expose", action="append", default=[], help="HOST_PORT:POD_PORT")
    pod_cmd.add_argument("argv", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")

    netns = commands.add_parser("netns-exec", help="enter a network namespace of its own and become a program")
    netns.add_argument("--control-fd", required=True, type=int, help="Unix socket the reach listeners are handed over")
    netns.add_argument("--reach", action="append", type=int, default=[], help="host 127.0.0.1 port reachable inside")
    netns.add_argument("argv", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")

    place = commands.add_parser("placeholders", help="keep placeholder pods' logs and readiness")
    place.add_argument("--kubeconfig", required=True)
    place.add_argument("--health-address", required=True, help="host:port of this agent's /healthz")

    res = commands.add_parser("reservations", help="run KAI's reservation pods as local processes")
    res.add_argument("--kubeconfig", required=True)
    res.add_argument("--health-address", required=True, help="host:port of this runner's /healthz")
    res.add_argument("--program", required=True, help="KAI's reservation app (kai-resourcereservation)")
    res.add_argument("--state-dir", required=True, help="where the apps' logs and pid files go")
    res.add_argument("--namespace", default="kai-resource-reservation")
    res.add_argument("--selector", default="app=kai-resource-reservation")
    res.add_argument("--env", action="append", default=[], help="NAME=VALUE for every app (repeatable)")
    res.add_argument("--reach", action="append", type=int, default=[], help="host 127.0.0.1 port each app reaches (the API server)")
    res.add_argument("--notice", action="append", default=[], help="a line to log at start (repeatable)")
    res.add_argument("--skip-node", action="append", default=[], help="a real node whose kubelet runs its reservation pods (repeatable)")
    res.add_argument("--mock-nvml-dir", default="", help="directory of a mock libnvidia-ml.so.1 to put on the apps' library path")
    res.add_argument("--gpu-uuid", action="append", default=[], help="the node's GPU UUIDs, in order (with --mock-nvml-dir)")
    res.add_argument("--gpu-name", help="the GPUs' name (with --mock-nvml-dir; unset: the mock library's own default)")
    res.add_argument("--gpu-memory-mib", type=int, default=40960, help="the GPUs' memory (with --mock-nvml-dir)")

    args = parser.parse_args(argv)
    if args.command in ("run", "pod", "netns-exec"):
        args.argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        if not args.argv:
            parser.error("%s needs -- PROGRAM ARGS..." % args.command)
    if args.command == "pod":
        pairs = []
        for item in args.expose:
            host, sep, inside = item.partition(":")
            if not sep or not host.isdigit() or not inside.isdigit():
                parser.error("--expose %r is not HOST_PORT:POD_PORT" % item)
            pairs.append((int(host), int(inside)))
        args.expose = pairs
    if args.command == "reservations":
        if args.mock_nvml_dir and not args.gpu_uuid:
            parser.error("--mock-nvml-dir needs the node's GPU UUIDs (--gpu-uuid)")
        pairs = {}
        for item in args.env:
            name, sep, value = item.partition("=")
            if not sep or not name:
                parser.error("--env %r is not NAME=VALUE" % item)
            pairs[name] = value
        args.env = pairs
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "run":
        return run(args.log, args.argv)
    if args.command == "pod":
        return pod(args.log, args.reach, args.expose, args.argv)
    if args.command == "netns-exec":
        return exec_in_namespace(args.control_fd, args.reach, args.argv)
    if args.command == "placeholders":
        return placeholders(args)
    return reservations(args)


if __name__ == "__main__":
    sys.exit(main())
