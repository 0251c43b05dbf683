"""The real node's host checks, each on a host made to fail it (files standing for /proc and the cgroup mount)."""

import os

import pytest

from ansible_collections.gpulab.kai_hami.plugins.modules.kubelet_node_host_info import CAP_SYS_RESOURCE, host_facts

FULL_SET = (1 << 41) - 1  # every capability of a 6.x kernel
COMMANDS = ["iptables", "ip", "mount", "umount"]


def fake_host(tmp_path, cap_bnd=FULL_SET, swaps=(), cgroup=2, netns=True, commands=tuple(COMMANDS)):
    """A /proc, a cgroup mount and a PATH as the checks read them; returns (proc, cgroup, path)."""
    proc = tmp_path / "proc"
    (proc / "self" / "ns").mkdir(parents=True)
    if netns:
        (proc / "self" / "ns" / "net").write_text("")
    (proc / "self" / "status").write_text("Name:\tpython\nCapBnd:\t%016x\nCapAmb:\t0000000000000000\n" % cap_bnd)
    lines = ["Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority"] + ["%s\tfile\t1024\t0\t-2" % area for area in swaps]
    (proc / "swaps").write_text("\n".join(lines) + "\n")
    root = tmp_path / "cgroup"
    root.mkdir()
    if cgroup == 2:
        (root / "cgroup.controllers").write_text("cpu memory pids\n")
    elif cgroup == 1:
        (root / "memory").mkdir()
        (root / "cpu").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for command in commands:
        (bin_dir / command).write_text("#!/bin/sh\n")
        os.chmod(str(bin_dir / command), 0o755)
    return str(proc), str(root), str(bin_dir)


def facts(tmp_path, euid=0, **host):
    proc, cgroup, path = fake_host(tmp_path, **host)
    return host_facts(proc, cgroup, euid, COMMANDS, path)


def test_a_host_like_a_kind_node_has_nothing_to_meet(tmp_path):
    result = facts(tmp_path)
    assert result["can_run"] and result["problems"] == [] and result["conditions"] == []
    assert (result["restrict_oom_score_adj"], result["fail_cgroup_v1"], result["fail_swap_on"]) == (False, True, True)
    assert result["cgroup_version"] == 2


def test_not_root_is_one_sentence_saying_what_is_needed(tmp_path):
    result = facts(tmp_path, euid=1000)
    assert not result["can_run"]
    assert len(result["problems"]) == 1
    assert "need root" in result["problems"][0] and "become: true" in result["problems"][0]  # the role adds what needs no root


@pytest.mark.parametrize("missing", COMMANDS)
def test_a_missing_command_is_named(tmp_path, missing):
    result = facts(tmp_path, commands=[command for command in COMMANDS if command != missing])
    assert not result["can_run"]
    assert ("needs %s on the PATH" % missing) in result["problems"][0]


def test_no_network_namespaces_and_no_cgroups_are_problems(tmp_path):
    result = facts(tmp_path, netns=False, cgroup=0)
    assert not result["can_run"]
    assert len(result["problems"]) == 2
    assert any("network namespaces" in problem for problem in result["problems"])
    assert any("no cgroup file system" in problem for problem in result["problems"])


def test_cgroup_v1_is_met_by_fail_cgroup_v1_false(tmp_path):
    result = facts(tmp_path, cgroup=1)
    assert result["can_run"] and result["cgroup_version"] == 1
    assert result["fail_cgroup_v1"] is False
    assert [condition["name"] for condition in result["conditions"]] == ["cgroup_v1"]
    assert "failCgroupV1: false" in result["conditions"][0]["line"]


def test_a_bounding_set_without_cap_sys_resource_restricts_oom_score_adj(tmp_path):
    result = facts(tmp_path, cap_bnd=FULL_SET & ~(1 << CAP_SYS_RESOURCE))
    assert result["can_run"] and result["restrict_oom_score_adj"] is True
    assert [condition["name"] for condition in result["conditions"]] == ["no_cap_sys_resource"]
    # one capability less, another one: no condition
    other = facts(tmp_path / "other", cap_bnd=FULL_SET & ~(1 << (CAP_SYS_RESOURCE + 1)))
    assert other["restrict_oom_score_adj"] is False and other["conditions"] == []


def test_swap_is_met_by_fail_swap_on_false(tmp_path):
    result = facts(tmp_path, swaps=["/swapfile"])
    assert result["can_run"] and result["fail_swap_on"] is False
    assert [condition["name"] for condition in result["conditions"]] == ["swap"]


def test_every_condition_at_once(tmp_path):
    result = facts(tmp_path, cgroup=1, swaps=["/swapfile"], cap_bnd=FULL_SET & ~(1 << CAP_SYS_RESOURCE))
    assert result["can_run"]
    assert sorted(condition["name"] for condition in result["conditions"]) == ["cgroup_v1", "no_cap_sys_resource", "swap"]


def test_the_kubelets_running_are_listed_by_their_programs_name(tmp_path):
    """A kubelet (by argv[0], or by its executable when argv[0] says otherwise) is listed; a zombie
    kubelet, a process that only mentions a kubelet's file, and other programs are not."""
    proc, cgroup, path = fake_host(tmp_path)

    def process(pid, argv, state="S", exe=None):
        entry = os.path.join(proc, str(pid))
        os.mkdir(entry)
        with open(os.path.join(entry, "cmdline"), "w") as handle:
            handle.write("\0".join(argv) + "\0")
        with open(os.path.join(entry, "status"), "w") as handle:
            handle.write("Name:\tx\nState:\t%s (x)\n" % state)
        if exe:
            os.symlink(exe, os.path.join(entry, "exe"))

    process(101, ["/opt/sim/bin/kubelet", "--config=/a/node/kubelet/config.yaml"])
    process(102, ["kubelet-renamed", "--v=2"], exe="/usr/bin/kubelet")
    process(103, ["/opt/sim/bin/kubelet", "--config=/b/node/kubelet/config.yaml"], state="Z")
    process(104, ["tail", "-F", "/a/node/kubelet/config.yaml"])
    process(105, ["/opt/sim/bin/containerd"])
    found = host_facts(proc, cgroup, 0, COMMANDS, path)["kubelets"]
    assert [k["pid"] for k in found] == [101, 102]
    assert found[0]["command"] == "/opt/sim/bin/kubelet --config=/a/node/kubelet/config.yaml"
    assert facts(tmp_path / "other")["kubelets"] == []


def test_a_kubelet_in_a_mount_namespace_of_its_own_is_not_the_hosts(tmp_path):
    """A kind node's kubelet (its container's mount namespace, its own /var/lib/kubelet) shares nothing with a real node."""
    proc, cgroup, path = fake_host(tmp_path)
    os.symlink("mnt:[4026531841]", os.path.join(proc, "self", "ns", "mnt"))
    for pid, namespace in ((201, "mnt:[4026531841]"), (202, "mnt:[4026532999]")):
        entry = os.path.join(proc, str(pid))
        os.makedirs(os.path.join(entry, "ns"))
        os.symlink(namespace, os.path.join(entry, "ns", "mnt"))
        with open(os.path.join(entry, "cmdline"), "w") as handle:
            handle.write("/usr/bin/kubelet\0--config=/var/lib/kubelet/config.yaml\0")
        with open(os.path.join(entry, "status"), "w") as handle:
            handle.write("Name:\tkubelet\nState:\tS (sleeping)\n")
    assert [k["pid"] for k in host_facts(proc, cgroup, 0, COMMANDS, path)["kubelets"]] == [201]
