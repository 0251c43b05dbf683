"""The bench's step timer: time per role and per claim, from a real ansible-playbook run."""

import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PLUGINS = os.path.join(ROOT, "tools", "callback_plugins")
SPEC = importlib.util.spec_from_file_location("step_timer", os.path.join(PLUGINS, "step_timer.py"))
step_timer = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(step_timer)


def test_claim_tasks_count_for_the_claims_and_other_tasks_for_their_role():
    assert step_timer.step_of("lab11", "Prove the claims (C1-C8)") == "lab11 claims"
    assert step_timer.step_of("lab11", "C6 wait for a scheduler division line that shows it") == "lab11 claims"
    assert step_timer.step_of("lab11", "C10 read") == "lab11 claims"
    assert step_timer.step_of("lab11", "Create the lab's pods") == "lab11 workloads and report"
    assert step_timer.step_of("lab11", "CUDA check") == "lab11 workloads and report"
    assert step_timer.step_of("kai_scheduler", "C6 in another role") == "kai_scheduler"
    assert step_timer.step_of(None, "Choose the platform") == "playbook"


def test_each_action_has_its_kind():
    assert step_timer.kind_of("kubernetes.core.k8s_info") == "kubernetes"
    assert step_timer.kind_of("gpulab.kai_hami.kai_queue") == "kubernetes"
    assert step_timer.kind_of("gpulab.kai_hami.lab_claim") == "kubernetes"
    assert step_timer.kind_of("gpulab.kai_hami.sim_process") == "module"
    assert step_timer.kind_of("ansible.builtin.command") == "module"
    assert step_timer.kind_of("ansible.builtin.set_fact") == "controller"
    assert step_timer.kind_of("include_tasks") == "controller"
    assert step_timer.kind_of("some.collection.set_fact") == "module"


def test_a_run_writes_each_steps_time_and_the_changed_count(tmp_path):
    role = tmp_path / "roles" / "slow" / "tasks"
    role.mkdir(parents=True)
    (role / "main.yml").write_text(
        "- name: Sleep\n  ansible.builtin.command: sleep 1.2\n"
        "- name: Three items\n  ansible.builtin.stat: {path: /}\n  loop: [1, 2, 3]\n"
        "- name: Twice\n  ansible.builtin.stat: {path: /}\n  register: twice\n  until: twice.attempts >= 2\n  retries: 3\n  delay: 0\n"
        "- name: Skipped\n  ansible.builtin.stat: {path: /}\n  when: false\n")
    claims = tmp_path / "roles" / "lab11" / "tasks"
    claims.mkdir(parents=True)
    (claims / "main.yml").write_text("- name: C6 wait\n  ansible.builtin.pause: {seconds: 1}\n- name: Write the report\n  ansible.builtin.debug: {msg: done}\n")
    (tmp_path / "play.yml").write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
        "    - name: Quick\n      ansible.builtin.debug: {msg: hi}\n"
        "    - name: Slow role\n      ansible.builtin.include_role: {name: slow}\n"
        "    - name: Claims\n      ansible.builtin.include_role: {name: lab11}\n")
    out = tmp_path / "steps.json"
    env = dict(os.environ, ANSIBLE_CALLBACK_PLUGINS=PLUGINS, ANSIBLE_CALLBACKS_ENABLED="step_timer", STEP_TIMER_OUT=str(out),
               ANSIBLE_ROLES_PATH=str(tmp_path / "roles"))
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
            "-e", "ansible_python_interpreter=" + sys.executable, "play.yml"]
    done = subprocess.run(argv, cwd=str(tmp_path), env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    timed = json.loads(out.read_text())
    assert timed["steps"]["slow"] >= 1.2
    assert timed["steps"]["playbook"] < timed["steps"]["slow"]
    assert timed["steps"]["lab11 claims"] >= 1.0
    assert timed["steps"]["lab11 workloads and report"] < 1.0
    assert timed["totals"]["localhost"]["changed"] == 1
    # and per task, named by role and task, for the benchmark's slowest-tasks list
    assert timed["tasks"]["slow : Sleep"] >= 1.2 and timed["tasks"]["lab11 : C6 wait"] >= 1.0
    assert timed["tasks"]["playbook : Quick"] < 1.0
    # and by kind: 1 + 3 items + 2 tries of a module (the skipped task runs nothing); debug, pause and the includes
    kinds = timed["kinds"]
    assert kinds["module"]["runs"] == 1 + 3 + 2 and kinds["module"]["tasks"] == 4 and kinds["module"]["seconds"] >= 1.2
    assert kinds["controller"]["tasks"] == 5 and kinds["kubernetes"]["runs"] == 0
