"""Each role documents every variable it takes: defaults, argument specs and README agree."""

import os
import re

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLES = sorted(r for r in os.listdir(os.path.join(ROOT, "roles")) if os.path.isdir(os.path.join(ROOT, "roles", r, "tasks")))


def load(role, *parts, text=False):
    path = os.path.join(ROOT, "roles", role, *parts)
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return handle.read() if text or path.endswith(".md") else yaml.safe_load(handle)


def test_the_collection_has_the_roles_of_the_design():
    assert ROLES == ["device_plugin", "helm_binary", "kai_resource_isolator", "kai_scheduler", "kind_cluster", "kubelet_node", "lab11", "local_build",
                     "nvml_mock", "sim_agent", "sim_cluster", "sim_isolator", "sim_kai", "sim_node"]


@pytest.mark.parametrize("role", ROLES)
def test_defaults_specs_and_readme_agree(role):
    defaults = load(role, "defaults", "main.yml") or {}
    options = load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    readme = load(role, "README.md")
    assert all(name.startswith(role + "_") for name in list(defaults) + list(options)), "variables must be role-prefixed"
    # every default is a documented option; options without a default are optional inputs (a kubeconfig)
    # or required ones (the lab11 role's GPU node)
    assert set(defaults) <= set(options), set(defaults) - set(options)
    for name in set(options) - set(defaults):
        assert "default" not in options[name], name
    documented = set(re.findall(r"^\| `(%s_[a-z0-9_]+)` \|" % role, readme, re.M))
    assert documented == set(options), "README table vs argument specs: %s" % (documented ^ set(options))


@pytest.mark.parametrize("role", ROLES)
def test_spec_defaults_match_the_role_defaults(role):
    defaults = load(role, "defaults", "main.yml") or {}
    options = load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    for name, spec in options.items():
        if "default" in spec and isinstance(defaults.get(name), (bool, int, float)):
            assert spec["default"] == defaults[name], name
        if "choices" in spec and name in defaults and "{{" not in str(defaults[name]):
            chosen = defaults[name] if spec.get("type") == "list" else [defaults[name]]
            assert set(chosen) <= set(spec["choices"]), name


def included_roles(role):
    """The collection's roles this role's tasks include (include_role/import_role), by name."""
    found = set()
    tasks = os.path.join(ROOT, "roles", role, "tasks")
    for name in os.listdir(tasks):
        with open(os.path.join(tasks, name)) as handle:
            found.update(re.findall(r"_role:\s*\n(?:\s+\w+:.*\n)*?\s+name: gpulab\.kai_hami\.([a-z0-9_]+)", handle.read()))
    return found


@pytest.mark.parametrize("role", ROLES)
def test_meta_main_names_the_roles_it_includes(role):
    """meta/main.yml: galaxy_info, no dependencies that run before the role, and a line naming each
    role its tasks include (the includes are conditional, so none is a meta dependency)."""
    meta = load(role, "meta", "main.yml")
    assert meta["dependencies"] == [] and meta["galaxy_info"]["description"], meta
    named = set(re.findall(r"^#   gpulab\.kai_hami\.([a-z0-9_]+): ", load(role, "meta", "main.yml", text=True), re.M))
    assert named == included_roles(role), "meta/main.yml names %s, the tasks include %s" % (sorted(named), sorted(included_roles(role)))
