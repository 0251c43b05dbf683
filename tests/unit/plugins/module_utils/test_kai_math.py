"""KAI v0.17.0 arithmetic: node memory, fraction, hamicore limit, division line."""

import json

import pytest

from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_math import (
    DEFAULT_GPU_MEMORY_MIB,
    KaiMathError,
    gpu_fraction,
    hamicore_memory_limit,
    last_division,
    node_gpu_memory_mib,
    parse_division_line,
)

GIB = 1024 * 1024 * 1024


@pytest.mark.parametrize(
    "label, expected",
    [
        ("40960", 40900),            # A100-40GB: floored to a multiple of 100
        (15360, 15300),              # T4 (KAI's hamicore doc)
        ("81559", 81500),            # H100 as GPU feature discovery labels it
        ("40", 0),                   # GiB by mistake: KAI floors it to 0
        ("100", 100),
        (str(40 * GIB), 40900),      # bytes (>= 1048576): converted to MiB first
        ("1048575", 1048500),        # just below the bytes threshold: still MiB
        ("1048576", 0),              # at the threshold: bytes, i.e. 1 MiB
        (None, DEFAULT_GPU_MEMORY_MIB),
        ("", DEFAULT_GPU_MEMORY_MIB),
    ],
)
def test_node_gpu_memory(label, expected):
    assert node_gpu_memory_mib(label) == expected


def test_node_gpu_memory_rejects_non_integer():
    with pytest.raises(KaiMathError, match="integer"):
        node_gpu_memory_mib("40GiB")


@pytest.mark.parametrize(
    "request_mib, label, expected",
    [
        (20480, 40960, 0.51),   # the lab: half an A100 is 0.51 because 40960 floors to 40900
        (4096, 15360, 0.27),    # KAI's docs: 4096 MiB on a T4
        (20450, 40960, 0.5),    # exactly half of the floored memory
        (1, 40960, 0.01),       # smallest request rounds up to 0.01
        (40900, 40960, 1.0),
        (20480, str(40 * GIB), 0.51),
    ],
)
def test_gpu_fraction_table(request_mib, label, expected):
    assert gpu_fraction(request_mib, label) == expected


def test_gpu_fraction_is_ceil_of_hundredths():
    # Independent of the table: for every request the fraction is the smallest
    # hundredth that covers request / floored memory.
    memory = 40900
    for request in range(1, 40901, 97):
        fraction = gpu_fraction(request, 40960)
        assert fraction * memory >= request - 1e-6
        assert (fraction - 0.01) * memory < request


def test_gpu_fraction_label_below_100_is_an_error():
    with pytest.raises(KaiMathError, match="looks like GiB"):
        gpu_fraction(20480, 40)


@pytest.mark.parametrize("bad", [0, -5, "abc", True])
def test_gpu_fraction_bad_request(bad):
    with pytest.raises(KaiMathError):
        gpu_fraction(bad, 40960)


@pytest.mark.parametrize(
    "portion, label, expected",
    [
        (0.51, 40960, "20889m"),   # the lab's shared pod
        (0.27, 15360, "4147m"),    # KAI's hamicore doc
        (0.5, 40960, "20480m"),    # gpu-fraction 0.5
        (0.51, str(40 * GIB), "%dm" % int(40 * GIB * 0.51)),  # raw label: no bytes heuristic
        (0.51, None, None),        # no label: the plugin writes nothing
        (0.51, "forty", None),
        (0.0, 40960, None),
    ],
)
def test_hamicore_memory_limit(portion, label, expected):
    assert hamicore_memory_limit(portion, label) == expected


def test_fraction_then_limit_matches_lab():
    assert hamicore_memory_limit(gpu_fraction(20480, 40960), 40960) == "20889m"


CONSOLE_LINE = (
    "2026-08-05T02:31:12.512Z\t\x1b[34mINFO\x1b[0m\tresource_division/resource_division.go:68\t"
    "\x1b[35m[3f0c1a2b-5d6e]\x1b[0m Resource division result for queue <default-queue>: "
    "Queue Priority: <100>, GPU: deserved: <0>, requested: <1.51>, maxAllowed: <Unlimited>, "
    "allocated: <1.51>, historicalUsage: <0>, fairShare: <1.51> CPU (cores): deserved: <0>, "
    "requested: <0.2>, maxAllowed: <Unlimited>, allocated: <0.1>, historicalUsage: <0>, "
    "fairShare: <0.2> memory (GB): deserved: <0>, requested: <0.268>, maxAllowed: <Unlimited>, "
    "allocated: <0.134>, historicalUsage: <0>, fairShare: <0.268> "
)


def test_parse_console_line():
    parsed = parse_division_line(CONSOLE_LINE)
    assert parsed["queue"] == "default-queue"
    assert parsed["priority"] == 100
    assert parsed["gpu"] == {
        "deserved": 0, "requested": 1.51, "max_allowed": -1,
        "allocated": 1.51, "historical_usage": 0, "fair_share": 1.51,
    }
    assert parsed["cpu"]["allocated"] == 0.1
    assert parsed["memory"]["requested"] == 0.268


def test_parse_json_line():
    line = json.dumps({
        "level": "info", "ts": "2026-08-05T02:31:12Z", "sessionID": "3f0c",
        "msg": "Resource division result for queue <default>: Queue Priority: <100>, GPU: deserved: "
               "<Unlimited>, requested: <2>, maxAllowed: <Unlimited>, allocated: <2>, historicalUsage: <0>, "
               "fairShare: <2> CPU (cores): deserved: <Unlimited>, requested: <0>, maxAllowed: <Unlimited>, "
               "allocated: <0>, historicalUsage: <0>, fairShare: <0> memory (GB): deserved: <Unlimited>, "
               "requested: <0>, maxAllowed: <Unlimited>, allocated: <0>, historicalUsage: <0>, fairShare: <0> ",
    })
    parsed = parse_division_line(line)
    assert parsed["queue"] == "default"
    assert parsed["gpu"]["deserved"] == -1
    assert parsed["gpu"]["allocated"] == 2


def test_parse_older_format_without_allocated():
    # Earlier releases printed no allocated/historicalUsage; the parser keeps what is there.
    line = ("Resource division result for queue <Batch Eval>: Queue Priority: <100>, GPU: deserved: <1>, "
            "requested: <1>, maxAllowed: <Unlimited>, fairShare: <1> CPU (cores): deserved: <0>, "
            "requested: <0>, maxAllowed: <Unlimited>, fairShare: <0> memory (GB): deserved: <0>, "
            "requested: <0>, maxAllowed: <Unlimited>, fairShare: <0> ")
    parsed = parse_division_line(line)
    assert parsed["queue"] == "Batch Eval"
    assert "allocated" not in parsed["gpu"]
    assert parsed["gpu"]["fair_share"] == 1


def test_parse_other_lines():
    assert parse_division_line("Total allocatable resources are <GPU: 8>") is None
    assert parse_division_line("") is None


def test_last_division_picks_newest_for_queue():
    older = CONSOLE_LINE.replace("allocated: <1.51>", "allocated: <1>")
    other = CONSOLE_LINE.replace("<default-queue>", "<default>")
    assert last_division([older, CONSOLE_LINE, other], "default-queue")["gpu"]["allocated"] == 1.51
    assert last_division([other], "default-queue") is None
