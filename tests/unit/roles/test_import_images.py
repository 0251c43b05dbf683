"""The real node's image import script: now, or in the background and waited for, naming what containerd refused."""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(ROOT, "roles", "kubelet_node", "files", "import_images.sh")


def fake_ctr(tmp_path):
    """A ctr that records each archive it is given and refuses any whose name has 'bad' in it."""
    ctr = tmp_path / "ctr"
    ctr.write_text('#!/bin/sh\nfor a; do last="$a"; done\necho "$last" >> %s\ncase "$last" in *bad*) echo "ctr: bad archive" >&2; exit 1;; esac\n'
                   % (tmp_path / "calls"))
    ctr.chmod(0o755)
    return str(ctr)


def run(*args):
    return subprocess.run(["sh", SCRIPT] + [str(a) for a in args], capture_output=True, text=True, check=False)


def calls(tmp_path):
    return (tmp_path / "calls").read_text().split() if (tmp_path / "calls").exists() else []


def test_run_imports_in_turn_and_stops_at_the_first_refused(tmp_path):
    ctr = fake_ctr(tmp_path)
    assert run("run", ctr, "sock", "a.tar", "b.tar").returncode == 0 and calls(tmp_path) == ["a.tar", "b.tar"]
    refused = run("run", ctr, "sock", "c.tar", "bad.tar", "d.tar")
    assert refused.returncode == 1 and "containerd did not import bad.tar" in refused.stderr
    assert calls(tmp_path) == ["a.tar", "b.tar", "c.tar", "bad.tar"]


def test_start_returns_and_wait_reports_the_outcome(tmp_path):
    ctr, state = fake_ctr(tmp_path), tmp_path / "state"
    assert run("start", state, ctr, "sock", "a.tar").returncode == 0
    waited = run("wait", state, 30)
    assert waited.returncode == 0 and calls(tmp_path) == ["a.tar"]
    assert run("start", state, ctr, "sock", "bad.tar", "e.tar").returncode == 0
    failed = run("wait", state, 30)
    assert failed.returncode == 1 and "containerd did not import bad.tar" in failed.stdout and "e.tar" not in calls(tmp_path)


def test_wait_without_a_start_fails_naming_the_directory(tmp_path):
    done = run("wait", tmp_path / "nothing", 5)
    assert done.returncode == 1 and "no import was started in %s" % (tmp_path / "nothing") in done.stdout
