"""The lab end to end on the sim platform: Molecule's scenarios and playbooks/lab11.yml.

These run in pytest sessions of their own: ``make test`` runs the ones marked ``real_node`` in its
real node lane and the others beside them, with the integration tests' shared cluster (whose
nodes kwok plays) up at the same time; every test looks only at the processes and files of its
own clusters.
Molecule runs through pytest so that a Molecule failure is a failed test. The ``sim`` scenario
is run once, without its final destroy: the tests of playbooks/lab11.yml then use the lab it
converged (each process killed in turn, the late-label experiment, cleanup), and the scenario is
destroyed at the end of that module. The lab's GPU node is a real node (kubelet and containerd),
and the host runs one real node at a time, so the labs made from nothing run one after another:
this module's, then the ``sim`` scenario's, then the ``sim_crossed`` scenario's.
"""

import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from simtools import (  # noqa: E402  pylint: disable=wrong-import-position,unused-import
    BIN,
    ROOT,
    alive,
    cluster_pids,
    listeners_of,
    run_playbook,
    pid_files,
    session_members,
    sim_process_pids,
)

ANSI = re.compile(r"\x1b\[[0-9;]*m|\x1b\]8;;[^\x1b]*\x1b\\")
MOLECULE_SIM_NAME = "molecule-sim"  # molecule/sim/vars/lab11.yml


def molecule(*args):
    """Run molecule in the checkout; returns (returncode, its output without colour codes)."""
    done = subprocess.run([os.path.join(BIN, "molecule")] + list(args), cwd=ROOT, capture_output=True, text=True,
                          check=False, env=dict(os.environ, NO_COLOR="1"))
    output = ANSI.sub("", done.stdout + done.stderr)
    print(output[-30000:])
    return done.returncode, output


def step_succeeded(output, scenario, step):
    return re.search(r"^%s (?:>|➜) %s: Executed: Successful\s*$" % (scenario, step), output, re.M) is not None


@pytest.fixture(scope="module")
def molecule_sim():
    """``molecule test -s sim --destroy never``; the lab it converged stays up for the module's tests.
    Molecule's state of an earlier run that never destroyed (an interrupted one) is reset first: with
    ``--destroy never`` the scenario's first destroy does not run, and a stale state would skip create."""
    molecule("reset", "-s", "sim")
    returncode, output = molecule("test", "-s", "sim", "--destroy", "never")
    yield dict(returncode=returncode, output=output, name=MOLECULE_SIM_NAME,
               workdir=os.path.join(os.path.expanduser("~"), ".cache", "gpulab-kai-hami", "sim", MOLECULE_SIM_NAME))
    destroyed, destroy_output = molecule("destroy", "-s", "sim")
    assert destroyed == 0 and step_succeeded(destroy_output, "sim", "destroy"), destroy_output[-4000:]
    # the stand-ins' files on the host (nvml-mock's driver root, HAMi-core's preload) go with the real node
    assert [path for path in ("/var/lib/nvml-mock", "/usr/local/vgpu") if os.path.exists(path)] == []
