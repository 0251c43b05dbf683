#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sim_ports
short_description: Named TCP ports on 127.0.0.1 for the sim platform's processes, the same on every run
version_added: 0.1.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - Gives each name in O(names) a TCP port on 127.0.0.1 and remembers it in the JSON file
    O(path), so re-runs (and the webhook configurations that name the ports) stay the same.
  - A new name gets a random port from O(range_start) to O(range_end) that can be bound now and
    that the file does not give to another name. O(fixed) pins names to ports of your choice.
  - It does not hold the ports; M(gpulab.kai_hami.sim_process) checks that a port is free
    before it starts a process on it, and names who holds it otherwise.
attributes:
  check_mode:
    support: full
    details: New ports are chosen but not written.
  diff_mode:
    support: none
extends_documentation_fragment:
  - gpulab.kai_hami.attributes
options:
  path:
    description: The JSON file that remembers the ports (its directory must exist).
    type: path
    required: true
  names:
    description: Names that need a port.
    type: list
    elements: str
    required: true
  fixed:
    description: Ports chosen by you, by name; they replace remembered ones.
    type: dict
    default: {}
  range_start:
    description: Lowest port to choose from.
    type: int
    default: 20000
  range_end:
    description: Highest port to choose from.
    type: int
    default: 29999
"""

EXAMPLES = r"""
- name: Ports of KAI's processes on the sim
  gpulab.kai_hami.sim_ports:
    path: ~/.cache/gpulab-kai-hami/sim/kai-hami-test/kai/ports.json
    names: [scheduler-metrics, admission-webhook, admission-health]
  register: ports

- name: Use one
  ansible.builtin.debug:
    msg: "https://127.0.0.1:{{ ports.ports['admission-webhook'] }}/mutate--v1-pod"
"""

RETURN = r"""
ports:
  description: Every remembered name with its port (the asked-for ones and any others in the file).
  returned: always
  type: dict
  sample: {"admission-webhook": 24113}
"""

import json
import os
import random

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.kai_hami.plugins.module_utils.sim_process import port_in_use


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            names=dict(type="list", elements="str", required=True),
            fixed=dict(type="dict", default={}),
            range_start=dict(type="int", default=20000),
            range_end=dict(type="int", default=29999),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not 1024 <= params["range_start"] <= params["range_end"] <= 65535:
        module.fail_json(msg="range_start and range_end must satisfy 1024 <= range_start <= range_end <= 65535, got %d and %d"
                         % (params["range_start"], params["range_end"]))
    fixed = {}
    for name, port in params["fixed"].items():
        try:
            port = int(port)
        except (TypeError, ValueError):
            port = 0
        if not 1 <= port <= 65535:
            module.fail_json(msg="fixed.%s must be a TCP port (1-65535), got %r" % (name, params["fixed"][name]))
        fixed[name] = port
    if len(set(fixed.values())) != len(fixed):
        module.fail_json(msg="fixed gives one port to several names: %s" % fixed)
    directory = os.path.dirname(params["path"]) or "."
    if not os.path.isdir(directory):
        module.fail_json(msg="path %s: directory %s does not exist" % (params["path"], directory))

    try:
        with open(params["path"]) as handle:
            remembered = json.load(handle)
        if not isinstance(remembered, dict):
            raise ValueError("not an object")
    except (OSError, ValueError):
        remembered = {}
    ports = dict((str(k), int(v)) for k, v in remembered.items())
    ports.update(fixed)
    taken = set(ports.values())
    changed = ports != remembered
    rng = random.SystemRandom()
    for name in params["names"]:
        if name in ports:
            continue
        for dummy in range(500):
            port = rng.randint(params["range_start"], params["range_end"])
            if port not in taken and port_in_use(port) is None:
                break
        else:
            module.fail_json(msg="no free port for %s between %d and %d" % (name, params["range_start"], params["range_end"]))
        ports[name] = port
        taken.add(port)
        changed = True
    if changed and not module.check_mode:
        tmp = params["path"] + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(ports, handle, indent=1, sort_keys=True)
        os.rename(tmp, params["path"])
    module.exit_json(changed=changed, ports=ports)


if __name__ == "__main__":
    main()
