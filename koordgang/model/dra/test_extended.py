"""The special claim's requests and the containers' mappings to them, as kube-scheduler makes
them (KEP-5004)."""

from __future__ import annotations

from typing import Any

from koordgang.model.dra import ExtendedRequest, RequestMapping, requests_and_mappings
from koordgang.model.pod import parse_pod

GPU = "acc.example.com/gpu"
CLASSES = {GPU: "acc"}


def container(name: str, gpus: int, *, sidecar: bool = False) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "name": name,
        "resources": {"limits": {GPU: str(gpus)}, "requests": {"cpu": "1", GPU: str(gpus)}},
    }
    if sidecar:
        obj["restartPolicy"] = "Always"
    return obj


def made(init: list[dict[str, Any]], regular: list[dict[str, Any]]) -> Any:
    pod = parse_pod(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"initContainers": init, "containers": regular},
        }
    )
    return requests_and_mappings(pod.extended_containers, CLASSES)


def test_one_request_per_container_named_by_index_and_sorted_resource_position() -> None:
    requests, mappings = made([], [container("a", 2), container("b", 1)])
    # "acc.example.com/gpu" sorts before "cpu": position 0 among each container's requests.
    assert requests == (
        ExtendedRequest("container-0-request-0", "acc", 2, GPU),
        ExtendedRequest("container-1-request-0", "acc", 1, GPU),
    )
    assert mappings == (
        RequestMapping("a", GPU, "container-0-request-0"),
        RequestMapping("b", GPU, "container-1-request-0"),
    )


def test_init_containers_use_later_containers_requests_and_share_the_largest() -> None:
    requests, mappings = made(
        [container("init-small", 1), container("init-big", 3)], [container("main", 2)]
    )
    # Each init container first uses main's 2; init-big needs 1 more, in its own request,
    # which init-small's would have been folded into had it needed one.
    assert requests == (
        ExtendedRequest("container-1-request-0", "acc", 1, GPU),
        ExtendedRequest("container-2-request-0", "acc", 2, GPU),
    )
    assert mappings == (
        RequestMapping("main", GPU, "container-2-request-0"),
        RequestMapping("init-small", GPU, "container-2-request-0"),
        RequestMapping("init-big", GPU, "container-2-request-0"),
        RequestMapping("init-big", GPU, "container-1-request-0"),
    )


def test_init_containers_needing_their_own_requests_share_the_largest_one() -> None:
    requests, mappings = made([container("i0", 1), container("i1", 3)], [])
    assert requests == (ExtendedRequest("container-1-request-0", "acc", 3, GPU),)
    assert [m.request for m in mappings] == ["container-1-request-0"] * 2


def test_a_sidecar_keeps_its_own_request() -> None:
    requests, _ = made([container("side", 1, sidecar=True)], [container("main", 1)])
    assert [r.name for r in requests] == ["container-0-request-0", "container-1-request-0"]


def test_pods_without_extended_resources_carry_no_containers() -> None:
    pod = parse_pod(
        {
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        }
    )
    assert pod.extended_containers == ()
