"""Network-topology specs: parsed once, rules kept in order."""

from koordgang.model.gather import GatherRule, TopologySpec, gather_rules, parse_gather_spec


def test_gather_rules_keep_each_layer_and_its_strategy_in_order() -> None:
    text = (
        '{"gatherStrategy": [{"layer": "spineLayer", "strategy": "MustGather"},'
        ' {"layer": "BlockLayer", "strategy": "PreferGather"}]}'
    )
    assert gather_rules(text) == (
        GatherRule("spineLayer", "MustGather"),
        GatherRule("BlockLayer", "PreferGather"),
    )
    assert gather_rules(None) == ()
    assert gather_rules("not json") == ()


def test_a_parsed_spec_keeps_its_text_and_two_texts_are_two_specs() -> None:
    text = '{"gatherStrategy": [{"layer": "B", "strategy": "MustGather"}]}'
    spaced = '{"gatherStrategy": [ {"layer": "B", "strategy": "MustGather"} ]}'
    spec, problem = parse_gather_spec(text)
    assert problem is None and spec == TopologySpec((GatherRule("B", "MustGather"),), text)
    other, _ = parse_gather_spec(spaced)
    assert other is not None and other.rules == spec.rules and other != spec
