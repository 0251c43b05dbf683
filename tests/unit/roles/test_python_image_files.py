"""python_image_files.py: the files an image needs to run a Python program of the standard library.

Expected files are found by the test from the running interpreter's own modules (``ssl.__file__``,
``ldd``), not from the code under test; the last test runs the isolator stand-in from nothing but
the listed files (a chroot), as its pod on a real node does.
"""

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
LISTER = os.path.join(ROOT, "roles", "sim_isolator", "files", "python_image_files.py")
STANDIN = os.path.join(ROOT, "roles", "sim_isolator", "files", "isolator_standin.py")


def listing(program, dest="/app/program.py"):
    done = subprocess.run([sys.executable, LISTER, program, dest], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          check=False)
    return done


def pairs(result):
    return dict(pair.split(":", 1) for pair in json.loads(result.stdout)["files"])


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_the_interpreter_the_modules_loaded_and_imported_later_and_their_libraries(tmp_path):
    program = write(tmp_path, "program.py", """
        import json
        import ssl


        def later():
            import textwrap
            return textwrap
    """)
    done = listing(program)
    assert done.returncode == 0, done.stderr
    found = pairs(done)
    interpreter = os.path.realpath(sys.executable)
    assert json.loads(done.stdout)["interpreter"] == interpreter and found[interpreter] == interpreter
    assert found[os.path.realpath(program)] == "/app/program.py"
    import _ssl  # pylint: disable=import-outside-toplevel
    for module in (json, ssl, _ssl, textwrap, os):
        path = os.path.realpath(module.__file__)
        assert found[path] == path, module.__name__
    # the codec the socket layer looks up by name for a host name, and what it imports
    assert [p for p in found if p.endswith(os.sep + os.path.join("encodings", "idna.py"))]
    # the libraries ldd names for the interpreter and for _ssl: the loader, libc, OpenSSL's
    ldd = subprocess.run(["ldd", os.path.realpath(_ssl.__file__)], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    libssl = [line.split("=>")[1].split()[0] for line in ldd.splitlines() if "libssl" in line]
    assert libssl and found[libssl[0]] == libssl[0]
    assert [p for p in found if os.path.basename(p).startswith("ld-linux")] and [p for p in found if os.path.basename(p) == "libc.so.6"]
    # nothing of site-packages, nor the packages a small server never loads
    assert not [p for p in found if "site-packages" in p.split(os.sep)]
    assert not [p for p in found if os.sep + "tkinter" + os.sep in p or os.sep + "unittest" + os.sep in p]


def test_the_digest_follows_the_program_and_its_destination(tmp_path):
    program = write(tmp_path, "program.py", "import json\n")
    first = json.loads(listing(program).stdout)["sha256"]
    assert json.loads(listing(program).stdout)["sha256"] == first
    assert json.loads(listing(program, "/elsewhere.py").stdout)["sha256"] != first
    write(tmp_path, "program.py", "import json  # changed\n")
    assert json.loads(listing(program).stdout)["sha256"] != first


def test_a_program_importing_from_site_packages_is_refused_naming_the_module(tmp_path):
    program = write(tmp_path, "program.py", "import yaml\n")
    done = listing(program)
    assert done.returncode != 0 and "imports a module outside the standard library" in done.stderr and "yaml" in done.stderr, done.stderr
    assert done.stdout == ""


@pytest.mark.skipif(os.geteuid() != 0, reason="chroot needs root")
def test_the_isolator_stand_in_serves_from_its_listed_files_alone(tmp_path):
    """Copy the listed files into an empty root and run the stand-in there as user 65532: it
    starts, says it is a stand-in, and answers /healthz over TLS (as its pod's probe asks)."""
    found = pairs(listing(STANDIN, "/app/isolator_standin.py"))
    root = tmp_path / "root"
    for src, dest in found.items():
        target = str(root) + dest
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy(src, target)
    (root / "tmp").mkdir()
    tls = root / "etc" / "tls"
    tls.mkdir(parents=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-keyout", str(tls / "tls.key"), "-out", str(tls / "tls.crt")], check=True, capture_output=True)
    os.chmod(str(tls / "tls.key"), 0o644)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(["chroot", "--userspec=65532:65532", str(root), os.path.realpath(sys.executable), "/app/isolator_standin.py",
                               "--listen=127.0.0.1:%d" % port, "--tls-cert-file=/etc/tls/tls.crt", "--tls-private-key-file=/etc/tls/tls.key"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    try:
        context = ssl.create_default_context(cafile=str(tls / "tls.crt"))
        deadline, answer = time.time() + 20, None
        while answer is None and time.time() < deadline and server.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2) as raw, context.wrap_socket(raw, server_hostname="localhost") as conn:
                    conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                    answer = conn.recv(200).decode()
            except OSError:
                time.sleep(0.2)
        assert answer and answer.startswith("HTTP/1.") and " 200 " in answer.split("\r\n")[0], answer
    finally:
        server.terminate()
        output = server.communicate(timeout=10)[0]
    assert "stand-in: this is gpulab.kai_hami's stand-in" in output, output
