from typing import Any

import pytest

from koordgang.model.time import DurationError, TimestampError, parse_go_duration, parse_rfc3339


@pytest.mark.parametrize(
    ("text", "epoch"),
    [
        ("1970-01-01T00:00:00Z", 0.0),
        ("2024-01-02T03:04:05Z", 1704164645.0),
        ("2024-02-29T23:59:59Z", 1709251199.0),
        ("2024-01-02T03:04:05.5Z", 1704164645.5),
        ("2024-01-02T03:04:05.250000Z", 1704164645.25),
        ("2024-01-02T04:04:05+01:00", 1704164645.0),
        ("2024-01-01T22:34:05-04:30", 1704164645.0),
        ("2024-01-02T03:04:05+00:00", 1704164645.0),
    ],
)
def test_rfc3339_timestamps_parse_to_epoch_seconds(text: str, epoch: float) -> None:
    assert parse_rfc3339(text) == pytest.approx(epoch, abs=1e-6)


def test_nanosecond_fractions_keep_sub_millisecond_precision() -> None:
    assert parse_rfc3339("2024-01-02T03:04:05.123456789Z") == pytest.approx(
        1704164645.123456789, abs=1e-6
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "expected RFC 3339"),
        ("yesterday", "expected RFC 3339"),
        ("2024-01-02", "expected RFC 3339"),
        ("2024-01-02T03:04:05", "expected RFC 3339"),
        ("2024-01-02 03:04:05Z", "expected RFC 3339"),
        ("2024-01-02T03:04Z", "expected RFC 3339"),
        ("2024-01-02T03:04:05.Z", "expected RFC 3339"),
        ("2024-13-01T00:00:00Z", "month must be in 1..12"),
        ("2023-02-29T00:00:00Z", "day is out of range for month"),
        ("2024-01-02T24:00:00Z", "hour must be in 0..23"),
        ("2024-01-02T03:04:60Z", "second must be in 0..59"),
        ("2024-01-02T03:04:05+25:00", "UTC offset out of range"),
        # Unicode digits other than ASCII are not digits to Go.
        ("\u0662024-01-02T03:04:05Z", "expected RFC 3339"),
    ],
)
def test_malformed_timestamps_raise_timestamp_error_naming_the_value(
    text: str, reason: str
) -> None:
    with pytest.raises(TimestampError) as caught:
        parse_rfc3339(text)
    assert str(caught.value).startswith(f'invalid timestamp "{text}"')
    assert reason in str(caught.value)


def test_a_non_string_timestamp_is_rejected() -> None:
    with pytest.raises(TimestampError, match="invalid timestamp 1704164645"):
        parse_rfc3339(1704164645)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("+0", 0.0),
        ("-0", 0.0),
        ("0s", 0.0),
        ("3600s", 3600.0),
        ("600s", 600.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("300ms", 0.3),
        ("2h45m30.5s", 9930.5),
        ("1m", 60.0),
        ("100ns", 1e-7),
        ("1us", 1e-6),
        ("1\u00b5s", 1e-6),
        ("1\u03bcs", 1e-6),
        (".5s", 0.5),
        ("1.s", 1.0),
        ("+5m", 300.0),
        ("-1.5h", -5400.0),
        ("-300ms", -0.3),
        # Go accepts units in any order and repeated.
        ("1s1h", 3601.0),
        ("1m1m", 120.0),
        # Sub-nanosecond digits are dropped, not rounded.
        ("1.9ns", 1e-9),
        ("1.0000000000000000001s", 1.0),
        # The largest whole number of hours a Go duration holds.
        ("2562047h", 9223369200.0),
    ],
)
def test_go_durations_parse_to_seconds(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "expected e.g. 300s"),
        ("-", "expected e.g. 300s"),
        ("+", "expected e.g. 300s"),
        ("10", 'the number "10" has no unit'),
        ("3600", 'the number "3600" has no unit'),
        ("00", 'the number "00" has no unit'),
        ("1h30", 'the number "30" has no unit'),
        ("1.5", 'the number "1.5" has no unit'),
        ("1d", 'unknown unit "d"'),
        ("1H", 'unknown unit "H"'),
        ("1sec", 'unknown unit "sec"'),
        ("1h 30m", 'unknown unit "h "'),
        ("1e3s", 'unknown unit "e"'),
        (" 1s", 'expected a number at " 1s"'),
        (".s", 'expected a number at ".s"'),
        ("abc", 'expected a number at "abc"'),
        ("--1s", 'expected a number at "-1s"'),
        ("2562048h", "longer than Go can represent"),
        ("99999999999999999999s", "longer than Go can represent"),
    ],
)
def test_malformed_durations_raise_duration_error_naming_the_value(text: str, reason: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_go_duration(text)
    assert str(caught.value).startswith(f'invalid duration "{text}"')
    assert reason in str(caught.value)


@pytest.mark.parametrize("value", [3600, None, 1.5])
def test_non_string_durations_are_rejected(value: Any) -> None:
    with pytest.raises(DurationError, match="expected a string"):
        parse_go_duration(value)


def test_duration_and_timestamp_errors_are_value_errors() -> None:
    assert issubclass(DurationError, ValueError)
    assert issubclass(TimestampError, ValueError)
