# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A lab's report from its check records: claims.json, report.md and junit.xml, as Lab 11 writes them.

A record is one check: ``id``, ``claim`` (what it says), ``ok``, and optionally ``verdict``,
``evidence`` (lines), ``decided_by`` (the programs or objects that decided it) and ``seconds``.
A record whose verdict is ``error`` is a check whose evidence could not be read (a JUnit error,
not a failure).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile

DEFAULT_HEADING = "What This Lab Proved"
ERROR_VERDICT = "error"
_XML_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#39;"))


class ReportError(ValueError):
    """A bad record or option; the message names the field and what it accepts."""


def _text(value, where):
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ReportError("%s must be text, got %r" % (where, value))
    return str(value)


def check_records(records):
    """Each record with every field set (verdict from ``ok`` when not given); raises ReportError."""
    if not isinstance(records, list) or not records:
        raise ReportError("records must be a list of at least one record ({id, claim, ok, ...})")
    checked, seen = [], set()
    for index, record in enumerate(records):
        where = "records[%d]" % index
        if not isinstance(record, dict):
            raise ReportError("%s must be a dict with id, claim and ok, got %r" % (where, record))
        for field in ("id", "claim", "ok"):
            if field not in record:
                raise ReportError("%s has no %s (a record needs id, claim and ok)" % (where, field))
        if not isinstance(record["ok"], bool):
            raise ReportError("%s.ok must be true or false, got %r" % (where, record["ok"]))
        unknown = sorted(set(record) - {"id", "claim", "ok", "verdict", "evidence", "decided_by", "seconds"})
        if unknown:
            raise ReportError("%s has unknown fields %s; the fields are id, claim, ok, verdict, evidence, decided_by, seconds"
                              % (where, ", ".join(unknown)))
        rid = _text(record["id"], where + ".id")
        if rid in seen:
            raise ReportError("%s.id %s is used by an earlier record: ids must be unique" % (where, rid))
        seen.add(rid)
        evidence = record.get("evidence", [])
        if isinstance(evidence, str):
            evidence = [evidence]
        if not isinstance(evidence, list):
            raise ReportError("%s.evidence must be a list of lines (or one line), got %r" % (where, evidence))
        seconds = record.get("seconds", 0)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ReportError("%s.seconds must be a number of seconds (0 or more), got %r" % (where, seconds))
        checked.append({
            "id": rid,
            "claim": _text(record["claim"], where + ".claim"),
            "ok": record["ok"],
            "verdict": _text(record.get("verdict") or ("holds" if record["ok"] else "does not hold"), where + ".verdict"),
            "evidence": [_text(line, "%s.evidence[%d]" % (where, n)) for n, line in enumerate(evidence)],
            "decided_by": _text(record.get("decided_by", ""), where + ".decided_by"),
            "seconds": seconds,
        })
    return checked


def _xml(text):
    text = str(text)
    for raw, escaped in _XML_ESCAPES:
        text = text.replace(raw, escaped)
    return text


def _cell(text):
    return str(text).replace("|", "\\|")


def claims_json(title, records, properties):
    """claims.json: ``{lab, <properties>, ok, claims}`` (keys sorted, as Ansible's to_nice_json writes)."""
    document = dict(properties)
    document.update(lab=title, ok=all(r["ok"] for r in records), claims=records)
    return json.dumps(document, indent=4, sort_keys=True)


def report_md(records, summary, heading=DEFAULT_HEADING):
    """report.md: the heading, the summary lines, then one table row per record."""
    lines = ["# %s" % heading, ""]
    lines += [line for line in summary if line]
    if any(summary):
        lines.append("")
    lines += ["| Claim | Evidence | Verdict | Decided by |", "|---|---|---|---|"]
    for r in records:
        lines.append("| %s %s | %s | %s | %s |" % (r["id"], r["claim"], _cell("<br>".join(r["evidence"])), r["verdict"], _cell(r["decided_by"])))
    return "\n".join(lines) + "\n"


def junit_xml(suite, records, properties):
    """junit.xml: one testcase per record; a failed record is a failure, an ``error`` verdict an error."""
    errors = [r for r in records if not r["ok"] and r["verdict"] == ERROR_VERDICT]
    failures = [r for r in records if not r["ok"] and r["verdict"] != ERROR_VERDICT]
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<testsuite name="%s" tests="%d" failures="%d" errors="%d">' % (_xml(suite), len(records), len(failures), len(errors))]
    scalars = [(k, v) for k, v in properties.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
    if scalars:
        out.append("  <properties>")
        out += ['    <property name="%s" value="%s"/>' % (_xml(k), _xml(v)) for k, v in scalars]
        out.append("  </properties>")
    for r in records:
        text = "\n".join(r["evidence"])
        out.append('  <testcase classname="%s" name="%s" time="%s">' % (_xml(suite), _xml(r["id"] + " " + r["claim"]), r["seconds"]))
        out.append('    <properties>\n      <property name="decided_by" value="%s"/>\n    </properties>' % _xml(r["decided_by"]))
        if not r["ok"] and r["verdict"] == ERROR_VERDICT:
            out.append("    <error message=\"the claim's evidence could not be read\">%s</error>" % _xml(text))
        elif not r["ok"]:
            out.append('    <failure message="%s">%s</failure>' % (_xml(r["verdict"]), _xml(text)))
        out.append("    <system-out>%s</system-out>" % _xml(r["verdict"] + ": " + text))
        out.append("  </testcase>")
    out.append("</testsuite>")
    return "\n".join(out) + "\n"


def report_files(title, records, summary=(), properties=None, suite=None, heading=DEFAULT_HEADING):
    """``{file name: content}`` of a lab's report from its records (checked first)."""
    if not title or not isinstance(title, str):
        raise ReportError("title must name the lab (text), got %r" % (title,))
    properties = dict(properties or {})
    reserved = sorted(set(properties) & {"lab", "ok", "claims"})
    if reserved:
        raise ReportError("properties may not set %s: the report sets them" % ", ".join(reserved))
    records = check_records(records)
    summary = [_text(line, "summary[%d]" % n) for n, line in enumerate(summary or [])]
    return {
        "claims.json": claims_json(title, records, properties),
        "report.md": report_md(records, summary, heading),
        "junit.xml": junit_xml(suite or title, records, properties),
    }


def lab_summary(platform, provenance, not_running=()):
    """The summary lines of a lab's report: the platform and which programs decided the claims
    (``provenance`` as the provenance module_util gives it), the stand-ins, and the processes a
    claim depends on that do not run."""
    lines = ["Platform: %s. %s; isolator: %s." % (platform, provenance.get("kai", ""), provenance.get("isolator", ""))]
    if provenance.get("node"):
        lines.append("GPU node: %s; its GPUs: %s." % (provenance["node"], provenance.get("gpus", "")))
    if provenance.get("stand_ins"):
        lines.append("Stand-ins (not the upstream programs): %s." % "; ".join(provenance["stand_ins"]))
    if not_running:
        lines.append("Not running: %s (a re-run of the playbook starts them again)." % ", ".join(not_running))
    return lines


def outcome(records):
    """What a report says, without this run's evidence: each check's id, ok and verdict, in order."""
    return [(str(r.get("id")), r.get("ok"), r.get("verdict")) for r in records]


def outcome_changed(directory, records):
    """Whether the report written from ``records`` says something other than the claims.json in
    ``directory`` (or there is none): the rule both lab_claim and lab_report give ``changed`` by. A
    report written anew with the same verdicts records this run's evidence (log lines, times), and
    that alone is no change."""
    try:
        with open(os.path.join(directory, "claims.json")) as handle:
            before = json.load(handle).get("claims")
    except (IOError, OSError, ValueError, AttributeError):
        return True
    if not isinstance(before, list) or not all(isinstance(r, dict) for r in before):
        return True
    return outcome(before) != outcome(check_records(records))


def files_problem(directory, files, mode):
    """The error text for file names, contents or a mode that cannot be written, or a directory
    that cannot be written or made; None when all can."""
    for name, content in files.items():
        if not name or name in (".", "..") or "/" in name:
            return "files: %r is not a file name (no directory part, not . or ..)" % name
        if not isinstance(content, str):
            return "files.%s must be text, got %s" % (name, type(content).__name__)
    if not 0 <= mode <= 0o7777:
        return "mode must be an octal file mode such as 0644, got %r" % oct(mode)
    if os.path.exists(directory):
        if not os.path.isdir(directory) or not os.access(directory, os.W_OK | os.X_OK):
            return "dir %s cannot be written (not a directory, or not writable)" % directory
    else:
        parent = os.path.dirname(directory.rstrip("/")) or "/"
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
            return "dir %s cannot be created: its parent %s is missing or not writable" % (directory, parent)
    return None


def _current(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _write(path, content, mode):
    """Write ``content`` to ``path`` through a temporary file beside it, then rename."""
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".%s." % os.path.basename(path))
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content)
        os.chmod(temporary, mode)
        os.rename(temporary, path)
    except Exception:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_files(directory, files, mode=0o644, check_mode=False):
    """Write ``files`` ({name: text}) into ``directory`` (made when missing), each only when its
    content or mode differs; nothing in check mode. Returns (written paths, all paths, diffs).
    Raises ReportError for what files_problem() finds, OSError when a write fails (the paths
    written before it are in the error's ``written``)."""
    problem = files_problem(directory, files, mode)
    if problem:
        raise ReportError(problem)
    paths, written, diffs = [], [], []
    for name in sorted(files):
        path = os.path.join(directory, name)
        paths.append(path)
        content = files[name].encode("utf-8")
        before = _current(path)
        if before == content and (os.stat(path).st_mode & 0o7777) == mode:
            continue
        written.append(path)
        diffs.append(dict(before_header=path, after_header=path, before=(before or b"").decode("utf-8", "replace"), after=files[name]))
    if written and not check_mode:
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        for index, path in enumerate(written):
            try:
                _write(path, files[os.path.basename(path)].encode("utf-8"), mode)
            except (IOError, OSError) as error:
                error.written = written[:index]
                raise
    return written, paths, diffs
