"""The cache_dir lookup: the one rule for the collection's cache directory, and nothing restating it."""

import os
import re

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.gpulab.kai_hami.plugins.lookup.cache_dir import LookupModule


def test_the_terms_are_joined_under_home_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert LookupModule().run([]) == [os.path.join(str(tmp_path), ".cache", "gpulab-kai-hami")]
    assert LookupModule().run(["sim", "fairlab", "kubeconfig"]) == [str(tmp_path / ".cache" / "gpulab-kai-hami" / "sim" / "fairlab" / "kubeconfig")]


@pytest.mark.parametrize("term", ["", "/etc", "sim/", "/"])
def test_a_term_that_would_leave_or_blur_the_path_is_refused(term):
    with pytest.raises(AnsibleLookupError) as error:
        LookupModule().run(["sim", term])
    assert "each part of a cache path must be a non-empty name without a leading or trailing '/', got %r" % term in str(error.value)


def test_no_role_playbook_or_scenario_types_the_cache_directory_again(typed_again):
    """Outside comments (and the argument specs, which document the defaults), the cache
    directory's name appears only in the lookup: every path under it is asked of the lookup."""
    typed = typed_again(re.escape("gpulab-kai-hami"))
    assert typed == [], "\n".join(typed)
