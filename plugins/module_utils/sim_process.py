# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Local background processes of the sim platform: start, find, check and stop them.

A process is known by its name inside a state directory, where three files live:
``<name>.pid`` (its pid), ``<name>.spec.json`` (what it was started with) and, by default,
``<name>.log`` (its output, appended across restarts). Nothing in this module talks to Kubernetes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import hashlib
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import time

# Variables a started process inherits from the module's environment; everything else it
# gets must be given explicitly, so that the spec (and idempotence) does not depend on
# whatever the calling shell had set.
INHERITED_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ")


class SimProcessError(Exception):
    """A process could not be started, checked or stopped; the message says why."""


def paths(state_dir, name, log_file=None):
    """The pid, spec and log file of process ``name``."""
    return dict(
        pid=os.path.join(state_dir, name + ".pid"),
        spec=os.path.join(state_dir, name + ".spec.json"),
        log=log_file or os.path.join(state_dir, name + ".log"),
    )


def environment(env, base=None):
    """The environment a process starts with: the inherited basics, then ``env``."""
    base = os.environ if base is None else base
    result = dict((key, base[key]) for key in INHERITED_ENV if key in base)
    result.update(dict((str(key), str(value)) for key, value in (env or {}).items()))
    return result


def spec_of(argv, env, chdir, files=None):
    """What a process is started with; two equal specs are the same process.

    ``files`` (paths) are part of it by content: a changed program or configuration file makes
    another spec.
    """
    spec = {"argv": [str(a) for a in argv], "env": dict(sorted((env or {}).items())), "chdir": chdir}
    if files:
        spec["files"] = dict((path, file_digest(path)) for path in sorted(files))
    return spec


def file_digest(path):
    """sha256 of a file's content ('missing' when it cannot be read)."""
    sha = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
    except OSError:
        return "missing"
    return sha.hexdigest()


def digest(spec):
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode("utf-8")).hexdigest()


def read_pid(pid_file):
    try:
        with open(pid_file) as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def read_spec(spec_file):
    try:
        with open(spec_file) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def is_alive(pid):
    """True when ``pid`` is a running process (not a zombie)."""
    if not pid:
        return False
    try:
        with open("/proc/%d/stat" % pid) as handle:
            stat = handle.read()
    except OSError:
        return False
    # The state follows the command name, which is in parentheses and may hold spaces.
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state not in ("Z", "X")


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0")[:-1]]


def _ancestors(pid):
    """``pid`` and the pids of its parents, up to init."""
    found = set()
    while pid and pid not in found:
        found.add(pid)
        try:
            with open("/proc/%d/stat" % pid) as handle:
                pid = int(handle.read().rsplit(")", 1)[-1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


def _others(proc="/proc"):
    """``(pid, argv)`` of every live process but the caller and its parents (ansible-playbook, given
    the paths as arguments), by pid."""
    mine = _ancestors(os.getpid())
    for entry in sorted((e for e in os.listdir(proc) if e.isdigit()), key=int):
        pid = int(entry)
        if pid not in mine and is_alive(pid):
            yield pid, cmdline(pid) or []


def processes_mentioning(roots, proc="/proc"):
    """``[{pid, command}]`` of live processes whose command line, working directory or program lies under a root."""
    roots = [os.path.normpath(root) for root in roots if root]
    found = []
    for pid, argv in _others(proc):
        places = list(argv)
        for link in ("cwd", "exe"):
            try:
                places.append(os.readlink(os.path.join(proc, str(pid), link)))
            except OSError:
                pass
        if any(root + os.sep in place or place == root or place.endswith("=" + root) for place in places for root in roots):
            found.append(dict(pid=pid, command=" ".join(argv)[:300]))
    return found


def processes_of_cluster(name, proc="/proc"):
    """``[{pid, command, workdir}]`` of live processes of the sim cluster ``name``, wherever its work dir is.

    kwokctl keeps a cluster's files in ``<work dir>/kwok/clusters/<name>``, and its control plane's
    command lines name paths under it (etcd's data dir, the API server's certificates): ``workdir``
    is the part before ``/kwok/clusters/<name>``.
    """
    marker = "/kwok/clusters/%s" % name
    found = []
    for pid, argv in _others(proc):
        for arg in argv:
            index = arg.find(marker + "/")
            if index < 0 and arg.endswith(marker):
                index = len(arg) - len(marker)
            workdir = arg[:index].rsplit("=", 1)[-1] if index >= 0 else ""
            if os.path.isabs(workdir):
                found.append(dict(pid=pid, command=" ".join(argv)[:300], workdir=os.path.normpath(workdir)))
                break
    return found


def running(state_dir, name, log_file=None):
    """``(pid, spec)`` of the named process when it runs the program it was started with."""
    files = paths(state_dir, name, log_file)
    pid = read_pid(files["pid"])
    spec = read_spec(files["spec"])
    if not pid or not spec or not is_alive(pid):
        return None, spec
    # Guard against a recycled pid: the process must still run what was started.
    if cmdline(pid) != spec.get("argv"):
        return None, spec
    return pid, spec


# A line of the container-runtime log format: "<time> stdout F <text>".
_CRI_PREFIX = re.compile(r"^\S+ (?:stdout|stderr) [FP] ")


def processes_in(part, state_dir):
    """Each pid file of ``state_dir`` as {name, part, pid, running}."""
    try:
        files = sorted(f for f in os.listdir(state_dir) if f.endswith(".pid"))
    except OSError:
        return []
    found = []
    for pid_file in files:
        name = pid_file[:-len(".pid")]
        pid = read_pid(os.path.join(state_dir, pid_file)) or 0
        if os.path.exists(paths(state_dir, name)["spec"]):
            alive = running(state_dir, name)[0] is not None
        else:
            alive = is_alive(pid)
        found.append(dict(name=name, part=part, pid=pid, running=alive))
    return found


def tail(path, lines=25):
    """The last ``lines`` lines of a file ('' when there is none), container-runtime prefixes removed."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(size - 65536, 0))
            data = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(_CRI_PREFIX.sub("", line) for line in data.splitlines()[-lines:])


def _inode_owners():
    """``{socket inode: (pid, command name)}`` for the processes this user can see."""
    owners = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fd_dir = "/proc/%s/fd" % entry
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if target.startswith("socket:["):
                try:
                    with open("/proc/%s/comm" % entry) as handle:
                        comm = handle.read().strip()
                except OSError:
                    comm = "?"
                owners[target[8:-1]] = (int(entry), comm)
    return owners


def listeners(port):
    """``[(address, pid, command)]`` of the TCP listeners on ``port`` (any address)."""
    found = []
    owners = None
    for table, family in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 6)):
        try:
            with open(table) as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A":  # LISTEN
                continue
            address, hex_port = local.split(":")
            if int(hex_port, 16) != port:
                continue
            if owners is None:
                owners = _inode_owners()
            pid, comm = owners.get(inode, (None, "?"))
            found.append((_address(address, family) + ":%d" % port, pid, comm))
    return found


def _address(hex_address, family):
    if family == 4:
        return socket.inet_ntop(socket.AF_INET, bytes.fromhex(hex_address)[::-1])
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return "[%s]" % socket.inet_ntop(socket.AF_INET6, words)


def port_in_use(port, host="127.0.0.1"):
    """None when ``host:port`` can be bound now, else a sentence naming who holds it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        return None
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            return "port %s:%d cannot be bound: %s" % (host, port, error)
    finally:
        sock.close()
    holders = listeners(port)
    if holders:
        return "port %s:%d is already in use by %s" % (
            host, port, ", ".join("pid %s (%s) on %s" % (pid or "?", comm, address) for address, pid, comm in holders))
    return "port %s:%d is already in use" % (host, port)


def start(spec, log_path):
    """Start the process in a session of its own, output appended to ``log_path``."""
    log_dir = os.path.dirname(log_path)
    if log_dir and not os.path.isdir(log_dir):
        os.makedirs(log_dir, 0o700)
    log = open(log_path, "ab")
    try:
        return subprocess.Popen(
            spec["argv"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=spec["chdir"],
            env=spec["env"],
            close_fds=True,
            start_new_session=True,
        )
    except OSError as error:
        raise SimProcessError("cannot start %s: %s" % (spec["argv"][0], error))
    finally:
        log.close()


def write_state(files, pid, spec):
    for path, content in ((files["spec"], json.dumps(spec, sort_keys=True, indent=1)), (files["pid"], "%d\n" % pid)):
        tmp = path + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(content)
        os.chmod(tmp, 0o600)
        os.rename(tmp, path)


def forget(files):
    for key in ("pid", "spec"):
        try:
            os.unlink(files[key])
        except OSError:
            pass


def stop(pid, timeout, clock=time.monotonic, pause=time.sleep):
    """SIGTERM the process's session, SIGKILL it after ``timeout`` s; True when it was running."""
    return bool(stop_all([pid], timeout, clock, pause))


def stop_all(pids, timeout, clock=time.monotonic, pause=time.sleep):
    """SIGTERM each process's session (its own session: the group holds the children it started
    as well), wait up to ``timeout`` s for all of them, then SIGKILL those left. The pids that
    were running."""
    alive = [pid for pid in pids if is_alive(pid)]
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10)):
        left = [pid for pid in alive if is_alive(pid)]
        for pid in left:
            try:
                os.killpg(pid, sig)
            except OSError:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        deadline = clock() + wait
        while left and clock() < deadline:
            for pid in left:
                _reap(pid)
            left = [pid for pid in left if is_alive(pid)]
            if left:
                pause(0.1)
    stuck = [pid for pid in alive if is_alive(pid)]
    if stuck:
        raise SimProcessError("pid %s did not exit after SIGKILL" % ", ".join(str(pid) for pid in stuck))
    return alive


def _reap(pid):
    try:
        os.waitpid(pid, os.WNOHANG)
    except OSError:
        pass


def check_health(url, ca_file=None, timeout=2.0):
    """``(ok, detail)``: whether ``url`` answers 2xx (HTTPS verified with ``ca_file`` when given)."""
    from ansible.module_utils.urls import open_url
    from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError

    try:
        response = open_url(url, timeout=timeout, validate_certs=bool(ca_file), ca_path=ca_file, use_proxy=False)
        status = response.getcode()
        return 200 <= status < 300, "%s answered %d" % (url, status)
    except HTTPError as error:
        return False, "%s answered %d" % (url, error.code)
    except (URLError, OSError, ssl.SSLError) as error:
        return False, "%s: %s" % (url, getattr(error, "reason", error))


def wait_started(proc_or_pid, health_url, ca_file, timeout, grace, clock=time.monotonic, pause=time.sleep):
    """Wait until the process answers ``health_url`` (or, without one, lives ``grace`` s).

    ``proc_or_pid`` is the Popen of a process we just started, or the pid of one already
    running. Returns ``(ok, detail)``; ``detail`` says why not (exit code, health answer).
    """
    start_time = clock()
    detail = "no answer yet"
    while True:
        if hasattr(proc_or_pid, "poll"):
            code = proc_or_pid.poll()
            if code is not None:
                return False, "exited with code %d" % code
        elif not is_alive(proc_or_pid):
            return False, "is no longer running"
        elapsed = clock() - start_time
        if health_url:
            ok, detail = check_health(health_url, ca_file)
            if ok:
                return True, detail
        elif elapsed >= grace:
            return True, "running for %.1f s" % elapsed
        if elapsed >= timeout:
            return False, "did not answer within %d s (last: %s)" % (timeout, detail)
        pause(0.25)
