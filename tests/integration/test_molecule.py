"""Molecule: the sim scenario end to end (what `make test` promises), the kind scenario's syntax.

Molecule runs through pytest so that CI's last line stays pytest's and a Molecule failure is a
failed test. The sim scenario's verify step judges the claims report itself
(molecule/shared/verify.yml); here the steps' own outcomes are asserted as well.
"""

import os
import re
import subprocess

from conftest import BIN

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


ANSI = re.compile(r"\x1b\[[0-9;]*m|\x1b\]8;;[^\x1b]*\x1b\\")


def molecule(*args):
    """Run molecule in the checkout; returns (returncode, its output without colour codes)."""
    done = subprocess.run([os.path.join(BIN, "molecule")] + list(args), cwd=ROOT, capture_output=True, text=True,
                          check=False, env=dict(os.environ, NO_COLOR="1"))
    output = ANSI.sub("", done.stdout + done.stderr)
    print(output[-30000:])
    return done.returncode, output


def step_succeeded(output, scenario, step):
    return re.search(r"^%s (?:>|➜) %s: Executed: Successful\s*$" % (scenario, step), output, re.M) is not None


def test_molecule_test_sim():
    returncode, output = molecule("test", "-s", "sim")
    assert returncode == 0, output[-6000:]
    failed = [step for step in ("syntax", "create", "converge", "idempotence", "verify", "destroy") if not step_succeeded(output, "sim", step)]
    assert failed == [], output[-6000:]
    # verify's own verdict on the claims report (molecule/sim/vars/lab11.yml says which must hold)
    assert "holding: ['C1', 'C2', 'C3', 'C4', 'C5', 'C6', 'C7', 'C8']" in output, output[-6000:]


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


def test_molecule_test_sim_crossed():
    """Beyond the lab: the reservation crossed with our mock NVML library, C8 reserved, C9 holding."""
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
