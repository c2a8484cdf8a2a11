"""The command line: flags, environment variables, and what --help tells a newcomer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from koordgang.cli import EPILOG, build_parser, settings_from_args
from koordgang.cli_config import (
    DURATIONS,
    OPTIONS,
    Option,
    SettingsError,
    metavar_of,
    parse_flag,
    read_env,
    read_file,
)
from koordgang.settings import LogFormat, ScoreStrategy, Settings


def _settings(argv: list[str]) -> Settings:
    return settings_from_args(build_parser().parse_args(argv))


def test_defaults_match_the_documented_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KOORDGANG_SCHEDULER_NAME", "KUBECONFIG", "KOORDGANG_SCORE_STRATEGY"):
        monkeypatch.delenv(name, raising=False)
    settings = _settings(["run"])
    assert settings.scheduler_name == "koord-scheduler"
    assert settings.score_strategy is ScoreStrategy.LEAST_ALLOCATED
    assert settings.bind_concurrency == 128
    assert settings.http_port == 10251
    assert settings.kubeconfig == ""


def test_environment_sets_what_flags_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KOORDGANG_SCHEDULER_NAME", "gang-scheduler")
    monkeypatch.setenv("KOORDGANG_SCORE_STRATEGY", "MostAllocated")
    monkeypatch.setenv("KOORDGANG_BIND_CONCURRENCY", "8")
    monkeypatch.setenv("KOORDGANG_LOG_FORMAT", "json")
    settings = _settings(["run"])
    assert settings.scheduler_name == "gang-scheduler"
    assert settings.score_strategy is ScoreStrategy.MOST_ALLOCATED
    assert settings.bind_concurrency == 8
    assert settings.log_format is LogFormat.JSON


def test_a_flag_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KOORDGANG_SCHEDULER_NAME", "from-env")
    assert _settings(["run", "--scheduler-name", "from-flag"]).scheduler_name == "from-flag"


def test_several_scheduler_names_from_the_file_the_environment_or_repeated_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "koordgang.yaml"
    config.write_text("schedulerName: [koord-scheduler, scheduler-plugins-scheduler]\n")
    from_file = _settings(["run", "--config", str(config)])
    assert from_file.scheduler_names == ("koord-scheduler", "scheduler-plugins-scheduler")
    assert from_file.scheduler_name == "koord-scheduler"  # the daemon's own name: the first

    monkeypatch.setenv("KOORDGANG_SCHEDULER_NAME", "a, b,a")
    assert _settings(["run"]).scheduler_names == ("a", "b")
    flags = ["run", "--scheduler-name", "x", "--scheduler-name", "y"]
    assert _settings(flags).scheduler_names == ("x", "y")


@pytest.mark.parametrize("value", ["Not_A_Name", "", "a,,b"])
def test_a_scheduler_name_that_is_no_name_stops_the_daemon_with_a_message(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KOORDGANG_SCHEDULER_NAME", value)
    with pytest.raises(SettingsError, match=r"KOORDGANG_SCHEDULER_NAME: .* is not usable"):
        _settings(["run"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--bind-concurrency", "0"], "--bind-concurrency) must be at least 1"),
        (["run", "--http-port", "70000"], "--http-port) must be between 0 and 65535"),
        (["run", "--bind-concurrency", "lots"], "--bind-concurrency: 'lots' is not usable"),
        (["run", "--max-backoff", "0.5s"], "maxBackoff must not be less than initialBackoff"),
    ],
)
def test_out_of_range_values_are_refused_with_a_clear_message(
    argv: list[str], message: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        _settings(argv)
    assert message in str(raised.value)


def test_an_unknown_score_strategy_is_refused() -> None:
    with pytest.raises(SettingsError, match="expected one of LeastAllocated, MostAllocated"):
        _settings(["run", "--score-strategy", "Random"])


def test_a_config_file_sets_everything_and_env_and_flags_override_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "koordgang.yaml"
    config.write_text(
        "schedulerName: from-file\n"
        "defaultGangWaitingTime: 10m\n"
        "initialBackoff: 2\n"
        "maxBackoff: 30s\n"
        "unschedulableRetryInterval: 1m30s\n"
        "shutdownGrace: 5\n"
        "preemption: false\n"
        "bindConcurrency: 16\n"
    )
    monkeypatch.setenv("KOORDGANG_BIND_CONCURRENCY", "32")
    settings = _settings(["run", "--config", str(config), "--initial-backoff", "3s"])
    assert settings.scheduler_name == "from-file"
    assert settings.default_gang_waiting_time == 600.0
    assert settings.max_backoff == 30.0
    assert settings.unschedulable_retry_interval == 90.0
    assert settings.shutdown_grace == 5.0
    assert settings.preemption is False
    assert settings.bind_concurrency == 32  # the environment over the file
    assert settings.initial_backoff == 3.0  # the flag over the file


def test_unknown_keys_and_bad_values_in_the_file_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "koordgang.yaml"
    config.write_text("schedulerName: x\nbindConcurency: 3\n")
    with pytest.raises(SettingsError, match="unknown keys bindConcurency"):
        _settings(["run", "--config", str(config)])
    config.write_text("maxBackoff: soon\n")
    with pytest.raises(SettingsError, match="maxBackoff: 'soon' is not usable"):
        _settings(["run", "--config", str(config)])


def test_a_bad_config_file_stops_the_daemon_with_a_message(tmp_path: Path) -> None:
    config = tmp_path / "koordgang.yaml"
    config.write_text("httpPort: [1, 2]\n")
    result = subprocess.run(
        [sys.executable, "-m", "koordgang", "run", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "httpPort: [1, 2] is not usable" in result.stderr
    assert "Traceback" not in result.stderr


def test_help_names_every_flag_and_its_environment_variable() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "koordgang", "run", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    for text in (
        "--scheduler-name",
        "KOORDGANG_SCHEDULER_NAME",
        "--kubeconfig",
        "KUBECONFIG",
        "--log-format",
        "--score-strategy",
        "MostAllocated",
        "--bind-concurrency",
        "--http-port",
    ):
        assert text in result.stdout


def test_a_missing_kubeconfig_is_reported_not_a_traceback(tmp_path: object) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "koordgang",
            "run",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
            "--http-port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "cannot load Kubernetes credentials from /nonexistent/kubeconfig" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_configuration_page_lists_every_setting() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    for option in OPTIONS:
        assert f"| `{option.key}` | `{option.flag}` | `{option.env}` |" in page, option.key


# -- durations: the same text means the same in the file, the environment and a flag -----------

DURATION_OPTIONS = [option for option in OPTIONS if metavar_of(option) == "DURATION"]


def test_every_duration_setting_is_read_as_a_duration() -> None:
    assert {option.key for option in DURATION_OPTIONS} == {
        "explainAfter",
        "defaultGangWaitingTime",
        "draBindingTimeout",
        "reserveAfter",
        "othersInFlightFor",
        "initialBackoff",
        "maxBackoff",
        "unschedulableRetryInterval",
        "shutdownGrace",
        "leaderElectLeaseDuration",
        "leaderElectRenewDeadline",
        "leaderElectRetryPeriod",
    }


@pytest.mark.parametrize("option", DURATION_OPTIONS, ids=lambda option: option.key)
@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("6", 6.0),
        ("0.5", 0.5),
        ("90", 90.0),
        ("6s", 6.0),
        ("1m30s", 90.0),
        ("300ms", 0.3),
        ("1.5h", 5400.0),
        ("0", 0.0),
    ],
)
def test_a_duration_reads_the_same_from_file_environment_and_flag(
    option: Option, text: str, seconds: float, tmp_path: Path
) -> None:
    config = tmp_path / "koordgang.yaml"
    config.write_text(f"{option.key}: {text}\n")  # a YAML number where text is one
    from_file = read_file(config)[option.field]
    config.write_text(f'{option.key}: "{text}"\n')  # the same, quoted: a YAML string
    from_quoted = read_file(config)[option.field]
    from_env = read_env({option.env: text})[option.field]
    from_flag = parse_flag(option, text)
    assert from_file == from_quoted == from_env == from_flag == pytest.approx(seconds)


def test_the_lease_duration_in_plain_seconds_is_accepted_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case that was refused: ``--leader-elect-lease-duration 6`` ("has no unit")."""
    monkeypatch.delenv("KOORDGANG_LEADER_ELECT_LEASE_DURATION", raising=False)
    timing = ["--leader-elect-renew-deadline", "4", "--leader-elect-retry-period", "1"]
    flag = _settings(
        ["run", "--leader-elect", "true", "--leader-elect-lease-duration", "6", *timing]
    )
    config = tmp_path / "koordgang.yaml"
    config.write_text("leaderElectLeaseDuration: 6\n")
    from_file = _settings(["run", "--config", str(config), "--leader-elect", "true", *timing])
    monkeypatch.setenv("KOORDGANG_LEADER_ELECT_LEASE_DURATION", "6")
    from_env = _settings(["run", "--leader-elect", "true", *timing])
    assert flag == from_file == from_env
    assert flag.leader_elect_lease_duration == 6.0


@pytest.mark.parametrize("option", DURATION_OPTIONS, ids=lambda option: option.key)
@pytest.mark.parametrize("text", ["soon", "6x", "10d", "1m30", "1e3", "nan", "inf", "", "s"])
def test_a_bad_duration_is_refused_naming_the_option_wherever_it_is_set(
    option: Option, text: str, tmp_path: Path
) -> None:
    expected = f"is not usable: expected {DURATIONS}"
    assert expected.startswith("is not usable: expected a number of seconds (6, 0.5) or a Go")
    config = tmp_path / "koordgang.yaml"
    config.write_text(f"{option.key}: '{text}'\n")
    with pytest.raises(SettingsError) as from_file:
        read_file(config)
    with pytest.raises(SettingsError) as from_env:
        read_env({option.env: text})
    with pytest.raises(SettingsError) as from_flag:
        parse_flag(option, text)
    assert str(from_file.value) == f"{config}: {option.key}: {text!r} {expected}"
    assert str(from_env.value) == f"{option.env}: {text!r} {expected}"
    assert str(from_flag.value) == f"{option.flag}: {text!r} {expected}"


@pytest.mark.parametrize("value", [".nan", ".inf", "true", "[6]"])
def test_a_yaml_value_that_is_no_duration_is_refused(value: str, tmp_path: Path) -> None:
    config = tmp_path / "koordgang.yaml"
    config.write_text(f"maxBackoff: {value}\n")
    with pytest.raises(SettingsError, match=r"maxBackoff: .* is not usable: expected a number"):
        read_file(config)


def test_a_bad_duration_flag_stops_the_daemon_with_a_message() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "koordgang", "run", "--leader-elect-lease-duration", "6 s"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "--leader-elect-lease-duration: '6 s' is not usable" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_configuration_page_names_every_duration_setting_and_the_help_says_what_it_is() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    durations = page[page.index("- durations (") : page.index("- switches (")]
    for option in DURATION_OPTIONS:
        assert f"`{option.key}`" in durations, option.key
    assert DURATIONS in " ".join(EPILOG.split())


def test_a_what_if_in_json_prints_the_answer_alone_and_logs_to_standard_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    import structlog

    import koordgang.whatif_view as view
    from koordgang.cli import main

    def from_cluster(kubeconfig: object, text: str, settings: object) -> dict[str, object]:
        # The engine logs as it works the answer out (a gang placed, a warning).
        structlog.get_logger("koordgang.engine").info("gang group placed", pods=2)
        structlog.get_logger("koordgang.engine").warning("something to know")
        return {"fits": True, "pods": 2, "groups": []}

    monkeypatch.setattr(view, "from_cluster", from_cluster)
    path = tmp_path / "job.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n")
    code = main(["whatif", "-f", str(path), "--from-cluster", "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0
    assert json.loads(out) == {"fits": True, "pods": 2, "groups": []}
    assert "something to know" in err
    assert "gang group placed" not in out + err  # info is not shown
