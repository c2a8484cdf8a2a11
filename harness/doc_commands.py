"""The commands the documentation shows, and the list of those no test runs.

The rule (what a command is, and that each is run or exempt) is stated at the top of
tests/test_docs.py, which checks it; e2e/test_docs_commands.py runs the commands. Both read
the pages through this module: the pages (``pages``), their commands with the output a page
shows (``commands``), and the entries of docs/commands-exempt.txt (``exemptions``): a pattern
on a line of its own (``*`` stands for any text; the rest must match the whole command, spaces
aside), then its reason on the lines after it, indented.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
README = REPO / "README.md"
EXEMPTIONS = DOCS / "commands-exempt.txt"

SHELL_BLOCKS = frozenset({"sh", "bash", "shell"})
PROMPT = "$ "
_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")

#: What e2e/test_docs_commands.py knows how to run (a command's first words). Every other
#: command must be exempt.
RUNNABLE = ("kubectl ", "koordgang ", "make cluster-up ", "export ")


@dataclass(frozen=True)
class Command:
    page: Path
    line: int
    text: str
    #: The output the page shows after it (console blocks), or nothing.
    output: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def words(self) -> str:
        """The command with its spaces made single, as exemptions are matched."""
        return " ".join(self.text.split())


@dataclass(frozen=True)
class Exemption:
    pattern: str
    reason: str
    line: int

    def matches(self, command: Command) -> bool:
        parts = (re.escape(part) for part in " ".join(self.pattern.split()).split("*"))
        return re.fullmatch(".*".join(parts), command.words) is not None


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def commands(page: Path) -> list[Command]:
    found: list[Command] = []
    fence: str | None = None
    indent = 0
    kind = ""
    pending: list[str] = []
    pending_line = 0
    #: The command of this block whose output the next lines are (blocks that are not shell).
    current: int | None = None
    for number, raw in enumerate(page.read_text().splitlines(), start=1):
        if fence is None:
            opened = _FENCE.match(raw)
            if opened:
                indent, fence, kind = len(opened.group(1)), opened.group(2), opened.group(3)
                current = None
            continue
        if raw.strip().startswith(fence) and not raw.strip().strip(fence[0]):
            fence = None
            continue
        line = raw[indent:] if raw[:indent].isspace() else raw.lstrip()
        if kind in SHELL_BLOCKS:
            text = _without_comment(line).strip()
            if not pending and not text:
                continue
            if not pending:
                pending_line = number
            if text.endswith("\\"):
                pending.append(text[:-1].strip())
                continue
            pending.append(text)
            found.append(Command(page, pending_line, " ".join(p for p in pending if p)))
            pending = []
        elif line.startswith(PROMPT):
            found.append(Command(page, number, line[len(PROMPT) :].strip()))
            current = len(found) - 1
        elif current is not None:
            shown = found[current]
            found[current] = Command(
                shown.page, shown.line, shown.text, (*shown.output, line.rstrip())
            )
    return [Command(c.page, c.line, c.text, _trim(c.output)) for c in found]


def _trim(output: tuple[str, ...]) -> tuple[str, ...]:
    end = len(output)
    while end and not output[end - 1].strip():
        end -= 1
    return output[:end]


def _without_comment(line: str) -> str:
    quote = ""
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def all_commands() -> list[Command]:
    return [command for page in pages() for command in commands(page)]


def exemptions(path: Path = EXEMPTIONS) -> list[Exemption]:
    """The entries of ``docs/commands-exempt.txt``; one without a reason is an error."""
    entries: list[Exemption] = []
    pattern, first = "", 0
    reason: list[str] = []

    def close() -> None:
        if pattern:
            if not reason:
                raise ValueError(f"{path.name}:{first}: {pattern!r} gives no reason")
            entries.append(Exemption(pattern, " ".join(reason), first))

    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        if line[0].isspace():
            if not pattern:
                raise ValueError(f"{path.name}:{number}: a reason with no command before it")
            reason.append(line.strip())
            continue
        close()
        pattern, reason, first = line.strip(), [], number
    close()
    return entries


def exemption_for(command: Command, entries: list[Exemption]) -> Exemption | None:
    return next((entry for entry in entries if entry.matches(command)), None)


def runnable(command: Command) -> bool:
    return f"{command.words} ".startswith(RUNNABLE)
