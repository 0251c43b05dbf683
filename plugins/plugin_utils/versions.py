# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's table of versions, images and checksums (``versions.env`` at the collection's
root): its parser, for the versions lookup, the tools and the tests. The table is read on the
controller; modules never read it (they are given values).

Run as a program it prints the table's value of each key given, one per line
(``python3 versions.py K8S_VERSION ETCD_VERSION``), for shell scripts that want no parser of their own.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import sys

LINE = re.compile(r"^([A-Z][A-Z0-9_]*)=([^\s\"']*)$")


def table_path():
    """``versions.env`` at the root of the collection this file belongs to."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "versions.env")


def parse(text, source="versions.env"):
    """The table's KEY=VALUE lines as a dict; a line of any other shape is an error naming it."""
    table = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = LINE.match(line)
        if not match:
            raise ValueError("%s:%d: not a KEY=VALUE line (no quotes, no spaces): %s" % (source, number, line))
        if match.group(1) in table:
            raise ValueError("%s:%d: %s is set twice" % (source, number, match.group(1)))
        table[match.group(1)] = match.group(2)
    return table


def read(path=None):
    """The table as a dict."""
    path = path or table_path()
    with open(path) as handle:
        return parse(handle.read(), path)


def by_platform(table, prefix):
    """``<PREFIX>_<OS>_<ARCH>`` keys as ``{'<os>-<arch>': value}`` (release checksums per host)."""
    found = {}
    for key, value in table.items():
        match = re.match(r"^%s_([A-Z0-9]+)_([A-Z0-9]+)$" % re.escape(prefix), key)
        if match:
            found["%s-%s" % (match.group(1).lower(), match.group(2).lower())] = value
    return found


def main(argv):
    table = read()
    missing = [key for key in argv if key not in table]
    if missing:
        sys.stderr.write("versions.py: %s has no %s\n" % (os.path.normpath(table_path()), ", ".join(missing)))
        return 1
    for key in argv:
        print(table[key])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
