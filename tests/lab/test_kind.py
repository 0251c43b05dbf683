"""The lab on kind: Molecule's default scenario, with podman where no Docker engine answers and kind's
node image built locally where no registry answers, a sim lab beside it, and the host compared before
create and after destroy; then the ``kind_crossed`` scenario, the reservation crossed on kind.

kind's node runs a kubelet and containerd, so this module is marked ``real_node``: ``make test`` runs
it in the lane of the sim's real node, one real node at a time.
"""

import glob
import json
import os
import re
import subprocess
import time

import pytest

from conftest import BIN, ROOT, molecule, run_playbook, step_succeeded

LAB = os.path.join(ROOT, "playbooks", "lab11.yml")
CLEANUP = os.path.join(ROOT, "playbooks", "cleanup.yml")
BESIDE = "kind-beside-sim"  # a sim lab's cluster, beside the kind lab
NAME = "molecule-kind"  # molecule/default/vars/lab11.yml
NODE = NAME + "-control-plane"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "gpulab-kai-hami")
PODMAN_ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(CACHE, "podman", "containers.conf"),
                  CONTAINERS_STORAGE_CONF=os.path.join(CACHE, "podman", "storage.conf"))
# What kind, podman, netavark and runc may change on a host, read the same way before and after.
SYSCTLS = ["net/ipv4/ip_forward", "net/ipv4/conf/all/forwarding", "net/ipv4/conf/default/forwarding",
           "net/ipv4/conf/all/route_localnet", "net/ipv4/conf/all/rp_filter", "net/ipv6/conf/all/forwarding",
           "net/ipv6/conf/default/forwarding", "kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory",
           "vm/panic_on_oom", "fs/inotify/max_user_instances", "fs/inotify/max_user_watches", "fs/file-max",
           "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "kernel/pid_max"]
ENGINE_PATHS = ("/lib/modules", "/run/netns", "/run/containers", "/run/libpod", "/run/runc", "/var/lib/containers")
ENGINE_PROCESSES = ("conmon", "podman", "netavark", "aardvark-dns", "runc", "containerd", "kubelet")


def command_output(argv):
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else "(%s: exit %d)" % (argv[0], done.returncode)


def firewall(save):
    """iptables-save's rules without counters and comments (the table as a set of lines)."""
    return sorted(re.sub(r"\[\d+:\d+\]", "", line) for line in command_output([save]).splitlines() if not line.startswith("#"))


def read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def host_snapshot():
    """The host as kind with podman could change it: sysctls, firewall (both iptables backends, nftables),
    mounts, links, network namespaces, cgroups, the engine's processes and paths."""
    with open("/proc/self/mountinfo") as handle:
        mounts = sorted(line.split()[4] for line in handle)
    processes = []
    for comm in glob.glob("/proc/[0-9]*/comm"):
        name = read(comm)
        if name in ENGINE_PROCESSES:
            processes.append(name)
    return dict(
        sysctls={key: read("/proc/sys/" + key) for key in SYSCTLS},
        iptables_legacy=firewall("iptables-legacy-save"), ip6tables_legacy=firewall("ip6tables-legacy-save"),
        iptables_nft=firewall("iptables-nft-save"), ip6tables_nft=firewall("ip6tables-nft-save"),
        nft=sorted(re.sub(r"packets \d+ bytes \d+", "", line.strip()) for line in command_output(["nft", "list", "ruleset"]).splitlines()
                   if line.strip()),
        mounts=mounts,
        links=sorted(line.split(": ")[1].split("@")[0] for line in command_output(["ip", "-o", "link"]).splitlines()),
        netns=sorted(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else None,
        cgroups=sorted(path for path in glob.glob("/sys/fs/cgroup/*/*") + glob.glob("/sys/fs/cgroup/*/*/*")
                       if os.path.isdir(path) and re.search(r"libpod|machine|kubepods|conmon", path)),
        processes=sorted(processes),
        paths={path: os.path.exists(path) for path in ENGINE_PATHS},
    )


def podman(*args):
    return subprocess.run(["podman"] + list(args), capture_output=True, text=True, check=False, env=PODMAN_ENV)


def kubectl(*args):
    kubeconfig = os.path.join(CACHE, "kind", NAME, "kubeconfig")
    return subprocess.run([os.path.join(BIN, "kubectl"), "--kubeconfig", kubeconfig] + list(args),
                          capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def kind_lab():
    """``molecule test -s default --destroy never`` from a host without the scenario's cluster; the host
    snapshot before; the lab stays up for the module's tests, then ``molecule destroy``."""
    before = host_snapshot()
    molecule("reset", "-s", "default")  # an interrupted run's state would skip create (conftest's molecule_sim says why)
    started = time.monotonic()
    returncode, output = molecule("test", "-s", "default", "--destroy", "never")
    lab = dict(returncode=returncode, output=output, before=before, seconds=time.monotonic() - started)
    yield lab
    destroyed, destroy_output = molecule("destroy", "-s", "default")
    lab.update(destroyed=destroyed, destroy_output=destroy_output, after=host_snapshot())


@pytest.mark.real_node
def test_molecule_test_default_on_kind(kind_lab):
    """create, converge, idempotence and verify on kind: every claim of the lab holds, from kind's own node."""
    output = kind_lab["output"]
    assert kind_lab["returncode"] == 0, output[-6000:]
    failed = [step for step in ("syntax", "create", "converge", "idempotence", "verify")
              if not step_succeeded(output, "default", step)]
    assert failed == [], output[-6000:]
    assert "holding: ['C1', 'C2', 'C3', 'C4', 'C5', 'C6', 'C7', 'C8']" in output, output[-6000:]
    print("molecule test -s default (without destroy): %.0f s" % kind_lab["seconds"])
    # the report names the platform and every stand-in the claims relied on
    summary = [line for line in output.splitlines() if "Platform: kind" in line]
    assert summary, output[-6000:]
    if "none pulled" in summary[0]:
        assert "isolator stand-in of gpulab.kai_hami" in output and "nvml-mock stand-in of gpulab.kai_hami" in output, summary
    # the GPU node is kind's node, a kubelet in the node's container
    node = json.loads(kubectl("get", "node", NODE, "-o", "json").stdout)
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert podman("inspect", "--format", "{{.State.Running}}", NODE).stdout.strip() == "true"


@pytest.mark.real_node
def test_a_pod_naming_an_image_that_was_not_loaded_fails_to_pull_at_once(kind_lab):
    """With local images nothing is pulled: a pod naming an image kind's node does not hold gets the
    kubelet's pull error event (no registry answers), and the node holds every image the lab's pods run."""
    assert kind_lab["returncode"] == 0, kind_lab["output"][-3000:]
    if "none pulled" not in kind_lab["output"]:
        pytest.skip("the scenario ran from upstream images (a registry answered)")
    pod = "kind-unloaded-image"
    kubectl("delete", "pod", pod, "--ignore-not-found", "--wait=true")
    made = kubectl("run", pod, "--image=sim.gpulab.kai-hami/not-loaded:0.0", "--restart=Never", "--command", "--", "true")
    assert made.returncode == 0, made.stderr
    started = time.monotonic()
    events = ""
    while time.monotonic() - started < 120 and "Failed to pull image" not in events:
        time.sleep(1)
        events = kubectl("get", "events", "--field-selector", "involvedObject.name=" + pod, "-o", "jsonpath={.items[*].message}").stdout
    print("pull error event after %.1f s: %s" % (time.monotonic() - started, events[:300]))
    kubectl("delete", "pod", pod, "--wait=false")
    assert "Failed to pull image" in events and "sim.gpulab.kai-hami/not-loaded:0.0" in events, events
    held = subprocess.run(["podman", "exec", NODE, "ctr", "--namespace", "k8s.io", "images", "list", "--quiet"],
                          capture_output=True, text=True, check=False, env=PODMAN_ENV).stdout.split()
    running = {normalized(image) for image in kubectl("get", "pods", "--all-namespaces", "--field-selector", "metadata.name!=" + pod, "-o",
                                                      "jsonpath={.items[*].spec.containers[*].image}").stdout.split()}
    assert running and running <= set(held), sorted(running - set(held))


def normalized(image):
    """An image reference as containerd names it: a first part that is not a registry is Docker Hub's."""
    first = image.split("/", 1)[0]
    if "/" not in image:
        return "docker.io/library/" + image
    return image if "." in first or ":" in first or first == "localhost" else "docker.io/" + image


def claims(report_dir):
    with open(os.path.join(str(report_dir), "claims.json")) as handle:
        return json.load(handle)


def node_containers():
    """Each kind node container of the collection's podman, with the time it started."""
    listed = podman("ps", "--format", "{{.Names}} {{.StartedAt}}").stdout.split("\n")
    return sorted(line for line in listed if line.strip())


@pytest.mark.real_node
def test_the_kind_lab_and_a_sim_lab_beside_it_disturb_neither(kind_lab, tmp_path):
    """A sim lab (its own real node: a kubelet and containerd on the host) comes up, holds and is cleaned up
    while the kind lab runs; the kind lab's node is not restarted and its claims hold throughout."""
    assert kind_lab["returncode"] == 0, kind_lab["output"][-3000:]
    kind_vars = dict(lab11_platform="kind", lab11_cluster_name=NAME, lab11_report_dir=str(tmp_path / "kind"))
    sim_vars = dict(lab11_platform="sim", lab11_cluster_name=BESIDE, lab11_report_dir=str(tmp_path / "sim"))
    containers = node_containers()
    try:
        sim = run_playbook(sim_vars, playbook=LAB)
        assert sim.returncode == 0, sim.stdout[-6000:]
        assert claims(tmp_path / "sim")["ok"], json.dumps(claims(tmp_path / "sim"), indent=1)[:4000]
        kind = run_playbook(kind_vars, playbook=LAB, options=["--tags", "verify"])
        assert kind.returncode == 0 and claims(tmp_path / "kind")["ok"], kind.stdout[-6000:]
    finally:
        down = run_playbook(dict(cleanup_cluster_name=BESIDE), playbook=CLEANUP)
    assert down.returncode == 0, down.stdout[-4000:]
    assert node_containers() == containers
    kind = run_playbook(kind_vars, playbook=LAB, options=["--tags", "verify"])
    assert kind.returncode == 0 and claims(tmp_path / "kind")["ok"], kind.stdout[-6000:]


@pytest.mark.real_node
def test_destroy_puts_the_host_back(kind_lab):
    """After molecule destroy (playbooks/cleanup.yml): no container, and the host as it was before create.
    (The fixture's own destroy, after this, finds nothing left to remove.)"""
    destroyed, destroy_output = molecule("destroy", "-s", "default")
    assert destroyed == 0 and step_succeeded(destroy_output, "default", "destroy"), destroy_output[-4000:]
    # the host first: a podman command makes podman's run directory (/run/containers) again
    after = host_snapshot()
    assert podman("ps", "--all", "--quiet").stdout.strip() == ""
    changed = {key: (kind_lab["before"][key], after[key]) for key in after if after[key] != kind_lab["before"][key]}
    assert changed == {}, json.dumps(changed, indent=1)[:6000]
    assert not os.path.exists(os.path.join(CACHE, "kind", NAME))


@pytest.mark.real_node
def test_molecule_test_kind_crossed():
    """Beyond the lab on kind: the reservation crossed with the NVML stand-in library through the stand-in for
    NVIDIA's container runtime in kind's node, on 4 x 80 GiB A100s; C8 reserved and C9 holding."""
    returncode, output = molecule("test", "-s", "kind_crossed")
    assert returncode == 0, output[-6000:]
    failed = [step for step in ("syntax", "create", "converge", "idempotence", "verify", "destroy")
              if not step_succeeded(output, "kind_crossed", step)]
    assert failed == [], output[-6000:]
    assert "holding: ['C1', 'C2', 'C3', 'C4', 'C5', 'C6', 'C7', 'C8', 'C9']" in output, output[-6000:]
    assert "NVIDIA container runtime stand-in of gpulab.kai_hami" in output
    assert podman("ps", "--all", "--quiet").stdout.strip() == ""
