"""Stand-in for ansible-test's pip bootstrap script (get-pip.py), with no download.

ansible-test creates an empty venv per sanity test and runs a cached get-pip script in it
with pip's arguments (``install pip==24.2 ...``). The real script comes from bootstrap.pypa.io,
which a machine with only a PyPI mirror cannot reach. This one runs pip from the wheel that ships with Python's ensurepip;
that pip then installs the requested packages from PyPI as usual.
"""

import glob
import os
import sys

import ensurepip

bundled = glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl"))
if not bundled:
    sys.exit("get_pip_offline: no pip wheel bundled with this Python's ensurepip")
sys.path.insert(0, bundled[0])

from pip._internal.cli.main import main  # noqa: E402  pylint: disable=wrong-import-position

# get-pip's own options: without --no-setuptools / --no-wheel it installs those too.
args = sys.argv[1:]
extra = [name for name in ("setuptools", "wheel") if "--no-%s" % name not in args]
args = [arg for arg in args if arg not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--upgrade", "--force-reinstall"] + args + extra))
