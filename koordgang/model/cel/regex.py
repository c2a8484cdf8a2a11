"""Kubernetes' regex library (k8s.io/apiserver ``pkg/cel/library/regex.go``): ``find`` and
``findAll``, with Go's regexp semantics (RE2)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from cel_expr_python import cel

from koordgang.model.cel.errors import FunctionFailed
from koordgang.model.cel.messages import runtime_message

__all__ = ["find", "find_all", "uncaptured"]

# Kubernetes runs Go's regexp (RE2 syntax and semantics). cel-cpp's own regex extension runs
# RE2 too, so find/findAll are built on it (in a private environment: Kubernetes does not
# offer ``regex.extract`` to selectors) rather than on Python's ``re``, whose syntax and
# semantics differ ($ before a final newline, Unicode \w, [[:alpha:]], ...).

# RE2 accepts repetition counts up to 1000: the prefix that pins a search position uses one.
_MAX_FIND_ALL_TEXT = 1000


@cache
def _regex_programs() -> tuple[Any, Any]:
    env = cel.NewEnv(
        config=cel.NewEnvConfigFromYaml(
            'extensions:\n  - name: "bindings"\n  - name: "optional"\n  - name: "regex"\n'
        ),
        variables={"s": cel.Type.STRING, "p": cel.Type.STRING},
    )
    extract = env.compile("cel.bind(r, regex.extract(s, p), r.hasValue() ? [r.value()] : [])")
    validate = env.compile('"".matches(p)')
    return extract, validate


def _run(program: Any, text: str, pattern: str) -> Any:
    result = program.eval(data={"s": text, "p": pattern})
    if result.type() == cel.Type.ERROR:
        raise FunctionFailed("Illegal regex: " + runtime_message(str(result.value())))
    return result.plain_value()


def _extract(text: str, pattern: str) -> str | None:
    found = _run(_regex_programs()[0], text, pattern)
    return str(found[0]) if found else None


def _validated(pattern: str) -> str:
    _run(_regex_programs()[1], "", pattern)
    return uncaptured(pattern)


def uncaptured(pattern: str) -> str:
    """``pattern`` with every capturing group made non-capturing (same matches in RE2, which
    has no back-references), so that the helper can wrap it in the one group it reads."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        char = pattern[i]
        if char == "\\":
            if pattern.startswith("\\Q", i):  # literal text up to \E
                end = pattern.find("\\E", i + 2)
                end = n if end < 0 else end + 2
                out.append(pattern[i:end])
                i = end
            else:
                out.append(pattern[i : i + 2])
                i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i) and (end := pattern.find(":]", i + 2)) >= 0:
                out.append(pattern[i : end + 2])  # [:alpha:] holds a "]" that closes nothing
                i = end + 2
                continue
            in_class = char != "]"
            out.append(char)
            i += 1
            continue
        if char == "[":
            in_class = True
            start = i + 1
            if pattern.startswith("^", start):
                start += 1
            if pattern.startswith("]", start):  # a leading "]" is a literal
                start += 1
            out.append(pattern[i:start])
            i = start
            continue
        if char == "(":
            named = re.match(r"\(\?P?<[^>]*>", pattern[i:])
            if named:
                out.append("(?:")
                i += len(named.group())
            elif pattern.startswith("(?", i):
                out.append("(")
                i += 1
            else:
                out.append("(?:")
                i += 1
            continue
        out.append(char)
        i += 1
    return "".join(out)


def find(text: str, pattern: str) -> str:
    found = _extract(text, "(" + _validated(pattern) + ")")
    return found or ""


def find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    inner = _validated(pattern)
    if limit == 0:
        return []
    if len(text) > _MAX_FIND_ALL_TEXT:
        raise FunctionFailed(
            f"koordgang cannot evaluate findAll() on text longer than {_MAX_FIND_ALL_TEXT}"
            " characters yet"
        )
    found: list[str] = []
    for match in _go_find_all(text, inner):
        found.append(match)
        if len(found) == limit:
            break
    return found


def _go_find_all(text: str, inner: str) -> Iterator[str]:
    # Go's FindAllString: successive leftmost-first matches; after an empty match the search
    # moves on one character, and an empty match right where the previous match ended is
    # dropped. A search from ``pos`` keeps the whole text as context (for ^, \b) by consuming
    # exactly ``pos`` characters first; the lazy ``.*?`` (across newlines too) then finds the
    # leftmost start.
    pos, previous_end = 0, -1
    while pos <= len(text):
        prefix = _extract(text, rf"\A((?s:.{{{pos}}}.*?))(?:{inner})")
        if prefix is None:
            return
        start = len(prefix)
        match = _extract(text, rf"\A(?s:.{{{start}}})({inner})") or ""
        end = start + len(match)
        if end == pos:  # an empty match where the search began
            accept = start != previous_end
            pos += 1
        else:
            accept = True
            pos = end
        previous_end = end
        if accept:
            yield match
