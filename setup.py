"""Only the product goes into the sdist and the wheel: the unit tests that live beside the code
(``koordgang/**/test_*.py``, ``conftest.py``) and their support package (``koordgang/testing``,
left out by pyproject.toml's package finder) stay in the source tree, where ``make unit`` runs
them. Everything else about the build is in pyproject.toml.

setuptools has no setting that leaves a module out of a package, hence this ``build_py``;
MANIFEST.in keeps the same files out of the sdist. ``tests/test_packaging.py`` checks both,
and the image's build context (.dockerignore).
"""

from __future__ import annotations

import fnmatch
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

#: File names of test modules, as pytest finds them (pyproject: python_files) and conftest.
TEST_FILES = ("test_*.py", "conftest.py")
#: The package of test support (fakes, builders): a package of its own, not in the product.
TEST_PACKAGE = os.path.join("koordgang", "testing")


def is_test_file(path: str) -> bool:
    name = os.path.basename(path)
    return any(fnmatch.fnmatch(name, pattern) for pattern in TEST_FILES)


class BuildPyWithoutTests(build_py):
    """``build_py`` that leaves the test modules out."""

    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        modules = super().find_package_modules(package, package_dir)
        return [module for module in modules if not is_test_file(module[2])]

    def run(self) -> None:
        # build/lib outlives a build: a tree built before tests were left out still has them.
        shutil.rmtree(os.path.join(self.build_lib, TEST_PACKAGE), ignore_errors=True)
        for root, _, files in os.walk(os.path.join(self.build_lib, "koordgang")):
            for name in filter(is_test_file, files):
                os.remove(os.path.join(root, name))
        super().run()


if __name__ == "__main__":  # run by the build backend; imported by the packaging test
    setup(cmdclass={"build_py": BuildPyWithoutTests})
