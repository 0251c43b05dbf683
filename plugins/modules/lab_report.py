#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: lab_report
short_description: Write a lab's report (claims.json, report.md, junit.xml from its check records) or any files into one directory
version_added: 0.1.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - With O(records), writes the report Lab 11 writes, for any lab's checks - C(claims.json)
    (C(ok) and each record), C(report.md) (a table of claim, evidence, verdict, decided by) and
    C(junit.xml) (a testcase per record; C(ok=false) a failure, C(verdict=error) an error).
  - Creates O(dir) when missing (its parent must exist) and writes each file (those of
    O(records) and of O(files)) whose content differs from what is there, each atomically (a
    reader never sees half a file).
  - Files of O(dir) not written by the call are left alone.
  - The files written from O(records) make the task C(changed) only when the outcome (each record's
    C(id), C(ok) and C(verdict)) differs from the C(claims.json) already in O(dir); a report written
    anew with this run's evidence and the same verdicts is no change. M(gpulab.kai_hami.lab_claim)
    gives C(changed) by the same rule. A file of O(files) is a change when its content is.
attributes:
  check_mode:
    support: full
    details: Says which files would be written, and writes nothing.
  diff_mode:
    support: full
    details: Shows each written file's content before and after.
extends_documentation_fragment:
  - gpulab.kai_hami.attributes
options:
  dir:
    description: The report directory.
    type: path
    required: true
  files:
    description: File name (no directory part) to its content. One of O(files) and O(records) is required.
    type: dict
  records:
    description:
      - The lab's checks, in the report's order. Each is a dict with C(id) (unique), C(claim)
        (what the check says), C(ok) (a bool), and optionally C(verdict) (default V(holds) or
        V(does not hold); V(error) when the evidence could not be read), C(evidence) (lines),
        C(decided_by) (what decided it) and C(seconds).
      - A record missing a field, or with a field of the wrong type, fails naming it, and nothing is written.
    type: list
    elements: dict
  title:
    description: The lab's name (C(lab) in claims.json, the JUnit suite's name). Required with O(records).
    type: str
  summary:
    description: Lines of report.md between its heading and the table (the platform, what ran, ...).
    type: list
    elements: str
    default: []
  properties:
    description:
      - Facts about the run, as keys of claims.json beside C(lab), C(ok) and C(claims); those
        whose value is text or a number are also the JUnit suite's properties.
    type: dict
    default: {}
  heading:
    description: report.md's heading.
    type: str
    default: What This Lab Proved
  mode:
    description: Mode of the files written (the directory, when created, gets C(0755)).
    type: str
    default: "0644"
"""

EXAMPLES = r"""
- name: Write a lab's report from its own checks
  gpulab.kai_hami.lab_report:
    dir: "{{ playbook_dir }}/fairlab-report"
    title: "Fair share across two teams"
    summary: ["Platform: sim. KAI {{ sim_kai_made.version }}, by its chart."]
    properties: {platform: sim}
    records:
      - id: F1
        claim: team-a holds two GPUs
        ok: "{{ team_a.queues[0].resources.gpu.allocated == 2 }}"
        evidence: ["team-a allocated {{ team_a.queues[0].resources.gpu.allocated }} GPUs"]
        decided_by: Queue team-a's status (KAI's queue-controller)
  register: fairlab_report

- name: Write any files, for example a summary of the queues read before
  gpulab.kai_hami.lab_report:
    dir: "{{ playbook_dir }}/fairlab-report"
    files:
      queues.json: "{{ queues.queues | to_nice_json }}"
"""

RETURN = r"""
written:
  description: The files written (or, in check mode, that would be), by path.
  returned: always
  type: list
  elements: str
  sample: [/home/user/lab11-report/claims.json]
files:
  description: Every file of the call (those of O(records) and of O(files)), by path.
  returned: always
  type: list
  elements: str
ok:
  description: Whether every record holds.
  returned: when O(records) is given
  type: bool
report:
  description: The text of report.md, to print.
  returned: when O(records) is given
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.kai_hami.plugins.module_utils.report import ReportError, outcome_changed, report_files, write_files


REPORT_FILES = ("claims.json", "report.md", "junit.xml")


def main():
    module = AnsibleModule(
        argument_spec=dict(dir=dict(type="path", required=True), files=dict(type="dict"), mode=dict(type="str", default="0644"),
                           records=dict(type="list", elements="dict"), title=dict(type="str"),
                           summary=dict(type="list", elements="str", default=[]), properties=dict(type="dict", default={}),
                           heading=dict(type="str", default="What This Lab Proved")),
        required_one_of=[("files", "records")],
        required_by={"records": ("title",)},
        supports_check_mode=True,
    )
    params = module.params
    params["files"] = dict(params["files"] or {})
    extra = {}
    changed_outcome = False
    if params["records"] is not None:
        try:
            made = report_files(params["title"], params["records"], params["summary"], params["properties"], heading=params["heading"])
        except ReportError as err:
            module.fail_json(msg=str(err))
        clash = sorted(set(made) & set(params["files"]))
        if clash:
            module.fail_json(msg="files: %s is written from records; leave it out of files" % ", ".join(clash))
        changed_outcome = outcome_changed(params["dir"], params["records"])
        params["files"].update(made)
        extra = dict(ok=all(r["ok"] for r in params["records"]), report=made["report.md"])
    try:
        mode = int(params["mode"], 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o7777:
        module.fail_json(msg="mode must be an octal file mode such as 0644, got %r" % params["mode"])
    try:
        written, paths, diffs = write_files(params["dir"], params["files"], mode, module.check_mode)
    except ReportError as err:
        module.fail_json(msg=str(err))
    except (IOError, OSError) as err:
        module.fail_json(msg="cannot write %s: %s" % (err.filename, err), written=getattr(err, "written", []))
    # the report's own files count as a change only when its outcome changed (outcome_changed);
    # any other file, when its content changed
    others = [path for path in written if params["records"] is None or os.path.basename(path) not in REPORT_FILES]
    result = dict(changed=changed_outcome or bool(others), written=written, files=paths, **extra)
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
