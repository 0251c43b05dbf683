# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Polling: wait for a condition, or retry a call while KAI's webhooks settle.

Waits that run out raise KubeTimeout, a KubeError, so a module handles them with its API errors.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpulab.kai_hami.plugins.module_utils.exceptions import KubeError

# Errors the queue-validation webhook returns while queue-controller's TLS listener is not
# up yet (KAI issue/PR 1980; KAI's own e2e retries on these two substrings).
WEBHOOK_NOT_READY = ("failed calling webhook", "connection refused")


def wait_argument_spec(timeout, sleep):
    """The wait options of every module that polls the cluster, typed once: ``wait_timeout``
    (whole seconds, 0 reads once) and ``wait_sleep`` (seconds between polls); each module gives
    its defaults. Documented by the gpulab.kai_hami.wait doc fragment."""
    return dict(wait_timeout=dict(type="int", default=timeout), wait_sleep=dict(type="float", default=sleep))


def wait_options_error(params):
    """What is wrong with ``wait_timeout`` and ``wait_sleep`` (None when nothing is)."""
    if params["wait_timeout"] < 0:
        return "wait_timeout must be 0 or more seconds (0 reads once), got %s" % params["wait_timeout"]
    if params["wait_sleep"] <= 0:
        return "wait_sleep must be more than 0 seconds, got %s" % params["wait_sleep"]
    return None


def poll(check, timeout, sleep=1.0, clock=time.monotonic, pause=time.sleep):
    """Call ``check()`` until it returns a truthy value or ``timeout`` seconds pass.

    Returns ``(ok, last_value, elapsed_seconds)``.
    """
    start = clock()
    while True:
        value = check()
        elapsed = clock() - start
        if value:
            return True, value, elapsed
        if elapsed >= timeout:
            return False, value, elapsed
        pause(min(sleep, max(timeout - elapsed, 0.01)))


def wait_until(check, timeout, timeout_error, sleep=1.0, clock=time.monotonic, pause=time.sleep):
    """``poll()``, raising ``timeout_error(last_value, elapsed_seconds)`` (a KubeTimeout) when time runs out.

    Returns ``(value, elapsed_seconds)`` once ``check()`` holds.
    """
    ok, value, elapsed = poll(check, timeout, sleep=sleep, clock=clock, pause=pause)
    if not ok:
        raise timeout_error(value, elapsed)
    return value, elapsed


def is_webhook_not_ready(error):
    """True when a KubeError is the 'webhook not serving yet' kind that KAI users retry.

    Only an answer from the API server counts (it has an HTTP status): an API server that
    does not answer at all is not a webhook settling.
    """
    if error.status is None:
        return False
    text = " ".join(str(part) for part in (error.reason, error.detail) if part).lower()
    return any(marker in text for marker in WEBHOOK_NOT_READY)


def retry_while_webhook_settles(call, timeout, sleep=5.0, clock=time.monotonic, pause=time.sleep):
    """Run ``call()``; retry while it fails with a not-ready webhook, up to ``timeout`` s.

    ``call()`` is a KubeService call, so its errors are KubeErrors. Returns ``(result, retries,
    waited_seconds)``; re-raises any other error, and the last webhook error once the timeout
    has passed.
    """
    start = clock()
    retries = 0
    while True:
        try:
            return call(), retries, clock() - start
        except KubeError as error:
            if not is_webhook_not_ready(error) or clock() - start >= timeout:
                raise
            retries += 1
            pause(sleep)
