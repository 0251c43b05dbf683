"""The isolator's names are defined once, in plugins/module_utils/kai_parts.py: the roles, playbooks
and scenarios ask the kai_parts lookup, and the stand-in program (which runs in its own image and
cannot import the collection) injects the volume the claims look for."""

import ast
import os
import re

from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_parts import ISOLATOR_VGPU_VOLUME, isolator_parts

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_no_role_playbook_or_scenario_types_the_isolators_derived_names_again(typed_again):
    """Outside comments (and the argument specs, which document them), the names the isolator's chart
    derives from its release, and the volume its webhook injects, appear in no YAML or template."""
    names = set(isolator_parts().values()) | {ISOLATOR_VGPU_VOLUME}
    stated = {
        r"plugins/module_utils/kai_parts\.py": "their definition",
        r"plugins/modules/lab_claim\.py": "its documented default (validate-modules checks it is the argument spec's, kai_parts' constant)",
        r"roles/sim_isolator/files/isolator_standin\.py": "the stand-in runs in its own image; the test below checks it injects kai_parts' volume",
    }
    typed = typed_again(r"(?<![-\w])(%s)(?![-\w])" % "|".join(re.escape(name) for name in sorted(names)), stated)
    assert typed == [], "\n".join(typed)


def test_the_stand_in_injects_the_volume_the_claims_look_for():
    with open(os.path.join(ROOT, "roles", "sim_isolator", "files", "isolator_standin.py")) as handle:
        tree = ast.parse(handle.read())
    assigned = dict((node.targets[0].id, node.value.value) for node in tree.body
                    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant))
    assert assigned["VGPU_VOLUME"] == ISOLATOR_VGPU_VOLUME
