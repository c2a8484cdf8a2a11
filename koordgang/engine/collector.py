"""Python's cyclic garbage collector around the first listing.

Listing 100,000 pods decodes millions of short-lived containers (the JSON of each pod) beside
the summaries that stay. At the default threshold the collector looks at the young generation
every 700 net allocations, and the listing keeps the young generation full, so its passes took
a third of the CPU of the listing (measured on the bench's pods: 6.4 s against 4.4 s of CPU for
100,000, decoded and parsed). Decoded JSON holds no reference cycles (reference counting frees
it as soon as a pod is parsed), so until the cache is synced young collections are made rare.
Then the young generations are collected once, what the listings made is frozen out of the
full passes, and the usual thresholds come back.
"""

from __future__ import annotations

import gc

#: Net allocations of container objects between two young collections while listing: a
#: collection about every 20,000 pods instead of every 25.
LISTING_THRESHOLD = 100_000


class ListingCollector:
    """Owns the collector's thresholds from start-up to the first full view."""

    def __init__(self) -> None:
        self._saved: tuple[int, int, int] | None = None

    @property
    def relaxed(self) -> bool:
        return self._saved is not None

    def relax(self) -> None:
        """Makes young collections rare until ``settle``; safe to call twice."""
        if self._saved is not None:
            return
        saved = gc.get_threshold()
        self._saved = saved
        gc.set_threshold(max(LISTING_THRESHOLD, saved[0]), *saved[1:])

    def settle(self) -> None:
        """The listings are in: collects the young generations, freezes what survived (the
        cache, the gangs: most of what the daemon will hold, kept out of the full passes from
        now on) and restores the thresholds."""
        # With 500,000 pods a full pass walks millions of objects and stalls a cycle for
        # seconds (a preemption's dry run, which makes many short-lived objects, set one off
        # every time). Only the young generations are collected: a full pass over 100,000
        # listed pods held readiness back half a second, for the little garbage parsing leaves.
        gc.collect(1)
        gc.freeze()
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None
