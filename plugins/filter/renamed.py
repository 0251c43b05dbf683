# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The name a variable renamed in 0.3.0 has now."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.kai_hami.plugins.plugin_utils.renamed import renamed_variable


def gpulab_renamed_variable(name):
    """``name``'s name since 0.3.0 (itself when it was not renamed)."""
    if not isinstance(name, str):
        raise AnsibleFilterError("renamed_variable takes a variable's name, got %r" % (name,))
    return renamed_variable(name)


class FilterModule(object):
    """Renames."""

    def filters(self):
        return {"renamed_variable": gpulab_renamed_variable}
