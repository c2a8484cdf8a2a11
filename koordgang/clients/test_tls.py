"""Which session a new connection is offered (resumption on the real API server is in
``e2e/test_api_client.py``)."""

from __future__ import annotations

import ssl
import weakref
from types import SimpleNamespace

import pytest

from koordgang.clients import tls
from koordgang.clients.tls import ResumingContext


class FakeSession:
    has_ticket = True


class FakeConnection:
    """Stands for an ``SSLObject`` (handed where one is typed, hence the ``arg-type`` ignores):
    counts how often its session is asked for."""

    def __init__(self, session: FakeSession | None) -> None:
        self._session = session
        self.asked = 0

    @property
    def session(self) -> FakeSession | None:
        self.asked += 1
        return self._session


def offered(context: ResumingContext) -> object:
    """The session a new connection is offered: one of the fakes here, where the type says
    ``SSLSession``."""
    return context._resumable()


def test_a_session_found_is_offered_again_until_it_is_due_for_a_fresh_look(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(tls, "time", SimpleNamespace(monotonic=lambda: now[0]))
    context = ResumingContext(ssl.PROTOCOL_TLS_CLIENT)
    older, newer = FakeSession(), FakeSession()
    first = FakeConnection(older)
    handshaking = [FakeConnection(None) for _ in range(3)]
    for connection in (first, *handshaking):
        context._recent.append(weakref.ref(connection))  # type: ignore[arg-type]
    assert offered(context) is older
    assert [c.asked for c in handshaking] == [1, 1, 1]  # looked through, newest first

    later = FakeConnection(newer)
    context._recent.append(weakref.ref(later))  # type: ignore[arg-type]
    now[0] += tls.REUSE_SECONDS - 1
    for _ in range(10):
        assert offered(context) is older
    assert later.asked == 0 and [c.asked for c in handshaking] == [1, 1, 1]

    now[0] += 1
    assert offered(context) is newer
    assert later.asked == 1


def test_without_any_ticket_nothing_is_offered() -> None:
    context = ResumingContext(ssl.PROTOCOL_TLS_CLIENT)
    connection = FakeConnection(None)
    context._recent.append(weakref.ref(connection))  # type: ignore[arg-type]
    assert offered(context) is None


class Probed(FakeConnection):
    """A connection offered the session in use, its handshake over."""

    def __init__(self, session: FakeSession | None, *, resumed: bool) -> None:
        super().__init__(session)
        self.session_reused = resumed

    def version(self) -> str:
        return "TLSv1.3"


@pytest.mark.parametrize("resumed", [True, False])
def test_a_session_the_server_declined_is_dropped_at_once(resumed: bool) -> None:
    """A restarted API server (or another replica) does not know the ticket: the first
    connection offered it does a full handshake, and the next one is offered a fresh ticket
    instead of the declined one for the rest of REUSE_SECONDS."""
    context = ResumingContext(ssl.PROTOCOL_TLS_CLIENT)
    declined, fresh = FakeSession(), FakeSession()
    first = FakeConnection(declined)
    context._recent.append(weakref.ref(first))  # type: ignore[arg-type]
    assert offered(context) is declined
    probe = Probed(fresh, resumed=resumed)  # its handshake brought a ticket of its own
    context._recent.append(weakref.ref(probe))  # type: ignore[arg-type]
    context._probe = weakref.ref(probe)  # type: ignore[arg-type]
    assert offered(context) is (declined if resumed else fresh)
    assert context._probe is None  # asked once
