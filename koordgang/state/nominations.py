"""Pods nominated to a node while preemption makes room there (``status.nominatedNodeName``).

A nominated pod counts on its node in the cache (an assumed pod), so that nobody else of ours
takes the room meanwhile; it stays pending, and its group is planned again on every attempt
(the loop gives the nominations up first, and the cycle hands them back while victims are
still leaving). This store says which assumed pods are nominations, and for whom.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from koordgang.model.group_key import GroupKey
from koordgang.model.pod import PodInfo


@dataclass(slots=True)
class Nomination:
    pod: PodInfo
    node: str
    #: The group it was nominated for (empty for a pod alone).
    group: GroupKey


class Nominations:
    def __init__(self) -> None:
        self._by_uid: dict[str, Nomination] = {}
        #: node -> uid -> nomination: a filter asks about one node at a time.
        self._by_node: dict[str, dict[str, Nomination]] = {}

    def add(self, pod: PodInfo, node: str, group: GroupKey) -> None:
        self.remove(pod.uid)
        nomination = Nomination(pod, node, group)
        self._by_uid[pod.uid] = nomination
        self._by_node.setdefault(node, {})[pod.uid] = nomination

    def remove(self, uid: str) -> Nomination | None:
        nomination = self._by_uid.pop(uid, None)
        if nomination is not None:
            on_node = self._by_node.get(nomination.node)
            if on_node is not None:
                on_node.pop(uid, None)
                if not on_node:
                    del self._by_node[nomination.node]
        return nomination

    def get(self, uid: str) -> Nomination | None:
        return self._by_uid.get(uid)

    def on_nodes(self, nodes: set[str]) -> list[Nomination]:
        return [n for node in nodes for n in self._by_node.get(node, {}).values()]

    def on_node(self, node: str) -> Iterable[Nomination]:
        return self._by_node.get(node, {}).values()

    def __contains__(self, uid: object) -> bool:
        return uid in self._by_uid

    def __len__(self) -> int:
        return len(self._by_uid)

    def __iter__(self) -> Iterator[Nomination]:
        return iter(list(self._by_uid.values()))
