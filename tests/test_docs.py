"""The docs never drift from the code.

The rule. The pages are README.md and every ``docs/**/*.md``. A command is what a page shows
in a fenced code block:

- in a block marked ``sh``, ``bash`` or ``shell``: every line, less blank lines and ``#``
  comments; a line ending in ``\\`` goes on on the next;
- in any other fenced block (``console``, ``text``, none): every line that starts with ``$ ``,
  without the prompt; the lines after it, up to the next prompt or the end of the block, are
  its output as the page shows it.

Code in running text is not a command. Every command is either

- run by e2e/test_docs_commands.py, as written, on the local control plane (it runs commands
  that start with ``kubectl``, ``koordgang``, ``make cluster-up`` or ``export``: each must
  exit 0, and print the first line of the output the page shows, spaces aside); or
- exempt: it matches an entry of docs/commands-exempt.txt, which gives the reason.

An entry no page shows any more fails too. Whether run or exempt, what a command names must
exist: the files and folders of the checkout, the make targets, the flags of ``koordgang`` and
of the bench. Every page is linked from the README, and links between pages (anchors too)
resolve. The parsing lives in harness/doc_commands.py, shared with the e2e test.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from harness.doc_commands import (
    DOCS,
    README,
    REPO,
    Command,
    all_commands,
    exemption_for,
    exemptions,
    pages,
    runnable,
)

#: The README is a front door, not a manual.
README_MAX_LINES = 250

COMMANDS = all_commands()
EXEMPTIONS = exemptions()


def _where(commands: list[Command]) -> str:
    return "\n".join(f"  {c.where}: {c.text}" for c in commands)


def test_the_pages_show_commands() -> None:
    # The parsing itself: a page without a command would make every check below vacuous.
    assert any(c.page == README for c in COMMANDS)
    assert any(c.output for c in COMMANDS), "some page shows a command's output"


def test_every_command_is_run_by_the_e2e_test_or_exempt() -> None:
    neither = [c for c in COMMANDS if exemption_for(c, EXEMPTIONS) is None and not runnable(c)]
    assert not neither, (
        "these commands are neither run by e2e/test_docs_commands.py nor listed in "
        f"docs/commands-exempt.txt with a reason:\n{_where(neither)}"
    )


def test_no_exemption_is_stale() -> None:
    stale = [e for e in EXEMPTIONS if not any(e.matches(c) for c in COMMANDS)]
    assert not stale, "docs/commands-exempt.txt lists commands no page shows: " + ", ".join(
        f"line {e.line}: {e.pattern!r}" for e in stale
    )


def test_exemptions_say_why() -> None:
    assert all(len(e.reason) > 10 for e in EXEMPTIONS)


def _words(command: Command) -> list[str]:
    return shlex.split(command.text)


def _assignments_and_rest(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """``A=1 B=2 make x C=3`` -> ({A, B, C}, [make, x])."""
    assigned: dict[str, str] = {}
    rest: list[str] = []
    for word in words:
        name, equals, value = word.partition("=")
        if equals and re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
            assigned[name] = value
        else:
            rest.append(word)
    return assigned, rest


def test_the_files_a_command_names_exist() -> None:
    top = {path.name for path in REPO.iterdir()}
    missing = []
    for command in COMMANDS:
        for word in _words(command):
            value = word.partition("=")[2] if word.startswith("--") else word
            named = "/" in value and value.split("/", 1)[0] in top
            if named and not re.search(r"[<$*]", value) and not (REPO / value).exists():
                missing.append(f"  {command.where}: {value}")
    assert not missing, "commands name files the checkout does not have:\n" + "\n".join(missing)


def _make_targets() -> set[str]:
    targets: set[str] = set()
    for line in (REPO / "Makefile").read_text().splitlines():
        found = re.match(r"^([A-Za-z0-9_.\- ]+):(?!=)", line)
        if found and not line.startswith("."):
            targets.update(found.group(1).split())
    return targets


def test_the_make_targets_a_page_gives_exist() -> None:
    targets = _make_targets()
    unknown = []
    for command in COMMANDS:
        _, rest = _assignments_and_rest(_words(command))
        if rest[:1] == ["make"]:
            unknown += [f"  {command.where}: {t}" for t in rest[1:] if t not in targets]
    assert not unknown, "make targets the Makefile lacks:\n" + "\n".join(unknown)


def _koordgang_commands() -> list[Any]:
    """(command, the arguments of ``koordgang``) for ``koordgang`` and ``kubectl koordgang``."""
    found = []
    for command in COMMANDS:
        words = _words(command)
        if words[:1] == ["koordgang"]:
            found.append(pytest.param(command, words[1:], id=command.where))
        elif words[:2] == ["kubectl", "koordgang"]:
            found.append(pytest.param(command, words[2:], id=command.where))
    return found


@pytest.mark.parametrize(("command", "argv"), _koordgang_commands())
def test_koordgang_takes_the_arguments_a_page_gives(
    command: Command, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from koordgang.cli import build_parser

    try:
        build_parser().parse_args(argv)
    except SystemExit as stop:  # --help exits 0; a bad argument 2
        assert stop.code == 0, f"{command.where}: {capsys.readouterr().err}"


def _bench_commands() -> list[Any]:
    """(command, the arguments of ``python -m bench``), or None for another bench module."""
    found = []
    for command in COMMANDS:
        assigned, rest = _assignments_and_rest(_words(command))
        argv: list[str] | None
        if rest[:2] == ["make", "bench"]:
            argv = ["--peers", assigned["PEERS"]] if "PEERS" in assigned else []
            argv += shlex.split(assigned.get("BENCH_ARGS", ""))
        elif rest[:3] == ["python", "-m", "bench"]:
            argv = rest[3:]
        elif rest[:2] == ["python", "-m"] and rest[2].startswith("bench."):
            argv = None
        else:
            continue
        found.append(pytest.param(command, argv, id=command.where))
    return found


@pytest.mark.parametrize(("command", "argv"), _bench_commands())
def test_the_bench_takes_the_arguments_a_page_gives(
    command: Command, argv: list[str] | None, capsys: pytest.CaptureFixture[str]
) -> None:
    if argv is None:
        module = _words(command)[2]
        assert importlib.util.find_spec(module) is not None, f"{command.where}: no {module}"
        return
    from bench.__main__ import parse_args

    try:
        parse_args(argv)
    except SystemExit:
        pytest.fail(f"{command.where}: the bench refuses {argv}: {capsys.readouterr().err}")


# -- links -------------------------------------------------------------------------------------

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _prose(page: Path, code: bool = False) -> str:
    """The page's text outside fenced blocks, less inline code unless ``code``."""
    lines, fenced = [], False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    text = "\n".join(lines)
    return text if code else re.sub(r"`[^`]*`", "", text)


def _links(page: Path) -> list[str]:
    """Link targets within the checkout (a link's text may run over several lines)."""
    return [t for t in _LINK.findall(_prose(page)) if not re.match(r"[a-z]+:", t)]


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors for the page's headings."""
    anchors: set[str] = set()
    for line in _prose(page, code=True).splitlines():
        if re.match(r"#{1,6} ", line):
            text = line.lstrip("#").strip().lower()
            slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
            candidate, n = slug, 0
            while candidate in anchors:
                n += 1
                candidate = f"{slug}-{n}"
            anchors.add(candidate)
    return anchors


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(README.parent / t.split("#")[0]).resolve() for t in _links(README)}
    unlinked = [p.relative_to(REPO) for p in sorted(DOCS.rglob("*.md")) if p not in linked]
    assert not unlinked, f"pages the README's map does not link: {unlinked}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_the_links_of_a_page_resolve(page: Path) -> None:
    broken = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no {path})")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target} (no heading #{anchor} in {file.relative_to(REPO)})")
    assert not broken, f"{page.relative_to(REPO)}: " + ", ".join(broken)


def test_the_readme_is_a_front_door() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move the rest to docs/"
