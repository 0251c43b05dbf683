# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A STAND-IN for the kai-resource-isolator's mutating webhook (behaviour of isolator v1.1.0).

The sim platform cannot build the real webhook (its Go module is not served by the module
proxy), so it runs this program of ours behind a real MutatingWebhookConfiguration. It was
written from the isolator's documented behaviour, not from its code, and it says that it is a
stand-in in its first log line. It serves:

* ``GET /healthz`` -> 200 ``ok``
* ``POST /mutate`` -> an ``admission.k8s.io/v1`` AdmissionReview with a JSON Patch that mounts
  HAMi-core (``/usr/local/vgpu`` and the ``/etc/ld.so.preload`` preload) into the target
  container of a pod carrying a ``gpu-fraction`` or ``gpu-memory`` annotation.

Flags as the real program's (Go ``flag``: ``-name value``, ``-name=value`` or ``--name``):
``--listen`` (default ``:8443``), ``--tls-cert-file``, ``--tls-private-key-file``,
``--container-vgpu-mount`` (default: env ``CONTAINER_VGPU_MOUNT``, else ``/usr/local/vgpu``).
"""

from __future__ import absolute_import, division, print_function

import argparse
import base64
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANNOTATION_KEYS = ("gpu-fraction", "gpu-memory")
OPT_OUT_ANNOTATION = "kai-resource-isolator.io/inject"
CONTAINER_NAME_ANNOTATION = "gpu-fraction-container-name"
VGPU_VOLUME = "kai-resource-isolator-vgpu"
CONTAINERS_VOLUME = "kai-resource-isolator-containers"
LOCK_VOLUME = "kai-resource-isolator-vgpulock"
VGPU_PATH = "/usr/local/vgpu"
PRELOAD_PATH = "/etc/ld.so.preload"
CONTAINERS_PATH = "/usr/local/vgpu/containers"
LOCK_PATH = "/tmp/vgpulock"
DEFAULT_MOUNT = "/usr/local/vgpu"
STANDIN_NOTICE = (
    "stand-in: this is gpulab.kai_hami's stand-in for the kai-resource-isolator webhook "
    "(behaviour of isolator v1.1.0), not the isolator's own program"
)

_log_lock = threading.Lock()


def log(message):
    """One line in Go's standard log format (``2006/01/02 15:04:05 message``)."""
    with _log_lock:
        sys.stdout.write("%s %s\n" % (time.strftime("%Y/%m/%d %H:%M:%S"), message))
        sys.stdout.flush()


class Denied(Exception):
    """The request is refused; ``code`` is the HTTP-like status put in the response."""

    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


def _host_path(name, path):
    return {"name": name, "hostPath": {"path": path, "type": "DirectoryOrCreate"}}


def find_target(pod):
    """``(kind, index, container)`` of the container to change; raise Denied when there is none.

    ``gpu-fraction-container-name`` names it (the first init container with that name, else the
    first regular one); without the annotation it is the first regular container.
    """
    spec = pod.get("spec") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    wanted = annotations.get(CONTAINER_NAME_ANNOTATION)
    if wanted is not None:
        for kind in ("initContainers", "containers"):
            for index, container in enumerate(spec.get(kind) or []):
                if container.get("name") == wanted:
                    return kind, index, container
        raise Denied(500, "container with name %s not found for fraction request" % wanted)
    containers = spec.get("containers") or []
    if not containers:
        raise Denied(500, "pod has no containers")
    return "containers", 0, containers[0]


def _adds(path, existing, items):
    """JSON Patch ``add`` operations: the whole array when it is empty, else one per item."""
    if not items:
        return []
    if not existing:
        return [{"op": "add", "path": path, "value": items}]
    return [{"op": "add", "path": path + "/-", "value": item} for item in items]


def patch_for(pod, mount=DEFAULT_MOUNT):
    """The JSON Patch operations for a triggered pod (volumes, then mounts, then env)."""
    kind, index, container = find_target(pod)
    regular = kind == "containers"
    spec = pod.get("spec") or {}

    volumes = [_host_path(VGPU_VOLUME, mount)]
    if regular:
        volumes += [_host_path(CONTAINERS_VOLUME, mount.rstrip("/") + "/containers"), _host_path(LOCK_VOLUME, LOCK_PATH)]
    present = set(v.get("name") for v in spec.get("volumes") or [])
    new_volumes = [v for v in volumes if v["name"] not in present]

    mounts = [
        {"name": VGPU_VOLUME, "mountPath": VGPU_PATH},
        {"name": VGPU_VOLUME, "mountPath": PRELOAD_PATH, "subPath": "ld.so.preload", "readOnly": True},
    ]
    if regular:
        mounts += [{"name": CONTAINERS_VOLUME, "mountPath": CONTAINERS_PATH}, {"name": LOCK_VOLUME, "mountPath": LOCK_PATH}]
    have = set((m.get("name"), m.get("mountPath"), m.get("subPath") or "") for m in container.get("volumeMounts") or [])
    new_mounts = [m for m in mounts if (m["name"], m["mountPath"], m.get("subPath") or "") not in have]

    new_env = []
    if regular:
        env = [
            {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
            {"name": "CONTAINER_NAME", "value": container.get("name", "")},
            {"name": "CONTAINER_VGPU_MOUNT", "value": mount},
        ]
        names = set(e.get("name") for e in container.get("env") or [])
        new_env = [e for e in env if e["name"] not in names]

    base = "/spec/%s/%d" % (kind, index)
    return (
        _adds("/spec/volumes", spec.get("volumes"), new_volumes)
        + _adds(base + "/volumeMounts", container.get("volumeMounts"), new_mounts)
        + _adds(base + "/env", container.get("env"), new_env)
    )


def review(body, mount=DEFAULT_MOUNT):
    """``(http_status, response dict or error text, log line)`` for one AdmissionReview body."""
    try:
        request_review = json.loads(body)
        request = request_review["request"]
        uid = request["uid"]
    except (ValueError, TypeError, KeyError):
        return 400, "invalid AdmissionReview: request.uid is required", "mutate rejected: invalid AdmissionReview"
    if not uid:
        return 400, "invalid AdmissionReview: request.uid is required", "mutate rejected: invalid AdmissionReview"
    namespace = request.get("namespace", "")
    response = {"uid": uid, "allowed": True}
    raw = request.get("object")
    prefix = "mutate uid=%s ns=%s" % (uid, namespace)
    if not isinstance(raw, dict) or not isinstance(raw.get("metadata", {}), dict) or not isinstance(raw.get("spec", {}), dict):
        response.update(allowed=False, status={"code": 400, "message": "failed to decode pod"})
        return 200, _envelope(response), "%s pod= denied: failed to decode pod" % prefix
    pod = raw
    name = (pod.get("metadata") or {}).get("name") or (pod.get("metadata") or {}).get("generateName") or ""
    prefix = "%s pod=%s" % (prefix, name)
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if str(annotations.get(OPT_OUT_ANNOTATION, "")).lower() == "false":
        return 200, _envelope(response), "%s skipped: annotation %s=false" % (prefix, OPT_OUT_ANNOTATION)
    if not any(key in annotations for key in ANNOTATION_KEYS):
        return 200, _envelope(response), '%s skipped: missing annotations "gpu-fraction" or "gpu-memory"' % prefix
    try:
        operations = patch_for(pod, mount)
    except Denied as denied:
        response.update(allowed=False, status={"code": denied.code, "message": denied.message})
        return 200, _envelope(response), "%s denied: %s" % (prefix, denied.message)
    patch = json.dumps(operations, separators=(",", ":")).encode("utf-8") if operations else b""
    if patch:
        response.update(patchType="JSONPatch", patch=base64.b64encode(patch).decode("ascii"))
    return 200, _envelope(response), "%s injected: patchBytes=%d" % (prefix, len(patch))


def _envelope(response):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


class Handler(BaseHTTPRequestHandler):
    """/healthz and /mutate."""

    server_version = "kai-resource-isolator-standin"
    mount = DEFAULT_MOUNT

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        """Requests are logged by the handlers themselves."""

    def _send(self, status, payload, content_type="application/json"):
        data = payload if isinstance(payload, bytes) else (
            json.dumps(payload).encode("utf-8") if isinstance(payload, dict) else str(payload).encode("utf-8"))
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self):
        """The request's path without its query (the API server adds ``?timeout=10s``)."""
        return self.path.split("?", 1)[0]

    def do_GET(self):
        if self._route() == "/healthz":
            self._send(200, b"ok", "text/plain")
        elif self._route() == "/mutate":
            self._send(405, b"method not allowed", "text/plain")
        else:
            self._send(404, b"not found", "text/plain")

    def do_POST(self):
        if self._route() != "/mutate":
            self._send(404 if self._route() != "/healthz" else 405, b"not found", "text/plain")
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        status, payload, line = review(body, self.mount)
        log(line)
        if status != 200:
            self._send(status, payload, "text/plain")
        else:
            self._send(200, payload)

    def _not_allowed(self):
        self._send(405, b"method not allowed", "text/plain")

    do_PUT = do_DELETE = do_PATCH = _not_allowed


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0], allow_abbrev=False)
    parser.add_argument("--listen", "-listen", default=":8443", help="address to listen on (default :8443)")
    parser.add_argument("--tls-cert-file", "-tls-cert-file", default="", help="TLS certificate file")
    parser.add_argument("--tls-private-key-file", "-tls-private-key-file", default="", help="TLS private key file")
    parser.add_argument(
        "--container-vgpu-mount", "-container-vgpu-mount",
        default=os.environ.get("CONTAINER_VGPU_MOUNT") or DEFAULT_MOUNT,
        help="host directory with HAMi-core (default: $CONTAINER_VGPU_MOUNT, else /usr/local/vgpu)",
    )
    return parser.parse_args(argv)


def serve(args):
    """Check the certificate files, then serve until killed; returns an exit code."""
    for flag, path in (("--tls-cert-file", args.tls_cert_file), ("--tls-private-key-file", args.tls_private_key_file)):
        if not path:
            log("%s is required" % flag)
            return 2
        try:
            with open(path, "rb"):
                pass
        except OSError as error:
            log("cannot read %s %s: %s" % (flag, path, error.strerror or error))
            return 1
    host, _sep, port = args.listen.rpartition(":")
    try:
        port = int(port)
    except ValueError:
        log("--listen %r is not host:port" % args.listen)
        return 2
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(args.tls_cert_file, args.tls_private_key_file)
    except (OSError, ssl.SSLError) as error:
        log("cannot load the TLS key pair: %s" % error)
        return 1
    Handler.mount = args.container_vgpu_mount
    try:
        server = ThreadingHTTPServer((host.strip("[]") or "", port), Handler)
    except OSError as error:
        log("cannot listen on %s: %s" % (args.listen, error.strerror or error))
        return 1
    server.daemon_threads = True
    # The handshake happens in the request thread, so a slow client cannot hold the others.
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    log(STANDIN_NOTICE)
    log("webhook starting listen=%s containerVgpuMount=%s annotationKeys=%s"
        % (args.listen, args.container_vgpu_mount, "|".join(ANNOTATION_KEYS)))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def main(argv=None):
    return serve(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
