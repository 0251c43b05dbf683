#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kubelet_node_host_info
short_description: Whether the host can run the sim platform's real node (kubelet and containerd), and how
version_added: 0.1.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - Reads the host's conditions that a kubelet and containerd meet on a kind node too, before the
    C(gpulab.kai_hami.kubelet_node) role creates anything.
  - C(problems) are conditions no configuration meets (not root, no C(iptables), no network
    namespaces, no cgroup file system); with any, the node cannot run.
  - C(conditions) are met by configuration and each names its setting - cgroup v1 (the kubelet's
    C(failCgroupV1=false)), a capability bounding set without C(CAP_SYS_RESOURCE), so no negative
    C(oom_score_adj) can be set (containerd's C(restrict_oom_score_adj=true)), swap on (the kubelet's
    C(failSwapOn=false)).
  - C(kubelets) are the kubelets running on the host in its mount namespace, whoever started them. Such
    kubelets share the host's device plugin directory, so a host runs one real node at a time; a kubelet in
    a mount namespace of its own (a kind node's, in its container) has its own, and is not listed.
  - Reads only; changes nothing.
extends_documentation_fragment:
  - gpulab.kai_hami.attributes
  - gpulab.kai_hami.attributes.info_module
options:
  proc_root:
    description: Where C(/proc) is read (C(self/status), C(swaps)). For tests.
    type: path
    default: /proc
  cgroup_root:
    description: Where the cgroup file system is mounted.
    type: path
    default: /sys/fs/cgroup
  euid:
    description: The effective user id to judge; default the module's own. For tests.
    type: int
  commands:
    description: Programs the node runs from the host's C(PATH) (each must be found).
    type: list
    elements: str
    default: [iptables, ip, mount, umount]
  path:
    description: The C(PATH) searched for O(commands); default the module's own plus C(/usr/sbin) and C(/sbin).
    type: str
"""

EXAMPLES = r"""
- name: Read the host's conditions for a real node
  gpulab.kai_hami.kubelet_node_host_info:
  register: host

- name: Stop with the one sentence that says what is needed
  ansible.builtin.fail:
    msg: "{{ host.problems | join('; ') }}"
  when: not host.can_run
"""

RETURN = r"""
can_run:
  description: No problem was found.
  returned: always
  type: bool
problems:
  description: What stops a real node on the host, one sentence each, saying what is needed.
  returned: always
  type: list
  elements: str
conditions:
  description: Host conditions met by configuration, each with C(name), C(setting) and C(line).
  returned: always
  type: list
  elements: dict
cgroup_version:
  description: 1 or 2 (0 when no cgroup file system was found).
  returned: always
  type: int
restrict_oom_score_adj:
  description: containerd's C(restrict_oom_score_adj) for the host.
  returned: always
  type: bool
fail_cgroup_v1:
  description: The kubelet's C(failCgroupV1) for the host.
  returned: always
  type: bool
fail_swap_on:
  description: The kubelet's C(failSwapOn) for the host.
  returned: always
  type: bool
kubelets:
  description:
    - The kubelets running on the host in its mount namespace (a process whose program is named C(kubelet)), each with
      C(pid) and C(command).
  returned: always
  type: list
  elements: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

CAP_SYS_RESOURCE = 24


def read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def bounding_set(status):
    """The CapBnd mask from /proc/self/status text, or None."""
    for line in (status or "").splitlines():
        if line.startswith("CapBnd:"):
            return int(line.split(":", 1)[1].strip(), 16)
    return None


def mount_namespace(proc_root, pid):
    """The mount namespace of a process (``mnt:[<inode>]``), or None where it cannot be read."""
    try:
        return os.readlink(os.path.join(proc_root, str(pid), "ns", "mnt"))
    except OSError:
        return None


def kubelets(proc_root):
    """``[{pid, command}]`` of the live processes in this mount namespace whose program is named kubelet
    (argv[0]'s or the executable's name). A kubelet in a mount namespace of its own (a kind node's) has its
    own device plugin directory, and is not one of them."""
    found = []
    own = mount_namespace(proc_root, "self")
    try:
        entries = sorted((e for e in os.listdir(proc_root) if e.isdigit()), key=int)
    except OSError:
        return found
    for entry in entries:
        base = os.path.join(proc_root, entry)
        status = read(os.path.join(base, "status")) or ""
        if any(line.split()[1:2] in (["Z"], ["X"]) for line in status.splitlines() if line.startswith("State:")):
            continue
        argv = [arg for arg in (read(os.path.join(base, "cmdline")) or "").split("\0") if arg]
        try:
            program = os.readlink(os.path.join(base, "exe"))
        except OSError:
            program = ""
        if "kubelet" in (os.path.basename(argv[0]) if argv else "", os.path.basename(program)):
            theirs = mount_namespace(proc_root, entry)
            if own is None or theirs is None or theirs == own:
                found.append(dict(pid=int(entry), command=" ".join(argv)[:300]))
    return found


def swap_on(swaps):
    """Whether /proc/swaps lists any swap area."""
    return len([line for line in (swaps or "").splitlines()[1:] if line.strip()]) > 0


def cgroup_version(cgroup_root):
    """2 when the unified hierarchy is mounted at cgroup_root, 1 when v1 controllers are, else 0."""
    if os.path.isfile(os.path.join(cgroup_root, "cgroup.controllers")):
        return 2
    if os.path.isdir(os.path.join(cgroup_root, "memory")) or os.path.isdir(os.path.join(cgroup_root, "cpu")):
        return 1
    return 0


def find(command, path):
    return any(os.access(os.path.join(folder, command), os.X_OK) for folder in path.split(os.pathsep) if folder)


def host_facts(proc_root, cgroup_root, euid, commands, path):
    """The verdict: problems (blocking) and conditions (met by configuration)."""
    problems = []
    conditions = []
    if euid != 0:
        problems.append("a real node runs a kubelet and containerd, which need root: run the play as root (become: true)")
    missing = [command for command in commands if not find(command, path)]
    if missing:
        problems.append("the real node needs %s on the PATH (Debian: apt-get install iptables iproute2 mount)"
                        % ", ".join(missing))
    if not os.path.isdir(os.path.join(proc_root, "self", "ns")) or not os.path.exists(os.path.join(proc_root, "self", "ns", "net")):
        problems.append("the host has no network namespaces (%s/self/ns/net): the real node's pods need them" % proc_root)
    version = cgroup_version(cgroup_root)
    if version == 0:
        problems.append("no cgroup file system is mounted at %s: the kubelet needs one" % cgroup_root)
    if version == 1:
        conditions.append(dict(name="cgroup_v1", setting="kubelet failCgroupV1: false",
                               line="cgroup v1 (no unified hierarchy at %s): the kubelet runs with failCgroupV1: false" % cgroup_root))
    mask = bounding_set(read(os.path.join(proc_root, "self", "status")))
    restrict = mask is not None and not mask & (1 << CAP_SYS_RESOURCE)
    if restrict:
        conditions.append(dict(name="no_cap_sys_resource", setting="containerd restrict_oom_score_adj = true",
                               line="the capability bounding set lacks CAP_SYS_RESOURCE (no negative oom_score_adj):"
                                    " containerd runs with restrict_oom_score_adj = true"))
    swap = swap_on(read(os.path.join(proc_root, "swaps")))
    if swap:
        conditions.append(dict(name="swap", setting="kubelet failSwapOn: false",
                               line="swap is on: the kubelet runs with failSwapOn: false"))
    return dict(can_run=not problems, problems=problems, conditions=conditions, cgroup_version=version,
                restrict_oom_score_adj=restrict, fail_cgroup_v1=version != 1, fail_swap_on=not swap, kubelets=kubelets(proc_root))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            proc_root=dict(type="path", default="/proc"),
            cgroup_root=dict(type="path", default="/sys/fs/cgroup"),
            euid=dict(type="int"),
            commands=dict(type="list", elements="str", default=["iptables", "ip", "mount", "umount"]),
            path=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    euid = os.geteuid() if params["euid"] is None else params["euid"]
    path = params["path"] if params["path"] is not None else os.pathsep.join(
        [os.environ.get("PATH", ""), "/usr/sbin", "/sbin", "/usr/bin", "/bin"])
    module.exit_json(changed=False, **host_facts(params["proc_root"], params["cgroup_root"], euid, params["commands"], path))


if __name__ == "__main__":
    main()
