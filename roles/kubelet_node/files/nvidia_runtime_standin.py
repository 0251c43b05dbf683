# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stand-in for NVIDIA's container runtime on the sim's real node: runc, plus the NVML stand-in library.

    nvidia_runtime_standin.py --runc RUNC --library LIB [--config CONF] -- RUNC-ARGS...

containerd's runc shim calls the ``nvidia`` runtime handler's binary as it calls runc. On
``create``, a container whose process environment sets ``NVIDIA_VISIBLE_DEVICES`` (the device
plugin's allocation) to anything but ``void`` or ``none`` gets LIB bind-mounted read-only at
``/lib/x86_64-linux-gnu/libnvidia-ml.so.1`` (and CONF, when given, at ``/etc/nvml-stand-in.conf``
with ``NVML_STAND_IN_CONFIG`` pointing at it), as NVIDIA's container toolkit puts the driver's
libraries into a GPU container. Every call then becomes RUNC with the same arguments.
This is a stand-in: NVIDIA's container toolkit does far more (CDI, hooks, device nodes).
"""

from __future__ import absolute_import, division, print_function

import json
import os
import sys

LIBRARY_TARGET = "/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
CONFIG_TARGET = "/etc/nvml-stand-in.conf"
VISIBLE = "NVIDIA_VISIBLE_DEVICES"
# runc's global options that take a value (the subcommand is the first other word)
VALUE_OPTIONS = ("--root", "--log", "--log-format", "--criu", "--rootless")


def subcommand(args):
    """(name, index) of runc's subcommand in its argument list, or (None, -1)."""
    skip = False
    for index, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in VALUE_OPTIONS:
            skip = True
            continue
        if arg.startswith("-"):
            continue
        return arg, index
    return None, -1


def bundle_of(args, start):
    """The --bundle (-b) value after the subcommand, or the working directory."""
    for index in range(start, len(args)):
        arg = args[index]
        if arg in ("--bundle", "-b") and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--bundle="):
            return arg.split("=", 1)[1]
    return os.getcwd()


def wants_gpus(env):
    """Whether a process environment asks for GPUs the way the device plugin's allocation does."""
    for item in env or []:
        name, sep, value = item.partition("=")
        if name == VISIBLE and sep:
            return value.strip() not in ("", "void", "none")
    return False


def inject(spec, library, config):
    """Add the library (and config) mounts and environment to an OCI runtime spec; True when changed."""
    process = spec.setdefault("process", {})
    if not wants_gpus(process.get("env")):
        return False
    mounts = spec.setdefault("mounts", [])
    targets = set(mount.get("destination") for mount in mounts)
    if LIBRARY_TARGET not in targets:
        mounts.append({"destination": LIBRARY_TARGET, "type": "bind", "source": library, "options": ["rbind", "ro", "nosuid", "nodev"]})
    if config and CONFIG_TARGET not in targets:
        mounts.append({"destination": CONFIG_TARGET, "type": "bind", "source": config, "options": ["rbind", "ro", "nosuid", "nodev"]})
        env = process.setdefault("env", [])
        if not any(item.startswith("NVML_STAND_IN_CONFIG=") for item in env):
            env.append("NVML_STAND_IN_CONFIG=" + CONFIG_TARGET)
    return True


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        sys.stderr.write("usage: nvidia_runtime_standin.py --runc RUNC --library LIB [--config CONF] -- RUNC-ARGS...\n")
        return 2
    ours, runc_args = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    options = dict(zip(ours[::2], ours[1::2]))
    runc, library, config = options.get("--runc"), options.get("--library"), options.get("--config")
    if not runc or not library:
        sys.stderr.write("nvidia_runtime_standin.py: --runc and --library are required\n")
        return 2
    name, index = subcommand(runc_args)
    if name == "create":
        path = os.path.join(bundle_of(runc_args, index + 1), "config.json")
        with open(path) as handle:
            spec = json.load(handle)
        if inject(spec, library, config):
            with open(path + ".tmp", "w") as handle:
                json.dump(spec, handle)
            os.rename(path + ".tmp", path)
    os.execv(runc, [runc] + runc_args)
    return 1


if __name__ == "__main__":
    sys.exit(main())
