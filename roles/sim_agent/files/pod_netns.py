# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Programs run like pods on a node kwok plays: each in a network namespace of its own.

Two ways, for two kinds of program:

``pod()``
    A long-running program (one of KAI's): this process stays in the host's namespace beside
    it, relays the ``reach`` ports in (the API server) and the ``expose`` ports out (its
    webhooks and metrics, on the host's 127.0.0.1), connecting inside through a helper that
    stays in the namespace.
``start_in_namespace()``
    Many short-lived programs started by one runner (KAI's reservation apps): each enters its
    namespace through ``sim_agent.py netns-exec`` and becomes the program (nothing of ours stays
    beside it); the runner relays their ``reach`` ports. They expose nothing.
"""

from __future__ import absolute_import, division, print_function

import os
import signal
import subprocess
import sys
import threading

from cri_log import CriLog, pump, say

# The agent's command line, whose netns-exec enters a namespace for start_in_namespace().
SIM_AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sim_agent.py")

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
    command = [sys.executable, SIM_AGENT, "netns-exec", "--control-fd=%d" % child_end.fileno()]
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
