"""The build backend of the `proxytrace` Python package (PEP 517), standard
library only.

`pip install ./python` builds a wheel before it installs it. With the usual
setuptools backend that needs setuptools (and, with older ones, `wheel`) in
the build environment: offline, pip cannot fetch them, and a venv's own
setuptools fails with "invalid command 'bdist_wheel'" and leaves build/ and
*.egg-info in the source folder. The package is a folder of .py files, so
this backend writes the wheel itself: a zip of proxytrace/*.py and its
.dist-info (METADATA from pyproject.toml's [project] table, WHEEL, RECORD),
straight into the folder pip names. It needs nothing to be installed, no
network, and writes nothing beside the sources.
"""

import base64
import hashlib
import os
import re
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "proxytrace"


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
    wheel_name = "%s-%s-py3-none-any.whl" % (name, version)
    entries = []
    for n in _files():
        with open(os.path.join(HERE, PACKAGE, n), "rb") as f:
            entries.append(("%s/%s" % (PACKAGE, n), f.read()))
    entries.append((info + "/METADATA", metadata.encode()))
    entries.append((info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: proxytrace_build\n"
                                     b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    record = [_record_line(a, d) for a, d in entries] + [info + "/RECORD,,"]
    entries.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    path = os.path.join(wheel_directory, wheel_name)
    tmp = path + ".part"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in entries:
            zi = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    os.replace(tmp, path)
    return wheel_name
