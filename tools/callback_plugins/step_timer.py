"""Callback used by tools/bench_lab.py: wall time per lab step, written as JSON.

Each task's time (from its start to the next task's start, or the end of the run) is added to
its step: the role it belongs to, and for the lab11 role's claim tasks (named "C<n> ...") the
claim; and to the task itself ("role : task name", summed over loops and includes), so that the
benchmark can name the slowest tasks. Enabled only by tools/bench_lab.py (ANSIBLE_CALLBACKS_ENABLED=step_timer); the JSON goes
to the file named by STEP_TIMER_OUT.
"""

import json
import os
import re
import time

from ansible.plugins.callback import CallbackBase

CLAIM_TASK = re.compile(r"^(C\d+) ")


def step_of(role_name, task_name):
    """The step a task's time counts for."""
    if role_name == "lab11":
        match = CLAIM_TASK.match(task_name or "")
        return "lab11 " + match.group(1) if match else "lab11 workloads and report"
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
        self.current = None
        self.task = None
        self.started = None

    def close_current(self):
        if self.current is not None:
            spent = time.monotonic() - self.started
            self.steps[self.current] = self.steps.get(self.current, 0.0) + spent
            self.tasks[self.task] = self.tasks.get(self.task, 0.0) + spent
            self.current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.close_current()
        role = task._role.get_name(include_role_fqcn=False) if task._role else None  # pylint: disable=protected-access
        # task.name, not get_name(): the latter prefixes the role ("lab11 : C6 ...")
        self.current, self.started = step_of(role, task.name), time.monotonic()
        self.task = "%s : %s" % (role or "playbook", task.name or task.action)

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_stats(self, stats):
        self.close_current()
        out = os.environ.get("STEP_TIMER_OUT")
        if out:
            with open(out, "w") as handle:
                json.dump({"steps": self.steps, "tasks": self.tasks, "totals": {host: stats.summarize(host) for host in stats.processed}}, handle)
