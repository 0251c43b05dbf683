"""The waiter (with a fake clock) and KubeService.pod_log (with a fake API): retries, timeouts,
and which API errors count as "no log yet"."""

import pytest

from ansible_collections.gpulab.kai_hami.plugins.module_utils.client import DynamicApiError
from ansible_collections.gpulab.kai_hami.plugins.module_utils.service import KubeService
from ansible_collections.gpulab.kai_hami.plugins.module_utils.waiter import poll, retry_while_webhook_settles


class Clock(object):
    """A clock that moves only when the code under test sleeps."""

    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def pause(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


class ApiError(DynamicApiError):
    def __init__(self, body, status=500):  # pylint: disable=super-init-not-called
        self.body = body
        self.status = status

    def __str__(self):
        return self.body


def test_poll_returns_as_soon_as_the_check_holds():
    clock, answers = Clock(), iter([0, 0, "done"])
    ok, value, waited = poll(lambda: next(answers), timeout=60, sleep=5, clock=clock, pause=clock.pause)
    assert (ok, value, waited) == (True, "done", 10.0)


def test_poll_stops_at_its_timeout():
    clock, calls = Clock(), []
    ok, value, waited = poll(lambda: calls.append(1), timeout=12, sleep=5, clock=clock, pause=clock.pause)
    assert ok is False and waited == 12.0
    assert clock.sleeps == [5, 5, 2] and len(calls) == 4


def test_retry_while_webhook_settles_retries_then_succeeds():
    clock = Clock()
    answers = [ApiError('failed calling webhook "queue-validation.kai.scheduler": connection refused'), ApiError("dial tcp: connection refused"), "ok"]

    def call():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert retry_while_webhook_settles(call, timeout=60, sleep=5, clock=clock, pause=clock.pause) == ("ok", 2, 10.0)


def test_retry_while_webhook_settles_gives_up_at_the_timeout_with_the_last_error():
    clock = Clock()

    def call():
        raise ApiError('failed calling webhook "queue-validation.kai.scheduler" at %s' % clock.now)

    with pytest.raises(ApiError, match="at 20.0"):
        retry_while_webhook_settles(call, timeout=20, sleep=5, clock=clock, pause=clock.pause)


def test_retry_while_webhook_settles_reraises_other_errors_at_once():
    clock = Clock()

    def call():
        raise ApiError('admission webhook "queue-validation.kai.scheduler" denied the request: quota above limit', status=403)

    with pytest.raises(ApiError, match="denied the request"):
        retry_while_webhook_settles(call, timeout=60, sleep=5, clock=clock, pause=clock.pause)
    assert clock.sleeps == []


class Status(Exception):
    def __init__(self, status):
        Exception.__init__(self, "status %d" % status)
        self.status = status


class FakeCore(object):
    def __init__(self, answer):
        self.answer = answer

    def read_namespaced_pod_log(self, name, namespace, **kwargs):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def service_answering(answer):
    service = KubeService.__new__(KubeService)
    service._core_api = lambda: FakeCore(answer)  # pylint: disable=protected-access
    return service


@pytest.mark.parametrize("status", [400, 404])
def test_pod_log_reads_no_log_yet_as_none(status):
    assert service_answering(Status(status)).pod_log("p", "ns") is None


@pytest.mark.parametrize("status", [401, 403, 500])
def test_pod_log_surfaces_other_errors(status):
    with pytest.raises(Status):
        service_answering(Status(status)).pod_log("p", "ns")


def test_pod_log_returns_the_text():
    assert service_answering("line 1\nline 2").pod_log("p", "ns", tail_lines=5) == "line 1\nline 2"
