# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KAI's reservation pods on nodes kwok plays, each run as a local process of KAI's reservation app.

For every pod KAI's binder creates in its reservation namespace on a sim node kwok plays, this
runner starts KAI's real reservation app like a pod: in a network namespace of its own (through
the sim agent's ``netns-exec``), the API server reached through this runner's relay, with that
pod's POD_NAME and POD_NAMESPACE; the app's output is the pod's log (a kwok Logs object), its
exit is recorded in the pod's status, and it is stopped when the pod goes away. Pods on a real
node (``--skip-node``) are left to its kubelet. With ``--nvml-stand-in-dir`` the apps find the sim's
NVML stand-in library, which reports one GPU UUID per GPU group on a node.

    kai_reservation_runner.py --kubeconfig K --health-address 127.0.0.1:P
        --program kai-resourcereservation --state-dir D [--nvml-stand-in-dir DIR --gpu-uuid U ...]

It uses the sim agent's modules, beside it (the sim_agent role's files).
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import signal
import subprocess
import sys

from cri_log import CriLog, say
from health import serve_health
from kube_api import Api, PodWatch
from pod_netns import start_in_namespace

GPU_GROUP_LABEL = "runai-gpu-group"
GPU_INDEX_ANNOTATION = "run.ai/reserve_for_gpu_index"
POLL_SECONDS = 1.0


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
        if self.args.nvml_stand_in_dir:
            env.update(LD_LIBRARY_PATH=self.args.nvml_stand_in_dir, NVML_STAND_IN_UUID=uuid, NVML_STAND_IN_MEMORY_MIB=str(self.args.gpu_memory_mib))
            if self.args.gpu_name:
                env.update(NVML_STAND_IN_NAME=self.args.gpu_name)
        return env

    def choose_gpu(self, pod, pods):
        """The UUID a reservation pod's app reports with the NVML stand-in library.

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
        if self.args.nvml_stand_in_dir:
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
            ", with the NVML stand-in library reporting %s" % uuid if uuid else ", with no NVML library on its path"))

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

    def step(self, pods):
        """Start the app of every reservation pod newly Running on a node kwok plays; stop those whose pod is gone."""
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


def run_reservations(args):
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
    # a watch, not a list each second: a list of hundreds of reservation pods costs the runner a
    # second of CPU, and the binder waits on each reservation's app
    watch = PodWatch(api, args.namespace, args.selector, say)
    watch.listed.wait()
    while True:
        watch.changed.wait(POLL_SECONDS)  # and each POLL_SECONDS, to see the apps that exited
        watch.changed.clear()
        try:
            runner.step(list(watch.pods.values()))
        except Exception as error:  # pylint: disable=broad-exception-caught
            say("reservations: %s" % error)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0], allow_abbrev=False)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--health-address", required=True, help="host:port of this runner's /healthz")
    parser.add_argument("--program", required=True, help="KAI's reservation app (kai-resourcereservation)")
    parser.add_argument("--state-dir", required=True, help="where the apps' logs and pid files go")
    parser.add_argument("--namespace", default="kai-resource-reservation")
    parser.add_argument("--selector", default="app=kai-resource-reservation")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for every app (repeatable)")
    parser.add_argument("--reach", action="append", type=int, default=[], help="host 127.0.0.1 port each app reaches (the API server)")
    parser.add_argument("--notice", action="append", default=[], help="a line to log at start (repeatable)")
    parser.add_argument("--skip-node", action="append", default=[], help="a real node whose kubelet runs its reservation pods (repeatable)")
    parser.add_argument("--nvml-stand-in-dir", default="", help="directory of a mock libnvidia-ml.so.1 to put on the apps' library path")
    parser.add_argument("--gpu-uuid", action="append", default=[], help="the node's GPU UUIDs, in order (with --nvml-stand-in-dir)")
    parser.add_argument("--gpu-name", help="the GPUs' name (with --nvml-stand-in-dir; unset: the mock library's own default)")
    parser.add_argument("--gpu-memory-mib", type=int, default=40960, help="the GPUs' memory (with --nvml-stand-in-dir)")
    args = parser.parse_args(argv)
    if args.nvml_stand_in_dir and not args.gpu_uuid:
        parser.error("--nvml-stand-in-dir needs the node's GPU UUIDs (--gpu-uuid)")
    pairs = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            parser.error("--env %r is not NAME=VALUE" % item)
        pairs[name] = value
    args.env = pairs
    return args


def main(argv=None):
    return run_reservations(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
