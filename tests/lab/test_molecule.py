"""Molecule: the sim scenarios end to end (what `make test` promises), the kind scenario's syntax.

The scenarios' verify steps judge the claims report themselves (molecule/shared/verify.yml);
this module asserts the steps' own outcomes as well. The ``sim`` scenario runs in
test_lab11_playbook.py, whose tests use the lab it converged; it is destroyed before this
module's ``sim_crossed`` makes its own real node (the host runs one at a time).
"""

import os

import pytest

from conftest import molecule, step_succeeded


def processes_mentioning(text):
    """Pids of live processes whose command line mentions ``text``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/cmdline" % entry, "rb") as handle:
                    if text.encode() in handle.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


@pytest.mark.real_node
def test_molecule_test_sim_crossed():
    """Beyond the lab: the reservation crossed with our NVML stand-in library on 4 x 80 GiB A100s, C8 reserved, C9 holding."""
    returncode, output = molecule("test", "-s", "sim_crossed")
    assert returncode == 0, output[-6000:]
    failed = [step for step in ("syntax", "create", "converge", "idempotence", "verify", "destroy")
              if not step_succeeded(output, "sim_crossed", step)]
    assert failed == [], output[-6000:]
    assert "holding: ['C1', 'C2', 'C3', 'C4', 'C5', 'C6', 'C7', 'C8', 'C9']" in output, output[-6000:]
    # after destroy, nothing of the cluster, the reservation runner or its apps (and so none of
    # their network namespaces, which live only as long as their processes) is left
    assert processes_mentioning("/sim/molecule-crossed/") == []


def test_molecule_syntax_default_kind():
    returncode, output = molecule("syntax", "-s", "default")
    assert returncode == 0 and step_succeeded(output, "default", "syntax"), output[-6000:]
