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
