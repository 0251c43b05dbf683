# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KAI Scheduler's arithmetic and log parsing, in plain Python (the same code in the KAI versions the collection runs).

Each function mirrors one piece of KAI's Go code so that playbooks and tests compute the
values KAI will produce (e.g. the 0.51 fraction of the lab) instead of typing them in:

* node_gpu_memory_mib  -- getNodeGpuMemory (pkg/scheduler/api/node_info/node_info.go)
* gpu_fraction         -- getGpuMemoryFractionalOnNode (gpu_sharing_node_info.go)
* hamicore_memory_limit -- the hamicore binder plugin (pkg/binder/plugins/hamicore/hami_core.go);
  checked_memory_limit refuses the inputs a playbook should never pass it
* parse_division_line  -- reportDivisionResult's log line (resource_division.go)
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import re

# A label value at or above 1 TiB expressed in MiB is taken to be bytes (GFD bug workaround).
BYTES_THRESHOLD_MIB = 1048576
# What KAI assumes for a node without a parsable nvidia.com/gpu.memory label.
DEFAULT_GPU_MEMORY_MIB = 100
UNLIMITED = -1

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DIVISION = re.compile(r"Resource division result for queue <(?P<queue>[^>]*)>:(?P<rest>.*)")
_PRIORITY = re.compile(r"Queue Priority: <(?P<priority>[^>]*)>")
_BLOCKS = (("gpu", "GPU:"), ("cpu", "CPU (cores):"), ("memory", "memory (GB):"))
_FIELD = re.compile(r"(?P<key>[A-Za-z]+): <(?P<value>[^>]*)>")


class KaiMathError(ValueError):
    """Raised for inputs KAI itself would reject or that cannot be computed."""


def _to_int(value, what):
    if isinstance(value, bool):
        raise KaiMathError("%s must be an integer, got %r" % (what, value))
    try:
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError(value)
            return int(value)
        return int(str(value).strip(), 10)
    except (TypeError, ValueError):
        raise KaiMathError("%s must be an integer, got %r" % (what, value))


def node_gpu_memory_mib(label_value):
    """Per-GPU memory KAI uses for a node, from its ``nvidia.com/gpu.memory`` label.

    Values >= 1048576 are bytes and are converted to MiB; the result is floored to a multiple
    of 100. A missing label (None) gives KAI's default of 100 MiB. A label below 100 (GiB by
    mistake) floors to 0, as it does in KAI.
    """
    if label_value is None or label_value == "":
        return DEFAULT_GPU_MEMORY_MIB
    value = _to_int(label_value, "nvidia.com/gpu.memory label")
    if value >= BYTES_THRESHOLD_MIB:
        value = value // (1024 * 1024)
    return value - value % 100


def gpu_fraction(request_mib, node_memory_label):
    """GPU fraction KAI gives a ``gpu-memory: <request_mib>`` pod on a node with that label.

    ceil(request / node_memory * 100) / 100 -- two decimals, rounded up.
    """
    request = _to_int(request_mib, "gpu-memory request (MiB)")
    if request <= 0:
        raise KaiMathError("gpu-memory request must be a positive integer of MiB, got %r" % (request_mib,))
    node_memory = node_gpu_memory_mib(node_memory_label)
    if node_memory <= 0:
        raise KaiMathError(
            "node GPU memory is %r MiB after KAI's floor to 100 (label %r): a label below 100 "
            "looks like GiB; KAI expects MiB" % (node_memory, node_memory_label)
        )
    return math.ceil(float(request) / float(node_memory) * 100) / 100


def portion_string(portion):
    """The portion as the scheduler writes it into BindRequest.spec.receivedGPU.portion."""
    return "%.2f" % float(portion)


def hamicore_memory_limit(portion, node_memory_label):
    """CUDA_DEVICE_MEMORY_LIMIT the hamicore binder plugin writes, e.g. ``20889m``.

    The plugin reads the raw label (no floor, no bytes heuristic), parses the portion string and
    writes int64(label * portion) MiB with a lowercase ``m``. Returns None where the plugin
    writes nothing (label missing or invalid, or a product of 0).
    """
    try:
        label = _to_int(node_memory_label, "nvidia.com/gpu.memory label")
        portion_value = float(portion_string(portion))
    except (KaiMathError, TypeError, ValueError):
        return None
    limit = int(float(label) * portion_value)
    if limit <= 0:
        return None
    return "%dm" % limit


def checked_memory_limit(portion, node_memory_label):
    """``hamicore_memory_limit`` for inputs checked first; raises KaiMathError naming the bad one.

    ``portion`` must be a number in (0, 1] (a GPU fraction such as 0.51) and
    ``node_memory_label`` a positive integer of MiB (the node's ``nvidia.com/gpu.memory``).
    Returns None only where the plugin writes nothing for valid inputs: label x portion (two
    decimals) is below 1 MiB.
    """
    if isinstance(portion, bool):
        raise KaiMathError("portion must be a number in (0, 1] (a GPU fraction such as 0.51), got %r" % (portion,))
    try:
        portion_value = float(portion)
    except (TypeError, ValueError):
        raise KaiMathError("portion must be a number in (0, 1] (a GPU fraction such as 0.51), got %r" % (portion,))
    if not 0 < portion_value <= 1:  # also refuses NaN
        raise KaiMathError("portion must be a number in (0, 1] (a GPU fraction such as 0.51), got %r" % (portion,))
    label_error = (
        "node_memory_label must be a positive integer of MiB (the node's nvidia.com/gpu.memory label, "
        "such as 40960), got %r" % (node_memory_label,)
    )
    try:
        label = _to_int(node_memory_label, "node_memory_label")
    except KaiMathError:
        raise KaiMathError(label_error)
    if label <= 0:
        raise KaiMathError(label_error)
    return hamicore_memory_limit(portion_value, label)


def _number(text):
    text = text.strip()
    if text == "Unlimited":
        return UNLIMITED
    try:
        return float(text)
    except ValueError:
        raise KaiMathError("not a number in a division line: %r" % (text,))


def _snake(key):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def parse_division_line(line):
    """Parse one ``Resource division result for queue <NAME>: ...`` scheduler log line.

    Accepts the console format (with ANSI colour codes and a session prefix) and the JSON
    format (``--log-json``). Returns ``{'queue', 'priority', 'line', 'gpu', 'cpu', 'memory'}`` (``line``
    is the division text itself, colours and runs of spaces removed) where
    each resource is a dict such as ``{'deserved': 0.0, 'requested': 1.51, 'max_allowed': -1,
    'allocated': 1.51, 'historical_usage': 0.0, 'fair_share': 1.51}`` (``Unlimited`` -> -1).
    Returns None for a line that is not a division line.
    """
    text = _ANSI.sub("", line or "")
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            text = json.loads(stripped).get("msg", "")
        except (ValueError, AttributeError):
            pass
    match = _DIVISION.search(text)
    if not match:
        return None
    rest = match.group("rest")
    result = {"queue": match.group("queue"), "priority": None, "line": " ".join(match.group(0).split())}
    priority = _PRIORITY.search(rest)
    if priority:
        result["priority"] = _number(priority.group("priority"))
    positions = [(rest.find(marker), name, marker) for name, marker in _BLOCKS]
    found = sorted(p for p in positions if p[0] >= 0)
    for index, (start, name, marker) in enumerate(found):
        end = found[index + 1][0] if index + 1 < len(found) else len(rest)
        block = rest[start + len(marker):end]
        result[name] = dict(
            (_snake(m.group("key")), _number(m.group("value"))) for m in _FIELD.finditer(block)
        )
    for name, marker in _BLOCKS:
        result.setdefault(name, {})
    return result


def last_division(lines, queue, allocated=None):
    """The last parsed division line for ``queue`` among ``lines`` (newest last), or None.

    With ``allocated``, the last one whose GPU allocation is that number (to two decimals):
    the scheduler logs a line every cycle, and what it shows depends on the moment (a pending
    shared pod, a bind in flight, both bound), so a check looks for the line it expects.
    """
    found = None
    for line in lines:
        parsed = parse_division_line(line)
        if not parsed or parsed["queue"] != queue:
            continue
        if allocated is not None and round(parsed["gpu"].get("allocated", -2), 2) != round(float(allocated), 2):
            continue
        found = parsed
    return found
