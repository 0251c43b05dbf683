#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sim_process
short_description: Run a program as a local background process, idempotently (the sim platform)
version_added: 0.1.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - Starts a program in a session of its own, detached from Ansible, with its output appended
    to a log file, and remembers it by O(name) in O(state_dir) (C(<name>.pid),
    C(<name>.spec.json)). The sim platform runs KAI's programs and its own helpers this way.
  - With O(state=present) a process that already runs with the same O(argv), O(env), O(chdir)
    and O(spec_files) contents is left alone (no change); one that runs with different ones is
    restarted; a dead one is started again.
  - After a start the module waits until O(health_url) answers 2xx (or, without one, until the
    process has lived O(start_grace) seconds). A process that exits or does not answer in
    time is stopped again and the module fails with the last lines of its log, so nothing is
    left half-started.
  - Before a start every port in O(ports) must be free on 127.0.0.1; otherwise the module
    fails naming who holds it, and starts nothing.
  - The started process gets only C(PATH), C(HOME), C(USER), C(LOGNAME), C(LANG), C(LC_ALL)
    and C(TZ) from the module's environment, plus O(env).
attributes:
  check_mode:
    support: full
    details: Says what would be started, restarted or stopped, and does nothing.
  diff_mode:
    support: full
    details: Shows the process's spec (argv, env, chdir) before and after.
  platform:
    platforms: posix
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
options:
  name:
    description: Name of the process, unique within O(state_dir) (letters, digits, C(.), C(_), C(-)).
    type: str
    required: true
  state:
    description:
      - V(present) runs it (started when not running, restarted when its spec changed).
      - V(restarted) stops it if it runs, then starts it.
      - V(absent) stops it (SIGTERM to its session, SIGKILL after O(stop_timeout) seconds).
    type: str
    choices: [present, restarted, absent]
    default: present
  state_dir:
    description: Directory of the pid, spec and (default) log files. Created when missing.
    type: path
    required: true
  argv:
    description: The program and its arguments. Required unless O(state=absent).
    type: list
    elements: str
  env:
    description: Environment variables of the process, besides the inherited basics.
    type: dict
    default: {}
  chdir:
    description: Working directory of the process (default O(state_dir)).
    type: path
  log_file:
    description: File the output is appended to (default C(<state_dir>/<name>.log)).
    type: path
  spec_files:
    description:
      - Files that belong to the process's spec by their content (its program, its
        configuration). When one changes, a running process is restarted.
    type: list
    elements: path
    default: []
  health_url:
    description:
      - An C(http://) or C(https://) URL that answers 2xx once the process serves. Waited for
        after a start, and checked (not waited for) when the process already runs.
    type: str
  health_ca_file:
    description: CA bundle to verify an C(https://) O(health_url) (unset - not verified).
    type: path
  ports:
    description: TCP ports the process will listen on; each must be free on 127.0.0.1 before a start.
    type: list
    elements: int
    default: []
  wait_timeout:
    description: Seconds to wait for O(health_url) after a start.
    type: int
    default: 60
  start_grace:
    description: Without O(health_url), seconds the process must live after a start to count as started.
    type: float
    default: 1.0
  stop_timeout:
    description: Seconds between SIGTERM and SIGKILL when stopping.
    type: int
    default: 10
notes:
  - The process is not supervised; a process that dies stays dead until the module runs
    again (a re-run of the playbook restarts it).
"""

EXAMPLES = r"""
- name: Run KAI's binder as a local process
  gpulab.kai_hami.sim_process:
    name: binder
    state_dir: ~/.cache/gpulab-kai-hami/sim/kai-hami-test/kai
    argv: [/opt/sim-bin/kai-binder, --kubeconfig=/path/to/kubeconfig, --health-probe-bind-address=127.0.0.1:30181]
    health_url: http://127.0.0.1:30181/healthz
    ports: [30181]

- name: Stop it
  gpulab.kai_hami.sim_process:
    name: binder
    state_dir: ~/.cache/gpulab-kai-hami/sim/kai-hami-test/kai
    state: absent
"""

RETURN = r"""
pid:
  description: The process's pid (null when it is not running).
  returned: always
  type: int
  sample: 41235
action:
  description: What was done (or would be, in check mode).
  returned: always
  type: str
  sample: started
  choices: [none, started, restarted, stopped]
log_file:
  description: The file its output goes to.
  returned: always
  type: str
  sample: /root/.cache/gpulab-kai-hami/sim/kai-hami-test/kai/binder.log
health:
  description: The last health check's outcome.
  returned: when O(health_url) is set and the process runs
  type: str
  sample: http://127.0.0.1:30181/healthz answered 200
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.kai_hami.plugins.module_utils.sim_process import (
    _CRI_PREFIX,
    SimProcessError,
    check_health,
    digest,
    environment,
    forget,
    paths,
    port_in_use,
    running,
    spec_of,
    start,
    stop,
    tail,
    wait_started,
    write_state,
)

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def argument_spec():
    return dict(
        name=dict(type="str", required=True),
        state=dict(type="str", default="present", choices=["present", "restarted", "absent"]),
        state_dir=dict(type="path", required=True),
        argv=dict(type="list", elements="str"),
        env=dict(type="dict", default={}),
        chdir=dict(type="path"),
        log_file=dict(type="path"),
        spec_files=dict(type="list", elements="path", default=[]),
        health_url=dict(type="str"),
        health_ca_file=dict(type="path"),
        ports=dict(type="list", elements="int", default=[]),
        wait_timeout=dict(type="int", default=60),
        start_grace=dict(type="float", default=1.0),
        stop_timeout=dict(type="int", default=10),
    )


def validate(params):
    """Check every input before anything happens; return the error text or None."""
    if not NAME.match(params["name"]):
        return "name %r must be letters, digits, '.', '_' or '-' (it names files in state_dir)" % params["name"]
    if params["state"] != "absent" and not params["argv"]:
        return "argv is required with state=%s: the program and its arguments" % params["state"]
    for field in ("wait_timeout", "stop_timeout"):
        if params[field] <= 0:
            return "%s must be a positive number of seconds, got %d" % (field, params[field])
    if params["start_grace"] < 0:
        return "start_grace must be >= 0 seconds, got %s" % params["start_grace"]
    for port in params["ports"]:
        if not 1 <= port <= 65535:
            return "ports must be TCP ports (1-65535), got %d" % port
    url = params.get("health_url")
    if url and not (url.startswith("http://") or url.startswith("https://")):
        return "health_url must start with http:// or https://, got %r" % url
    if params.get("health_ca_file") and not os.path.isfile(params["health_ca_file"]):
        return "health_ca_file %s does not exist" % params["health_ca_file"]
    return None


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    error = validate(params)
    if error:
        module.fail_json(msg=error)

    name, state_dir = params["name"], params["state_dir"]
    files = paths(state_dir, name, params["log_file"])
    pid, old_spec = running(state_dir, name, params["log_file"])
    result = dict(changed=False, pid=pid, action="none", log_file=files["log"])

    if params["state"] == "absent":
        if pid:
            result.update(changed=True, action="stopped", pid=None)
            if module._diff:
                result["diff"] = dict(before=old_spec or {}, after={})
            if not module.check_mode:
                try:
                    stop(pid, params["stop_timeout"])
                except SimProcessError as err:
                    module.fail_json(msg="%s: %s" % (name, err), **result)
        if not module.check_mode:
            forget(files)
        module.exit_json(**result)

    chdir = params["chdir"] or state_dir
    new_spec = spec_of(params["argv"], environment(params["env"]), chdir, params["spec_files"])
    same = pid is not None and old_spec is not None and digest(old_spec) == digest(new_spec)
    if same and params["state"] == "present":
        if params["health_url"]:
            ok, detail = check_health(params["health_url"], params["health_ca_file"])
            result["health"] = detail
            if not ok:
                # Running but not answering: give it the start-up wait, as after a start.
                ok, detail = wait_started(pid, params["health_url"], params["health_ca_file"], params["wait_timeout"], 0)
                result["health"] = detail
                if not ok:
                    module.fail_json(
                        msg="%s (pid %d) runs but %s; last lines of %s:\n%s" % (name, pid, detail, files["log"], tail(files["log"])),
                        **result
                    )
        module.exit_json(**result)

    result.update(changed=True, action="restarted" if pid else "started")
    if module._diff:
        result["diff"] = dict(before=old_spec if pid else {}, after=new_spec)
    if module.check_mode:
        module.exit_json(**result)

    if not os.path.isdir(state_dir):
        os.makedirs(state_dir, 0o700)
    if pid:
        try:
            stop(pid, params["stop_timeout"])
        except SimProcessError as err:
            module.fail_json(msg="%s: %s" % (name, err), **result)
        forget(files)
    for port in params["ports"]:
        taken = port_in_use(port)
        if taken:
            result.update(changed=bool(pid), pid=None)
            module.fail_json(msg="%s was not started: %s" % (name, taken), **result)
    if not os.path.isdir(chdir):
        result.update(pid=None)
        module.fail_json(msg="%s was not started: chdir %s does not exist" % (name, chdir), **result)

    try:
        mark = os.path.getsize(files["log"]) if os.path.exists(files["log"]) else 0
        proc = start(new_spec, files["log"])
    except SimProcessError as err:
        result.update(pid=None)
        module.fail_json(msg="%s: %s" % (name, err), **result)
    write_state(files, proc.pid, new_spec)
    ok, detail = wait_started(proc, params["health_url"], params["health_ca_file"], params["wait_timeout"], params["start_grace"])
    if not ok:
        try:
            stop(proc.pid, params["stop_timeout"])
        except SimProcessError:
            pass
        proc.poll()
        forget(files)
        result.update(pid=None)
        module.fail_json(msg="%s %s; it was stopped. Last lines of %s:\n%s" % (name, detail, files["log"], _since(files["log"], mark)), **result)
    result.update(pid=proc.pid)
    if params["health_url"]:
        result["health"] = detail
    module.exit_json(**result)


def _since(log, mark):
    """The log lines written since this start (its last 25), else the file's last lines."""
    try:
        with open(log, "rb") as handle:
            handle.seek(mark)
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        text = ""
    lines = text.splitlines()[-25:]
    return "\n".join(_CRI_PREFIX.sub("", line) for line in lines) if lines else tail(log)


if __name__ == "__main__":
    main()
