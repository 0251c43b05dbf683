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

``gpu-operator-stand-in --kubeconfig K --namespace gpu-operator --health-address 127.0.0.1:P``
    A stand-in for run.ai's fake-gpu-operator on the nodes kwok plays (``gpu_operator_stand_in.py``):
    from its topology ConfigMap, read once, each node of a pool gets ``nvidia.com/gpu`` in its
    capacity and allocatable, and the operator's labels (what KAI's scale suite reads).

KAI's reservation pods on nodes kwok plays are run by ``kai_reservation_runner.py``, beside this
file, with these modules (the sim_kai role starts it). One job per file, beside this one: ``cri_log.py`` (the log format, ``run``),
``pod_netns.py`` (network namespaces and relays: ``pod``, ``netns-exec``), ``kube_api.py`` (the
API calls), ``health.py`` (health URLs), ``placeholders.py`` (``placeholders``) and ``gpu_operator_stand_in.py``
(``gpu-operator-stand-in``).
"""

from __future__ import absolute_import, division, print_function

import argparse
import sys

from cri_log import run
from gpu_operator_stand_in import TopologyError, gpu_operator_stand_in
from placeholders import placeholders
from pod_netns import exec_in_namespace, pod


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

    gpus = commands.add_parser("gpu-operator-stand-in", help="give the nodes kwok plays GPUs from fake-gpu-operator's topology")
    gpus.add_argument("--kubeconfig", required=True)
    gpus.add_argument("--namespace", default="gpu-operator", help="where the topology ConfigMap is")
    gpus.add_argument("--health-address", required=True, help="host:port of the stand-in's /healthz")

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
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "run":
        return run(args.log, args.argv)
    if args.command == "pod":
        return pod(args.log, args.reach, args.expose, args.argv)
    if args.command == "netns-exec":
        return exec_in_namespace(args.control_fd, args.reach, args.argv)
    if args.command == "gpu-operator-stand-in":
        try:
            return gpu_operator_stand_in(args)
        except TopologyError as error:
            sys.stderr.write("gpu-operator stand-in: %s\n" % error)
            return 1
    return placeholders(args)


if __name__ == "__main__":
    sys.exit(main())
