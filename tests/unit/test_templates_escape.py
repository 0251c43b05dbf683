"""Jinja in the collection's YAML quotes an apostrophe with the other quote, never with a backslash.

Ansible renders ``{{ 'node\\'s' }}`` from a YAML plain, folded or single-quoted scalar with the backslash
kept, so a user reads ``node\\'s`` in a message.
"""

import os

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def yaml_files():
    for top in ("roles", "playbooks", "molecule"):
        for base, _subdirs, names in os.walk(os.path.join(ROOT, top)):
            for name in sorted(names):
                if name.endswith((".yml", ".yaml")):
                    yield os.path.relpath(os.path.join(base, name), ROOT)


def strings(node, where=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from strings(value, "%s.%s" % (where, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from strings(value, "%s[%d]" % (where, index))
    elif isinstance(node, str):
        yield where, node


def escaped_quotes(path, root=ROOT):
    with open(os.path.join(root, path)) as handle:
        documents = list(yaml.safe_load_all(handle))
    return [where for document in documents for where, text in strings(document) if "{{" in text and "\\'" in text]


def test_the_check_finds_a_backslash_quote(tmp_path):
    (tmp_path / "bad.yml").write_text("msg: >-\n  A{{ ' (the node\\'s kubelet)' }}\n")
    assert escaped_quotes("bad.yml", root=str(tmp_path)) == [".msg"]


@pytest.mark.parametrize("path", sorted(yaml_files()))
def test_no_backslash_quote_in_jinja(path):
    assert escaped_quotes(path) == []
