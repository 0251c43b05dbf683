"""The real node's stand-in for NVIDIA's container runtime: runc's arguments read, the library mounted only into GPU containers."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "roles", "kubelet_node", "files"))

import nvidia_runtime_standin as standin  # noqa: E402  pylint: disable=wrong-import-position,import-error

STANDIN = os.path.join(ROOT, "roles", "kubelet_node", "files", "nvidia_runtime_standin.py")


def spec(env):
    return {"process": {"args": ["/workspace/app"], "env": list(env)}, "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}]}


def test_runcs_subcommand_and_bundle_are_found_past_its_global_options():
    args = ["--root", "/state/runc/k8s.io", "--log", "/b/log.json", "--log-format", "json", "create", "--bundle", "/b", "--pid-file", "/b/pid", "c1"]
    name, index = standin.subcommand(args)
    assert (name, args[index]) == ("create", "create")
    assert standin.bundle_of(args, index + 1) == "/b"
    assert standin.subcommand(["--debug", "delete", "c1"])[0] == "delete"


def test_a_container_given_gpus_gets_the_library_and_its_configuration():
    allocated = spec(["PATH=/bin", "NVIDIA_VISIBLE_DEVICES=GPU-12345678-1234-1234-1234-123456780006"])
    assert standin.inject(allocated, "/lib/mock.so", "/conf/mock.conf") is True
    targets = dict((mount["destination"], mount) for mount in allocated["mounts"])
    assert targets[standin.LIBRARY_TARGET]["source"] == "/lib/mock.so" and "ro" in targets[standin.LIBRARY_TARGET]["options"]
    assert targets[standin.CONFIG_TARGET]["source"] == "/conf/mock.conf"
    assert "NVML_STAND_IN_CONFIG=" + standin.CONFIG_TARGET in allocated["process"]["env"]
    # a second pass adds nothing
    before = json.dumps(allocated, sort_keys=True)
    standin.inject(allocated, "/lib/mock.so", "/conf/mock.conf")
    assert json.dumps(allocated, sort_keys=True) == before


def test_a_container_without_gpus_is_left_as_it_is():
    for env in ([], ["NVIDIA_VISIBLE_DEVICES=void"], ["NVIDIA_VISIBLE_DEVICES=none"], ["NVIDIA_VISIBLE_DEVICES="]):
        plain = spec(env)
        assert standin.inject(plain, "/lib/mock.so", None) is False
        assert plain == spec(env)


def test_create_rewrites_the_bundle_then_becomes_runc_with_the_same_arguments(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "config.json").write_text(json.dumps(spec(["NVIDIA_VISIBLE_DEVICES=GPU-x"])))
    runc = tmp_path / "runc"
    runc.write_text("#!/bin/sh\necho \"runc $*\"\n")
    os.chmod(str(runc), 0o755)
    args = ["--root", "/r", "create", "--bundle", str(bundle), "c1"]
    done = subprocess.run([sys.executable, STANDIN, "--runc", str(runc), "--library", "/lib/mock.so", "--"] + args,
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "runc " + " ".join(args)
    written = json.loads((bundle / "config.json").read_text())
    assert standin.LIBRARY_TARGET in [mount["destination"] for mount in written["mounts"]]
    # other subcommands pass straight through
    done = subprocess.run([sys.executable, STANDIN, "--runc", str(runc), "--library", "/lib/mock.so", "--", "state", "c1"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "runc state c1"
