# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Health checks: asking a process's health URL, and answering one's own."""

from __future__ import absolute_import, division, print_function

import ssl
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer


def check_health(url, ca_file=None, timeout=1.0):
    """``(ok, detail)``: does ``url`` answer 2xx now?"""
    from urllib.request import urlopen
    from urllib.error import HTTPError, URLError

    context = None
    if url.startswith("https://"):
        context = ssl.create_default_context(cafile=ca_file) if ca_file else ssl._create_unverified_context()
    try:
        response = urlopen(url, timeout=timeout, context=context)
        return 200 <= response.status < 300, "%s answered %d" % (url, response.status)
    except HTTPError as error:
        return False, "%s answered %d" % (url, error.code)
    except (URLError, OSError, ssl.SSLError) as error:
        return False, "%s: %s" % (url, getattr(error, "reason", error))


def serve_health(address, text):
    """Answer ``GET /healthz`` with 200 on ``address`` (host:port) in a background thread."""
    host, _sep, port = address.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = text.encode() if self.path == "/healthz" else b"not found"
            self.send_response(200 if self.path == "/healthz" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):  # pylint: disable=redefined-builtin
            pass

    server = HTTPServer((host, int(port)), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server
