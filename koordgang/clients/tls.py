"""TLS for the API client: connections that resume the session of an earlier one.

Binding keeps up to ``bind_concurrency`` requests in flight, one HTTP/1.1 connection each, and
the first gang after a start (or after the pool went idle) opens them all at once. A full TLS
handshake costs the API server a signature with its certificate's key and this process a check
of the server's chain; a resumed one (a TLS 1.3 ticket from an earlier connection) skips both.
The standard library resumes a session only when it is handed one, and asyncio never does,
so this context hands every new client connection the newest resumable session it has seen.
If the server declines the ticket, the handshake is a full one, as without it.
"""

from __future__ import annotations

import ssl
import time
import weakref
from collections import deque

#: Connections remembered to take a session from (the newest that has one is used).
RECENT = 32
#: A session found is offered for this long before the connections seen lately are looked
#: through again. Looking costs a session object per connection looked at: 128 connections
#: opened at once, each looking through up to 32 others still in their handshakes, spent
#: about 4% of the daemon's busy time in a burst of binds. The API server resumes a ticket
#: offered more than once (TLS 1.3 without early data needs no replay protection).
REUSE_SECONDS = 30.0


class ResumingContext(ssl.SSLContext):
    """A client ``SSLContext`` whose connections resume an earlier connection's session."""

    def __init__(self, protocol: int = ssl.PROTOCOL_TLS_CLIENT) -> None:
        super().__init__()
        self._recent: deque[weakref.ref[ssl.SSLObject]] = deque(maxlen=RECENT)
        self._session: ssl.SSLSession | None = None
        self._session_at = 0.0
        #: The first connection offered the session in use, until it shows whether the server
        #: took it: a declined ticket (a restarted server, another replica's keys) is dropped
        #: at once rather than offered for the rest of REUSE_SECONDS.
        self._probe: weakref.ref[ssl.SSLObject] | None = None
        #: Handshakes that were offered a session to resume.
        self.offered = 0

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        if session is None and not server_side:
            session = self._resumable()
            if session is not None:
                self.offered += 1
        sslobj = super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)
        self._recent.append(weakref.ref(sslobj))
        if session is not None and session is self._session and self._probe is None:
            self._probe = weakref.ref(sslobj)
        return sslobj

    def _resumable(self) -> ssl.SSLSession | None:
        """The newest session with a ticket, from the connections seen lately. A TLS 1.3
        ticket arrives after the handshake, with the first reply read on that connection."""
        now = time.monotonic()
        if self._session is not None and now - self._session_at < REUSE_SECONDS:
            if not self._declined():
                return self._session
            self._session = None
        for ref in reversed(self._recent):
            sslobj = ref()
            if sslobj is None:
                continue
            try:
                session = sslobj.session
            except (ValueError, ssl.SSLError):
                continue
            if session is not None and session.has_ticket:
                if session is not self._session:
                    self._probe = None
                self._session, self._session_at = session, now
                break
        return self._session

    def _declined(self) -> bool:
        """Whether the first connection offered the session in use finished its handshake
        without resuming it. Once it resumed, nothing more is asked."""
        probe = self._probe() if self._probe is not None else None
        if probe is None or probe.version() is None:  # gone, or still in its handshake
            return False
        self._probe = None
        return not probe.session_reused

    def resumed(self) -> int:
        """Of the connections remembered and still open, how many resumed a session."""
        count = 0
        for ref in self._recent:
            sslobj = ref()
            if sslobj is not None and sslobj.session_reused:
                count += 1
        return count


def client_context(
    ca_path: str | None, *, insecure: bool, cert: tuple[str, str] | None = None
) -> ResumingContext:
    """What ``ssl.create_default_context`` gives a client (the system's roots, or ``ca_path``;
    host names checked), resuming sessions; ``insecure`` checks nothing (kubeconfig's
    ``insecure-skip-tls-verify``); ``cert`` is a (certificate, key) pair to present."""
    context = ResumingContext(ssl.PROTOCOL_TLS_CLIENT)
    if ca_path:
        context.load_verify_locations(cafile=ca_path)
    else:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cert is not None:
        context.load_cert_chain(*cert)
    return context
