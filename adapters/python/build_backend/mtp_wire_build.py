"""A PEP 517 build backend with no requirements: builds the `mtp_wire` wheel (and an editable one) with the standard
library only, so that `pip install ./adapters/python` works without an index. It reads name, version, description,
requires-python and dependencies from pyproject.toml's [project] table."""

import base64
import hashlib
import os
import re
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "mtp_wire"


def _project():
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]

    def value(key):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(key), table, re.M)
        return m.group(1) if m else None
    deps = re.search(r"^dependencies\s*=\s*\[([^\]]*)\]", table, re.M)
    return {"name": value("name"), "version": value("version"), "summary": value("description"),
            "python": value("requires-python"), "license": value("license"),
            "deps": re.findall(r'"([^"]+)"', deps.group(1)) if deps else []}


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"]]
    if p["summary"]:
        lines.append("Summary: " + p["summary"])
    if p["license"]:
        lines.append("License: " + p["license"])
    if p["python"]:
        lines.append("Requires-Python: " + p["python"])
    lines += ["Requires-Dist: " + d for d in p["deps"]]
    return "\n".join(lines) + "\n"


def _dist(p):
    return "%s-%s" % (re.sub(r"[-_.]+", "_", p["name"]).lower(), p["version"])


def _write_wheel(directory, files):
    """files: [(archive name, bytes)]; writes the wheel with its dist-info and RECORD, returns its file name."""
    p = _project()
    info = _dist(p) + ".dist-info"
    files = list(files) + [
        (info + "/METADATA", _metadata(p).encode()),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: mtp_wire_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = []
    for name, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    record.append(info + "/RECORD,,")
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    wheel = _dist(p) + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = []
    for f in sorted(os.listdir(os.path.join(ROOT, PACKAGE))):
        if f.endswith(".py"):
            with open(os.path.join(ROOT, PACKAGE, f), "rb") as fh:
                files.append((PACKAGE + "/" + f, fh.read()))
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """`pip install -e`: a .pth file that puts this folder on sys.path."""
    return _write_wheel(wheel_directory, [(PACKAGE + "_editable.pth", (ROOT + "\n").encode())])


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []
