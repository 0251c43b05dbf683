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


# Where the cache directory's name is written out, and why.
CACHE_DIR_STATED = {
    r"plugins/module_utils/cache_dir\.py": "its definition",
    r"plugins/lookup/cache_dir\.py": "the lookup's documentation of it",
    r"plugins/modules/[a-z_]+\.py": "the modules' documentation shows paths where the roles put them (the modules are given paths)",
    r"roles/local_build/files/build\.sh": "build.sh runs without Ansible; test_the_build_caches_where_the_lookup_says checks it agrees",
    r"tools/install_kubernetes_core\.py": "it runs before Ansible is installed (its default wheel cache)",
}


def test_no_role_playbook_or_scenario_types_the_cache_directory_again(typed_again):
    """Outside comments (and the argument specs, which document the defaults), the cache
    directory's name appears only where CACHE_DIR_STATED says: every other path under it is asked of the lookup."""
    typed = typed_again(re.escape("gpulab-kai-hami"), CACHE_DIR_STATED)
    assert typed == [], "\n".join(typed)


def test_the_build_caches_where_the_lookup_says(tmp_path, monkeypatch):
    """In an installed collection (no checkout), build.sh's binaries go under the lookup's directory."""
    import shutil
    import subprocess

    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
    installed = tmp_path / "ansible_collections" / "gpulab" / "kai_hami"
    (installed / "roles" / "local_build").mkdir(parents=True)
    shutil.copytree(os.path.join(root, "roles", "local_build", "files"), str(installed / "roles" / "local_build" / "files"),
                    ignore=shutil.ignore_patterns("*.sum", "go.mod", "go.*.mod"))
    shutil.copy(os.path.join(root, "versions.env"), str(installed / "versions.env"))
    for name in ("SIM_BIN_DIR", "SIM_BIN_ROOT", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    done = subprocess.run([str(installed / "roles" / "local_build" / "files" / "build.sh"), "--print-bin-dir"],
                          capture_output=True, text=True, check=True)
    cache = LookupModule().run(["sim-bin"])[0]
    assert done.stdout.strip().startswith(cache + os.sep), (done.stdout, cache)
