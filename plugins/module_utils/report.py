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
