"""lab_report, run through its main(): the report's files written in one call, idempotently."""

import json
import os
import stat

import pytest

from ansible_collections.gpulab.kai_hami.plugins.modules import lab_report


@pytest.fixture
def run(capsys):
    from ansible.module_utils.testing import patch_module_args

    def call(args, check=False, diff=False):
        args = dict(args)
        if check:
            args["_ansible_check_mode"] = True
        if diff:
            args["_ansible_diff"] = True
        with patch_module_args(args):
            with pytest.raises(SystemExit) as exit_info:
                lab_report.main()
        return json.loads(capsys.readouterr().out), exit_info.value.code

    return call


def test_writes_what_changed_and_nothing_else(run, tmp_path):
    report = tmp_path / "report"
    files = {"claims.json": '{"ok": true}\n', "report.md": "# Lab 11\n"}
    checked, code = run(dict(dir=str(report), files=files), check=True)
    assert code == 0 and checked["changed"] and not report.exists()
    assert checked["written"] == [str(report / "claims.json"), str(report / "report.md")]

    first, code = run(dict(dir=str(report), files=files))
    assert code == 0 and first["changed"]
    assert (report / "claims.json").read_text() == files["claims.json"]
    assert stat.S_IMODE(os.stat(report / "report.md").st_mode) == 0o644
    (report / "other.txt").write_text("kept")

    again, dummy = run(dict(dir=str(report), files=files))
    assert again["changed"] is False and again["written"] == []

    files["report.md"] = "# Lab 11, again\n"
    changed, dummy = run(dict(dir=str(report), files=files), diff=True)
    assert changed["written"] == [str(report / "report.md")]
    assert changed["diff"] == [dict(before_header=str(report / "report.md"), after_header=str(report / "report.md"),
                                    before="# Lab 11\n", after="# Lab 11, again\n")]
    assert (report / "report.md").read_text() == files["report.md"] and (report / "other.txt").read_text() == "kept"
    assert sorted(os.listdir(report)) == ["claims.json", "other.txt", "report.md"]  # no temporary file left


@pytest.mark.parametrize("files, mode, fragment", [
    ({"../x.md": "x"}, "0644", "files: '../x.md' is not a file name"),
    ({"..": "x"}, "0644", "files: '..' is not a file name"),
    ({"a.json": {"not": "text"}}, "0644", "files.a.json must be text, got dict"),
    ({"a.md": "x"}, "rw-r--r--", "mode must be an octal file mode such as 0644, got 'rw-r--r--'"),
])
def test_bad_options_write_nothing(run, tmp_path, files, mode, fragment):
    result, code = run(dict(dir=str(tmp_path / "report"), files=files, mode=mode))
    assert code == 1 and fragment in result["msg"], result
    assert not (tmp_path / "report").exists()


def test_a_directory_that_cannot_be_created_is_named(run, tmp_path):
    result, code = run(dict(dir=str(tmp_path / "missing" / "report"), files={"a.md": "x"}))
    assert code == 1
    assert result["msg"] == "dir %s cannot be created: its parent %s is missing or not writable" % (
        tmp_path / "missing" / "report", tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    result, code = run(dict(dir=str(tmp_path / "file"), files={"a.md": "x"}))
    assert code == 1 and "cannot be written (not a directory, or not writable)" in result["msg"]


def _records():
    return [
        dict(id="F1", claim="team-a holds two GPUs", ok=True, evidence=["team-a allocated 2"], decided_by="Queue team-a", seconds=1.5),
        dict(id="F2", claim="team-b's pod | waits", ok=False, evidence="team-b-4: pending"),
        dict(id="F3", claim="the log says so", ok=False, verdict="error", evidence=["403 Forbidden"]),
    ]


def test_records_give_claims_json_report_md_and_junit_like_lab11(run, tmp_path):
    from xml.etree import ElementTree

    report = tmp_path / "report"
    args = dict(dir=str(report), title="Fair share", records=_records(), summary=["Platform: sim."],
                properties=dict(platform="sim", stand_ins=["the isolator"]))
    result, code = run(args)
    assert code == 0 and result["changed"] and result["ok"] is False
    claims = json.loads((report / "claims.json").read_text())
    assert claims["lab"] == "Fair share" and claims["platform"] == "sim" and claims["ok"] is False
    assert [(c["id"], c["ok"], c["verdict"]) for c in claims["claims"]] == [
        ("F1", True, "holds"), ("F2", False, "does not hold"), ("F3", False, "error")]
    assert claims["claims"][1]["evidence"] == ["team-b-4: pending"] and claims["claims"][1]["seconds"] == 0
    table = (report / "report.md").read_text().splitlines()
    assert table[0] == "# What This Lab Proved" and "Platform: sim." in table
    assert "| F2 team-b's pod | waits | team-b-4: pending | does not hold |  |" in table
    assert result["report"] == (report / "report.md").read_text()
    suite = ElementTree.parse(str(report / "junit.xml")).getroot()
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("Fair share", "3", "1", "1")
    assert {p.get("name"): p.get("value") for p in suite.find("properties")} == {"platform": "sim"}
    cases = suite.findall("testcase")
    assert cases[0].find("failure") is None and cases[0].get("time") == "1.5"
    assert cases[1].find("failure").get("message") == "does not hold" and cases[2].find("error").text == "403 Forbidden"

    again, dummy = run(args)
    assert again["changed"] is False


@pytest.mark.parametrize("records, fragment", [
    ([], "records must be a list of at least one record"),
    ([dict(id="F1", claim="x")], "records[0] has no ok"),
    ([dict(id="F1", claim="x", ok="yes")], "records[0].ok must be true or false, got 'yes'"),
    ([dict(id="F1", claim="x", ok=True), dict(id="F1", claim="y", ok=True)], "records[1].id F1 is used by an earlier record"),
    ([dict(id="F1", claim="x", ok=True, verdicts="holds")], "records[0] has unknown fields verdicts"),
    ([dict(id="F1", claim="x", ok=True, seconds=-1)], "records[0].seconds must be a number of seconds"),
    ([dict(id="F1", claim="x", ok=True, evidence={"a": 1})], "records[0].evidence must be a list of lines"),
])
def test_bad_records_are_named_and_nothing_is_written(run, tmp_path, records, fragment):
    result, code = run(dict(dir=str(tmp_path / "report"), title="Fair share", records=records))
    assert code == 1 and fragment in result["msg"], result
    assert not (tmp_path / "report").exists()


def test_records_need_a_title_and_do_not_clash_with_files(run, tmp_path):
    result, code = run(dict(dir=str(tmp_path / "r"), records=_records()))
    assert code == 1 and "title" in result["msg"]
    result, code = run(dict(dir=str(tmp_path / "r"), title="t", records=_records(), files={"report.md": "x"}))
    assert code == 1 and result["msg"] == "files: report.md is written from records; leave it out of files"
    result, code = run(dict(dir=str(tmp_path / "r"), title="t", records=_records(), properties={"ok": True}))
    assert code == 1 and "properties may not set ok" in result["msg"]
    assert not (tmp_path / "r").exists()
