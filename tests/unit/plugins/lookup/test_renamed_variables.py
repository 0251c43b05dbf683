"""The variables of 0.1.0 that are gone: refused with what replaces them, and each in the porting guide."""

import os

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.gpulab.kai_hami.plugins.lookup.renamed_variables import RENAMED, renamed_messages

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def test_each_old_variable_set_is_named_with_its_replacement():
    messages = renamed_messages(["sim_cluster", "lab11"], {"sim_cluster_profiles", "lab11_cleanup_cluster", "sim_cluster_name"})
    assert messages == [
        "sim_cluster_profiles is gone since gpulab.kai_hami 0.2.0: use " + RENAMED["sim_cluster"]["sim_cluster_profiles"],
        "lab11_cleanup_cluster is gone since gpulab.kai_hami 0.2.0: use " + RENAMED["lab11"]["lab11_cleanup_cluster"],
    ]
    assert renamed_messages(["kai_scheduler"], {"kai_scheduler_gpu_profile"}) == []


def test_an_unknown_part_is_refused_naming_the_known_ones():
    with pytest.raises(AnsibleLookupError, match="renamed_variables knows no sim_kia; it knows kai_resource_isolator, kai_scheduler, lab11, sim_cluster"):
        renamed_messages(["sim_kia"], set())


def test_every_old_variable_is_in_the_porting_guide_and_gone_from_the_roles():
    with open(os.path.join(ROOT, "docs", "porting.md")) as handle:
        guide = handle.read()
    old = [name for part in RENAMED.values() for name in part]
    assert [name for name in old if "`%s`" % name not in guide] == []
    for part in RENAMED:
        defaults = os.path.join(ROOT, "roles", part, "defaults", "main.yml")
        if os.path.exists(defaults):
            with open(defaults) as handle:
                text = handle.read()
            assert [name for name in RENAMED[part] if name + ":" in text] == []
