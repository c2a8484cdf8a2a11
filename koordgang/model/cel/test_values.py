from fractions import Fraction

import pytest

from koordgang.model.cel.values import (
    Semver,
    SemverError,
    as_quantity,
    as_semver,
    normalize_semver,
    parse_k8s_quantity,
    parse_semver,
    quantity_approximate_float,
    quantity_as_int64,
    quantity_value,
    semver_value,
)
from koordgang.model.quantity import QuantityError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("80Gi", Fraction(80 * 2**30)),
        ("1.5", Fraction(3, 2)),
        ("100m", Fraction(1, 10)),
        ("1n", Fraction(1, 10**9)),
        ("0.1n", Fraction(1, 10**9)),
        ("1.5n", Fraction(2, 10**9)),
        ("-0.1n", Fraction(-1, 10**9)),
        ("1e-10", Fraction(1, 10**9)),
        ("16Ei", Fraction(2**63 - 1)),
        ("-16Ei", Fraction(-(2**63 - 1))),
        ("16E", Fraction(16 * 10**18)),
    ],
)
def test_a_quantity_keeps_nano_precision_rounded_up_and_binary_values_fit_int64(
    text: str, expected: Fraction
) -> None:
    assert parse_k8s_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "10Mo", "10Mm", "1ki", "abc", " 1", "1 "])
def test_text_that_is_no_quantity_is_refused(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_k8s_quantity(text)


def test_a_quantity_round_trips_through_its_tagged_cel_form() -> None:
    assert as_quantity(quantity_value(Fraction(3, 2))) == Fraction(3, 2)
    assert quantity_value(parse_k8s_quantity("1Gi")) == quantity_value(parse_k8s_quantity("1024Mi"))


@pytest.mark.parametrize("value", [{"kubernetes.Semver": "1.0.0"}, {"x": "1"}, "1", 1, None, {}])
def test_anything_but_a_tagged_quantity_is_not_taken_for_one(value: object) -> None:
    assert as_quantity(value) is None


@pytest.mark.parametrize(
    ("amount", "expected"),
    [
        (Fraction(5), 5),
        (Fraction(3, 2), None),
        (Fraction(2**63 - 1), 2**63 - 1),
        (Fraction(2**63), None),
        (Fraction(-(2**63)), -(2**63)),
    ],
)
def test_a_quantity_is_an_int64_only_when_whole_and_in_range(
    amount: Fraction, expected: int | None
) -> None:
    assert quantity_as_int64(amount) == expected


def test_an_approximate_float_past_the_double_range_is_infinite() -> None:
    assert quantity_approximate_float(Fraction(50703)) == 50703.0
    assert quantity_approximate_float(Fraction(10**400)) == float("inf")
    assert quantity_approximate_float(Fraction(-(10**400))) == float("-inf")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.2.3", Semver(1, 2, 3)),
        ("0.0.0", Semver(0, 0, 0)),
        ("1.2.3-beta.1+build.1", Semver(1, 2, 3, ("beta", 1))),
        ("1.2.3+build-x", Semver(1, 2, 3)),
        ("1.2.3-rc-1", Semver(1, 2, 3, ("rc-1",))),
        ("1.2.3-0", Semver(1, 2, 3, (0,))),
        ("1.2.3-0a", Semver(1, 2, 3, ("0a",))),
    ],
)
def test_a_strict_semantic_version_parses(text: str, expected: Semver) -> None:
    assert parse_semver(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Version string empty"),
        ("1", "No Major.Minor.Patch elements found"),
        ("1.1", "No Major.Minor.Patch elements found"),
        ("v1.0.0", 'Invalid character(s) found in major number "v1"'),
        (" 1.0.0", "Invalid character(s) found in major number"),
        ("1. 0.0", "Invalid character(s) found in minor number"),
        ("1.0.0 ", "Invalid character(s) found in patch number"),
        ("01.1.1", "Major number must not contain leading zeroes"),
        ("1.01.1", "Minor number must not contain leading zeroes"),
        ("1.1.01", "Patch number must not contain leading zeroes"),
        ("1.2.3-", "Prerelease is empty"),
        ("1.2.3-a..b", "Prerelease is empty"),
        ("1.2.3-01", "Numeric PreRelease version must not contain leading zeroes"),
        ("1.2.3-a_b", "Invalid character(s) found in prerelease"),
        ("1.2.3+", "Build meta data can not be empty"),
        ("1.2.3+a+b", "Invalid character(s) found in build meta data"),
        ("1.x.3", "Invalid character(s) found in minor number"),
    ],
)
def test_text_that_is_no_strict_semantic_version_is_refused_with_blangs_words(
    text: str, message: str
) -> None:
    with pytest.raises(SemverError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_semver(text)


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("1.0.0", "2.0.0"),
        ("2.0.0", "2.1.0"),
        ("2.1.0", "2.1.1"),
        ("1.0.0-alpha", "1.0.0"),
        ("1.0.0-alpha", "1.0.0-alpha.1"),
        ("1.0.0-alpha.1", "1.0.0-alpha.beta"),
        ("1.0.0-alpha.beta", "1.0.0-beta"),
        ("1.0.0-beta", "1.0.0-beta.2"),
        ("1.0.0-beta.2", "1.0.0-beta.11"),
        ("1.0.0-beta.11", "1.0.0-rc.1"),
        ("1.0.0-rc.1", "1.0.0"),
        ("1.9.0", "1.10.0"),
    ],
)
def test_versions_order_by_semver_precedence(lower: str, higher: str) -> None:
    assert parse_semver(lower).compare(parse_semver(higher)) == -1
    assert parse_semver(higher).compare(parse_semver(lower)) == 1


def test_build_metadata_takes_no_part_in_equality() -> None:
    assert parse_semver("1.2.3+a").compare(parse_semver("1.2.3+b")) == 0
    assert semver_value(parse_semver("1.2.3+a")) == semver_value(parse_semver("1.2.3+b"))
    assert as_semver(semver_value(parse_semver("1.2.3-rc.1"))) == Semver(1, 2, 3, ("rc", 1))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v1.0.0", Semver(1, 0, 0)),
        ("01.01.01", Semver(1, 1, 1)),
        ("1", Semver(1, 0, 0)),
        ("1.1", Semver(1, 1, 0)),
        ("v01.01", Semver(1, 1, 0)),
        ("1.2.0-rc", Semver(1, 2, 0, ("rc",))),
    ],
)
def test_normalizing_forgives_a_v_prefix_leading_zeros_and_missing_parts(
    text: str, expected: Semver
) -> None:
    assert normalize_semver(text) == expected


@pytest.mark.parametrize("text", ["", " 1.0.0", "1. 0.0", "1.0.0 ", "1-rc", "1.1+b"])
def test_normalizing_still_refuses_what_is_no_version(text: str) -> None:
    with pytest.raises(SemverError):
        normalize_semver(text)
