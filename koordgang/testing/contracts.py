"""An import-linter contract the built-in ones cannot state: the product imports no test code.

Unit tests sit beside the modules they test, inside the product's packages, and import the
test support package; a forbidden contract over the product's packages would count those
imports too, and import-linter's module expressions cannot pick modules by the start of a
name (``test_*``). This contract tells test code the way pytest does (modules ``test_*`` and
``conftest``) plus the support package, and checks that no other module of the container
imports any of it. Every chain from the product into test code starts with such an import, so
the direct imports are all there is to check.
"""

from __future__ import annotations

from typing import TypedDict

import grimp
from importlinter import Contract, ContractCheck, fields, output


class IllegalImport(TypedDict):
    importer: str
    imported: str
    line_numbers: list[int]


def is_test_code(module: str, support: str) -> bool:
    """A test module or conftest (by pytest's names), or a module of the support package."""
    name = module.rsplit(".", 1)[-1]
    in_support = module == support or module.startswith(f"{support}.")
    return in_support or name.startswith("test_") or name == "conftest"


class ProductImportsNoTests(Contract):
    """``container``: the product's package; ``support``: its package of test support."""

    type_name = "product_imports_no_tests"

    container = fields.StringField()
    support = fields.StringField()

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        container, support = str(self.container), str(self.support)
        modules = graph.find_descendants(container) | {container}
        test_code = {module for module in modules if is_test_code(module, support)}
        if support not in test_code:
            raise ValueError(f"{support} is not a package of {container}")
        illegal: list[IllegalImport] = []
        for importer in sorted(modules - test_code):
            for imported in sorted(graph.find_modules_directly_imported_by(importer) & test_code):
                details = graph.get_import_details(importer=importer, imported=imported)
                lines = sorted(detail["line_number"] for detail in details)
                illegal.append({"importer": importer, "imported": imported, "line_numbers": lines})
        return ContractCheck(kept=not illegal, metadata={"illegal_imports": illegal})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error(f"Modules of {self.container} that import test code:", bold=False)
        output.new_line()
        illegal: list[IllegalImport] = check.metadata["illegal_imports"]
        for entry in illegal:
            lines = ", ".join(map(str, entry["line_numbers"]))
            output.print_error(f"- {entry['importer']} -> {entry['imported']} (l.{lines})")
            output.new_line()
