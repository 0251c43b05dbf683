# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a one-layer OCI image archive from local files, without a registry or a container engine.

    oci_image.py --name REF --out IMAGE.tar [--file SRC:DEST]... [--link DEST:TARGET]...
                 [--dir DEST]... [--entrypoint ARG]... [--cmd ARG]... [--env NAME=VALUE]...
                 [--label KEY=VALUE]... [--workdir DIR] [--user UID[:GID]]
    oci_image.py --batch    (standard input: a JSON list, each item the arguments of one image)

The archive is an OCI image layout (``oci-layout``, ``index.json``, ``blobs/sha256/...``) in a tar
file, which ``ctr images import`` reads; the image is named REF (``io.containerd.image.name``).
The layer is written byte for byte the same from the same inputs (owner root, time 0), so the
image's digest depends only on its files and its configuration; an archive that already holds
that digest (``IMAGE.tar.digest``) is left as it is. ``IMAGE.tar.inputs`` records the arguments
and each file's identity (device, inode, size, modification time): while they are the same, the
files are not read again (a file changed in the last few seconds is always read, as its time may
not tell two writes apart). Prints one JSON line: name, digest, archive, changed (with --batch, a
JSON list of those, in the order given).
"""

from __future__ import absolute_import, division, print_function

import argparse
import hashlib
import io
import json
import os
import stat
import sys
import tarfile
import time

LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"


def parse_pair(text, flag, sep=":"):
    left, found, right = text.partition(sep)
    if not found or not left or not right:
        raise SystemExit("oci_image.py: %s %r is not LEFT%sRIGHT" % (flag, text, sep))
    return left, right


def normalize(ref):
    """The full name the kubelet asks containerd for (``busybox`` is ``docker.io/library/busybox:latest``;
    ``registry/local/x:v1`` is ``docker.io/registry/local/x:v1``, its first part naming no host)."""
    first, slash, rest = ref.partition("/")
    if not slash:
        ref = "docker.io/library/" + ref
    elif "." not in first and ":" not in first and first != "localhost":
        ref = "docker.io/" + ref
    if "@" not in ref and ":" not in ref.rsplit("/", 1)[-1]:
        ref += ":latest"
    return ref


def add_parents(tar, path, made):
    """Directory entries for every parent of ``path`` not yet in the layer."""
    parts = path.strip("/").split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        parent = "/".join(parts[:depth])
        if parent not in made:
            add_dir(tar, parent, made)


def add_dir(tar, path, made):
    path = path.strip("/")
    add_parents(tar, path, made)
    info = tarfile.TarInfo(path)
    info.type = tarfile.DIRTYPE
    info.mode = 0o1777 if path == "tmp" else 0o755
    tar.addfile(info)
    made.add(path)


def add_file(tar, source, dest, made):
    dest = dest.strip("/")
    add_parents(tar, dest, made)
    info = tarfile.TarInfo(dest)
    info.size = os.path.getsize(source)
    info.mode = stat.S_IMODE(os.stat(source).st_mode) | 0o444
    with open(source, "rb") as handle:
        tar.addfile(info, handle)
    made.add(dest)


def add_link(tar, dest, target, made):
    dest = dest.strip("/")
    add_parents(tar, dest, made)
    info = tarfile.TarInfo(dest)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    info.mode = 0o777
    tar.addfile(info)
    made.add(dest)


def layer_bytes(args):
    """The layer's tar, entries in the order given (parents first), with fixed owner and time."""
    buffer = io.BytesIO()
    made = set()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in args.dir:
            add_dir(tar, path, made)
        for item in args.file:
            source, dest = parse_pair(item, "--file")
            if not os.path.isfile(source):
                raise SystemExit("oci_image.py: --file %s: no such file" % source)
            add_file(tar, source, dest, made)
        for item in args.link:
            dest, target = parse_pair(item, "--link")
            add_link(tar, dest, target, made)
    return buffer.getvalue()


def blob(data, blobs):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs.append((digest, data))
    return {"digest": digest, "size": len(data)}


def dumps(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")


def add_bytes(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


RECENT_NS = 3 * 10**9  # a file modified this recently may be modified again within the same time stamp


def inputs_key(args):
    """A digest of the arguments and of each file's identity (not its content): equal keys, equal layers.
    None when a file is missing or was modified too recently for its identity to be trusted."""
    files = []
    now = time.time_ns()
    for item in args.file:
        source = parse_pair(item, "--file")[0]
        try:
            found = os.stat(source)
        except OSError:
            return None
        if now - found.st_mtime_ns < RECENT_NS:
            return None
        files.append([source, found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns])
    return hashlib.sha256(dumps(dict(args=sorted(vars(args).items()), files=files))).hexdigest()


def recorded_digest(args, key):
    """The manifest digest of an archive written from these very inputs, else None."""
    digest_file, inputs_file = args.out + ".digest", args.out + ".inputs"
    if key is None or not (os.path.isfile(args.out) and os.path.isfile(digest_file) and os.path.isfile(inputs_file)):
        return None
    with open(inputs_file) as handle:
        if handle.read().strip() != key:
            return None
    with open(digest_file) as handle:
        digest, _sep, name = handle.read().strip().partition(" ")
    return digest if name == args.name else None


def write_image(args):
    """Write the archive unless it holds this image already; return (manifest digest, written)."""
    key = inputs_key(args)
    args.name = normalize(args.name)
    known = recorded_digest(args, key)
    if known:
        return known, False
    blobs = []
    layer = layer_bytes(args)
    layer_desc = dict(blob(layer, blobs), mediaType=LAYER_TYPE)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Entrypoint": args.entrypoint or None,
            "Cmd": args.cmd or None,
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"] + args.env,
            "Labels": dict(parse_pair(item, "--label", "=") for item in args.label),
            "WorkingDir": args.workdir,
            "User": args.user,
        },
        "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
        "history": [{"created_by": "oci_image.py (gpulab.kai_hami)"}],
    }
    config["config"] = dict((key, value) for key, value in config["config"].items() if value)
    config_desc = dict(blob(dumps(config), blobs), mediaType=CONFIG_TYPE)
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST_TYPE, "config": config_desc, "layers": [layer_desc]}
    manifest_desc = dict(blob(dumps(manifest), blobs), mediaType=MANIFEST_TYPE)
    tag = args.name.rsplit(":", 1)[1]
    manifest_desc["annotations"] = {"io.containerd.image.name": args.name, "org.opencontainers.image.ref.name": tag}
    index = {"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": [manifest_desc]}
    digest_file = args.out + ".digest"
    if os.path.isfile(args.out) and os.path.isfile(digest_file):
        with open(digest_file) as handle:
            if handle.read().strip() == "%s %s" % (manifest_desc["digest"], args.name):
                record_inputs(args.out, key)
                return manifest_desc["digest"], False
    if os.path.dirname(args.out):
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
    partial = args.out + ".partial"
    with tarfile.open(partial, mode="w", format=tarfile.PAX_FORMAT) as tar:
        add_bytes(tar, "oci-layout", dumps({"imageLayoutVersion": "1.0.0"}))
        add_bytes(tar, "index.json", dumps(index))
        for digest, data in blobs:
            add_bytes(tar, "blobs/sha256/" + digest.split(":", 1)[1], data)
    os.rename(partial, args.out)
    with open(digest_file, "w") as handle:
        handle.write("%s %s\n" % (manifest_desc["digest"], args.name))
    record_inputs(args.out, key)
    return manifest_desc["digest"], True


def record_inputs(out, key):
    if key is not None:
        with open(out + ".inputs", "w") as handle:
            handle.write(key + "\n")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0], allow_abbrev=False)
    parser.add_argument("--name", required=True, help="the image's reference, e.g. docker.io/library/busybox:1.35.0")
    parser.add_argument("--out", required=True, help="the archive to write")
    parser.add_argument("--file", action="append", default=[], help="SRC:DEST, a local file put at DEST")
    parser.add_argument("--link", action="append", default=[], help="DEST:TARGET, a symbolic link")
    parser.add_argument("--dir", action="append", default=[], help="an empty directory")
    parser.add_argument("--entrypoint", action="append", default=[], help="one argument of the entrypoint")
    parser.add_argument("--cmd", action="append", default=[], help="one argument of the command")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE")
    parser.add_argument("--label", action="append", default=[], help="KEY=VALUE")
    parser.add_argument("--workdir", default="")
    parser.add_argument("--user", default="", help="UID[:GID] the image runs as")
    return parser.parse_args(argv)


def write_one(argv):
    args = parse_args(argv)
    digest, written = write_image(args)
    return dict(name=args.name, digest=digest, archive=args.out, changed=written)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--batch"]:
        print(json.dumps([write_one(one) for one in json.load(sys.stdin)]))
    else:
        print(json.dumps(write_one(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
