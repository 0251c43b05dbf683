#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sim_process_info
short_description: Which of the sim platform's local processes run, from their pid files
version_added: 0.1.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - Reads every C(<name>.pid) file in each directory of O(state_dirs) and says whether that
    process runs. A process started by M(gpulab.kai_hami.sim_process) (it has a
    C(<name>.spec.json) beside its pid file) counts as running only while it still runs the
    program it was started with; any other (kwokctl's C(pids) directory) while its pid is a
    live process that is not a zombie.
  - The lab's claims use it on the sim platform, so that a claim whose process is dead fails,
    naming the process, even where the API still shows what the process did before it died.
  - Reads only; changes nothing.
extends_documentation_fragment:
  - gpulab.kai_hami.attributes
  - gpulab.kai_hami.attributes.info_module
options:
  state_dirs:
    description:
      - The directories to read, by the part of the sim they hold (for example C(cluster) for
        kwokctl's C(pids) directory, C(kai) for KAI's programs), as absolute paths. A directory
        that does not exist holds no process.
    type: dict
    default: {}
  mentioning:
    description:
      - Absolute paths (a sim cluster's work directory, for example). Every live process whose
        command line, working directory or program lies under one of them is returned in
        RV(mentioning), pid files or not, so that a cleanup can tell that nothing of a cluster
        still runs. The module's own process and its parents are left out.
    type: list
    elements: path
    default: []
  cluster:
    description:
      - A sim cluster's name. Every live process whose command line names a path under kwokctl's
        directory of that cluster (C(<work dir>/kwok/clusters/<name>)), wherever its work
        directory is, is returned in RV(cluster_processes) with that work directory, so that a
        cleanup by name finds a cluster made outside the default place.
    type: str
    version_added: 0.2.0
"""

EXAMPLES = r"""
- name: Which of the sim's processes run
  gpulab.kai_hami.sim_process_info:
    state_dirs:
      cluster: "{{ sim_workdir }}/kwok/clusters/kai-hami-test/pids"
      kai: "{{ sim_workdir }}/kai"
  vars:
    sim_workdir: "{{ lookup('ansible.builtin.env', 'HOME') }}/.cache/gpulab-kai-hami/sim/kai-hami-test"
  register: sim

- name: Name the dead ones
  ansible.builtin.debug:
    msg: "{{ sim.processes | rejectattr('running') | map(attribute='name') | list }}"
"""

RETURN = r"""
processes:
  description: One entry per pid file, sorted by part and name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The pid file's name without C(.pid).
      type: str
    part:
      description: The key of O(state_dirs) whose directory holds it.
      type: str
    pid:
      description: The pid in the file (0 when the file holds none).
      type: int
    running:
      description: Whether the process runs.
      type: bool
  sample: [{"name": "kube-apiserver", "part": "cluster", "pid": 4242, "running": true}]
down:
  description: The C(name) of every process that does not run.
  returned: always
  type: list
  elements: str
  sample: ["kai-scheduler-default"]
mentioning:
  description: The live processes under the paths of O(mentioning).
  returned: always
  type: list
  elements: dict
  contains:
    pid:
      description: The process's pid.
      type: int
    command:
      description: Its command line (the first 300 characters).
      type: str
  sample: [{"pid": 4242, "command": "/home/me/.cache/gpulab-kai-hami/sim-bin/bin/etcd --data-dir ..."}]
cluster_processes:
  description: The live processes of the cluster of O(cluster), wherever they run from.
  returned: always
  type: list
  elements: dict
  contains:
    pid:
      description: The process's pid.
      type: int
    command:
      description: Its command line (the first 300 characters).
      type: str
    workdir:
      description: The work directory its command line names.
      type: str
  sample: [{"pid": 4242, "command": "/home/me/.cache/gpulab-kai-hami/sim-bin/bin/etcd --data-dir /home/me/fairlab/kwok/clusters/fairlab/etcd",
            "workdir": "/home/me/fairlab"}]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.kai_hami.plugins.module_utils.sim_process import (
    processes_in,
    processes_mentioning,
    processes_of_cluster,
)


def main():
    module = AnsibleModule(argument_spec=dict(state_dirs=dict(type="dict", default={}),
                                              mentioning=dict(type="list", elements="path", default=[]),
                                              cluster=dict(type="str")),
                           supports_check_mode=True)
    processes = []
    for part in sorted(module.params["state_dirs"]):
        state_dir = module.params["state_dirs"][part]
        if not isinstance(state_dir, str) or not state_dir:
            module.fail_json(msg="state_dirs.%s must be a directory's path, got %r" % (part, state_dir))
        processes += processes_in(part, state_dir)
    for path in module.params["mentioning"]:
        if not os.path.isabs(path):
            module.fail_json(msg="mentioning must list absolute paths, got %r" % path)
    module.exit_json(changed=False, processes=processes, down=[p["name"] for p in processes if not p["running"]],
                     mentioning=processes_mentioning(module.params["mentioning"]),
                     cluster_processes=processes_of_cluster(module.params["cluster"]) if module.params["cluster"] else [])


if __name__ == "__main__":
    main()
