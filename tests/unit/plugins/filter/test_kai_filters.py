"""The filters as playbooks use them, through Jinja."""

import pytest
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpulab.kai_hami.plugins.filter.kai import FilterModule
from ansible_collections.gpulab.kai_hami.plugins.module_utils.kai_math import gpu_fraction

LINE = ("Resource division result for queue <default-queue>: Queue Priority: <100>, GPU: deserved: <0>, "
        "requested: <{gpu}>, maxAllowed: <Unlimited>, allocated: <{gpu}>, historicalUsage: <0>, fairShare: <{gpu}> "
        "CPU (cores): deserved: <0>, requested: <0>, maxAllowed: <Unlimited>, allocated: <0>, historicalUsage: <0>, "
        "fairShare: <0> memory (GB): deserved: <0>, requested: <0>, maxAllowed: <Unlimited>, allocated: <0>, "
        "historicalUsage: <0>, fairShare: <0> ")


def render(expression, **variables):
    # ansible-core 2.19 renders only trusted templates, as a playbook's own are.
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


def test_registered():
    assert set(FilterModule().filters()) == {"kai_gpu_fraction", "kai_memory_limit", "kai_node_memory", "kai_division"}


def test_queue_total_with_whole_gpu_pod():
    total = render("{{ 1 + (20480 | gpulab.kai_hami.kai_gpu_fraction(40960)) }}")
    assert float(total) == pytest.approx(1.51)


def test_limit_chain():
    assert render("{{ 20480 | gpulab.kai_hami.kai_gpu_fraction(40960) | gpulab.kai_hami.kai_memory_limit(40960) }}") == "20889m"


def test_node_memory():
    assert int(render("{{ '40960' | gpulab.kai_hami.kai_node_memory }}")) == 40900


def test_division_for_queue_from_log_lines():
    expected = 1 + gpu_fraction(20480, 40960)
    lines = ["unrelated", LINE.format(gpu=1), LINE.format(gpu=expected), LINE.format(gpu=2).replace("<default-queue>", "<default>")]
    allocated = render("{{ (lines | gpulab.kai_hami.kai_division('default-queue')).gpu.allocated }}", lines=lines)
    assert float(allocated) == pytest.approx(expected)
    parsed = render("{{ text | gpulab.kai_hami.kai_division }}", text="\n".join(lines))
    assert [p["queue"] for p in parsed] == ["default-queue", "default-queue", "default"]
    assert render("{{ lines | gpulab.kai_hami.kai_division('missing') }}", lines=lines) is None


def test_bad_fraction_input_is_a_filter_error():
    with pytest.raises(AnsibleError, match="looks like GiB"):
        render("{{ 20480 | gpulab.kai_hami.kai_gpu_fraction(40) }}")


def test_division_with_an_allocation_finds_the_line_that_shows_it_not_the_last():
    lines = [LINE.format(gpu="205.8").replace("allocated: <205.8>", "allocated: <1>"),
             LINE.format(gpu="1.51"),
             LINE.format(gpu="205.8").replace("allocated: <205.8>", "allocated: <1>")]
    expected = 1 + gpu_fraction(20480, 40960)
    found = render("{{ lines | gpulab.kai_hami.kai_division('default-queue', expected) }}", lines=lines, expected=expected)
    assert found["gpu"]["allocated"] == expected
    assert found["line"].startswith("Resource division result for queue <default-queue>: Queue Priority: <100>")
    last = render("{{ lines | gpulab.kai_hami.kai_division('default-queue') }}", lines=lines)
    assert last["gpu"]["allocated"] == 1
    assert render("{{ lines | gpulab.kai_hami.kai_division('default-queue', 2.5) is none }}", lines=lines) is True


@pytest.mark.parametrize(
    "portion, label, argument, accepted",
    [
        ("'half'", 40960, "portion", "a number in (0, 1]"),
        (0, 40960, "portion", "a number in (0, 1]"),
        (-0.5, 40960, "portion", "a number in (0, 1]"),
        (1.5, 40960, "portion", "a number in (0, 1]"),
        ("true", 40960, "portion", "a number in (0, 1]"),
        ("none", 40960, "portion", "a number in (0, 1]"),
        (0.51, "'forty'", "node_memory_label", "a positive integer of MiB"),
        (0.51, "none", "node_memory_label", "a positive integer of MiB"),
        (0.51, 0, "node_memory_label", "a positive integer of MiB"),
        (0.51, -40960, "node_memory_label", "a positive integer of MiB"),
        (0.51, 40960.5, "node_memory_label", "a positive integer of MiB"),
        (0.51, "''", "node_memory_label", "a positive integer of MiB"),
    ],
)
def test_memory_limit_refuses_bad_input_naming_the_argument(portion, label, argument, accepted):
    with pytest.raises(AnsibleError) as raised:
        render("{{ %s | gpulab.kai_hami.kai_memory_limit(%s) }}" % (portion, label))
    message = str(raised.value)
    assert "kai_memory_limit: %s must be %s" % (argument, accepted) in message, message


@pytest.mark.parametrize("portion, label", [(1, 40960), ("'0.51'", "'40960'"), (0.01, 99)])
def test_memory_limit_accepts_the_edges_of_what_it_accepts(portion, label):
    value = render("{{ %s | gpulab.kai_hami.kai_memory_limit(%s) }}" % (portion, label))
    portion_value, label_value = float(str(portion).strip("'")), int(str(label).strip("'"))
    expected = int(label_value * portion_value)
    assert value == ("%dm" % expected if expected else None)
