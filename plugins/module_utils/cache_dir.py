# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the collection keeps what it makes outside a lab's own directories: one rule.

Everything lives under ``~/.cache/gpulab-kai-hami`` (``$HOME/.cache``): the sim's work dirs
(``sim/<cluster>``), its record of clusters (``clusters``), kind's binary and kubeconfigs
(``kind/...``), helm (``helm/<version>/bin``), KAI's packaged charts and the wheels. The sim's
built programs (``sim-bin``) follow ``$XDG_CACHE_HOME`` when it is set (build.sh's rule).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

CACHE_NAME = "gpulab-kai-hami"


def cache_dir(*parts):
    """``$HOME/.cache/gpulab-kai-hami`` joined with ``parts`` (each a non-empty string without '/' at its ends)."""
    home = os.environ.get("HOME") or os.path.expanduser("~")
    for part in parts:
        if not isinstance(part, str) or not part.strip("/") or part != part.strip("/"):
            raise ValueError("each part of a cache path must be a non-empty name without a leading or trailing '/', got %r" % (part,))
    return os.path.join(home, ".cache", CACHE_NAME, *parts)
