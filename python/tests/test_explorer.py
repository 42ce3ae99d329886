"""fp8sm.run, explore, catalogue: the explorer's documents as dicts.

Expectations come from outside the code under test: the seed's counts (the PR #3213 discussion:
"forward=1, backward=1" expected, upstream's duplicates per configuration, which the catalogue
rows 1-7 are), the project's claim that fp8sm holds every invariant, and a counterexample
replayed through run() violating what the search said it violates.
"""

import re

import pytest

import fp8sm

# The seed (PR #3213 discussion): upstream TE's (forward, backward) updates per configuration.
# Catalogue rows 1-7 write the seven configurations as scenarios, each with the seed's counts
# on its first line ("(seed: upstream F/B)").
SEED_FILES = [f"0{row}-{name}.scn" for row, name in enumerate(
    ["no-checkpoint", "nonreentrant-single", "nonreentrant-per-layer", "reentrant-single-1-layer",
     "reentrant-single-3-layers", "reentrant-per-layer", "nested-reentrant"], start=1)]


def seed_counts(text: str) -> tuple:
    forward, backward = re.search(r"seed: upstream (\d+)/(\d+)", text.splitlines()[0]).groups()
    return int(forward), int(backward)


def counts(document):
    return [(s["forward_updates"], s["backward_updates"]) for s in document["steps"]]


@pytest.mark.parametrize("name", SEED_FILES)
def test_the_seed_configurations(catalogue_dir, name):
    text = (catalogue_dir / name).read_text()
    assert counts(fp8sm.run(text, "upstream", title=name)) == [seed_counts(text)]
    fixed = fp8sm.run(text, "fp8sm", title=name)
    assert counts(fixed) == [(1, 1)]
    assert fixed["format"] == "fp8sm-run/1" and fixed["scenario"] == name
    assert all(step["violations"] == [] for step in fixed["steps"])


def test_a_malformed_scenario_is_a_value_error_naming_the_line():
    with pytest.raises(ValueError, match=r"bad\.scn:2"):
        fp8sm.run("autocast on {\n  frobnicate L0\n}\n", "fp8sm", title="bad.scn")


def test_fp8sm_holds_every_invariant_to_depth_4():
    document = fp8sm.explore(4, "fp8sm")
    assert document["format"] == "fp8sm-search/1"
    assert document["complete"] is True
    assert document["violations"] == []
    assert sorted(document["holding"]) == sorted(fp8sm.invariants())


def test_upstream_counterexamples_replay_as_violations():
    document = fp8sm.explore(4, "upstream")
    assert document["violations"], "upstream violates I1 within 4 statements (the seed's duplicate update)"
    for counterexample in document["violations"]:
        replay = fp8sm.run(counterexample["scenario"], "upstream")
        violated = {v for step in replay["steps"] for v in step["violations"]}
        assert counterexample["invariant"] in violated, counterexample


def test_the_search_document_is_the_same_for_any_thread_count():
    def without_timings(document):
        measured = ("seconds", "states_per_second", "peak_memory_bytes", "peak_memory_bytes_per_rank")
        return {k: v for k, v in document.items() if k not in measured}

    one = fp8sm.explore(4, "pr3213", threads=1)
    two = fp8sm.explore(4, "pr3213", threads=2)
    assert without_timings(one) == without_timings(two)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(depth=9), "depth must be 0 to 8"),
        (dict(depth=2, modules=0), "modules must be 1 to 8"),
        (dict(depth=2, threads=0), "threads must be 1 to 256"),
        (dict(depth=2, semantics="main"), "unknown semantics"),
        (dict(depth=2, checks=["I1", "I12"]), "unknown invariant 'I12'"),
    ],
)
def test_bad_search_options_are_value_errors(arguments, message):
    with pytest.raises(ValueError, match=message):
        fp8sm.explore(**arguments)


def test_a_budget_stops_the_search_and_says_so():
    document = fp8sm.explore(5, "upstream", max_states=50)
    assert document["complete"] is False


def test_the_catalogue_has_every_semantics_and_the_invariants_their_ids():
    document = fp8sm.catalogue()
    assert document["format"] == "fp8sm-catalogue/1"
    assert set(document["semantics"]) == set(fp8sm.SEMANTICS)
    assert sorted(fp8sm.invariants()) == [f"I{k}" for k in range(1, 10)]
