# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""List the files an image needs to run one Python program with the interpreter that runs this script.

    python python_image_files.py PROGRAM DEST

Prints one JSON object: ``interpreter`` (its path in the image), ``sha256`` (of every file's
destination and content: a tag that changes with any of them) and ``files``, a list of
``SRC:DEST`` pairs, the form of oci_image.py's ``--file``:

- the interpreter (the file behind a virtual environment's ``python``) and PROGRAM, put at DEST;
- the modules loaded when PROGRAM is imported (its ``if __name__ == "__main__"`` part does not
  run), the interpreter's start (``site``) and every codec of ``encodings`` included, and the standard library's
  modules ``modulefinder`` finds from PROGRAM, which also follows the imports inside functions
  (argparse's help imports textwrap), without the packages a small server never loads (LATER_UNUSED),
  each with its compiled cache where it exists;
- the shared libraries the interpreter and those extension modules load, as ``ldd`` names them.

Each file keeps its own path, so the interpreter finds its prefix in the image as it does on the
host. The interpreter imports PROGRAM without site-packages: a program that imports anything
outside the standard library is refused, naming the module.
"""

from __future__ import absolute_import, division, print_function

import hashlib
import importlib.util
import json
import modulefinder
import os
import subprocess
import sys


# Run by the same interpreter (not a virtual environment's) with -I -S: imports ``site`` without
# running it (no .pth file of site-packages is read), loads PROGRAM as a module (its `if __name__ == "__main__"`
# part does not run), then every codec of ``encodings`` (the interpreter's C code looks some up by
# name when it needs them, such as idna for a host name) and prints the files of every module then
# loaded.
_CHILD = """
import importlib, importlib.util, json, os, pkgutil, site, sys, encodings
spec = importlib.util.spec_from_file_location("program_under_inspection", sys.argv[1])
try:
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
except ImportError as error:
    print(json.dumps({"error": str(error)}))
    sys.exit(0)
for codec in pkgutil.iter_modules(encodings.__path__):
    try:
        importlib.import_module("encodings." + codec.name)
    except ImportError:
        pass
print(json.dumps(sorted({os.path.realpath(m.__file__) for m in list(sys.modules.values())
                         if getattr(m, "__file__", None) and m.__name__ != "program_under_inspection"})))
"""


# Standard library packages that modulefinder reaches through imports inside functions of the
# modules a small server uses (pydoc, the GUI, tests, debuggers, packaging, asyncio, XML), and that
# such a server never loads: left out of the image unless PROGRAM loads one when it is imported.
LATER_UNUSED = ("tkinter", "_tkinter", "turtle", "idlelib", "pydoc", "unittest", "test", "doctest", "pdb",
                "lib2to3", "ensurepip", "distutils", "curses", "readline", "sqlite3", "dbm", "multiprocessing",
                "asyncio", "concurrent", "xml", "xmlrpc", "ctypes", "tty", "pty")


def module_files(program):
    """The files of the modules ``program`` loads when imported, or may import later, with their caches."""
    interpreter = os.path.realpath(sys.executable)
    out = subprocess.run([interpreter, "-I", "-S", "-c", _CHILD, program], check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    files = json.loads(out)
    if isinstance(files, dict):
        raise SystemExit("python_image_files.py: %s imports a module outside the standard library of %s: %s"
                         % (program, interpreter, files["error"]))
    files = set(files)
    stdlib = os.path.dirname(os.path.realpath(os.__file__))
    dynload = [os.path.realpath(p) for p in sys.path if os.path.basename(p) == "lib-dynload"]
    finder = modulefinder.ModuleFinder(path=[stdlib] + dynload[:1], excludes=list(LATER_UNUSED))
    finder.run_script(program)
    files.update(os.path.realpath(module.__file__) for name, module in finder.modules.items()
                 if name != "__main__" and module.__file__)
    for path in list(files):
        if path.endswith(".py"):
            cache = importlib.util.cache_from_source(path)
            if os.path.isfile(cache):
                files.add(cache)
    return files


def libraries(binaries):
    """The shared libraries ``binaries`` load, as ldd resolves them (the dynamic loader included)."""
    found = set()
    for binary in sorted(binaries):
        out = subprocess.run(["ldd", binary], check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
        for line in out.splitlines():
            words = line.split()
            if "=>" in words:
                words = words[words.index("=>") + 1:]
            if words and words[0].startswith("/"):
                found.add(words[0])
    return found


def image_files(program, dest):
    """``{interpreter, sha256, files}`` for ``program`` put at ``dest`` (see the module's docstring)."""
    interpreter = os.path.realpath(sys.executable)
    modules = module_files(program)
    elf = [interpreter] + [path for path in modules if path.endswith(".so")]
    files = {path: path for path in modules | libraries(elf) | {interpreter}}
    files[os.path.realpath(program)] = dest
    digest = hashlib.sha256()
    for src in sorted(files):
        digest.update(files[src].encode() + b"\0")
        with open(src, "rb") as handle:
            digest.update(hashlib.sha256(handle.read()).digest())
    return {"interpreter": interpreter, "sha256": digest.hexdigest(),
            "files": ["%s:%s" % (src, files[src]) for src in sorted(files)]}


def main(argv):
    if len(argv) != 2:
        raise SystemExit("usage: python python_image_files.py PROGRAM DEST")
    print(json.dumps(image_files(argv[0], argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
