"""A PEP 660 build backend of the standard library alone, for the test project beside it.

`build_editable` makes the wheel an installer turns into an editable install, as
setuptools' and hatchling's do: a `.pth` naming src/ (config setting `mode=path`, the
default: hatchling's way, whose files name no module), or a `.pth` that installs a finder
of its own and a `top_level.txt` naming the package (`mode=finder`: setuptools' way for a
flat layout), which puts no folder on sys.path. The installer writes PEP 610's
direct_url.json (`"dir_info": {"editable": true}`).
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

NAME, VERSION = "capmod", "0.3.0"
SRC = Path(__file__).resolve().parent / "src"

FINDER = f"""
import importlib.util, sys


class _Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == {NAME!r}:
            return importlib.util.spec_from_file_location(
                name, {str(SRC / NAME / "__init__.py")!r},
                submodule_search_locations=[{str(SRC / NAME)!r}],
            )
        return None


def install():
    sys.meta_path.append(_Finder)
"""


def _wheel(directory: str, files: dict[str, str]) -> str:
    dist = f"{NAME}-{VERSION}.dist-info"
    files = {
        **files,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: editable_backend\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(Path(directory) / name, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return name


def get_requires_for_build_editable(
    config_settings: dict[str, str] | None = None,  # noqa: ARG001 (PEP 517's signature)
) -> list[str]:
    return []


def get_requires_for_build_wheel(
    config_settings: dict[str, str] | None = None,  # noqa: ARG001 (PEP 517's signature)
) -> list[str]:
    return []


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, str] | None = None,
    metadata_directory: str | None = None,  # noqa: ARG001 (PEP 660's signature)
) -> str:
    if (config_settings or {}).get("mode") == "finder":
        return _wheel(
            wheel_directory,
            {
                f"_{NAME}_finder.py": FINDER,
                f"_{NAME}_editable.pth": f"import _{NAME}_finder; _{NAME}_finder.install()\n",
                f"{NAME}-{VERSION}.dist-info/top_level.txt": f"{NAME}\n",
            },
        )
    return _wheel(wheel_directory, {f"_{NAME}_editable.pth": f"{SRC}\n"})


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, str] | None = None,  # noqa: ARG001 (PEP 517's signature)
    metadata_directory: str | None = None,  # noqa: ARG001
) -> str:
    package = SRC / NAME
    files = {f"{NAME}/{p.name}": p.read_text(encoding="utf-8") for p in package.glob("*.py")}
    return _wheel(wheel_directory, files)
