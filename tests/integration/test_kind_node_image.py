"""kind's node image assembled without a registry (roles/local_build/files/kind_node_image.sh): a build
interrupted (Ctrl-C) while its own containerd preloads kubeadm's images leaves no process, no mount and
no image behind, and the next run builds the image.

It runs in a cache root of its own (the programs of build.sh's bin dir and, when it is there, the cached
Debian rootfs linked in), so the collection's cached image is not touched. The build starts a containerd
on the host, so it is marked ``real_node`` (one at a time in ``make test``'s real node lane).
"""

import glob
import json
import os
import signal
import subprocess
import time

import pytest

from simtools import sigint_as_from_a_terminal

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "roles", "local_build", "files", "kind_node_image.sh")
BUILD_SH = os.path.join(ROOT, "roles", "local_build", "files", "build.sh")


def processes_mentioning(text):
    found = []
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as handle:
                if text.encode() in handle.read():
                    found.append(path.split("/")[2])
        except OSError:
            pass
    return found


def preloading(root):
    """Whether the build's own containerd runs (it preloads kubeadm's images into the rootfs)."""
    return bool(set(processes_mentioning(str(root))) & set(processes_mentioning("/preload/config.toml")))


def mounts_under(directory):
    with open("/proc/self/mountinfo") as handle:
        return [line.split()[4] for line in handle if line.split()[4].startswith(directory)]


@pytest.mark.real_node
def test_an_interrupted_build_leaves_nothing_and_the_next_run_builds_the_image(tmp_path):
    real_bin = subprocess.run([BUILD_SH, "--print-bin-dir"], capture_output=True, text=True, check=True).stdout.split()[-1]
    # a cache root of the test's own: <root>/<key>/bin is build.sh's bin dir, the image goes to <root>/kind-node-<key>
    root = tmp_path / "cache"
    (root / os.path.basename(os.path.dirname(real_bin))).mkdir(parents=True)
    bin_dir = root / os.path.basename(os.path.dirname(real_bin)) / "bin"
    bin_dir.symlink_to(real_bin)
    for debian in glob.glob(os.path.join(os.path.dirname(os.path.dirname(real_bin)), "kind-node-debian-*.tar")):
        os.symlink(debian, str(root / os.path.basename(debian)))
    env = dict(os.environ, SIM_BIN_DIR=str(bin_dir))
    name, archive = subprocess.run([SCRIPT, "--print"], capture_output=True, text=True, check=True, env=env).stdout.split()
    assert archive.startswith(str(root) + "/kind-node-"), archive

    build = subprocess.Popen([SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                             preexec_fn=sigint_as_from_a_terminal)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not preloading(root):
        assert build.poll() is None, build.stdout.read().decode()[-3000:]
        time.sleep(0.2)
    assert preloading(root), "the build never started its containerd"
    os.killpg(build.pid, signal.SIGINT)
    interrupted = time.monotonic()
    # a bound for the build to end at all (its containerd stops, its partial files go), not a speed check:
    # on a loaded host this took more than a minute
    build.wait(timeout=300)
    print("the interrupted build ended in %.0f s" % (time.monotonic() - interrupted))
    time.sleep(1)
    assert build.returncode != 0
    assert processes_mentioning(str(root)) == [], "left running after the interrupt"
    assert glob.glob("/tmp/gpulab-kind-preload.*") == [], "the preloading containerd's sockets were left"
    assert mounts_under(str(tmp_path)) == []
    assert not os.path.exists(archive) and not os.path.exists(os.path.join(os.path.dirname(archive), "image.json"))

    started = time.monotonic()
    done = subprocess.run([SCRIPT], capture_output=True, text=True, check=False, env=env)
    print("rebuilt after the interrupt in %.0f s" % (time.monotonic() - started))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert done.stdout.split()[-2:] == [name, archive]
    assert os.path.getsize(archive) > 100 << 20
    with open(os.path.join(os.path.dirname(archive), "image.json")) as handle:
        image = json.load(handle)
    assert image["name"] == name and image["entrypoint"][-1] == "/sbin/init"
    assert glob.glob(str(root / "kind-node-*.partial")) == []
    assert processes_mentioning(str(root)) == [] and mounts_under(str(tmp_path)) == []
    # a run with the image there builds nothing
    again = subprocess.run([SCRIPT], capture_output=True, text=True, check=True, env=env)
    assert "kind-node cached" in again.stderr and again.stdout.split()[-2:] == [name, archive]
