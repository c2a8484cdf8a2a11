"""Which version of a kind is watched: the best one the API server serves."""

from __future__ import annotations

from typing import Any, cast

from koordgang.adapters.discovery import resolve_versions
from koordgang.clients.api import KubeApi
from koordgang.clients.errors import ApiError
from koordgang.framework.report import WatchedResource

PODGROUPS = WatchedResource(
    "scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup", older_versions=("v1alpha2",)
)
CNT = WatchedResource("kube.koordinator.sh", "v1alpha1", "clusternetworktopologies", "CNT")


class Discovery:
    """Answers ``GET /apis/<group>`` from a table of served versions."""

    def __init__(self, served: dict[str, list[str]]) -> None:
        self.served = served
        self.asked: list[str] = []

    async def request(self, method: str, path: str, **_: Any) -> Any:
        self.asked.append(path)
        group = path.removeprefix("/apis/")
        if group not in self.served:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return {"kind": "APIGroup", "versions": [{"version": v} for v in self.served[group]]}


async def resolve(served: dict[str, list[str]], *kinds: WatchedResource) -> list[str]:
    api = Discovery(served)
    return [r.path for r in await resolve_versions(cast(KubeApi, api), kinds)]


async def test_kubernetes_1_37_is_read_in_v1beta1() -> None:
    served = {"scheduling.k8s.io": ["v1", "v1beta1", "v1alpha3"]}
    assert await resolve(served, PODGROUPS) == ["/apis/scheduling.k8s.io/v1beta1/podgroups"]


async def test_kubernetes_1_36_is_read_in_v1alpha2() -> None:
    served = {"scheduling.k8s.io": ["v1", "v1alpha2"]}
    assert await resolve(served, PODGROUPS) == ["/apis/scheduling.k8s.io/v1alpha2/podgroups"]


async def test_the_best_version_wins_where_both_are_served() -> None:
    served = {"scheduling.k8s.io": ["v1", "v1alpha2", "v1beta1"]}
    assert await resolve(served, PODGROUPS) == ["/apis/scheduling.k8s.io/v1beta1/podgroups"]


async def test_a_kind_served_in_no_version_read_keeps_its_preferred_one() -> None:
    assert await resolve({"scheduling.k8s.io": ["v1"]}, PODGROUPS) == [
        "/apis/scheduling.k8s.io/v1beta1/podgroups"
    ]
    assert await resolve({}, PODGROUPS) == ["/apis/scheduling.k8s.io/v1beta1/podgroups"]


async def test_kinds_of_one_version_are_not_asked_about() -> None:
    api = Discovery({})
    [resolved] = await resolve_versions(cast(KubeApi, api), [CNT])
    assert resolved == CNT and api.asked == []


async def test_a_kind_keeps_its_version_while_the_api_server_cannot_be_asked() -> None:
    class Down(Discovery):
        async def request(self, method: str, path: str, **_: Any) -> Any:
            raise ApiError(503, "ServiceUnavailable", "try again")

    earlier = PODGROUPS.served_as({"v1alpha2"})
    assert earlier is not None
    [kept] = await resolve_versions(cast(KubeApi, Down({})), [PODGROUPS], keep=[earlier])
    assert kept.path == "/apis/scheduling.k8s.io/v1alpha2/podgroups"
    # Once it answers, an upgraded cluster's version is read.
    served = Discovery({"scheduling.k8s.io": ["v1", "v1beta1"]})
    [now] = await resolve_versions(cast(KubeApi, served), [PODGROUPS], keep=[earlier])
    assert now.path == "/apis/scheduling.k8s.io/v1beta1/podgroups"
