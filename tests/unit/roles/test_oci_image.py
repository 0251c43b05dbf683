"""The real node's image writer: an OCI archive containerd imports, the same bytes from the same inputs."""

import hashlib
import json
import os
import subprocess
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WRITER = os.path.join(ROOT, "roles", "local_build", "files", "oci_image.py")


def write(tmp_path, out, *extra, name="sim.example/tool:1.0"):
    done = subprocess.run([sys.executable, WRITER, "--name", name, "--out", str(out)] + list(extra),
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def blobs(archive):
    with tarfile.open(str(archive)) as tar:
        return dict((member.name, tar.extractfile(member).read()) for member in tar.getmembers() if member.isfile())


def test_the_archive_is_an_oci_layout_naming_the_image(tmp_path):
    program = tmp_path / "tool"
    program.write_bytes(b"\x7fELF not really\n")
    os.chmod(str(program), 0o755)
    out = tmp_path / "image.tar"
    result = write(tmp_path, out, "--file=%s:/usr/bin/tool" % program, "--link=bin/t:/usr/bin/tool", "--dir=tmp",
                   "--entrypoint=/usr/bin/tool", "--cmd=--help", "--env=A=1", "--label=source=test", "--user=65532:65532")
    files = blobs(out)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads(files["index.json"])
    manifest_desc = index["manifests"][0]
    assert manifest_desc["annotations"]["io.containerd.image.name"] == "sim.example/tool:1.0"
    assert manifest_desc["annotations"]["org.opencontainers.image.ref.name"] == "1.0"
    assert manifest_desc["digest"] == result["digest"]
    # every blob is stored under its own digest
    for name, data in files.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    manifest = json.loads(files["blobs/sha256/" + result["digest"].split(":")[1]])
    config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])
    assert config["config"]["Entrypoint"] == ["/usr/bin/tool"] and config["config"]["Cmd"] == ["--help"]
    assert "A=1" in config["config"]["Env"] and config["config"]["User"] == "65532:65532"
    assert config["config"]["Labels"] == {"source": "test"}
    layer_digest = manifest["layers"][0]["digest"]
    assert config["rootfs"]["diff_ids"] == [layer_digest]
    layer_path = tmp_path / "layer.tar"
    layer_path.write_bytes(files["blobs/sha256/" + layer_digest.split(":")[1]])
    with tarfile.open(str(layer_path)) as layer:
        members = dict((member.name, member) for member in layer.getmembers())
        assert layer.extractfile(members["usr/bin/tool"]).read() == program.read_bytes()
    assert members["usr/bin/tool"].mode & 0o111 and members["bin/t"].issym() and members["bin/t"].linkname == "/usr/bin/tool"
    assert members["usr"].isdir() and members["tmp"].mode == 0o1777
    assert all(member.uid == 0 and member.mtime == 0 for member in members.values())


def test_same_inputs_same_digest_and_the_archive_is_left_alone(tmp_path):
    program = tmp_path / "tool"
    program.write_bytes(b"one\n")
    out = tmp_path / "image.tar"
    first = write(tmp_path, out, "--file=%s:/tool" % program)
    written = os.stat(str(out)).st_mtime_ns
    again = write(tmp_path, out, "--file=%s:/tool" % program)
    assert first["changed"] and not again["changed"] and again["digest"] == first["digest"]
    assert os.stat(str(out)).st_mtime_ns == written
    program.write_bytes(b"two\n")
    changed = write(tmp_path, out, "--file=%s:/tool" % program)
    assert changed["changed"] and changed["digest"] != first["digest"]


def test_a_missing_file_is_named(tmp_path):
    done = subprocess.run([sys.executable, WRITER, "--name", "x:1", "--out", str(tmp_path / "x.tar"),
                           "--file=%s:/x" % (tmp_path / "nothing")], capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "no such file" in done.stderr
    assert not (tmp_path / "x.tar").exists()


def test_the_name_is_the_full_reference_the_kubelet_asks_containerd_for(tmp_path):
    """A pod's image registry/local/x:v1 is docker.io/registry/local/x:v1 to containerd; a name
    given again with another spelling of the same image is written again under the new name."""
    program = tmp_path / "tool"
    program.write_bytes(b"tool\n")
    names = {"registry/local/kai-scheduler/operator:v0.16.0": "docker.io/registry/local/kai-scheduler/operator:v0.16.0",
             "busybox": "docker.io/library/busybox:latest",
             "localhost/tool:1": "localhost/tool:1",
             "sim.example:5000/tool": "sim.example:5000/tool:latest"}
    out = tmp_path / "image.tar"
    for given, full in names.items():
        done = subprocess.run([sys.executable, WRITER, "--name", given, "--out", str(out), "--file=%s:/tool" % program],
                              capture_output=True, text=True, check=True)
        result = json.loads(done.stdout)
        index = json.loads(blobs(out)["index.json"])
        assert result["name"] == full and result["changed"] is True
        assert index["manifests"][0]["annotations"]["io.containerd.image.name"] == full


def test_unchanged_inputs_are_known_by_their_identity_and_a_change_is_seen(tmp_path):
    program = tmp_path / "tool"
    program.write_bytes(b"one\n")
    an_hour_ago = os.stat(str(program)).st_mtime - 3600
    os.utime(str(program), (an_hour_ago, an_hour_ago))
    out = tmp_path / "image.tar"
    first = write(tmp_path, out, "--file=%s:/tool" % program)
    assert first["changed"] and (tmp_path / "image.tar.inputs").is_file()
    again = write(tmp_path, out, "--file=%s:/tool" % program)
    assert not again["changed"] and again["digest"] == first["digest"]
    assert again["name"] == first["name"] == "sim.example/tool:1.0"
    short = write(tmp_path, tmp_path / "short.tar", "--file=%s:/tool" % program, name="registry/local/tool:v1")
    short_again = write(tmp_path, tmp_path / "short.tar", "--file=%s:/tool" % program, name="registry/local/tool:v1")
    assert short["changed"] and not short_again["changed"]
    assert short["name"] == short_again["name"] == "docker.io/registry/local/tool:v1"  # the name containerd lists, every time
    # another argument is another image, though the file is the same
    labelled = write(tmp_path, out, "--file=%s:/tool" % program, "--label=a=b")
    assert labelled["changed"] and labelled["digest"] != first["digest"]
    # new content and a new time: read again
    program.write_bytes(b"two\n")
    os.utime(str(program), (an_hour_ago + 60, an_hour_ago + 60))
    changed = write(tmp_path, out, "--file=%s:/tool" % program)
    assert changed["changed"] and changed["digest"] not in (first["digest"], labelled["digest"])


def test_a_file_written_just_now_is_read_whatever_its_identity(tmp_path):
    program = tmp_path / "tool"
    program.write_bytes(b"one\n")
    out = tmp_path / "image.tar"
    write(tmp_path, out, "--file=%s:/tool" % program)
    assert not (tmp_path / "image.tar.inputs").exists()


def test_a_batch_writes_each_image_as_one_call_would(tmp_path):
    program = tmp_path / "tool"
    program.write_bytes(b"one\n")
    single = write(tmp_path, tmp_path / "single.tar", "--file=%s:/tool" % program)
    specs = [["--name", "sim.example/tool:1.0", "--out", str(tmp_path / "a.tar"), "--file=%s:/tool" % program],
             ["--name", "busybox", "--out", str(tmp_path / "b.tar"), "--dir=tmp"]]
    done = subprocess.run([sys.executable, WRITER, "--batch"], input=json.dumps(specs), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert [r["name"] for r in results] == ["sim.example/tool:1.0", "docker.io/library/busybox:latest"]
    assert results[0]["digest"] == single["digest"] and all(r["changed"] for r in results)
    assert (tmp_path / "b.tar").is_file()
