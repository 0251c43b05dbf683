"""The variables of 0.1.0 that are gone: refused with what replaces them, and each in the porting guide.
The variables and values renamed in 0.3.0: read still, with a deprecation warning."""

import os

import pytest
from ansible.errors import AnsibleLookupError

import yaml

from ansible_collections.gpulab.kai_hami.plugins.lookup.renamed_variables import LookupModule
from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.renamed import (
    DEPRECATED,
    DEPRECATED_ROLES,
    DEPRECATED_VALUES,
    RENAMED,
    deprecated_messages,
    renamed_messages,
    renamed_variable,
)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def test_each_old_variable_set_is_named_with_its_replacement():
    messages = renamed_messages(["sim_cluster", "lab11"], {"sim_cluster_profiles", "lab11_cleanup_cluster", "sim_cluster_name"})
    assert messages == [
        "sim_cluster_profiles is gone since gpulab.kai_hami 0.2.0: use " + RENAMED["sim_cluster"]["sim_cluster_profiles"],
        "lab11_cleanup_cluster is gone since gpulab.kai_hami 0.2.0: use " + RENAMED["lab11"]["lab11_cleanup_cluster"],
    ]
    assert renamed_messages(["kai_scheduler"], {"kai_scheduler_gpu_profile"}) == []


def test_an_unknown_part_is_refused_naming_the_known_ones():
    known = "kai_resource_isolator, kai_scheduler, lab11, nvml_mock, sim_cluster, sim_kai, sim_node"
    with pytest.raises(AnsibleLookupError, match="renamed_variables knows no sim_kia; it knows %s" % known):
        LookupModule().run(["sim_kia"], variables={})


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


def test_each_variable_or_value_renamed_since_0_3_0_is_named_with_its_new_name_and_not_refused():
    variables = {"sim_kai_mock_nvml": True, "sim_node_mock_nvml_config": "/c", "lab11_boundary": "mock_nvml", "sim_kai_queues": [],
                 "nvml_mock_mode": "sim", "nvml_mock_sim_root": "/r"}
    assert deprecated_messages(["sim_kai", "sim_node", "lab11", "nvml_mock"], variables) == [
        "the role gpulab.kai_hami.sim_node is renamed gpulab.kai_hami.kubelet_node since gpulab.kai_hami 0.3.0"
        " (its variables sim_node_<name> are kubelet_node_<name>)",
        "sim_kai_mock_nvml is renamed %s since gpulab.kai_hami 0.3.0" % DEPRECATED["sim_kai"]["sim_kai_mock_nvml"],
        "sim_node_mock_nvml_config is renamed %s since gpulab.kai_hami 0.3.0" % DEPRECATED["sim_node"]["sim_node_mock_nvml_config"],
        "nvml_mock_sim_root is renamed nvml_mock_stand_in_root since gpulab.kai_hami 0.3.0",
        "lab11_boundary=mock_nvml is renamed lab11_boundary=%s since gpulab.kai_hami 0.3.0" % DEPRECATED_VALUES["lab11"]["lab11_boundary"]["mock_nvml"],
        "nvml_mock_mode=sim is renamed nvml_mock_mode=stand_in since gpulab.kai_hami 0.3.0",
    ]
    assert renamed_messages(["sim_kai", "sim_node", "lab11", "nvml_mock"], set(variables)) == []
    assert deprecated_messages(["lab11"], {"lab11_boundary": "library_stand_in"}) == []


def test_a_renamed_roles_variables_have_their_new_roles_names():
    """The sim_node role redirects to kubelet_node, renaming each of its variables (the renamed_variable filter)."""
    assert renamed_variable("sim_node_pod_cidr") == "kubelet_node_pod_cidr"
    assert renamed_variable("sim_node_mock_nvml_library") == "kubelet_node_nvml_stand_in_library"
    assert renamed_variable("lab11_boundary") == "lab11_boundary"
    with open(os.path.join(ROOT, "roles", "kubelet_node", "defaults", "main.yml")) as handle:
        new_defaults = yaml.safe_load(handle)
    # every variable of the new role has an old name the old role gives it
    assert all(renamed_variable("sim_node" + name[len("kubelet_node"):]) == name for name in new_defaults)


def test_every_renamed_variable_is_read_by_its_new_names_default_and_in_the_porting_guide():
    with open(os.path.join(ROOT, "docs", "porting.md")) as handle:
        guide = handle.read()
    for part, names in DEPRECATED.items():
        for old, new in names.items():
            assert "`%s`" % old in guide and "`%s`" % new in guide, (old, new)
        if part in DEPRECATED_ROLES:
            # the old role redirects: its variables reach the new role under their new names (test above)
            continue
        with open(os.path.join(ROOT, "roles", part, "defaults", "main.yml")) as handle:
            defaults = yaml.safe_load(handle)
        for old, new in names.items():
            assert old not in defaults and old in str(defaults[new]), (old, new, defaults.get(new))
    for part, values in DEPRECATED_VALUES.items():
        for name, renamed in values.items():
            for old, new in renamed.items():
                assert "`%s: %s`" % (name, old) in guide and "`%s: %s`" % (name, new) in guide, (name, old, new)
    for role, new_role in DEPRECATED_ROLES.items():
        assert "`gpulab.kai_hami.%s`" % role in guide and "`gpulab.kai_hami.%s`" % new_role in guide
