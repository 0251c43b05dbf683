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
  - With O(processes), one call brings several processes of O(state_dir) to O(state). Each is
    checked first (nothing starts when one that runs does not answer), then all that must
    (re)start are started and waited for together. When one fails, those the call started are
    stopped again.
attributes:
  check_mode:
    support: full
    details: Says what would be started, restarted or stopped, and does nothing.
  diff_mode:
    support: full
    details: Shows the process's spec (argv, env, chdir) before and after.
extends_documentation_fragment:
  - gpulab.kai_hami.attributes
options:
  name:
    description:
      - Name of the process, unique within O(state_dir) (letters, digits, C(.), C(_), C(-)).
      - Required unless O(processes) is given; O(name), O(argv), O(env), O(chdir), O(log_file),
        O(spec_files), O(health_url), O(health_ca_file) and O(ports) describe one process.
    type: str
  processes:
    description:
      - Several processes, each with the options that describe one process (O(name) required);
        O(state), O(state_dir) and the timeouts are shared. Give either O(name) or O(processes).
    type: list
    elements: dict
    suboptions:
      name:
        description: As O(name).
        type: str
        required: true
      argv:
        description: As O(argv).
        type: list
        elements: str
      env:
        description: As O(env).
        type: dict
        default: {}
      chdir:
        description: As O(chdir).
        type: path
      log_file:
        description: As O(log_file).
        type: path
      spec_files:
        description: As O(spec_files).
        type: list
        elements: path
        default: []
      health_url:
        description: As O(health_url).
        type: str
      health_ca_file:
        description: As O(health_ca_file).
        type: path
      ports:
        description: As O(ports).
        type: list
        elements: int
        default: []
      state_dir:
        description:
          - This process's own state directory, in place of O(state_dir).
          - With O(state=absent), one call stops processes of several directories together
            (SIGTERM to all, one wait).
        type: path
        version_added: 0.3.0
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

- name: Run two programs in one call (started together, waited for together)
  gpulab.kai_hami.sim_process:
    state_dir: ~/.cache/gpulab-kai-hami/sim/kai-hami-test/kai
    processes:
      - {name: binder, argv: [/opt/sim-bin/kai-binder], health_url: "http://127.0.0.1:30181/healthz", ports: [30181]}
      - {name: scheduler, argv: [/opt/sim-bin/kai-scheduler], health_url: "http://127.0.0.1:30182/healthz", ports: [30182]}

- name: Stop a node's kubelet and KAI's programs together (one SIGTERM each, one wait)
  gpulab.kai_hami.sim_process:
    state_dir: ~/.cache/gpulab-kai-hami/sim/kai-hami-test/kai
    state: absent
    processes:
      - {name: binder}
      - {name: scheduler}
      - {name: kubelet, state_dir: ~/.cache/gpulab-kai-hami/sim/kai-hami-test/node/processes}

- name: Stop it
  gpulab.kai_hami.sim_process:
    name: binder
    state_dir: ~/.cache/gpulab-kai-hami/sim/kai-hami-test/kai
    state: absent
"""

RETURN = r"""
pid:
  description: The process's pid (null when it is not running).
  returned: when O(name) is given
  type: int
  sample: 41235
action:
  description: What was done (or would be, in check mode).
  returned: when O(name) is given
  type: str
  sample: started
  choices: [none, started, restarted, stopped]
log_file:
  description: The file its output goes to.
  returned: when O(name) is given
  type: str
  sample: /root/.cache/gpulab-kai-hami/sim/kai-hami-test/kai/binder.log
health:
  description: The last health check's outcome.
  returned: when O(health_url) is set and the process runs
  type: str
  sample: http://127.0.0.1:30181/healthz answered 200
processes:
  description: With O(processes), each process's C(name), C(pid), C(action), C(log_file) and C(health) (as above), in order.
  returned: when O(processes) is given
  type: list
  elements: dict
  sample: [{"name": "binder", "pid": 41235, "action": "none", "log_file": "/tmp/kai/binder.log",
            "health": "http://127.0.0.1:30181/healthz answered 200"}]
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
    stop_all,
    tail,
    wait_started,
    write_state,
)

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# What each process has of its own; the other options are shared by all of O(processes).
PROCESS_OPTIONS = dict(
    name=dict(type="str"),
    argv=dict(type="list", elements="str"),
    env=dict(type="dict", default={}),
    chdir=dict(type="path"),
    log_file=dict(type="path"),
    spec_files=dict(type="list", elements="path", default=[]),
    health_url=dict(type="str"),
    health_ca_file=dict(type="path"),
    ports=dict(type="list", elements="int", default=[]),
)
SHARED = ("state", "state_dir", "wait_timeout", "start_grace", "stop_timeout")


def argument_spec():
    spec = dict(PROCESS_OPTIONS)
    spec.update(
        processes=dict(
            type="list", elements="dict",
            options=dict(PROCESS_OPTIONS, name=dict(type="str", required=True), state_dir=dict(type="path"))),
        state=dict(type="str", default="present", choices=["present", "restarted", "absent"]),
        state_dir=dict(type="path", required=True),
        wait_timeout=dict(type="int", default=60),
        start_grace=dict(type="float", default=1.0),
        stop_timeout=dict(type="int", default=10),
    )
    return spec


def items_of(params):
    """One dict per process: its own options and the shared ones."""
    shared = dict((key, params[key]) for key in SHARED)
    if params["processes"] is None:
        return [dict(shared, **dict((key, params[key]) for key in PROCESS_OPTIONS))]
    # an entry's own state_dir, where it gives one, replaces O(state_dir)
    return [dict(shared, **dict((key, value) for key, value in item.items() if key != "state_dir" or value))
            for item in params["processes"]]


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


def validate_all(params, items):
    """validate() of each process (named processes[i] in a list), and names unique; the error text or None."""
    if params["processes"] is None:
        if not params["name"]:
            return "one of name or processes is required"
        return validate(items[0])
    if not items:
        return "processes must name at least one process"
    for option in PROCESS_OPTIONS:
        if params[option] not in (None, {}, []):
            return "%s belongs in each entry of processes, not beside it" % option
    names = [(item["state_dir"], item["name"]) for item in items]
    for index, item in enumerate(items):
        error = validate(item)
        if error:
            return "processes[%d] (%s): %s" % (index, item["name"], error)
        if names[index] in names[:index]:
            return "processes[%d]: the name %r is given twice in %s" % (index, item["name"], item["state_dir"])
    return None


class Failed(Exception):
    """A process could not be brought to its state; ``msg`` says which and why."""


class Process:
    """One process of the call: what it is, what runs now, and what was done."""

    def __init__(self, item):
        self.item = item
        self.name = item["name"]
        self.files = paths(item["state_dir"], self.name, item["log_file"])
        self.pid, self.old_spec = running(item["state_dir"], self.name, item["log_file"])
        self.result = dict(name=self.name, pid=self.pid, action="none", log_file=self.files["log"])
        self.new_spec = None
        self.proc = None
        self.mark = 0

    def decide(self, check_mode):
        """Stop it (absent) or check it when it runs as asked; True when it must be (re)started."""
        item = self.item
        if item["state"] == "absent":
            # converge() stops them all at once
            if self.pid:
                self.result.update(action="stopped", pid=None)
            return False
        self.new_spec = spec_of(item["argv"], environment(item["env"]), item["chdir"] or item["state_dir"], item["spec_files"])
        same = self.pid is not None and self.old_spec is not None and digest(self.old_spec) == digest(self.new_spec)
        if same and item["state"] == "present":
            if item["health_url"]:
                ok, detail = check_health(item["health_url"], item["health_ca_file"])
                if not ok:
                    # Running but not answering: give it the start-up wait, as after a start.
                    ok, detail = wait_started(self.pid, item["health_url"], item["health_ca_file"], item["wait_timeout"], 0)
                self.result["health"] = detail
                if not ok:
                    raise Failed("%s (pid %d) runs but %s; last lines of %s:\n%s" % (
                        self.name, self.pid, detail, self.files["log"], tail(self.files["log"])))
            return False
        self.result["action"] = "restarted" if self.pid else "started"
        return True

    def launch(self):
        """Stop the old process, check its ports and chdir, start the new one (not yet waited for)."""
        item = self.item
        if not os.path.isdir(item["state_dir"]):
            os.makedirs(item["state_dir"], 0o700)
        if self.pid:
            try:
                stop(self.pid, item["stop_timeout"])
            except SimProcessError as err:
                raise Failed("%s: %s" % (self.name, err))
            forget(self.files)
            self.result["pid"] = None
        for port in item["ports"]:
            taken = port_in_use(port)
            if taken:
                raise Failed("%s was not started: %s" % (self.name, taken))
        chdir = self.new_spec["chdir"]
        if not os.path.isdir(chdir):
            raise Failed("%s was not started: chdir %s does not exist" % (self.name, chdir))
        try:
            self.mark = os.path.getsize(self.files["log"]) if os.path.exists(self.files["log"]) else 0
            self.proc = start(self.new_spec, self.files["log"])
        except SimProcessError as err:
            raise Failed("%s: %s" % (self.name, err))
        write_state(self.files, self.proc.pid, self.new_spec)
        self.result["pid"] = self.proc.pid

    def wait(self):
        """Wait until the started process answers; on failure stop it and raise Failed with its log."""
        item = self.item
        ok, detail = wait_started(self.proc, item["health_url"], item["health_ca_file"], item["wait_timeout"], item["start_grace"])
        if ok:
            if item["health_url"]:
                self.result["health"] = detail
            return
        self.abandon()
        raise Failed("%s %s; it was stopped. Last lines of %s:\n%s" % (self.name, detail, self.files["log"], _since(self.files["log"], self.mark)))

    def abandon(self):
        """Stop a process this call started and forget it."""
        if self.proc is None:
            return
        try:
            stop(self.proc.pid, self.item["stop_timeout"])
        except SimProcessError:
            pass
        self.proc.poll()
        forget(self.files)
        self.proc = None
        self.result["pid"] = None


def converge(processes, check_mode):
    """Bring every process to its state: stop or check each, then start all that must start and
    wait for them together. When one fails, those this call started are stopped again."""
    to_start = [process for process in processes if process.decide(check_mode)]
    if check_mode:
        return
    to_stop = [process for process in processes if process.item["state"] == "absent"]
    if to_stop:
        try:
            stop_all([process.pid for process in to_stop if process.pid], to_stop[0].item["stop_timeout"])
        except SimProcessError as err:
            raise Failed(str(err))
        for process in to_stop:
            forget(process.files)
    try:
        for process in to_start:
            process.launch()
        for process in to_start:
            process.wait()
    except Failed:
        for process in to_start:
            process.abandon()
        raise


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    items = items_of(params)
    error = validate_all(params, items)
    if error:
        module.fail_json(msg=error)

    processes = [Process(item) for item in items]
    failure = None
    try:
        converge(processes, module.check_mode)
    except Failed as err:
        failure = str(err)
    results = [process.result for process in processes]
    changed = any(result["action"] != "none" for result in results)
    if params["processes"] is None:
        result = dict(results[0], changed=changed)
        result.pop("name")
        diff_of = [(processes[0], result)]
    else:
        result = dict(changed=changed, processes=results)
        diff_of = [(process, process.result) for process in processes]
    if module._diff and changed:
        before, after = {}, {}
        for process, dummy in diff_of:
            if process.result["action"] == "none":
                continue
            key = process.name
            before[key] = process.old_spec if process.pid else {}
            after[key] = process.new_spec if process.result["action"] != "stopped" else {}
        if params["processes"] is None:
            before, after = before.get(processes[0].name, {}), after.get(processes[0].name, {})
        result["diff"] = dict(before=before, after=after)
    if failure:
        module.fail_json(msg=failure, **result)
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
