"""kai_queue against a real API server with KAI v0.17.0's Queue CRD."""

import pytest
from kubernetes.dynamic.exceptions import NotFoundError

UNLIMITED = {"quota": -1, "limit": -1, "over_quota_weight": 1}
LAB_QUEUES = [
    dict(name="default", resources=dict(cpu=UNLIMITED, memory=UNLIMITED, gpu=UNLIMITED)),
    dict(name="default-queue", parent_queue="default", resources=dict(cpu=UNLIMITED, memory=UNLIMITED, gpu=UNLIMITED)),
]


def queues_api(kube):
    return kube.resources.get(api_version="scheduling.run.ai/v2", kind="Queue")


def read(kube, name):
    try:
        return queues_api(kube).get(name=name).to_dict()
    except NotFoundError:
        return None


def delete_all(kube, names):
    for name in names:
        try:
            queues_api(kube).delete(name=name)
        except NotFoundError:
            pass


@pytest.fixture
def clean(kube):
    created = []
    yield created
    delete_all(kube, reversed(created))


def test_lab_hierarchy_create_then_noop(module, kube, clean):
    clean.extend(q["name"] for q in LAB_QUEUES)
    # children listed first: the module must still apply the parent first
    result = module("kai_queue", queues=list(reversed(LAB_QUEUES)))
    assert result["changed"] is True, result
    assert [q["name"] for q in result["queues"]] == ["default", "default-queue"]
    child = read(kube, "default-queue")
    assert child["spec"]["parentQueue"] == "default"
    for resource in ("cpu", "gpu", "memory"):
        assert child["spec"]["resources"][resource] == {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    version = child["metadata"]["resourceVersion"]

    again = module("kai_queue", queues=LAB_QUEUES)
    assert again["changed"] is False, again
    assert {q["action"] for q in again["queues"]} == {"unchanged"}
    assert read(kube, "default-queue")["metadata"]["resourceVersion"] == version


def test_defaults_avoid_the_limit_zero_trap(module, kube, clean):
    clean.append("plain")
    module("kai_queue", name="plain")
    spec = read(kube, "plain")["spec"]["resources"]
    assert all(spec[r] == {"quota": 0, "limit": -1, "overQuotaWeight": 1} for r in ("cpu", "gpu", "memory"))


def test_update_in_check_mode_changes_nothing_then_diff_shows_it(module, kube, clean):
    clean.append("team-a")
    module("kai_queue", name="team-a", resources=dict(gpu=dict(quota=1, limit=4)))
    before = read(kube, "team-a")

    checked = module("kai_queue", check=True, name="team-a", resources=dict(gpu=dict(quota=2, limit=4)))
    assert checked["changed"] is True
    assert checked["queues"][0]["action"] == "updated"
    assert checked["queues"][0]["object"]["spec"]["resources"]["gpu"]["quota"] == 2  # the server's dry-run answer
    # fields only the API server sets: a locally computed answer could not have them
    assert checked["queues"][0]["object"]["metadata"]["uid"] == before["metadata"]["uid"]
    assert any(f.get("manager") == "gpulab.kai_hami" for f in checked["queues"][0]["object"]["metadata"]["managedFields"])
    after_check = read(kube, "team-a")
    assert after_check["spec"] == before["spec"]
    assert after_check["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

    updated = module("kai_queue", diff=True, name="team-a", resources=dict(gpu=dict(quota=2, limit=4)))
    assert updated["changed"] is True
    (diff,) = updated["diff"]
    assert diff["before"]["spec"]["resources"]["gpu"]["quota"] == 1
    assert diff["after"]["spec"]["resources"]["gpu"]["quota"] == 2
    assert read(kube, "team-a")["spec"]["resources"]["gpu"]["quota"] == 2


def test_create_in_check_mode_creates_nothing(module, kube):
    result = module("kai_queue", check=True, name="never-made")
    assert result["changed"] is True and result["queues"][0]["action"] == "created"
    # the server's dry-run answer: a uid and a creation time it generated, though nothing is stored
    assert result["queues"][0]["object"]["metadata"]["uid"] and result["queues"][0]["object"]["metadata"]["creationTimestamp"]
    assert read(kube, "never-made") is None


def test_missing_parent_is_refused_and_nothing_is_created(module, kube):
    result = module("kai_queue", name="orphan", parent_queue="no-such-parent")
    assert result.get("failed") is True
    assert "no-such-parent" in result["msg"] and "neither exists nor is listed" in result["msg"]
    assert read(kube, "orphan") is None


def test_delete_refuses_parent_with_children_then_children_first(module, kube, clean):
    clean.extend(["p", "p-c1", "p-c2"])
    module("kai_queue", queues=[dict(name="p"), dict(name="p-c1", parent_queue="p"), dict(name="p-c2", parent_queue="p")])

    refused = module("kai_queue", name="p", state="absent")
    assert refused.get("failed") is True
    assert "has child queues" in refused["msg"] and "p-c1" in refused["msg"]
    assert read(kube, "p") is not None

    removed = module("kai_queue", queues=[dict(name="p"), dict(name="p-c1", parent_queue="p"), dict(name="p-c2", parent_queue="p")], state="absent")
    assert removed["changed"] is True
    order = [q["name"] for q in removed["queues"]]
    assert order.index("p") > order.index("p-c1") and order.index("p") > order.index("p-c2")
    assert all(read(kube, name) is None for name in ("p", "p-c1", "p-c2"))

    gone = module("kai_queue", name="p", state="absent")
    assert gone["changed"] is False and gone["queues"][0]["action"] == "absent"


def test_force_deletes_descendants(module, kube, clean):
    clean.extend(["f", "f-c", "f-c-g"])
    module("kai_queue", queues=[dict(name="f"), dict(name="f-c", parent_queue="f"), dict(name="f-c-g", parent_queue="f-c")])
    result = module("kai_queue", name="f", state="absent", force=True)
    assert [q["name"] for q in result["queues"]] == ["f-c-g", "f-c", "f"]
    assert all(read(kube, name) is None for name in ("f", "f-c", "f-c-g"))


def test_bulk_hierarchy_of_50_in_one_task(module, kube, clean):
    # one root, 7 departments, 42 teams: 50 queues, children listed before parents
    teams = [dict(name="team-%02d" % i, parent_queue="dept-%d" % (i % 7), resources=dict(gpu=dict(quota=i % 3))) for i in range(42)]
    depts = [dict(name="dept-%d" % d, parent_queue="org") for d in range(7)]
    queues = teams + depts + [dict(name="org")]
    assert len(queues) == 50
    clean.extend(q["name"] for q in reversed(queues))
    result = module("kai_queue", queues=queues)
    assert result["changed"] is True and len(result["queues"]) == 50
    names = [q["metadata"]["name"] for q in queues_api(kube).get().to_dict()["items"]]
    assert set(q["name"] for q in queues) <= set(names)
    assert read(kube, "team-10")["spec"]["parentQueue"] == "dept-3"
    assert read(kube, "team-10")["spec"]["resources"]["gpu"]["quota"] == 10 % 3
    assert module("kai_queue", queues=queues)["changed"] is False
