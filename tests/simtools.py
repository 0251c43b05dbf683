"""Helpers shared by the integration tests (tests/integration) and the lab tests (tests/lab):
running playbooks, and finding the processes, sessions and listeners of the sim platform."""

import json
import os
import signal
import subprocess
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
PLAYBOOK = os.path.join(TESTS, "integration", "playbooks", "sim_cluster.yml")
INVENTORY = os.path.join(TESTS, "integration", "inventory.yml")
BIN = os.path.dirname(sys.executable)


def run_playbook(*extra_vars, playbook=PLAYBOOK, options=(), env=None):
    """ansible-playbook PLAYBOOK (default: the sim_cluster role) with the given extra vars."""
    command = [os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, playbook] + list(options)
    for item in extra_vars:
        command += ["-e", json.dumps(item)]
    return subprocess.run(command, capture_output=True, text=True, check=False, env=env)


def pid_files(directory):
    """{name: pid} from the ``<name>.pid`` files in a directory (kwokctl's and sim_process's), by name; {} without it."""
    pids = {}
    if os.path.isdir(directory):
        for entry in sorted(os.listdir(directory)):
            if entry.endswith(".pid"):
                with open(os.path.join(directory, entry)) as handle:
                    pids[entry[:-len(".pid")]] = int(handle.read().strip())
    return pids


def cluster_pids(workdir, name):
    """Pids of a sim cluster's processes (etcd, kube-apiserver, ...), from kwokctl's pid files."""
    return list(pid_files(os.path.join(workdir, "kwok", "clusters", name, "pids")).values())


def sim_process_pids(state_dir):
    """Pids recorded by gpulab.kai_hami.sim_process in a state directory (``*.pid``)."""
    return list(pid_files(state_dir).values())


def alive(pid):
    """Whether a process runs (a zombie does not)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def session_members(leaders):
    """Pids of the live processes in the sessions led by ``leaders`` (a sim process and its children)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in ("Z", "X") and int(fields[3]) in leaders:
            members.append(int(entry))
    return members


def listeners_of(pids):
    """``[(local address, pid)]`` of the TCP listeners those processes hold (from ss)."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        for pid in pids:
            if "pid=%d," % pid in line:
                found.append((line.split()[3], pid))
    return found


def processes_under(root):
    """Pids of the live processes whose command line or working directory lies under ``root``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
            places = argv + [os.readlink("/proc/%s/cwd" % entry)]
        except OSError:
            continue
        if alive(int(entry)) and any(root + os.sep in place or place.endswith(root) for place in places):
            found.append(int(entry))
    return found


def sigint_as_from_a_terminal():
    """A Popen preexec_fn: the child starts with SIGINT's default action, as from a terminal, whatever the test
    runner inherited (a shell's background job starts with SIGINT ignored, and a program that starts with it
    ignored keeps it ignored: bash can neither trap nor restore it, Python installs no KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
