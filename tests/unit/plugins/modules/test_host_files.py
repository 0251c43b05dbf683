"""host_files through its main(): what is on disk after each call, compared with what was asked."""

import json
import os
import stat

import pytest

from ansible_collections.gpulab.kai_hami.plugins.modules import host_files


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
                host_files.main()
        return json.loads(capsys.readouterr().out), exit_info.value.code

    return call


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_writes_what_differs_and_leaves_the_rest(run, tmp_path):
    a, b = str(tmp_path / "a.conf"), str(tmp_path / "b.conf")
    files = [dict(path=a, content="one\n", mode="0600"), dict(path=b, content="two\n")]
    first, code = run(dict(files=files))
    assert code == 0 and first["changed"] and first["written"] == [a, b] and first["checked"] == 2
    assert open(a).read() == "one\n" and mode_of(a) == 0o600
    assert open(b).read() == "two\n" and mode_of(b) == 0o644
    stamp = os.stat(b).st_mtime_ns

    again, dummy = run(dict(files=files))
    assert not again["changed"] and again["written"] == []
    assert os.stat(b).st_mtime_ns == stamp

    # a changed value, a file edited by hand and a mode changed by hand are each written again
    with open(b, "w") as handle:
        handle.write("edited\n")
    os.chmod(a, 0o644)
    files[0]["content"] = "one, changed\n"
    third, dummy = run(dict(files=files))
    assert third["changed"] and third["written"] == [a, b]
    assert open(a).read() == "one, changed\n" and mode_of(a) == 0o600 and open(b).read() == "two\n"
    assert sorted(os.listdir(str(tmp_path))) == ["a.conf", "b.conf"]  # no temporary file left


def test_check_mode_writes_nothing_and_diff_shows_each_file(run, tmp_path):
    a = tmp_path / "a.conf"
    a.write_text("old\n")
    new = str(tmp_path / "new.conf")
    result, code = run(dict(files=[dict(path=str(a), content="new\n"), dict(path=new, content="x\n")]), check=True, diff=True)
    assert code == 0 and result["changed"] and result["written"] == [str(a), new]
    assert a.read_text() == "old\n" and not os.path.exists(new)
    assert [(d["before"], d["after"]) for d in result["diff"]] == [("old\n", "new\n"), ("", "x\n")]
    assert "absent" in result["diff"][1]["before_header"]


@pytest.mark.parametrize("entry, says", [
    (dict(path="relative.conf", content=""), "files[1].path must be absolute"),
    (dict(path="{tmp}/missing/x.conf", content=""), "files[1].path: directory {tmp}/missing does not exist and is not among directories"),
    (dict(path="{tmp}/x.conf", content="", mode="644x"), "files[1].mode must be octal permissions"),
    (dict(path="{tmp}/good.conf", content="again"), "files[1].path {tmp}/good.conf is given twice"),
    (dict(path="{tmp}", content=""), "exists and is not a regular file"),
])
def test_bad_input_names_the_field_and_writes_nothing(run, tmp_path, entry, says):
    tmp = str(tmp_path)
    good = dict(path=os.path.join(tmp, "good.conf"), content="good\n")
    entry = dict((key, value.format(tmp=tmp)) for key, value in entry.items())
    result, code = run(dict(files=[good, entry]))
    assert code == 1 and result["failed"]
    assert says.format(tmp=tmp) in result["msg"] and "Nothing was made or written" in result["msg"]
    assert not os.path.exists(good["path"])


def test_directories_are_made_first_and_left_alone_when_there(run, tmp_path):
    node = str(tmp_path / "node")
    pki = os.path.join(node, "deep", "pki")
    directories = [dict(path=node, mode="0700"), dict(path=pki, mode="0700")]
    files = [dict(path=os.path.join(pki, "ca.crt"), content="ca\n")]
    check, dummy = run(dict(directories=directories, files=files), check=True)
    assert check["changed"] and check["made"] == [node, pki] and not os.path.exists(node)
    first, code = run(dict(directories=directories, files=files))
    assert code == 0 and first["made"] == [node, pki] and first["written"] == [files[0]["path"]]
    assert mode_of(node) == 0o700 and mode_of(pki) == 0o700 and open(files[0]["path"]).read() == "ca\n"
    os.chmod(node, 0o755)  # an existing directory keeps its mode
    again, dummy = run(dict(directories=directories, files=files))
    assert not again["changed"] and again["made"] == [] and mode_of(node) == 0o755


@pytest.mark.parametrize("entry, says", [
    (dict(path="relative"), "directories[0].path must be absolute"),
    (dict(path="{tmp}/a-file"), "directories[0].path {tmp}/a-file exists and is not a directory"),
    (dict(path="{tmp}/new", mode="rwx"), "directories[0].mode must be octal permissions"),
])
def test_bad_directories_are_refused_and_nothing_is_made(run, tmp_path, entry, says):
    tmp = str(tmp_path)
    (tmp_path / "a-file").write_text("")
    entry = dict((key, value.format(tmp=tmp)) for key, value in entry.items())
    result, code = run(dict(directories=[entry, dict(path=tmp + "/other")], files=[dict(path=tmp + "/other/x", content="")]))
    assert code == 1 and says.format(tmp=tmp) in result["msg"] and "Nothing was made or written" in result["msg"]
    assert sorted(os.listdir(tmp)) == ["a-file"]
