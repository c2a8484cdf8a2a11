"""The schedulers a run measures: koordgang, once more per gang API chosen with ``--gang-apis``
besides Koordinator's (its gang scenarios only, labelled ``koordgang via <api>``), and the peers
chosen with ``--peers``, each at its shipped client QPS and with QPS and burst raised (the
shipped 50/100 cap any scheduler at about 50 binds/s, whatever its algorithm)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from bench.gang_api import GangApi
from bench.peers.build import COSCHEDULING, KOORD_SCHEDULER, KUBE_SCHEDULER, PEER_BINARIES
from bench.results import EVERY_EVENT, KOORDGANG, VIA
from bench.scenarios import LARGE_SCENARIOS, Finish, Scenario
from controlplane.build import GoBinary
from controlplane.releases import selected_release
from koordgang.engine.reporter import MAX_PENDING

PEERS: tuple[str, ...] = tuple(b.name for b in PEER_BINARIES)
#: Client QPS and burst of the "raised" runs.
RAISED_QPS = 5000
#: The Kubernetes libraries a peer is built on, where they differ from its own pin.
LIBRARIES = {"coscheduling": "Kubernetes libraries v1.34.4: v1.34.7 is not served here"}
#: ``--scheduled-event-rate`` for ``koordgang all events``: far above any bind rate, so that no
#: Scheduled Event is dropped for its rate.
EVERY_EVENT_RATE = "1000000"
LARGE_NAMES = frozenset(s.name for s in LARGE_SCENARIOS)


@dataclass(frozen=True)
class SchedulerUnderTest:
    name: str
    #: Client QPS and burst; None: as the release ships them.
    qps: int | None = None
    #: koordgang only: the API its gangs are declared in (None: Koordinator's annotations).
    api: GangApi | None = None
    #: koordgang only: a Scheduled Event for every bound pod, as the peers write them.
    every_event: bool = False

    @property
    def label(self) -> str:
        """The scheduler column: ``coscheduling``, ``coscheduling qps 5000``,
        ``koordgang via volcano`` or ``koordgang all events``."""
        if self.every_event:
            return EVERY_EVENT
        if self.api not in (None, GangApi.KOORDINATOR):
            assert self.api is not None
            return f"{self.name}{VIA}{self.api.key}"
        return self.name if self.qps is None else f"{self.name} qps {self.qps}"

    @property
    def variant(self) -> bool:
        """koordgang on another gang API than Koordinator's, or writing every Scheduled Event:
        after koordgang's own run and on its ceiling."""
        return self.every_event or self.api not in (None, GangApi.KOORDINATOR)

    @property
    def daemon_args(self) -> tuple[str, ...]:
        """Flags of this run of koordgang besides the run's and the scenario's."""
        return ("--scheduled-event-rate", EVERY_EVENT_RATE) if self.every_event else ()

    @property
    def slug(self) -> str:
        """The label in file names."""
        return self.label.replace(" ", "-")

    @property
    def ceiling_label(self) -> str:
        """The ceiling measured before this scheduler's scenarios (a variant: koordgang's)."""
        return "before-" + (KOORDGANG if self.variant else self.slug)

    @property
    def binary(self) -> GoBinary | None:
        return {b.name: b for b in PEER_BINARIES}.get(self.name)

    @property
    def gang_api(self) -> GangApi:
        if self.api is not None:
            return self.api
        if self.name == COSCHEDULING.name:
            return GangApi.SCHEDULER_PLUGINS
        if self.name == KUBE_SCHEDULER.name:
            # From 1.37 kube-scheduler is a gang peer (upstream PodGroups, beta); 1.36's alpha
            # gang scheduling is compared only where a scenario asks for it (the DRA one).
            return GangApi.NONE if selected_release().name == "1.36" else GangApi.UPSTREAM
        return GangApi.KOORDINATOR

    def gang_api_for(self, scenario: Scenario) -> GangApi:
        """The API this scheduler's gangs are declared in for ``scenario``: its own, or the
        one the scenario gives this peer (``Scenario.peer_gang_apis``), or the one the scenario
        is written in (``Scenario.gang_api``)."""
        if scenario.gang_api is not None:
            return scenario.gang_api
        if self.binary is not None:
            return scenario.peer_gang_apis.get(self.name, self.gang_api)
        return self.gang_api

    @property
    def ready_path(self) -> str:
        # koord-scheduler serves no /readyz; /healthz is the nearest it has.
        return "/healthz" if self.name == KOORD_SCHEDULER.name else "/readyz"

    def version(self) -> str:
        binary = self.binary
        if binary is None:
            try:
                text = f"koordgang {version('koordgang')}"
            except PackageNotFoundError:
                text = "koordgang (not installed)"
            commit = _checkout_commit()
            return f"{text} (commit {commit})" if commit else text
        text = f"{binary.pinned_module} {binary.version}"
        return f"{text} ({LIBRARIES[self.name]})" if self.name in LIBRARIES else text

    def crd_paths(self, koordgang_crds: Sequence[Path], sources: Mapping[str, Path]) -> list[Path]:
        """The CRDs this scheduler's release ships (koordgang: its own manifests/crds), from
        the release files located when the peers were prepared."""
        if self.binary is None:
            return list(koordgang_crds)
        source = sources.get(self.name)
        if source is None:  # kube-scheduler: no CRDs
            return []
        return sorted((source / "config" / "crd" / "bases").glob("*.yaml"))

    def covers(self, scenario: Scenario, scale: float = 1.0) -> bool:
        """Whether ``scenario`` at ``scale`` is this scheduler's at all (a gang API variant has
        only the gang ones, the every-event one those with a rate; a scenario it does not
        cover is left out, not reported as skipped)."""
        if self.every_event:
            peers_run_it = not scenario.koordgang_only or bool(scenario.peers)
            return (
                scenario.finish is not Finish.FIRST_BIND
                and peers_run_it
                and scenario.name not in LARGE_NAMES
                # Not past the daemon's queue of Events waiting to be written: a burst that
                # binds more pods than it holds has the rest of their Events dropped.
                and len(scenario.build(scale).pods) <= MAX_PENDING
            )
        return scenario.gangs or not self.variant

    def skip_reason(self, scenario: Scenario) -> str | None:
        """Why this scheduler does not run ``scenario`` (None: it does)."""
        if self.name == KOORDGANG:
            return None
        if scenario.koordgang_only and self.name not in scenario.peers:
            return scenario.koordgang_only
        if scenario.gangs and self.gang_api_for(scenario) is GangApi.NONE:
            return "no gang API"
        return None


def _checkout_commit() -> str:
    """The commit of this checkout, "+" when it has changes (empty outside git)."""
    try:
        head = _git("rev-parse", "--short=10", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head + ("+" if dirty else "")


def _git(*args: str) -> str:
    repo = Path(__file__).resolve().parents[1]
    reply = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return reply.stdout.strip()


def select_schedulers(
    peers: str, qps: Sequence[int | None], gang_apis: Sequence[GangApi] = ()
) -> list[SchedulerUnderTest]:
    """koordgang, koordgang again on each of ``gang_apis`` but Koordinator's, koordgang writing
    every Scheduled Event when there are peers to compare with, then each peer named in
    ``peers`` ("all", "none" or a comma-separated list) at each of the ``qps`` settings (None:
    as shipped)."""
    wanted = [p.strip() for p in peers.split(",") if p.strip()]
    if wanted == ["all"]:
        wanted = list(PEERS)
    elif wanted in ([], ["none"]):
        wanted = []
    unknown = [p for p in wanted if p not in PEERS]
    if unknown:
        raise ValueError(f"unknown peers {unknown}; known: {', '.join(PEERS)}")
    chosen = [SchedulerUnderTest(KOORDGANG)]
    chosen += [
        SchedulerUnderTest(KOORDGANG, api=api)
        for api in dict.fromkeys(gang_apis)
        if api not in (GangApi.KOORDINATOR, GangApi.NONE)
    ]
    if wanted:
        chosen.append(SchedulerUnderTest(KOORDGANG, every_event=True))
    chosen += [SchedulerUnderTest(p, q) for p in wanted for q in qps]
    return chosen


def parse_qps(text: str) -> list[int | None]:
    """``"default,5000"`` -> [None, 5000]."""
    values: list[int | None] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        values.append(None if part in ("default", "shipped") else int(part))
    if not values:
        raise ValueError("no QPS setting given")
    return values
