"""Every role's README shows a playbook using the role, and every playbook a README shows passes
``ansible-playbook --syntax-check`` (the roles, modules and keywords it names exist)."""

import os
import re
import subprocess
import sys

import pytest

from test_roles_documented import ROLES, ROOT, load

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.renamed import DEPRECATED_ROLES

# A role renamed in 0.3.0 redirects to its new name, whose README shows the playbook.
USED = [role for role in ROLES if role not in DEPRECATED_ROLES]

FENCE = re.compile(r"^```yaml\n(.*?)^```", re.M | re.S)


def examples(role):
    """The YAML blocks of the role's README that are plays (a list whose items have hosts:)."""
    return [block for block in FENCE.findall(load(role, "README.md")) if re.match(r"- hosts:", block)]


@pytest.mark.parametrize("role", USED)
def test_the_readme_shows_a_playbook_using_the_role(role):
    named = re.compile(r"^\s+-? ?(role|name): gpulab\.kai_hami\.%s$" % role, re.M)
    assert [block for block in examples(role) if named.search(block)], \
        "roles/%s/README.md has no example playbook naming gpulab.kai_hami.%s" % (role, role)


def test_every_readme_playbook_passes_the_syntax_check(tmp_path):
    paths = []
    for role in ROLES:
        for number, block in enumerate(examples(role)):
            path = tmp_path / ("%s-%d.yml" % (role, number))
            path.write_text(block)
            paths.append(str(path))
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    done = subprocess.run([playbook, "--syntax-check"] + paths, capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert len(paths) >= len(USED)
