"""kube-scheduler's default normalization of raw scores to 0..100."""

from __future__ import annotations

from koordgang.framework.interfaces import MAX_NODE_SCORE


def default_normalize(scores: dict[str, int], *, reverse: bool = False) -> None:
    """Scales in place so that the highest raw score becomes 100 (or, ``reverse``, 0: fewer is
    better). When every raw score is 0, all stay 0, or all become 100 when ``reverse``."""
    top = max(scores.values(), default=0)
    if top <= 0:
        if reverse:
            for name in scores:
                scores[name] = MAX_NODE_SCORE
        return
    for name, value in scores.items():
        scaled = value * MAX_NODE_SCORE // top
        scores[name] = MAX_NODE_SCORE - scaled if reverse else scaled
