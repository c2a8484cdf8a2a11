"""Where the daemon's settings come from: a YAML file (``--config``), the environment, and
flags, each overriding the one before, over the defaults of ``Settings``.

One table (``OPTIONS``) names every setting once: its key in the file, its flag, its
environment variable, how its text is read and what it means. Unknown keys and bad values are
refused with a message naming them, before the daemon starts.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from koordgang.model.errors import ModelError
from koordgang.model.time import parse_go_duration
from koordgang.settings import LogFormat, ScoreStrategy, Settings


class SettingsError(ValueError):
    """A setting that cannot be used; the message names where it came from."""


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _integer(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    if isinstance(value, int):
        return value
    return int(str(value).strip())


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("expected a number")
    if isinstance(value, int | float):
        return float(value)
    return float(str(value).strip())


#: What a duration may be, wherever it is set (file, environment or flag).
DURATIONS = (
    "a number of seconds (6, 0.5) or a Go duration (90s, 1m30s, 1.5h; units ns, us, ms, s, m, h)"
)
_PLAIN_SECONDS = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


def _seconds(value: Any) -> float:
    """A duration: a plain number is seconds (``6``, ``0.5``), other text a Go duration
    (``90s``, ``1m30s``). The same text means the same in the file, the environment and a
    flag; the file may also give a YAML number."""
    if isinstance(value, bool):
        raise ValueError(f"expected {DURATIONS}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = str(value).strip()
        if _PLAIN_SECONDS.fullmatch(text):
            seconds = float(text)
        else:
            try:
                seconds = parse_go_duration(text)
            except ModelError:
                raise ValueError(f"expected {DURATIONS}") from None
    if not math.isfinite(seconds):
        raise ValueError(f"expected {DURATIONS}")
    return seconds


def _choice(kind: type[Any]) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        try:
            return kind(str(value))
        except ValueError:
            allowed = ", ".join(str(v.value) for v in kind)
            raise ValueError(f"expected one of {allowed}") from None

    return parse


def _level(value: Any) -> str:
    text = str(value).strip().lower()
    if text not in ("debug", "info", "warning", "error"):
        raise ValueError("expected one of debug, info, warning, error")
    return text


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


def scheduler_names(value: Any) -> tuple[str, ...]:
    """Scheduler names: one, a comma-separated list (the environment), a YAML list (the file)
    or the values of a repeated flag; each a valid name, each once, in the order given."""
    items = value if isinstance(value, list | tuple) else [value]
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError("expected a name or a list of names")
        for name in (part.strip() for part in item.split(",")):
            if not _NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a scheduler name (a DNS subdomain)")
            if name not in names:
                names.append(name)
    if not names:
        raise ValueError("expected at least one name")
    return tuple(names)


#: What kube-apiserver accepts as ``spec.schedulerName`` (a DNS-1123 subdomain).
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True)
class Option:
    field: str
    key: str
    flag: str
    env: str
    parse: Callable[[Any], Any]
    help: str
    metavar: str | None = None
    #: The flag may be given more than once (each value is kept).
    repeatable: bool = False


OPTIONS: tuple[Option, ...] = (
    Option("scheduler_names", "schedulerName", "--scheduler-name", "KOORDGANG_SCHEDULER_NAME",
           scheduler_names, "schedule pods whose spec.schedulerName is this; several names (a "
           "list in the file, the flag repeated, commas in the environment) are served by one "
           "daemon",
           "NAME", repeatable=True),
    Option("kubeconfig", "kubeconfig", "--kubeconfig", "KUBECONFIG", _text,
           "kubeconfig file; without one, the in-cluster service account is used, then "
           "~/.kube/config"),
    Option("log_format", "logFormat", "--log-format", "KOORDGANG_LOG_FORMAT",
           _choice(LogFormat), "json (one object per line, for log collectors) or console",
           "json|console"),
    Option("log_level", "logLevel", "--log-level", "KOORDGANG_LOG_LEVEL", _level,
           "debug, info, warning or error"),
    Option("score_strategy", "scoreStrategy", "--score-strategy", "KOORDGANG_SCORE_STRATEGY",
           _choice(ScoreStrategy), "LeastAllocated spreads pods over nodes; MostAllocated packs "
           "them (keeps whole nodes free for big jobs)", "LeastAllocated|MostAllocated"),
    Option("preemption", "preemption", "--preemption", "KOORDGANG_PREEMPTION", _boolean,
           "evict lower-priority pods to make room for a job of ours that does not fit",
           "true|false"),
    Option("reserve_after", "reserveAfter", "--reserve-after", "KOORDGANG_RESERVE_AFTER",
           _seconds, "a job that has not fitted for this long holds the nodes it will fit on "
           "once pods of ours there finish (starvation guard); 0 turns it off"),
    Option("max_reserving_jobs", "maxReservingJobs", "--max-reserving-jobs",
           "KOORDGANG_MAX_RESERVING_JOBS", _integer, "most jobs holding nodes at once"),
    Option("reclaim_lent_room", "reclaimLentRoom", "--reclaim-lent-room",
           "KOORDGANG_RECLAIM_LENT_ROOM", _boolean,
           "evict the pods a reserving job let in on its held room once they are all it waits "
           "for", "true|false"),
    Option("others_in_flight_for", "othersInFlightFor", "--others-in-flight-for",
           "KOORDGANG_OTHERS_IN_FLIGHT_FOR", _seconds,
           "a pod of another scheduler not tried yet counts on the node it is likely to go to "
           "for at most this long after its creation; 0 counts it nowhere until bound"),
    Option("bind_concurrency", "bindConcurrency", "--bind-concurrency",
           "KOORDGANG_BIND_CONCURRENCY", _integer, "Binding requests in flight at once"),
    Option("scheduled_events_per_second", "scheduledEventRate", "--scheduled-event-rate",
           "KOORDGANG_SCHEDULED_EVENT_RATE", _number,
           "most 'Scheduled' Events per second (burst 500); above it they are dropped so that "
           "binding keeps the API server's capacity; 0 writes none"),
    Option("explain_after", "explainAfter", "--explain-after", "KOORDGANG_EXPLAIN_AFTER",
           _seconds, "a pending pod is first told why it waits after this long (a pod bound "
           "by then is told nothing); 0 tells at once"),
    Option("http_port", "httpPort", "--http-port", "KOORDGANG_HTTP_PORT", _integer,
           "port for /healthz, /readyz, /metrics and /gangs; 0 turns them off"),
    Option("trace_memory", "traceMemory", "--trace-memory", "KOORDGANG_TRACE_MEMORY", _boolean,
           "trace memory allocations and serve /debug/memory (the sites that grew since "
           "start-up); for leak hunts, costs CPU and memory", "true|false"),
    Option("http_host", "httpHost", "--http-host", "KOORDGANG_HTTP_HOST", _text,
           "address the HTTP endpoints listen on"),
    Option("default_gang_waiting_time", "defaultGangWaitingTime", "--default-gang-waiting-time",
           "KOORDGANG_DEFAULT_GANG_WAITING_TIME", _seconds,
           "how long a gang without its own waiting time may hold reservations while short "
           "(seconds, or a duration such as 10m)"),
    Option("dra_binding_timeout", "draBindingTimeout", "--dra-binding-timeout",
           "KOORDGANG_DRA_BINDING_TIMEOUT", _seconds,
           "how long binding waits for a DRA device's binding conditions before giving the "
           "devices back (seconds, or a duration such as 10m)"),
    Option("initial_backoff", "initialBackoff", "--initial-backoff",
           "KOORDGANG_INITIAL_BACKOFF", _seconds,
           "first delay before a pod that failed is tried again"),
    Option("max_backoff", "maxBackoff", "--max-backoff", "KOORDGANG_MAX_BACKOFF", _seconds,
           "largest delay before a pod that failed is tried again"),
    Option("unschedulable_retry_interval", "unschedulableRetryInterval",
           "--unschedulable-retry-interval", "KOORDGANG_UNSCHEDULABLE_RETRY_INTERVAL", _seconds,
           "a pod parked as unschedulable is tried again at least this often"),
    Option("shutdown_grace", "shutdownGrace", "--shutdown-grace", "KOORDGANG_SHUTDOWN_GRACE",
           _seconds, "how long a graceful shutdown waits for binds in flight"),
    Option("leader_elect", "leaderElect", "--leader-elect", "KOORDGANG_LEADER_ELECT", _boolean,
           "run for a Lease: only its holder schedules and writes; the others keep their "
           "caches warm to take over", "true|false"),
    Option("leader_elect_lease_duration", "leaderElectLeaseDuration",
           "--leader-elect-lease-duration", "KOORDGANG_LEADER_ELECT_LEASE_DURATION", _seconds,
           "how long a lease holds without renewal before another replica may take it"),
    Option("leader_elect_renew_deadline", "leaderElectRenewDeadline",
           "--leader-elect-renew-deadline", "KOORDGANG_LEADER_ELECT_RENEW_DEADLINE", _seconds,
           "how long the leader tries to renew before it stops (and exits)"),
    Option("leader_elect_retry_period", "leaderElectRetryPeriod",
           "--leader-elect-retry-period", "KOORDGANG_LEADER_ELECT_RETRY_PERIOD", _seconds,
           "how often the lease is tried or renewed"),
    Option("leader_elect_resource_name", "leaderElectResourceName",
           "--leader-elect-resource-name", "KOORDGANG_LEADER_ELECT_RESOURCE_NAME", _text,
           "the Lease's name"),
    Option("leader_elect_resource_namespace", "leaderElectResourceNamespace",
           "--leader-elect-resource-namespace", "KOORDGANG_LEADER_ELECT_RESOURCE_NAMESPACE",
           _text, "the Lease's namespace (default: this pod's, else default)"),
)  # fmt: skip

BY_KEY = {option.key: option for option in OPTIONS}


def metavar_of(option: Option) -> str | None:
    """What ``--help`` shows for the option's value."""
    if option.metavar is None and option.parse is _seconds:
        return "DURATION"
    return option.metavar


def default_of(option: Option) -> Any:
    value = getattr(Settings(), option.field)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(value)
    return value.value if hasattr(value, "value") else value


def read_file(path: str | Path) -> dict[str, Any]:
    """Field -> value from a YAML file of ``key: value`` lines (keys as in ``OPTIONS``)."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as error:
        raise SettingsError(f"cannot read {path}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise SettingsError(f"{path} is not valid YAML: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise SettingsError(f"{path}: expected key: value lines, got {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in BY_KEY)
    if unknown:
        known = ", ".join(sorted(BY_KEY))
        raise SettingsError(f"{path}: unknown keys {', '.join(unknown)} (known: {known})")
    values: dict[str, Any] = {}
    for key, raw in data.items():
        option = BY_KEY[key]
        values[option.field] = _parse(option, raw, f"{path}: {key}")
    return values


def read_env(environ: Mapping[str, str]) -> dict[str, Any]:
    return {
        option.field: _parse(option, environ[option.env], option.env)
        for option in OPTIONS
        if option.env in environ
    }


def parse_flag(option: Option, text: str) -> Any:
    return _parse(option, text, option.flag)


def _parse(option: Option, raw: Any, where: str) -> Any:
    try:
        return option.parse(raw)
    except (ValueError, TypeError) as error:
        raise SettingsError(f"{where}: {raw!r} is not usable: {error}") from None


def resolve(*layers: Mapping[str, Any]) -> Settings:
    """Settings from the defaults and ``layers`` (later ones win), checked as a whole."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer)
    settings = dataclasses.replace(Settings(), **merged)
    problems = []
    if settings.bind_concurrency < 1:
        problems.append("bindConcurrency (--bind-concurrency) must be at least 1")
    if settings.reserve_after < 0:
        problems.append("reserveAfter (--reserve-after) must not be negative")
    if settings.max_reserving_jobs < 0:
        problems.append("maxReservingJobs (--max-reserving-jobs) must not be negative")
    if settings.explain_after < 0:
        problems.append("explainAfter (--explain-after) must not be negative")
    if settings.scheduled_events_per_second < 0:
        problems.append("scheduledEventRate (--scheduled-event-rate) must not be negative")
    if not 0 <= settings.http_port <= 65535:
        problems.append("httpPort (--http-port) must be between 0 and 65535")
    for field in ("default_gang_waiting_time", "dra_binding_timeout", "initial_backoff",
                  "max_backoff", "unschedulable_retry_interval"):  # fmt: skip
        if getattr(settings, field) <= 0:
            problems.append(f"{_key(field)} must be more than 0 seconds")
    if settings.shutdown_grace < 0:
        problems.append("shutdownGrace must not be negative")
    if settings.others_in_flight_for < 0:
        problems.append("othersInFlightFor (--others-in-flight-for) must not be negative")
    if settings.leader_elect and not (
        settings.leader_elect_lease_duration
        > settings.leader_elect_renew_deadline
        > settings.leader_elect_retry_period
        > 0
    ):
        problems.append("leader election needs leaseDuration > renewDeadline > retryPeriod > 0")
    if settings.max_backoff < settings.initial_backoff:
        problems.append("maxBackoff must not be less than initialBackoff")
    if problems:
        raise SettingsError("; ".join(problems))
    return settings


def _key(field: str) -> str:
    return next(o.key for o in OPTIONS if o.field == field)
