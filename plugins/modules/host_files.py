#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: host_files
short_description: Several small text files (and their directories) on the host, each checked and written in one call
version_added: 0.3.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - Reads each file of O(files) and writes it only where its content or its mode differs from the
    one given, atomically (a temporary file in the same directory, then a rename). The others are
    left as they are, their modification time too.
  - One call does what one M(ansible.builtin.copy) task per file does for text content, so a role
    that writes several configuration files pays for one module run instead of one per file. Every
    file is still read and compared on every run, so a changed value or a file edited by hand is
    written again.
  - Render templates on the controller (C(lookup('ansible.builtin.template', ...))) and pass the
    result as O(files[].content).
  - O(directories) are made first, where missing, so that files may go into them; a directory that
    exists is left as it is. A file's directory must exist or be among O(directories); otherwise the
    whole call is refused, and nothing is made or written.
attributes:
  check_mode:
    support: full
    details: Reports the files that would be written, and writes none.
  diff_mode:
    support: full
    details: One before/after pair per file written (or that would be written).
extends_documentation_fragment:
  - gpulab.kai_hami.attributes
options:
  directories:
    description: Directories to make where they are missing (with their parents), before the files.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The directory's absolute path.
        type: path
        required: true
      mode:
        description: Its permissions when it is made, in octal as a string (C("0700")); its parents get the default ones.
        type: str
        default: "0755"
  files:
    description: The files.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: The file's absolute path.
        type: path
        required: true
      content:
        description: Its whole content, text.
        type: str
        required: true
      mode:
        description: Its permissions, in octal as a string (C("0600")).
        type: str
        default: "0644"
"""

EXAMPLES = r"""
- name: Write containerd's and the kubelet's configuration
  gpulab.kai_hami.host_files:
    files:
      - path: /var/lib/node-1/containerd/config.toml
        content: "{{ lookup('ansible.builtin.template', 'containerd.toml.j2') }}"
        mode: "0600"
      - path: /var/lib/node-1/kubelet/config.yaml
        content: "{{ lookup('ansible.builtin.template', 'kubelet.yaml.j2') }}"
        mode: "0600"
  register: node_files

- name: Say which were written
  ansible.builtin.debug:
    msg: "{{ node_files.written }}"
"""

RETURN = r"""
made:
  description: The directories made (in check mode, those that would be), in the order given.
  returned: always
  type: list
  elements: str
  sample: ["/var/lib/node-1/containerd"]
written:
  description: The paths written (in check mode, those that would be), in the order given.
  returned: always
  type: list
  elements: str
  sample: ["/var/lib/node-1/containerd/config.toml"]
checked:
  description: How many files were read and compared.
  returned: always
  type: int
  sample: 6
"""

import os
import re
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text

MODE = re.compile(r"^0?[0-7]{3}$")


def problems(directories, files):
    """What is wrong with the directories and files asked for, each naming the entry and the field; empty when nothing is."""
    found = []
    for index, entry in enumerate(directories):
        where = "directories[%d]" % index
        if not os.path.isabs(entry["path"]):
            found.append("%s.path must be absolute, got %r" % (where, entry["path"]))
        elif os.path.lexists(entry["path"]) and not os.path.isdir(entry["path"]):
            found.append("%s.path %s exists and is not a directory" % (where, entry["path"]))
        if not MODE.match(entry["mode"] or ""):
            found.append("%s.mode must be octal permissions such as \"0755\", got %r" % (where, entry["mode"]))
    made = set(os.path.normpath(entry["path"]) for entry in directories if os.path.isabs(entry["path"]))
    seen = set()
    for index, entry in enumerate(files):
        where = "files[%d]" % index
        if not os.path.isabs(entry["path"]):
            found.append("%s.path must be absolute, got %r" % (where, entry["path"]))
            continue
        if entry["path"] in seen:
            found.append("%s.path %s is given twice" % (where, entry["path"]))
        seen.add(entry["path"])
        if not MODE.match(entry["mode"] or ""):
            found.append("%s.mode must be octal permissions such as \"0644\", got %r" % (where, entry["mode"]))
        directory = os.path.dirname(entry["path"])
        if not os.path.isdir(directory) and os.path.normpath(directory) not in made:
            found.append("%s.path: directory %s does not exist and is not among directories" % (where, directory))
        elif os.path.lexists(entry["path"]) and not os.path.isfile(entry["path"]):
            found.append("%s.path %s exists and is not a regular file" % (where, entry["path"]))
    return found


def current(path):
    """(content bytes, mode bits), or (None, None) where the file does not exist."""
    try:
        with open(path, "rb") as handle:
            content = handle.read()
        return content, stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return None, None


def write(path, content, mode):
    """Write the file through a temporary file in its directory and a rename."""
    handle, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=os.path.dirname(path))
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main():
    module = AnsibleModule(
        argument_spec=dict(
            directories=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="path", required=True),
                mode=dict(type="str", default="0755"),
            )),
            files=dict(type="list", elements="dict", required=True, options=dict(
                path=dict(type="path", required=True),
                content=dict(type="str", required=True),
                mode=dict(type="str", default="0644"),
            )),
        ),
        supports_check_mode=True,
    )
    directories, files = module.params["directories"], module.params["files"]
    found = problems(directories, files)
    if found:
        module.fail_json(msg="; ".join(found) + ". Nothing was made or written.")
    made = []
    diffs = []
    for entry in directories:
        if os.path.isdir(entry["path"]):
            continue
        made.append(entry["path"])
        if module._diff:
            diffs.append(dict(before_header=entry["path"], after_header=entry["path"], before="absent\n",
                              after="directory, mode %s\n" % entry["mode"]))
        if not module.check_mode:
            try:
                os.makedirs(entry["path"])
                os.chmod(entry["path"], int(entry["mode"], 8))
            except OSError as error:
                module.fail_json(msg="could not make %s: %s" % (entry["path"], error), made=made[:-1], written=[])
    written = []
    for entry in files:
        content = to_bytes(entry["content"])
        mode = int(entry["mode"], 8)
        before, before_mode = current(entry["path"])
        if before == content and before_mode == mode:
            continue
        written.append(entry["path"])
        if module._diff:
            diffs.append(dict(before_header="%s (%s)" % (entry["path"], "absent" if before is None else "mode %04o" % before_mode),
                              after_header="%s (mode %04o)" % (entry["path"], mode),
                              before=to_text(before or b"", errors="surrogate_or_replace"), after=entry["content"]))
        if not module.check_mode:
            try:
                write(entry["path"], content, mode)
            except OSError as error:
                module.fail_json(msg="could not write %s: %s" % (entry["path"], error), made=made, written=written[:-1])
    result = dict(changed=bool(made or written), made=made, written=written, checked=len(files))
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
