"""The kai_parts lookup: KAI's part names, one key or all of them."""

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.gpulab.kai_hami.plugins.lookup.kai_parts import LookupModule


def test_a_key_gives_its_value_and_none_gives_every_name():
    lookup = LookupModule()
    assert lookup.run(["reservation_namespace", "scheduler_name"]) == ["kai-resource-reservation", "kai-scheduler"]
    (everything,) = lookup.run([])
    assert everything["workloads"] == ["admission", "binder", "kai-operator", "kai-scheduler-default", "pod-grouper",
                                       "podgroup-controller", "queue-controller"]
    assert [q["name"] for q in everything["chart_default_queues"]] == ["default-parent-queue", "default-queue"]


def test_the_answer_is_a_copy():
    lookup = LookupModule()
    lookup.run([])[0]["chart_default_queues"][0]["resources"]["gpu"]["quota"] = 5
    assert lookup.run(["chart_default_queues"])[0][0]["resources"]["gpu"]["quota"] == 0


def test_an_unknown_key_is_refused_naming_the_known_ones():
    with pytest.raises(AnsibleLookupError) as error:
        LookupModule().run(["queues"])
    assert "kai_parts has no queues; it knows chart_default_queues, isolator, namespace," in str(error.value)


def test_the_isolator_names_follow_its_release():
    (default,) = LookupModule().run(["isolator"])
    assert default == {"webhook": "kai-resource-isolator-webhook", "libsync": "kai-resource-isolator-libsync",
                       "webhook_configuration": "kai-resource-isolator-mutating", "injected_volume": "kai-resource-isolator-vgpu"}
    (mine,) = LookupModule().run(["isolator"], isolator_release="lab-iso")
    # the chart names its objects after the release; the webhook's injected volume keeps its name
    assert mine == {"webhook": "lab-iso-webhook", "libsync": "lab-iso-libsync", "webhook_configuration": "lab-iso-mutating",
                    "injected_volume": "kai-resource-isolator-vgpu"}


@pytest.mark.parametrize("kwargs, message", [
    (dict(release="x"), "kai_parts takes no option release; it takes isolator_release"),
    (dict(isolator_release=""), "kai_parts: isolator_release must be a release name, got ''"),
])
def test_a_wrong_option_is_refused(kwargs, message):
    with pytest.raises(AnsibleLookupError) as error:
        LookupModule().run(["isolator"], **kwargs)
    assert message in str(error.value)
