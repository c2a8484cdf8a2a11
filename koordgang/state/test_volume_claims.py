"""The volume claims' store: claims by namespace and name, and whether an update changed one."""

from __future__ import annotations

from koordgang.model.volumes import ClaimInfo
from koordgang.state.volume_claims import VolumeClaims


def test_claims_are_kept_by_namespace_and_name_and_report_whether_they_changed() -> None:
    store = VolumeClaims()
    pending = ClaimInfo("a", "data", "Pending", "")
    bound = ClaimInfo("a", "data", "Bound", "pv-1")
    assert store.claim("a", "data") is None
    assert store.upsert(pending).changed
    assert not store.upsert(pending).changed
    assert store.upsert(bound).changed
    assert store.claim("a", "data") == bound
    assert store.claim("b", "data") is None

    assert store.remove("a/data").changed
    assert not store.remove("a/never-seen").changed
    assert store.claim("a", "data") is None

    store.upsert(pending)
    other = ClaimInfo("b", "logs", "Bound", "pv-2")
    store.replace([other])
    assert store.claim("a", "data") is None
    assert store.claim("b", "logs") == other
