"""The build backend of the `proxytrace` Python package (PEP 517), standard
library only.

`pip install ./python` builds a wheel before it installs it. With the usual
setuptools backend that needs setuptools (and, with older ones, `wheel`) in
the build environment: offline, pip cannot fetch them, and a venv's own
setuptools fails with "invalid command 'bdist_wheel'" and leaves build/ and
*.egg-info in the source folder. This backend writes the wheel itself: a zip
of proxytrace/*.py, the native parts and its .dist-info (METADATA from
pyproject.toml's [project] table, WHEEL, RECORD), straight into the folder
pip names. It needs nothing from an index, no network, and writes nothing
beside the sources.

The package is nothing without its native parts (libproxytrace-loader, the
plugin, the `proxytrace` program), so the wheel carries them: the backend
runs `make` in the checkout this folder belongs to (build/, as a plain
`make` does; up to date, it rebuilds nothing) and puts the loader and the
plugin in proxytrace/lib/, the program in proxytrace/bin/, and a _paths.py
that points the package at them. The wheel is then for this machine's
platform (py3-none-linux_<arch>), built from the same sources as the Python
files, so their versions agree. A python/ folder outside a proxytrace
checkout cannot be built: the error says so.
"""

import base64
import hashlib
import os
import re
import stat
import subprocess
import sys
import sysconfig
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(HERE)
PACKAGE = "proxytrace"
# What the wheel ships from the build folder: (file there, place in the package, mode).
NATIVE = (("libproxytrace-loader.so.1", "lib/libproxytrace-loader.so.1", 0o755),
          ("librccl-profiler-proxytrace.so", "lib/librccl-profiler-proxytrace.so", 0o755),
          ("proxytrace", "bin/proxytrace", 0o755))
PATHS = (b"# Written by pip install (python/_build/proxytrace_build.py): the native\n"
         b"# parts of this package are in its own lib/ and bin/.\n"
         b"LIBDIR = None\nBINDIR = None\nLIBDIR_REL = 'lib'\nBINDIR_REL = 'bin'\nSHIPPED = True\n")


def _project():
    """name, version, summary and requires-python, from pyproject.toml and
    proxytrace/__init__.py (the one place the version is written)."""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        toml = f.read()
    project = toml.split("[project]", 1)[1].split("\n[", 1)[0]

    def field(name):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(name), project, re.M)
        return m.group(1) if m else ""

    with open(os.path.join(HERE, PACKAGE, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__\s*=\s*"([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("proxytrace/__init__.py holds no __version__ line")
    return field("name") or PACKAGE, m.group(1), field("description"), field("requires-python")


def _files():
    folder = os.path.join(HERE, PACKAGE)
    return sorted(n for n in os.listdir(folder) if n.endswith(".py") and n != "_paths.py")


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def _metadata():
    name, version, summary, requires = _project()
    lines = ["Metadata-Version: 2.1", "Name: " + name, "Version: " + version]
    if summary:
        lines.append("Summary: " + summary)
    if requires:
        lines.append("Requires-Python: " + requires)
    return name, version, "\n".join(lines) + "\n"


def _platform_tag():
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _native():
    """[(arcname, bytes, mode)] of the native parts, built by make in the
    checkout first. RuntimeError (pip prints it) when that cannot be."""
    if not (os.path.isfile(os.path.join(REPO, "Makefile")) and
            os.path.isdir(os.path.join(REPO, "src", "loader"))):
        raise RuntimeError(
            "the proxytrace package ships its native parts (libproxytrace-loader, the plugin, "
            "the proxytrace program), built from the proxytrace source tree it belongs to, and "
            "%s is not inside one (no Makefile and src/ in %s): pip install the python/ folder "
            "of a proxytrace checkout" % (HERE, REPO))
    cmd = ["make", "-C", REPO, "--no-print-directory", "build-all"]
    try:
        rc = subprocess.call(cmd, stdout=sys.stderr)
    except OSError as e:
        rc = e
    if rc != 0:
        raise RuntimeError(
            "%s failed (%s): pip install ./python builds the native parts of the package with "
            "make and a C compiler (Debian: apt-get install build-essential); the output above "
            "says why" % (" ".join(cmd), rc))
    out = []
    for name, arcname, mode in NATIVE:
        path = os.path.join(REPO, "build", name)
        try:
            with open(path, "rb") as f:
                out.append(("%s/%s" % (PACKAGE, arcname), f.read(), mode))
        except OSError as e:
            raise RuntimeError("%s: %s, after %s" % (path, e.strerror, " ".join(cmd)))
    out.append(("%s/_paths.py" % PACKAGE, PATHS, 0o644))
    return out


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    name, version, metadata = _metadata()
    info = "%s-%s.dist-info" % (name, version)
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(metadata)
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, metadata = _metadata()
    info = "%s-%s.dist-info" % (name, version)
    tag = "py3-none-" + _platform_tag()
    wheel_name = "%s-%s-%s.whl" % (name, version, tag)
    entries = []
    for n in _files():
        with open(os.path.join(HERE, PACKAGE, n), "rb") as f:
            entries.append(("%s/%s" % (PACKAGE, n), f.read(), 0o644))
    entries += _native()
    entries.append((info + "/METADATA", metadata.encode(), 0o644))
    entries.append((info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: proxytrace_build\n"
                                      "Root-Is-Purelib: false\nTag: %s\n" % tag).encode(), 0o644))
    record = [_record_line(a, d) for a, d, _ in entries] + [info + "/RECORD,,"]
    entries.append((info + "/RECORD", ("\n".join(record) + "\n").encode(), 0o644))
    path = os.path.join(wheel_directory, wheel_name)
    tmp = path + ".part"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data, mode in entries:
            zi = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = (stat.S_IFREG | mode) << 16  # pip keeps the program executable
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    os.replace(tmp, path)
    return wheel_name
