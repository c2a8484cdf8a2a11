"""Only the product ships: the unit tests beside the code (``koordgang/**/test_*.py``,
``conftest.py``) and their support package (``koordgang/testing``) stay out of the wheel, the
sdist and the container image.

The wheel's modules are what setuptools' ``build_py`` copies to ``build/lib``; this runs the
build_py of setup.py into a temporary directory (well under a second, no network). The full
check, by hand::

    .venv/bin/python -m pip wheel --no-deps -w /tmp/wheel-check .
    .venv/bin/python -m zipfile -l /tmp/wheel-check/koordgang-*.whl | grep -E 'test|conftest'
"""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The package of test support (fakes, builders).
SUPPORT = "koordgang/testing"


def _setup_py() -> ModuleType:
    spec = importlib.util.spec_from_file_location("koordgang_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not as __main__: setup() does not run
    return module


def _source_files() -> tuple[set[str], set[str], set[str]]:
    """(product modules, test modules, test support modules) under koordgang/, as paths
    relative to the root."""
    product: set[str] = set()
    tests: set[str] = set()
    support: set[str] = set()
    for path in (ROOT / "koordgang").rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(f"{SUPPORT}/"):
            support.add(relative)
        elif path.name.startswith("test_") or path.name == "conftest.py":
            tests.add(relative)
        else:
            product.add(relative)
    return product, tests, support


def test_the_test_modules_are_what_setup_py_leaves_out() -> None:
    setup_py = _setup_py()
    product, tests, support = _source_files()
    assert len(tests) > 40 and "koordgang/engine/conftest.py" in tests
    assert {path for path in product | tests if setup_py.is_test_file(path)} == tests
    assert f"{SUPPORT}/harness.py" in support
    assert setup_py.TEST_PACKAGE == SUPPORT


def test_the_wheel_holds_every_module_of_the_product_and_no_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The build backend (pyproject's build-system): every environment that installs the
    # project has it. Imported by name: the setuptools of some environments has no type hints.
    setuptools = importlib.import_module("setuptools")

    setup_py = _setup_py()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["build-system"]["build-backend"] == "setuptools.build_meta"
    setuptools_config = config["tool"]["setuptools"]
    monkeypatch.chdir(ROOT)  # setuptools reads the packages relative to the working directory
    packages = setuptools.find_packages(**setuptools_config["packages"]["find"])
    assert "koordgang" in packages
    assert not [name for name in packages if name.startswith("koordgang.testing")]
    distribution = setuptools.Distribution(
        {
            "name": "koordgang",
            "packages": packages,
            "package_data": setuptools_config["package-data"],
            "cmdclass": {"build_py": setup_py.BuildPyWithoutTests},
        }
    )
    distribution.script_name = "setup.py"
    build_py = distribution.get_command_obj("build_py")
    assert isinstance(build_py, setup_py.BuildPyWithoutTests)
    build_py.build_lib = str(tmp_path)
    # A build/lib from before tests were left out still holds some: they go too.
    for stale in (tmp_path / "koordgang" / "engine" / "conftest.py", tmp_path / SUPPORT / "api.py"):
        stale.parent.mkdir(parents=True)
        stale.write_text("")
    build_py.ensure_finalized()
    build_py.run()
    built = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")}
    product, _, _ = _source_files()
    folders = {Path(path).parent.as_posix() for path in product}
    assert built == product | folders | {"koordgang/py.typed"}


def test_the_sdist_and_the_image_leave_the_tests_out_too() -> None:
    manifest = (ROOT / "MANIFEST.in").read_text().split()
    assert manifest[manifest.index("global-exclude") + 1 :][:2] == ["test_*.py", "conftest.py"]
    assert manifest[manifest.index("prune") + 1] == SUPPORT
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert "koordgang/**/test_*.py" in ignored
    assert "koordgang/**/conftest.py" in ignored
    assert SUPPORT in ignored
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY pyproject.toml setup.py MANIFEST.in README.md ./" in dockerfile
    assert "setup.py" not in ignored and "MANIFEST.in" not in ignored
