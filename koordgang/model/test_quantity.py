from fractions import Fraction

import pytest

from koordgang.model.quantity import (
    QuantityError,
    format_quantity,
    parse_quantity,
    to_int,
    to_milli,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", Fraction(0)),
        ("1", Fraction(1)),
        ("128974848", Fraction(128974848)),
        ("1.5", Fraction(3, 2)),
        ("0.1", Fraction(1, 10)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("+2", Fraction(2)),
        ("-2", Fraction(-2)),
        ("100m", Fraction(1, 10)),
        ("1n", Fraction(1, 10**9)),
        ("1u", Fraction(1, 10**6)),
        ("1k", Fraction(1000)),
        ("500M", Fraction(500 * 10**6)),
        ("2G", Fraction(2 * 10**9)),
        ("1T", Fraction(10**12)),
        ("1P", Fraction(10**15)),
        ("1E", Fraction(10**18)),
        ("1Ki", Fraction(1024)),
        ("123Mi", Fraction(128974848)),
        ("1Gi", Fraction(1073741824)),
        ("1.5Gi", Fraction(1610612736)),
        ("1Ti", Fraction(2**40)),
        ("1Pi", Fraction(2**50)),
        ("1Ei", Fraction(2**60)),
        ("129e6", Fraction(129000000)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("1e+3", Fraction(1000)),
        ("1e-3", Fraction(1, 1000)),
        ("1.5e2", Fraction(150)),
        ("0.000001", Fraction(1, 10**6)),
    ],
)
def test_valid_quantity_text_parses_to_its_exact_value(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, Fraction(3)),
        (0, Fraction(0)),
        (0.1, Fraction(1, 10)),
        (2.5, Fraction(5, 2)),
        (Fraction(7, 3), Fraction(7, 3)),
    ],
)
def test_numbers_from_json_parse_to_their_decimal_value(
    value: int | float | Fraction, expected: Fraction
) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize(
    ("text", "millicores"),
    [
        ("100m", 100),
        ("1.5", 1500),
        ("0.1", 100),
        ("1", 1000),
        ("2", 2000),
        ("1u", 1),
        ("1n", 1),
        ("1500u", 2),
        ("0.0001", 1),
        ("250m", 250),
        ("0", 0),
        ("1e-3", 1),
        ("-100m", -100),
    ],
)
def test_to_milli_rounds_up_to_whole_millicores(text: str, millicores: int) -> None:
    assert to_milli(text) == millicores


@pytest.mark.parametrize(
    ("text", "units"),
    [
        ("1Gi", 1073741824),
        ("128974848", 128974848),
        ("129e6", 129000000),
        ("123Mi", 128974848),
        ("129M", 129000000),
        ("1.5", 2),
        ("100m", 1),
        ("1001m", 2),
        ("1000m", 1),
        ("0", 0),
        ("4", 4),
    ],
)
def test_to_int_rounds_up_to_whole_units(text: str, units: int) -> None:
    assert to_int(text) == units


def test_to_int_and_to_milli_accept_parsed_fractions() -> None:
    assert to_int(Fraction(3, 2)) == 2
    assert to_milli(Fraction(1, 3)) == 334


@pytest.mark.parametrize(
    "text",
    [
        "",
        "abc",
        "1e",
        "e3",
        "1K",
        "1ki",
        "1mi",
        "1 Gi",
        " 1",
        "1 ",
        "1.2.3",
        ".",
        "-",
        "Mi",
        "0x10",
        "1,5",
        "1Gi1",
        "1e3Mi",
        "1e1.5",
        "--1",
        "1_000",
        "\u0661",  # an Arabic-Indic digit one: Kubernetes accepts ASCII digits only
    ],
)
def test_garbage_text_is_rejected_with_the_value_in_the_message(text: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert f'invalid quantity "{text}"' in str(caught.value)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (True, "true"),
        (None, "null"),
        ([1], "[1]"),
    ],
)
def test_non_quantity_values_are_rejected_with_the_value_in_the_message(
    value: object, shown: str
) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(value)  # type: ignore[arg-type]
    assert f"invalid quantity {shown}" in str(caught.value)


def test_an_absurd_exponent_is_rejected_instead_of_computed() -> None:
    with pytest.raises(QuantityError, match="exponent 100000 is out of range"):
        parse_quantity("1e100000")


def test_an_overlong_quantity_is_rejected() -> None:
    with pytest.raises(QuantityError, match="longer than 64 characters"):
        parse_quantity("1" * 65)


def test_quantity_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_quantity("nope")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Fraction(0), "0"),
        (Fraction(20 * 2**30), "20Gi"),
        (Fraction(3000), "3k"),
        (Fraction(1536), "1536"),
        (Fraction(7), "7"),
        (Fraction(3, 2), "1500m"),
        (Fraction(1, 3), "333333334n"),
    ],
)
def test_format_quantity_writes_what_parses_back_at_least_as_large(
    value: Fraction, text: str
) -> None:
    assert format_quantity(value) == text
    assert parse_quantity(text) >= value
