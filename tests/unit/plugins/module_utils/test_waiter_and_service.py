"""The waiter (with a fake clock) and KubeService.pod_log (with a fake API): retries, timeouts,
and which API errors count as "no log yet"."""

import json

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import api_exception
from urllib3.exceptions import MaxRetryError

from ansible_collections.gpulab.kai_hami.plugins.module_utils.exceptions import KubeError, KubeTimeout
from ansible_collections.gpulab.kai_hami.plugins.module_utils.service import KubeService, client_error
from ansible_collections.gpulab.kai_hami.plugins.module_utils.waiter import poll, retry_while_webhook_settles, wait_until


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


def ApiError(message, status=500, reason="Internal Server Error"):  # pylint: disable=invalid-name
    """What KubeService raises when the API server answers ``status`` with this Status message."""
    body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": status})
    return client_error(api_exception(ApiException(status=status, reason=reason, body=body)), "apply", "Queue", "q")


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

    with pytest.raises(KubeError, match="at 20.0"):
        retry_while_webhook_settles(call, timeout=20, sleep=5, clock=clock, pause=clock.pause)


def test_retry_while_webhook_settles_reraises_other_errors_at_once():
    clock = Clock()

    def call():
        raise ApiError('admission webhook "queue-validation.kai.scheduler" denied the request: quota above limit', status=403)

    with pytest.raises(KubeError, match="denied the request"):
        retry_while_webhook_settles(call, timeout=60, sleep=5, clock=clock, pause=clock.pause)
    assert clock.sleeps == []


def test_retry_while_webhook_settles_does_not_retry_an_api_server_that_does_not_answer():
    clock = Clock()
    refused = MaxRetryError(None, "/apis/scheduling.run.ai/v2/queues/q", reason=ConnectionRefusedError(111, "Connection refused"))

    def call():
        raise client_error(refused, "apply", "Queue", "q")

    with pytest.raises(KubeError, match="no answer from the API server"):
        retry_while_webhook_settles(call, timeout=60, sleep=5, clock=clock, pause=clock.pause)
    assert clock.sleeps == []


def test_wait_until_raises_the_timeout_error_with_the_last_value():
    clock, answers = Clock(), iter([0, 1, 2, 3, 4])

    def timed_out(value, elapsed):
        return KubeTimeout("Queue", name="parent", timeout=12, detail="last %s after %s s" % (value, elapsed))

    with pytest.raises(KubeTimeout) as raised:
        wait_until(lambda: next(answers) > 9, 12, timed_out, sleep=5, clock=clock, pause=clock.pause)
    assert str(raised.value) == "wait for Queue parent: timed out after 12 s: last False after 12.0 s"
    assert raised.value.status is None and raised.value.reason == "timed out after 12 s"


def test_wait_until_returns_the_value_when_the_check_holds():
    clock, answers = Clock(), iter([None, "ready"])
    assert wait_until(lambda: next(answers), 12, None, sleep=5, clock=clock, pause=clock.pause) == ("ready", 5.0)


def read_error(status, reason, message):
    body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": status})
    return ApiException(status=status, reason=reason, body=body)


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


@pytest.mark.parametrize("status, reason", [(400, "Bad Request"), (404, "Not Found")])
def test_pod_log_reads_no_log_yet_as_none(status, reason):
    assert service_answering(read_error(status, reason, "container not started")).pod_log("p", "ns") is None


@pytest.mark.parametrize("status, reason", [(401, "Unauthorized"), (403, "Forbidden"), (500, "Internal Server Error")])
@pytest.mark.parametrize("previous, operation", [(False, "read the log of"), (True, "read the previous log of")])
def test_pod_log_raises_other_errors_naming_the_pod(status, reason, previous, operation):
    message = 'pods "p" is forbidden: cannot get resource "pods/log" (status %d)' % status
    with pytest.raises(KubeError) as raised:
        service_answering(read_error(status, reason, message)).pod_log("p", "ns", previous=previous)
    assert str(raised.value) == "%s Pod ns/p: %d %s: %s" % (operation, status, reason, message)
    assert (raised.value.kind, raised.value.name, raised.value.namespace, raised.value.status) == ("Pod", "p", "ns", status)


def test_pod_log_returns_the_text():
    assert service_answering("line 1\nline 2").pod_log("p", "ns", tail_lines=5) == "line 1\nline 2"
