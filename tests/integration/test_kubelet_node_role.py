"""The sim's real node: a kubelet and containerd joined to a sim cluster, whose pods run in containers.

One cluster of its own (sim_cluster_node_runtime=kubelet), brought up, used and taken down in one
test: the node's runtime is the containerd that was built, a pod's command runs in a container
(its PID is the container's init, crictl sees it), exec works through the API server, a Job's pod
completes when its command exits, a pod naming an image that was not built fails without a pull,
a killed kubelet stops exec and a re-run heals it, and cleanup leaves nothing (a
second cleanup changes nothing).
"""

import glob
import os
import re
import subprocess
import tempfile
import time

import pytest

from simtools import BIN, listeners_of, processes_under, run_playbook

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.versions import read as read_versions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = [pytest.mark.real_node,
              pytest.mark.skipif(os.geteuid() != 0, reason="a real node runs a kubelet and containerd, which need root")]


def pinned(key):
    """A value of the collection's table of versions (versions.env)."""
    return read_versions()[key]


def kubectl(kubeconfig, *args, check=True):
    done = subprocess.run([os.path.join(BIN, "kubectl"), "--kubeconfig", kubeconfig] + list(args),
                          capture_output=True, text=True, check=False, timeout=120)
    if check:
        assert done.returncode == 0, "kubectl %s: %s %s" % (" ".join(args), done.stdout, done.stderr)
    return done


def wait_for(what, probe, timeout=90):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(1)
    raise AssertionError("timed out waiting for %s" % what)


def pod(name, node, image, command, restart="Always"):
    return ("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  nodeName: %s\n  restartPolicy: %s\n"
            "  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: %s\n    imagePullPolicy: IfNotPresent\n"
            "    command: %s\n") % (name, node, restart, image, command)


def apply(kubeconfig, tmp_path, text):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(text)
    kubectl(kubeconfig, "apply", "-f", str(manifest))


# The host sysctls the kubelet sets at start (its kernel defaults), and the kernel's own defaults of three of them.
KUBELET_SYSCTLS = ["kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory", "vm/panic_on_oom", "kernel/keys/root_maxkeys",
                   "kernel/keys/root_maxbytes"]
KERNEL_DEFAULTS = {"kernel/panic": "0", "kernel/panic_on_oops": "0", "vm/overcommit_memory": "0"}


def read_sysctl(key):
    with open("/proc/sys/" + key) as handle:
        return handle.read().strip()


def write_sysctl(key, value):
    with open("/proc/sys/" + key, "w") as handle:
        handle.write(value)


def kubelet_firewall():
    """The kubelet's iptables chains on the host ('iptables filter KUBE-FIREWALL', ...), the rules that jump to
    them, and the nftables tables."""
    found = []
    for ipt in ("iptables", "ip6tables"):
        for table in ("filter", "nat", "mangle"):
            rules = subprocess.run([ipt, "-w", "-t", table, "-S"], capture_output=True, text=True, check=False).stdout.splitlines()
            found += ["%s %s %s" % (ipt, table, line) for line in rules
                      if re.match(r"-N KUBE-(FIREWALL|KUBELET-CANARY|IPTABLES-HINT)$", line)
                      or re.search(r" -j KUBE-(FIREWALL|KUBELET-CANARY|IPTABLES-HINT)$", line)]
    tables = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=False).stdout.splitlines()
    return sorted(found + tables)


def cni_results():
    return set(os.listdir("/var/lib/cni/results")) if os.path.isdir("/var/lib/cni/results") else set()


def host_leftovers(workdir, bridge, earlier_cni_results=()):
    """What of the node could be left on the host, by kind (CNI results there before the node are not its)."""
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    rules = subprocess.run(["iptables", "-w", "-t", "nat", "-S"], capture_output=True, text=True, check=True).stdout
    with open("/proc/self/mountinfo") as handle:
        mounts = [line.split()[4] for line in handle if line.split()[4].startswith(workdir)]
    return dict(
        processes=processes_under(workdir),
        mounts=mounts,
        links=[line for line in links.splitlines() if bridge in line],
        rules=[line for line in rules.splitlines() if "gpulab.kai_hami sim node" in line and "nodetest" in line],
        workdir=os.path.exists(workdir),
        cni_results=sorted(cni_results() - set(earlier_cni_results)),
        kubelet_files=sorted(os.listdir("/var/lib/kubelet/device-plugins")) if os.path.isdir("/var/lib/kubelet/device-plugins") else [],
        cgroups=sorted(glob.glob("/sys/fs/cgroup/*/kubepods") + glob.glob("/sys/fs/cgroup/kubepods")),
    )


def test_real_node_runs_pods_heals_and_leaves_nothing(tmp_path):
    # a short work dir: the kubelet's and containerd's Unix sockets lie below it (108 bytes at most)
    workdir = tempfile.mkdtemp(prefix="sim-node-", dir="/tmp") + "/sim"
    kubeconfig = os.path.join(workdir, "kubeconfig")
    node = "nodetest-control-plane"
    variables = dict(sim_cluster_name="nodetest", sim_cluster_workdir=workdir, sim_cluster_kubeconfig=kubeconfig,
                     sim_cluster_node_runtime="kubelet", sim_cluster_kai_crds=False)
    # the host sysctls a kubelet sets at start, at the kernel's defaults first (a host that ran a kubelet
    # before has the kubelet's values): cleanup must put back what the node changed
    initial = {key: read_sysctl(key) for key in KUBELET_SYSCTLS}
    for key, value in KERNEL_DEFAULTS.items():
        write_sysctl(key, value)
    before = {key: read_sysctl(key) for key in KUBELET_SYSCTLS}
    firewall_before = kubelet_firewall()
    earlier_cni_results = cni_results()
    up = run_playbook(variables)
    bridge = None
    try:
        assert {key: read_sysctl(key) for key in KERNEL_DEFAULTS} != KERNEL_DEFAULTS, "the kubelet set none of its sysctls"
        assert up.returncode == 0, up.stdout[-4000:]
        # the kubelet's chains, which cleanup must take away again (a host that ran a kubelet before may
        # have them already)
        assert "iptables filter -N KUBE-FIREWALL" in kubelet_firewall()
        bridge = re.search(r"gk[0-9a-f]{8}", open(os.path.join(workdir, "node", "cni", "net.d",
                                                               "10-gpulab-nodetest.conflist")).read()).group(0)
        info = kubectl(kubeconfig, "get", "node", node, "-o",
                       "jsonpath={.status.nodeInfo.containerRuntimeVersion} {.status.nodeInfo.kubeletVersion}").stdout
        assert info == "containerd://%s %s" % (pinned("CONTAINERD_VERSION").lstrip("v"), pinned("K8S_VERSION"))
        image = pinned("LOCAL_IMAGE_REGISTRY") + "/busybox:" + subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", "busybox-static"], capture_output=True, text=True, check=True).stdout.split(":")[-1].split("-")[0]

        apply(kubeconfig, tmp_path, pod("sleeper", node, image, '[sleep, "3600"]'))
        wait_for("sleeper Running", lambda: kubectl(kubeconfig, "get", "pod", "sleeper", "-o", "jsonpath={.status.phase}").stdout == "Running")
        assert [name for name in cni_results() - earlier_cni_results if name.startswith("gpulab-nodetest-")], "the node's pod has no CNI result"
        cmdline = kubectl(kubeconfig, "exec", "sleeper", "--", "cat", "/proc/1/cmdline").stdout
        assert cmdline.split("\0")[:2] == ["sleep", "3600"]
        bin_dir = subprocess.run([os.path.join(ROOT, "roles", "local_build", "files", "build.sh"), "--print-bin-dir"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        crictl = [os.path.join(bin_dir, "crictl"), "--runtime-endpoint",
                  "unix://" + os.path.join(workdir, "node", "containerd", "containerd.sock")]
        container = subprocess.run(crictl + ["ps", "-q", "--name", "main", "--label", "io.kubernetes.pod.name=sleeper"],
                                   capture_output=True, text=True, check=True).stdout.split()
        assert len(container) == 1
        inspect = subprocess.run(crictl + ["inspect", "-o", "go-template", "--template", "{{.info.pid}}", container[0]],
                                 capture_output=True, text=True, check=True).stdout.strip()
        with open("/proc/%s/cmdline" % inspect) as handle:
            assert handle.read().split("\0")[:2] == ["sleep", "3600"]

        # a Job-like pod completes when its command exits, with its exit code
        apply(kubeconfig, tmp_path, pod("once", node, image, '[sh, -c, "exit 3"]', restart="Never"))
        wait_for("once Failed", lambda: kubectl(kubeconfig, "get", "pod", "once", "-o", "jsonpath={.status.phase}").stdout == "Failed")
        code = kubectl(kubeconfig, "get", "pod", "once", "-o", "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}").stdout
        assert code == "3"

        # an image that was not built is never there: the pod fails with the kubelet's pull error event,
        # the pull going to no registry
        apply(kubeconfig, tmp_path, pod("unbuilt", node, "sim.gpulab.kai-hami/not-built:0.0", '[sleep, "1"]'))
        events = wait_for("a pull failure event", lambda: [line for line in kubectl(
            kubeconfig, "get", "events", "--field-selector", "involvedObject.name=unbuilt", "-o",
            "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}").stdout.splitlines()
            if line.startswith("Failed:") and "sim.gpulab.kai-hami/not-built:0.0" in line and "127.0.0.1:1" in line])
        print("event: %s" % events[0])

        # a killed kubelet: exec through it fails; a re-run of the role starts it again and the pod still runs
        kubelet_pid = int(open(os.path.join(workdir, "node", "processes", "kubelet.pid")).read())
        os.kill(kubelet_pid, 9)
        wait_for("the kubelet gone", lambda: not os.path.exists("/proc/%d/cmdline" % kubelet_pid) or
                 open("/proc/%d/stat" % kubelet_pid).read().split()[2] == "Z")
        failed = kubectl(kubeconfig, "exec", "sleeper", "--", "true", check=False)
        assert failed.returncode != 0, failed.stdout
        again = run_playbook(variables)
        assert again.returncode == 0, again.stdout[-3000:]
        assert kubectl(kubeconfig, "get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}").stdout == "True"
        assert kubectl(kubeconfig, "exec", "sleeper", "--", "cat", "/proc/1/cmdline").stdout.split("\0")[0] == "sleep"

        # a re-run reads every file of the node (in one call): containerd's configuration edited by hand is
        # written back, and containerd, started on the content the file has again, goes on running
        config = os.path.join(workdir, "node", "containerd", "config.toml")
        made = open(config).read()
        containerd_pid = int(open(os.path.join(workdir, "node", "processes", "containerd.pid")).read())
        with open(config, "a") as handle:
            handle.write("# edited by hand\n")
        edited = run_playbook(variables)
        assert edited.returncode == 0, edited.stdout[-3000:]
        assert open(config).read() == made
        assert int(open(os.path.join(workdir, "node", "processes", "containerd.pid")).read()) == containerd_pid
        assert re.search(r"Make the node's directories and write its files[^\n]*\nchanged: \[localhost\]", edited.stdout), edited.stdout[-3000:]
        assert kubectl(kubeconfig, "get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}").stdout == "True"

        # every listener of the node's processes is on 127.0.0.1 or the node's own bridge address
        node_ip = kubectl(kubeconfig, "get", "node", node, "-o", "jsonpath={.status.addresses[?(@.type=='InternalIP')].address}").stdout
        pids = [int(open(os.path.join(workdir, "node", "processes", name + ".pid")).read()) for name in ("kubelet", "containerd")]
        listening = listeners_of(pids)
        assert listening and all(address.startswith(("127.0.0.1:", node_ip + ":")) for address, pid in listening), listening
    finally:
        down = run_playbook(variables, dict(sim_cluster_state="absent"))
    assert down.returncode == 0, down.stdout[-3000:]
    left = host_leftovers(workdir, bridge or "gk-none", earlier_cni_results)
    after = {key: read_sysctl(key) for key in KUBELET_SYSCTLS}
    firewall_after = kubelet_firewall()
    for key, value in initial.items():
        write_sysctl(key, value)
    assert left == dict(processes=[], mounts=[], links=[], rules=[], workdir=False, cni_results=[], kubelet_files=[], cgroups=[]), left
    assert after == before
    assert firewall_after == firewall_before
    second = run_playbook(variables, dict(sim_cluster_state="absent"))
    assert second.returncode == 0
    assert re.search(r"localhost\s*:.*changed=0\s", second.stdout), second.stdout[-1500:]
    os.rmdir(os.path.dirname(workdir))
