# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KAI Scheduler arithmetic as Jinja filters, so playbooks compute expected values."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_math import (
    KaiMathError,
    checked_memory_limit,
    gpu_fraction,
    last_division,
    node_gpu_memory_mib,
    parse_division_line,
)


def _lines(text_or_lines):
    if text_or_lines is None:
        return []
    if isinstance(text_or_lines, (list, tuple)):
        lines = []
        for item in text_or_lines:
            lines.extend(to_text(item).splitlines())
        return lines
    return to_text(text_or_lines).splitlines()


def kai_gpu_fraction(request_mib, node_memory_label):
    """GPU fraction KAI gives a gpu-memory request on a node (20480, 40960 -> 0.51)."""
    try:
        return gpu_fraction(request_mib, node_memory_label)
    except KaiMathError as error:
        raise AnsibleFilterError("kai_gpu_fraction: %s" % error)


def kai_memory_limit(portion, node_memory_label):
    """CUDA_DEVICE_MEMORY_LIMIT KAI's hamicore plugin writes (0.51, 40960 -> '20889m')."""
    try:
        return checked_memory_limit(portion, node_memory_label)
    except KaiMathError as error:
        raise AnsibleFilterError("kai_memory_limit: %s" % error)


def kai_node_memory(node_memory_label):
    """Per-GPU memory KAI uses for a node label (40960 -> 40900)."""
    try:
        return node_gpu_memory_mib(node_memory_label)
    except KaiMathError as error:
        raise AnsibleFilterError("kai_node_memory: %s" % error)


def kai_division(text_or_lines, queue=None, allocated=None):
    """Parsed 'Resource division result for queue' lines: all of them, or the last for queue.

    With ``allocated``: the last line for queue whose GPU allocation is that number.
    """
    try:
        if queue is not None:
            return last_division(_lines(text_or_lines), queue, allocated)
        return [p for p in (parse_division_line(line) for line in _lines(text_or_lines)) if p]
    except KaiMathError as error:
        raise AnsibleFilterError("kai_division: %s" % error)


class FilterModule(object):
    """KAI Scheduler filters."""

    def filters(self):
        return {
            "kai_gpu_fraction": kai_gpu_fraction,
            "kai_memory_limit": kai_memory_limit,
            "kai_node_memory": kai_node_memory,
            "kai_division": kai_division,
        }
