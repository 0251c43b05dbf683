"""Callback used by tools/bench_lab.py: wall time per lab step, written as JSON.

Each task's time (from its start to the next task's start, or the end of the run) is added to
its step: the role it belongs to, and for the lab11 role's claim task ("Prove the claims ...", or
a task named "C<n> ...") the step "lab11 claims"; and to the task itself ("role : task name", summed over loops and includes), so that the
benchmark can name the slowest tasks; and by kind (kind_of: a module that talks to Kubernetes,
another module, or an action the controller does alone), with the number of module runs (each loop
item and each retry counts; a skipped one does not), to show what the runs' module calls cost.
Enabled only by tools/bench_lab.py (ANSIBLE_CALLBACKS_ENABLED=step_timer); the JSON goes
to the file named by STEP_TIMER_OUT.
"""

import json
import os
import re
import time

from ansible.plugins.callback import CallbackBase

CLAIM_TASK = re.compile(r"^(C\d+ |Prove the claims)")
# Actions the controller carries out without running a module on the host.
CONTROLLER_ACTIONS = {"set_fact", "debug", "assert", "fail", "include_tasks", "import_tasks", "include_role", "import_role",
                      "include_vars", "meta", "validate_argument_spec", "pause", "add_host", "group_by", "set_stats"}
# This collection's modules that talk to the Kubernetes API (they import the kubernetes client, as kubernetes.core's do).
KUBERNETES_MODULES = {"gpu_node_label", "kai_queue", "reservation_probe", "lab_claim"}


def kind_of(action):
    """'kubernetes' (a kubernetes.core module or one of ours that talks to the API), 'controller', or 'module'."""
    action = action or ""
    short = action.rsplit(".", 1)[-1]
    if action.startswith("kubernetes.core.") or (action.startswith("gpulab.kai_hami.") and short in KUBERNETES_MODULES):
        return "kubernetes"
    if short in CONTROLLER_ACTIONS and (action == short or action.startswith("ansible.builtin.")):
        return "controller"
    return "module"


def step_of(role_name, task_name):
    """The step a task's time counts for."""
    if role_name == "lab11":
        return "lab11 claims" if CLAIM_TASK.match(task_name or "") else "lab11 workloads and report"
    return role_name or "playbook"


class CallbackModule(CallbackBase):
    """Adds up task times per step."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "step_timer"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.steps = {}
        self.tasks = {}
        self.kinds = {kind: {"tasks": 0, "runs": 0, "seconds": 0.0} for kind in ("kubernetes", "module", "controller")}
        self.kind = None
        self.current = None
        self.task = None
        self.started = None

    def close_current(self):
        if self.current is not None:
            spent = time.monotonic() - self.started
            self.steps[self.current] = self.steps.get(self.current, 0.0) + spent
            self.tasks[self.task] = self.tasks.get(self.task, 0.0) + spent
            self.kinds[self.kind]["seconds"] += spent
            self.kinds[self.kind]["tasks"] += 1
            self.current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.close_current()
        role = task._role.get_name(include_role_fqcn=False) if task._role else None  # pylint: disable=protected-access
        # task.name, not get_name(): the latter prefixes the role ("lab11 : C6 ...")
        self.current, self.started = step_of(role, task.name), time.monotonic()
        self.task = "%s : %s" % (role or "playbook", task.name or task.action)
        self.kind = kind_of(task.action)

    def count_run(self, result):
        """One more run of the current task's module (a loop's summary result is not a run of its own)."""
        if self.kind is not None and "results" not in result._result:  # pylint: disable=protected-access
            self.kinds[self.kind]["runs"] += 1

    def v2_runner_on_ok(self, result):
        self.count_run(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self.count_run(result)

    def v2_runner_item_on_ok(self, result):
        self.count_run(result)

    def v2_runner_item_on_failed(self, result):
        self.count_run(result)

    def v2_runner_retry(self, result):
        self.count_run(result)

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_stats(self, stats):
        self.close_current()
        out = os.environ.get("STEP_TIMER_OUT")
        if out:
            with open(out, "w") as handle:
                totals = {host: stats.summarize(host) for host in stats.processed}
                json.dump({"steps": self.steps, "tasks": self.tasks, "kinds": self.kinds, "totals": totals}, handle)
