# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container-runtime log format kwok serves as a pod's log, and running a program into it."""

from __future__ import absolute_import, division, print_function

import datetime
import signal
import subprocess
import sys
import threading
import time


def cri_line(text, stream=b"stdout"):
    """One line of the container-runtime log format kwok reads (``<RFC3339Nano> stdout F text``)."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ").encode()
    if isinstance(text, str):
        text = text.encode("utf-8", "replace")
    return now + b" " + stream + b" F " + text.rstrip(b"\r\n") + b"\n"


class CriLog(object):
    """A log file in the container-runtime format, safe to write from several threads."""

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        self._handle = open(path, "ab", buffering=0)

    def write(self, text):
        with self._lock:
            self._handle.write(cri_line(text))

    def close(self):
        self._handle.close()


def say(text):
    """The agent's own log line (its stdout is a CRI log of its own when run under ``run``)."""
    sys.stdout.write("%s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), text))
    sys.stdout.flush()


def pump(stream, log):
    """Copy a child's output into a CRI log, line by line, until it closes."""
    for line in iter(stream.readline, b""):
        log.write(line)


def run(log_path, argv):
    """Run ``argv`` with its output in ``log_path`` (CRI format); return its exit code."""
    log = CriLog(log_path)
    try:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as error:
        log.write("cannot start %s: %s" % (argv[0], error))
        return 127

    def forward(signum, _frame):
        try:
            child.send_signal(signum)
        except OSError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    pump(child.stdout, log)
    code = child.wait()
    log.close()
    return code if code >= 0 else 128 - code
