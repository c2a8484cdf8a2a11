from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from koordgang.engine.collector import LISTING_THRESHOLD, ListingCollector


@pytest.fixture(autouse=True)
def _restore_collector() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)
    gc.unfreeze()


def test_young_collections_are_rare_until_settled_then_as_before() -> None:
    gc.set_threshold(700, 10, 10)
    collector = ListingCollector()
    collector.relax()
    assert collector.relaxed
    assert gc.get_threshold() == (LISTING_THRESHOLD, 10, 10)
    collector.relax()  # a second call must not save the relaxed thresholds as the usual ones
    collector.settle()
    assert not collector.relaxed
    assert gc.get_threshold() == (700, 10, 10)


def test_settling_freezes_what_the_listings_made() -> None:
    gc.unfreeze()
    kept = [{"pod": i} for i in range(1000)]
    collector = ListingCollector()
    collector.relax()
    collector.settle()
    assert gc.get_freeze_count() >= len(kept)


def test_a_higher_threshold_set_by_the_user_is_kept() -> None:
    gc.set_threshold(LISTING_THRESHOLD * 2, 10, 10)
    collector = ListingCollector()
    collector.relax()
    assert gc.get_threshold()[0] == LISTING_THRESHOLD * 2
    collector.settle()
    assert gc.get_threshold() == (LISTING_THRESHOLD * 2, 10, 10)
