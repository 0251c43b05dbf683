"""Install kubernetes.core from the `ansible` bundle wheel, without Galaxy.

Downloads the pinned wheel with pip from PyPI (no dependencies), checks its sha256, and unpacks
only ansible_collections/kubernetes/core into the given collections directory. It ships with the
collection, for where Ansible Galaxy cannot be reached:

usage: install_kubernetes_core.py COLLECTIONS_DIR
           the versions pinned in the collection's versions.env, the wheel kept in
           ~/.cache/gpulab-kai-hami/wheels; e.g. ~/.ansible/collections
       install_kubernetes_core.py VERSION SHA256 EXPECTED_CORE_VERSION WHEEL_DIR COLLECTIONS_DIR
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

PREFIX = "ansible_collections/kubernetes/core/"


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def main(version, expected_sha, core_version, wheel_dir, collections_dir):
    wheel = os.path.join(wheel_dir, "ansible-%s-py3-none-any.whl" % version)
    if not os.path.exists(wheel) or sha256(wheel) != expected_sha:
        os.makedirs(wheel_dir, exist_ok=True)
        subprocess.check_call(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "-d", wheel_dir, "ansible==%s" % version]
        )
    actual = sha256(wheel)
    if actual != expected_sha:
        sys.exit("%s: sha256 %s does not match the pinned %s" % (wheel, actual, expected_sha))
    target = os.path.join(collections_dir, PREFIX)
    if os.path.isdir(target):
        shutil.rmtree(target)
    with zipfile.ZipFile(wheel) as archive:
        members = [name for name in archive.namelist() if name.startswith(PREFIX)]
        archive.extractall(collections_dir, members)
    with open(os.path.join(target, "MANIFEST.json")) as handle:
        found = json.load(handle)["collection_info"]["version"]
    if found != core_version:
        sys.exit("ansible %s carries kubernetes.core %s, expected %s" % (version, found, core_version))
    print("kubernetes.core %s from ansible %s -> %s" % (found, version, target))


def pinned():
    """ANSIBLE_BUNDLE_VERSION, ANSIBLE_BUNDLE_SHA256 and KUBERNETES_CORE_VERSION from the collection's versions.env."""
    found = {}
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "versions.env")) as handle:
        for line in handle:
            key, _sep, value = line.strip().partition("=")
            if key and not key.startswith("#"):
                found[key.strip()] = value.split("#")[0].strip()
    return found["ANSIBLE_BUNDLE_VERSION"], found["ANSIBLE_BUNDLE_SHA256"], found["KUBERNETES_CORE_VERSION"]


if __name__ == "__main__":
    if len(sys.argv) == 2:
        main(*pinned(), os.path.join(os.path.expanduser("~"), ".cache", "gpulab-kai-hami", "wheels"), sys.argv[1])
    elif len(sys.argv) == 6:
        main(*sys.argv[1:])
    else:
        sys.exit(__doc__)
