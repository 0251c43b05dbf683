"""The kind path's host side, without Docker or internet: helm and kind from PATH or from a
release download checked against its SHA-256 (served by a local HTTP server of the test's), and the host
checks before a cluster is created (against a fake Docker engine on a Unix socket)."""

import functools
import hashlib
import http.server
import io
import json
import os
import socketserver
import sys
import tarfile
import threading

import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from simtools import run_playbook  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.versions import read  # noqa: E402  pylint: disable=wrong-import-position

HELM_VERSION = read()["HELM_VERSION"]
KIND_VERSION = read()["KIND_VERSION"]
# A PATH with the shell tools the roles run (uname, df) but neither helm, kind nor go.
BARE_PATH = "/usr/bin:/bin"


def script(text):
    return ("#!/bin/sh\n%s\n" % text).encode()


@pytest.fixture
def release_server(tmp_path):
    """A local HTTP server for release files; yields (base URL, directory it serves)."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d" % server.server_address[1], served
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


def helm_tarball(directory, platform, version_line):
    """helm-<version>-<platform>.tar.gz holding <platform>/helm, a script printing version_line."""
    body = script("echo %s" % version_line)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("%s/helm" % platform)
        info.size, info.mode = len(body), 0o755
        tar.addfile(info, io.BytesIO(body))
    data = buffer.getvalue()
    (directory / ("helm-%s-%s.tar.gz" % (HELM_VERSION, platform))).write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def environment(path):
    env = dict(os.environ)
    env["PATH"] = path
    return env


def play(tmp_path, role, *tasks_from):
    """A playbook running the role's task files in order (main.yml when none is named)."""
    tasks_from = tasks_from or ("main.yml",)
    playbook = tmp_path / ("%s-%s.yml" % (role, "-".join(tasks_from)))
    playbook.write_text(yaml.safe_dump([{
        "name": "role under test", "hosts": "localhost", "gather_facts": False,
        "tasks": [{"name": "run %s" % name, "ansible.builtin.include_role": {"name": "gpulab.kai_hami.%s" % role, "tasks_from": name}}
                  for name in tasks_from],
    }]))
    return str(playbook)


def run_helm_binary(tmp_path, path, **variables):
    return run_playbook(variables, playbook=play(tmp_path, "helm_binary"), env=environment(path))


def test_helm_download_with_matching_checksum_installs_a_binary_that_runs(tmp_path, release_server):
    base, served = release_server
    sha = helm_tarball(served, "linux-arm64", HELM_VERSION + "+gtest")
    bin_dir = tmp_path / "helm" / "bin"
    done = run_helm_binary(tmp_path, BARE_PATH, helm_binary_dir=str(bin_dir), helm_binary_download_base=base,
                           helm_binary_platform="linux-arm64", helm_binary_release_sha256={HELM_VERSION: {"linux-arm64": sha}})
    assert done.returncode == 0, done.stdout[-3000:]
    assert "no helm on PATH; using helm %s in %s" % (HELM_VERSION, bin_dir) in done.stdout
    assert os.popen("%s version --short" % (bin_dir / "helm")).read().strip() == HELM_VERSION + "+gtest"
    assert not (bin_dir.parent / "download").exists()


def test_helm_download_with_a_wrong_checksum_fails_naming_both_and_installs_nothing(tmp_path, release_server):
    base, served = release_server
    actual = helm_tarball(served, "linux-amd64", HELM_VERSION)
    pinned = hashlib.sha256(b"another archive").hexdigest()
    bin_dir = tmp_path / "helm" / "bin"
    done = run_helm_binary(tmp_path, BARE_PATH, helm_binary_dir=str(bin_dir), helm_binary_download_base=base,
                           helm_binary_platform="linux-amd64", helm_binary_release_sha256={HELM_VERSION: {"linux-amd64": pinned}})
    assert done.returncode != 0
    assert "has SHA-256 %s, expected %s" % (actual, pinned) in done.stdout, done.stdout[-3000:]
    assert not (bin_dir / "helm").exists()
    assert not (bin_dir.parent / "download").exists()


def test_helm_for_an_unknown_platform_without_go_names_the_supported_ones(tmp_path, release_server):
    base = release_server[0]
    pins = {HELM_VERSION: {"linux-amd64": "a" * 64, "darwin-arm64": "b" * 64}}
    done = run_helm_binary(tmp_path, BARE_PATH, helm_binary_dir=str(tmp_path / "bin"), helm_binary_download_base=base,
                           helm_binary_platform="plan9-mips", helm_binary_release_sha256=pins)
    assert done.returncode != 0
    assert "no release checksum is pinned for platform plan9-mips (supported: darwin-arm64, linux-amd64)" in done.stdout, done.stdout[-3000:]
    assert "no Go toolchain answers" in done.stdout


@pytest.mark.parametrize("on_path, used", [("v3.17.2+gcc0bbbd", True), ("v3.12.3+g3a31588", False), ("v4.0.1+g1", False)])
def test_helm_on_path_is_used_only_inside_the_supported_range(tmp_path, release_server, on_path, used):
    base, served = release_server
    sha = helm_tarball(served, "linux-amd64", HELM_VERSION)
    path_dir = tmp_path / "path"
    path_dir.mkdir()
    (path_dir / "helm").write_bytes(script("echo %s" % on_path))
    (path_dir / "helm").chmod(0o755)
    bin_dir = tmp_path / "helm" / "bin"
    done = run_helm_binary(tmp_path, "%s:%s" % (path_dir, BARE_PATH), helm_binary_dir=str(bin_dir), helm_binary_download_base=base,
                           helm_binary_platform="linux-amd64", helm_binary_release_sha256={HELM_VERSION: {"linux-amd64": sha}})
    assert done.returncode == 0, done.stdout[-3000:]
    version = on_path.split("+")[0]
    if used:
        assert "helm %s from PATH" % version in done.stdout
        assert not bin_dir.exists()
    else:
        assert "helm %s on PATH is outside the supported range (>= v3.15.0, < v4.0.0)" % version in done.stdout, done.stdout[-3000:]
        assert (bin_dir / "helm").exists()


def kind_binary(served, platform, version_line):
    body = script("echo '%s'" % version_line)
    (served / KIND_VERSION).mkdir(exist_ok=True)
    (served / KIND_VERSION / ("kind-%s" % platform)).write_bytes(body)
    return hashlib.sha256(body).hexdigest()


def run_kind_binary(tmp_path, path, **variables):
    return run_playbook(variables, playbook=play(tmp_path, "kind_cluster", "binary.yml"), env=environment(path))


def test_kind_download_checks_the_binary_and_installs_it(tmp_path, release_server):
    base, served = release_server
    sha = kind_binary(served, "darwin-amd64", "kind %s go1.25.5 darwin/amd64" % KIND_VERSION)
    bin_dir = tmp_path / "kind" / "bin"
    variables = dict(kind_cluster_bin_dir=str(bin_dir), kind_cluster_download_base=base, kind_cluster_platform="darwin-amd64")
    wrong = run_kind_binary(tmp_path, BARE_PATH, kind_cluster_release_sha256={KIND_VERSION: {"darwin-amd64": "0" * 64}}, **variables)
    assert wrong.returncode != 0
    assert "has SHA-256 %s, expected %s" % (sha, "0" * 64) in wrong.stdout, wrong.stdout[-3000:]
    assert not (bin_dir / "kind").exists()

    right = run_kind_binary(tmp_path, BARE_PATH, kind_cluster_release_sha256={KIND_VERSION: {"darwin-amd64": sha}}, **variables)
    assert right.returncode == 0, right.stdout[-3000:]
    assert os.popen("%s version" % (bin_dir / "kind")).read().split()[1] == KIND_VERSION


def test_kind_on_path_below_the_range_is_refused_and_the_pinned_one_installed(tmp_path, release_server):
    base, served = release_server
    sha = kind_binary(served, "linux-amd64", "kind %s go1.25.5 linux/amd64" % KIND_VERSION)
    path_dir = tmp_path / "path"
    path_dir.mkdir()
    (path_dir / "kind").write_bytes(script("echo 'kind v0.20.0 go1.20.4 linux/amd64'"))
    (path_dir / "kind").chmod(0o755)
    bin_dir = tmp_path / "kind" / "bin"
    done = run_kind_binary(tmp_path, "%s:%s" % (path_dir, BARE_PATH), kind_cluster_bin_dir=str(bin_dir), kind_cluster_download_base=base,
                           kind_cluster_platform="linux-amd64", kind_cluster_release_sha256={KIND_VERSION: {"linux-amd64": sha}})
    assert done.returncode == 0, done.stdout[-3000:]
    minimum = KIND_VERSION  # kind_cluster_path_version_min: the pinned kind
    assert "kind v0.20.0 on PATH is outside the supported range (>= %s, < v1.0.0)" % minimum in done.stdout, done.stdout[-3000:]
    assert (bin_dir / "kind").exists()


class FakeDockerHandler(http.server.BaseHTTPRequestHandler):
    """/_ping and /info of a Docker engine, /info answering what the test put in ``server.info``."""

    def do_GET(self):  # pylint: disable=invalid-name
        body = b"OK" if self.path.endswith("/_ping") else json.dumps(self.server.info).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain" if self.path.endswith("/_ping") else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def address_string(self):
        return "docker.sock"

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


class UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


@pytest.fixture
def fake_docker(tmp_path):
    """A fake Docker engine on a Unix socket; the test sets ``.info``. Yields the server."""
    path = str(tmp_path / "docker.sock")
    server = UnixHTTPServer(path, FakeDockerHandler)
    server.info = {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def meminfo(tmp_path, available_kib):
    path = tmp_path / "meminfo"
    path.write_text("MemTotal:       %d kB\nMemFree:          1000 kB\nMemAvailable:   %d kB\n" % (available_kib * 2, available_kib))
    return str(path)


def run_host_checks(tmp_path, fake_docker, **variables):
    """The role's engine choice (a Docker engine asked for, the fake one) and its host checks."""
    variables.setdefault("kind_cluster_disk_path", str(tmp_path))
    variables.setdefault("kind_cluster_min_free_disk_mib", 1)
    return run_playbook(dict(kind_cluster_docker_socket=fake_docker.server_address, kind_cluster_provider="docker", **variables),
                        playbook=play(tmp_path, "kind_cluster", "engine.yml", "host_checks.yml"))


def lacks_cap_sys_resource():
    """Whether this process's capability bounding set lacks CAP_SYS_RESOURCE (bit 24), as the role reads it."""
    with open("/proc/self/status") as handle:
        bounding = [line.split()[1] for line in handle if line.startswith("CapBnd:")][0]
    return not int(bounding, 16) & (1 << 24)


CGROUP_V1_LINE = "cgroup v1: the kubelet runs with failCgroupV1: false"


@pytest.mark.parametrize("reported, configured", [("1", True), ("2", False)])
def test_cgroup_v1_reported_by_docker_is_configured_for(tmp_path, fake_docker, reported, configured):
    fake_docker.info = {"CgroupVersion": reported, "MemTotal": 8 << 30, "ServerVersion": "27.3.1"}
    done = run_host_checks(tmp_path, fake_docker, kind_cluster_meminfo_path=meminfo(tmp_path, 8 << 20))
    assert done.returncode == 0, done.stdout[-3000:]
    assert (CGROUP_V1_LINE in done.stdout) == configured, done.stdout[-3000:]


def test_without_a_docker_cgroup_version_the_cgroup_v2_file_decides(tmp_path, fake_docker):
    fake_docker.info = {"MemTotal": 8 << 30, "ServerVersion": "27.3.1"}
    missing = str(tmp_path / "no-cgroup.controllers")
    done = run_host_checks(tmp_path, fake_docker, kind_cluster_meminfo_path=meminfo(tmp_path, 8 << 20),
                           kind_cluster_cgroup_controllers_path=missing)
    assert done.returncode == 0, done.stdout[-3000:]
    assert CGROUP_V1_LINE in done.stdout
    present = tmp_path / "cgroup.controllers"
    present.write_text("cpuset cpu io memory pids\n")
    done = run_host_checks(tmp_path, fake_docker, kind_cluster_meminfo_path=meminfo(tmp_path, 8 << 20),
                           kind_cluster_cgroup_controllers_path=str(present))
    assert done.returncode == 0, done.stdout[-3000:]
    assert CGROUP_V1_LINE not in done.stdout


@pytest.mark.parametrize("version", ["20.10.24", "23.0.0"])
def test_docker_before_23_is_refused_where_the_bounding_set_lacks_a_capability(tmp_path, fake_docker, version):
    fake_docker.info = {"CgroupVersion": "2", "MemTotal": 8 << 30, "ServerVersion": version}
    done = run_host_checks(tmp_path, fake_docker, kind_cluster_meminfo_path=meminfo(tmp_path, 8 << 20))
    refused = int(version.split(".")[0]) < 23 and lacks_cap_sys_resource()
    assert (done.returncode != 0) == refused, done.stdout[-3000:]
    assert ("the Docker engine is %s: before 23.0 its --privileged asks for every capability" % version in done.stdout) == refused
    # without CAP_SYS_RESOURCE no negative oom_score_adj can be set: containerd is told to clamp it
    if not refused:
        assert ("containerd runs with restrict_oom_score_adj = true" in done.stdout) == lacks_cap_sys_resource(), done.stdout[-3000:]


def test_low_inotify_limits_are_named_with_the_sysctl_that_raises_them(tmp_path, fake_docker):
    fake_docker.info = {"CgroupVersion": "2", "MemTotal": 8 << 30, "ServerVersion": "27.3.1"}
    limits = {}
    for name, value in (("instances", 128), ("watches", 8192)):
        limits[name] = str(tmp_path / name)
        (tmp_path / name).write_text("%d\n" % value)
    done = run_host_checks(tmp_path, fake_docker, kind_cluster_meminfo_path=meminfo(tmp_path, 8 << 20), kind_cluster_inotify_paths=limits)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "fs.inotify.max_user_instances 128 (under 512)" in done.stdout, done.stdout[-3000:]
    assert "fs.inotify.max_user_watches 8192 (under 524288)" in done.stdout
    assert "sysctl -w fs.inotify.max_user_instances=512 fs.inotify.max_user_watches=524288" in done.stdout
    (tmp_path / "instances").write_text("1024\n")
    (tmp_path / "watches").write_text("1048576\n")
    done = run_host_checks(tmp_path, fake_docker, kind_cluster_meminfo_path=meminfo(tmp_path, 8 << 20), kind_cluster_inotify_paths=limits)
    assert done.returncode == 0 and "fs.inotify" not in done.stdout, done.stdout[-3000:]


def test_too_little_available_memory_is_refused_with_the_figures(tmp_path, fake_docker):
    fake_docker.info = {"CgroupVersion": "2", "MemTotal": 64 << 30, "ServerVersion": "27.3.1"}
    available_kib = 3 * 1024 * 1024  # 3072 MiB
    done = run_host_checks(tmp_path, fake_docker, kind_cluster_meminfo_path=meminfo(tmp_path, available_kib),
                           kind_cluster_min_available_memory_mib=4096)
    assert done.returncode != 0
    assert "%d MiB of memory available (MemAvailable in" % (available_kib // 1024) in done.stdout, done.stdout[-3000:]
    assert "kind_cluster_min_available_memory_mib = 4096 MiB" in done.stdout


def test_without_meminfo_the_engines_total_memory_is_checked(tmp_path, fake_docker):
    fake_docker.info = {"CgroupVersion": "2", "MemTotal": 2 << 30, "ServerVersion": "27.3.1"}
    done = run_host_checks(tmp_path, fake_docker, kind_cluster_meminfo_path=str(tmp_path / "no-meminfo"))
    assert done.returncode != 0
    assert "2048 MiB of memory available (the docker engine's total memory)" in done.stdout, done.stdout[-3000:]


def test_too_little_free_disk_is_refused_and_enough_passes(tmp_path, fake_docker):
    fake_docker.info = {"CgroupVersion": "2", "MemTotal": 64 << 30, "ServerVersion": "27.3.1"}
    stats = os.statvfs(str(tmp_path))
    free_mib = stats.f_bavail * stats.f_frsize // (1 << 20)
    done = run_host_checks(tmp_path, fake_docker, kind_cluster_meminfo_path=meminfo(tmp_path, 8 << 20),
                           kind_cluster_min_free_disk_mib=free_mib * 4 + 1024)
    assert done.returncode != 0
    assert "MiB free at %s" % tmp_path in done.stdout, done.stdout[-3000:]
    assert "kind_cluster_min_free_disk_mib = %d MiB" % (free_mib * 4 + 1024) in done.stdout
    done = run_host_checks(tmp_path, fake_docker, kind_cluster_meminfo_path=meminfo(tmp_path, 8 << 20),
                           kind_cluster_min_free_disk_mib=max(1, free_mib // 4))
    assert done.returncode == 0, done.stdout[-3000:]
