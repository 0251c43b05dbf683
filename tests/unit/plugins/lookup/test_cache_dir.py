"""The cache_dir lookup: the one rule for the collection's cache directory, and nothing restating it."""

import os
import re

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.gpulab.kai_hami.plugins.lookup.cache_dir import LookupModule

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def test_the_terms_are_joined_under_home_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert LookupModule().run([]) == [os.path.join(str(tmp_path), ".cache", "gpulab-kai-hami")]
    assert LookupModule().run(["sim", "fairlab", "kubeconfig"]) == [str(tmp_path / ".cache" / "gpulab-kai-hami" / "sim" / "fairlab" / "kubeconfig")]


@pytest.mark.parametrize("term", ["", "/etc", "sim/", "/"])
def test_a_term_that_would_leave_or_blur_the_path_is_refused(term):
    with pytest.raises(AnsibleLookupError) as error:
        LookupModule().run(["sim", term])
    assert "each part of a cache path must be a non-empty name without a leading or trailing '/', got %r" % term in str(error.value)


def yaml_files(*tops):
    for top in tops:
        for directory, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".yml", ".yaml", ".j2")) and name != "argument_specs.yml":
                    yield os.path.join(directory, name)


def test_no_role_playbook_or_scenario_types_the_cache_directory_again():
    """Outside comments (and the argument specs, which document the defaults), the cache
    directory's name appears only in the lookup: every path under it is asked of the lookup."""
    typed = []
    for path in yaml_files("roles", "playbooks", "molecule"):
        with open(path) as handle:
            for number, line in enumerate(handle, 1):
                if "gpulab-kai-hami" in line and not re.match(r"\s*#", line):
                    typed.append("%s:%d: %s" % (os.path.relpath(path, ROOT), number, line.strip()))
    assert typed == [], "\n".join(typed)
