"""Unit-test setup: make ``ansible_collections.gpulab.kai_hami`` importable.

`make collections` links this checkout into .cache/collections/ansible_collections/gpulab/kai_hami
next to kubernetes.core; that directory goes on sys.path.
"""

import json
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COLLECTIONS = os.path.join(ROOT, ".cache", "collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
# Where a module would connect if it sent anything: nothing listens on the discard port.
UNREACHABLE_API = "https://127.0.0.1:9"


@pytest.fixture
def run_module(capsys, monkeypatch):
    """Run a module's main() with the given args; return its JSON result and exit code."""
    from ansible.module_utils.testing import patch_module_args

    for key in list(os.environ):
        if key.startswith("K8S_AUTH_"):
            monkeypatch.delenv(key)

    def run(main, args):
        args = dict(args)
        args.setdefault("host", UNREACHABLE_API)
        with patch_module_args(args):
            with pytest.raises(SystemExit) as exit_info:
                main()
        out = capsys.readouterr().out
        return json.loads(out), exit_info.value.code

    return run


# The files the "defined once" guards read, in every language of the collection, and how each
# marks a comment (a comment may name a fact; code may not restate it).
TYPED_TOPS = ("roles", "playbooks", "molecule", "plugins", "tools")
TYPED_COMMENTS = {".yml": ("#",), ".yaml": ("#",), ".j2": ("#", "{#"), ".py": ("#",), ".sh": ("#",), ".go": ("//",),
                  ".c": ("/*", "*", "//"), ".env": ("#",), "Makefile": ("#",)}


@pytest.fixture
def typed_again():
    """``typed_again(regex, allowed={})``: the lines of the roles', playbooks', scenarios', plugins' and
    tools' YAML, templates, Python, shell, Go and C files and Makefiles (not comments, not the argument
    specs, which document defaults) that match ``regex``, as ``path:line: text``, except in the files
    ``allowed`` names ({path regex: why that file states it}); the guard that a fact defined once is
    not written out again."""
    import re

    def find(regex, allowed=None):
        pattern = re.compile(regex)
        typed = []
        for top in TYPED_TOPS:
            for directory, _dirs, files in os.walk(os.path.join(ROOT, top)):
                for name in sorted(files):
                    kind = "Makefile" if name == "Makefile" else os.path.splitext(name)[1]
                    if kind not in TYPED_COMMENTS or name == "argument_specs.yml":
                        continue
                    path = os.path.join(directory, name)
                    relative = os.path.relpath(path, ROOT)
                    if any(re.fullmatch(where, relative) for where in allowed or {}):
                        continue
                    with open(path, errors="replace") as handle:
                        for number, line in enumerate(handle, 1):
                            if pattern.search(line) and not line.lstrip().startswith(TYPED_COMMENTS[kind]):
                                typed.append("%s:%d: %s" % (relative, number, line.strip()))
        return typed
    return find
