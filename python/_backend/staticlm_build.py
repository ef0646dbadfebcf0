"""A small PEP 517 build backend for the staticlm Python package.

It puts the pure-Python package (python/staticlm/) and the shared library
libstaticlm.so.1 into one platform wheel. The library is either copied from
an existing meson build directory (STATICLM_BUILD_DIR, as tools/test_python.sh
does so the library is not built twice) or built here with meson + ninja from
the repository this directory sits in. Only the standard library is used, so
an isolated build environment needs nothing from PyPI.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

_PYTHON_DIR = Path(__file__).resolve().parent.parent  # python/
_REPO = _PYTHON_DIR.parent                            # the staticlm checkout
_HEADER = _REPO / "include" / "staticlm" / "staticlm.h"
_LIB_NAME = "libstaticlm.so.1"
_LIB_TARGET = "libstaticlm.so.1.0.0"  # meson's ninja target for the shared library
_NAME = "staticlm"


class BuildError(RuntimeError):
    pass


def _version() -> str:
    text = _HEADER.read_text(encoding="utf-8")
    m = re.search(r'#define\s+SLM_VERSION_STRING\s+"([0-9][0-9A-Za-z.+-]*)"', text)
    if not m:
        raise BuildError(f"{_HEADER}: no SLM_VERSION_STRING")
    return m.group(1)


def _log(message: str) -> None:
    print(f"staticlm build: {message}", file=sys.stderr, flush=True)


def _library_in(build_dir: Path) -> Path | None:
    for name in (_LIB_NAME, _LIB_TARGET):
        p = build_dir / name
        if p.is_file():
            return p.resolve()
    return None


def _library_from_env() -> Path | None:
    value = os.environ.get("STATICLM_BUILD_DIR")
    if not value:
        return None
    build_dir = Path(value)
    if not (build_dir / "build.ninja").is_file():
        raise BuildError(f"STATICLM_BUILD_DIR={value} is not a meson build directory (no build.ninja)")
    lib = _library_in(build_dir)
    if lib is None:
        raise BuildError(f"STATICLM_BUILD_DIR={value} has no {_LIB_NAME}: run `ninja -C {value} {_LIB_TARGET}` "
                         "first, or unset STATICLM_BUILD_DIR to build the library here")
    _log(f"using {lib} (STATICLM_BUILD_DIR)")
    return lib


def _run(cmd: list[str]) -> None:
    _log(" ".join(cmd))
    # The tools' output goes to stderr: pip shows it with -v and on failure.
    r = subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr)
    if r.returncode != 0:
        raise BuildError(f"`{' '.join(cmd)}` failed with exit status {r.returncode}")


def _build_library(work: Path) -> Path:
    for tool in ("meson", "ninja"):
        if shutil.which(tool) is None:
            raise BuildError(f"{tool} is not on PATH: install it (Debian: apt-get install meson ninja-build g++ "
                             "pkg-config libxsimd-dev nlohmann-json3-dev libsentencepiece-dev), or set "
                             "STATICLM_BUILD_DIR to a meson build directory that has " + _LIB_NAME)
    if not (_REPO / "meson.build").is_file():
        raise BuildError(f"{_REPO}/meson.build not found: build from a staticlm checkout (pip install ./python)")
    build_dir = work / "meson"
    _run(["meson", "setup", str(build_dir), str(_REPO), "--buildtype=release", "-Dtests=false",
          "-Dbenchmarks=disabled"])
    _run(["ninja", "-C", str(build_dir), _LIB_TARGET])
    lib = _library_in(build_dir)
    if lib is None:
        raise BuildError(f"ninja built {_LIB_TARGET} but {build_dir} has no {_LIB_NAME}")
    return lib


def _platform_tag() -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def _metadata() -> str:
    readme = (_PYTHON_DIR / "README.md").read_text(encoding="utf-8")
    return (f"Metadata-Version: 2.1\nName: {_NAME}\nVersion: {_version()}\n"
            "Summary: Python bindings for staticlm, a static-shape LLM inference engine for CPUs\n"
            "License: MIT\nRequires-Python: >=3.9\nRequires-Dist: numpy>=1.22\n"
            "Description-Content-Type: text/markdown\n\n" + readme)


def _wheel_file(tag: str) -> str:
    return f"Wheel-Version: 1.0\nGenerator: staticlm_build\nRoot-Is-Purelib: false\nTag: {tag}\n"


def _dist_info() -> str:
    return f"{_NAME}-{_version()}.dist-info"


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _package_files() -> list[tuple[str, Path]]:
    src = _PYTHON_DIR / _NAME
    files = []
    for p in sorted(src.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc" and not p.name.startswith("libstaticlm"):
            files.append((f"{_NAME}/{p.relative_to(src).as_posix()}", p))
    return files


def _write_wheel(wheel_directory: str, lib: Path) -> str:
    tag = f"py3-none-{_platform_tag()}"
    name = f"{_NAME}-{_version()}-{tag}.whl"
    dist_info = _dist_info()
    entries: list[tuple[str, bytes, int]] = []
    for arcname, path in _package_files():
        entries.append((arcname, path.read_bytes(), 0o644))
    entries.append((f"{_NAME}/{_LIB_NAME}", lib.read_bytes(), 0o755))
    entries.append((f"{dist_info}/METADATA", _metadata().encode(), 0o644))
    entries.append((f"{dist_info}/WHEEL", _wheel_file(tag).encode(), 0o644))
    entries.append((f"{dist_info}/top_level.txt", f"{_NAME}\n".encode(), 0o644))
    license_file = _REPO / "LICENSE"
    if license_file.is_file():
        entries.append((f"{dist_info}/LICENSE", license_file.read_bytes(), 0o644))
    record = [_record_line(a, d) for a, d, _ in entries] + [f"{dist_info}/RECORD,,"]
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode(), 0o644))

    out = Path(wheel_directory) / name
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for arcname, data, mode in entries:
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    _log(f"wrote {out}")
    return name


# ------------------------------------------------------------ PEP 517 hooks

def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = Path(metadata_directory) / _dist_info()
    d.mkdir(parents=True, exist_ok=True)
    (d / "METADATA").write_text(_metadata(), encoding="utf-8")
    (d / "WHEEL").write_text(_wheel_file(f"py3-none-{_platform_tag()}"), encoding="utf-8")
    return d.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    try:
        lib = _library_from_env()
        if lib is not None:
            return _write_wheel(wheel_directory, lib)
        with tempfile.TemporaryDirectory(prefix="staticlm-build-") as work:
            return _write_wheel(wheel_directory, _build_library(Path(work)))
    except BuildError as e:
        _log(f"error: {e}")
        raise
