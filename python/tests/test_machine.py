"""fp8sm.Machine: events in, the table's decisions out, checked against spec §3's rules.

Each expectation is the spec's (docs/te-fp8-state-semantics.md), not a value read off the
machine: the outermost FP8 autocast exit updates once, the first claim in a region owns the
backward update, the raises of §3.2 and §3.4 and what they leave behind.
"""

import copy

import pytest

import fp8sm


def forward_of_one_linear(machine, module=0):
    """A module forward as the driver fires it: prepare, claim, end_forward."""
    actions = machine.module_prepare(module)
    owner, claimed = machine.module_claim(module)
    return owner, actions + claimed + machine.module_end_forward(module)


@pytest.mark.parametrize("semantics", fp8sm.SEMANTICS)
def test_the_outermost_fp8_autocast_exit_updates_once(semantics):
    # §3.1: reduce_and_update_fp8_tensors(forward=True) at the exit that leaves depth 0, only.
    m = fp8sm.Machine(semantics)
    m.autocast_enter()
    m.autocast_enter()
    assert m.autocast_depth == 2 and m.fp8_enabled
    forward_of_one_linear(m)
    assert ("forward_update",) not in m.autocast_exit()
    assert m.autocast_depth == 1
    assert m.autocast_exit().count(("forward_update",)) == 1
    assert m.autocast_depth == 0 and not m.fp8_enabled


@pytest.mark.parametrize("semantics", fp8sm.SEMANTICS)
def test_a_disabled_autocast_neither_claims_nor_updates(semantics):
    m = fp8sm.Machine(semantics)
    m.autocast_enter(enabled=False)
    assert not m.fp8_enabled
    owner, actions = forward_of_one_linear(m)
    assert owner is not True
    assert ("forward_update",) not in actions + m.autocast_exit()


@pytest.mark.parametrize("semantics", ["upstream", "pr3213"])
def test_the_first_claim_of_a_region_owns_the_backward_update(semantics):
    # §3.2 CLAIM: the first module under the outermost FP8 autocast takes the bit; the next
    # finds it taken. (fp8sm makes no module the owner: see the next test.)
    m = fp8sm.Machine(semantics)
    m.autocast_enter()
    first, _ = forward_of_one_linear(m, 0)
    second, _ = forward_of_one_linear(m, 1)
    assert (first, second) == (True, False)


def test_fp8sm_updates_once_at_the_end_of_a_pass_that_ran_fp8_backwards():
    # docs/semantics.md: fp8sm's backward update belongs to the pass, not to a module's node.
    m = fp8sm.Machine("fp8sm")
    m.autocast_enter()
    forward_of_one_linear(m, 0)
    forward_of_one_linear(m, 1)
    m.autocast_exit()
    m.backward_pass_begin()
    actions = []
    for module in (1, 0):
        actions += m.module_backward_begin(module) + m.module_backward(module, owner=False, fp8=True)
    assert ("backward_update",) not in actions
    assert m.backward_pass_end().count(("backward_update",)) == 1


def test_a_module_registers_once():
    m = fp8sm.Machine("upstream")
    m.autocast_enter()
    assert ("registered", 0) in m.module_prepare(0)
    m.module_claim(0)
    m.module_end_forward(0)
    assert m.module(0).registered
    assert ("registered", 0) not in m.module_prepare(0)


def test_upstream_recompute_with_nothing_captured_raises_index_error_and_leaks():
    # §3.4 upstream ARF_ENTER(rc): F := FIFO.pop_front(); an empty FIFO raises IndexError with
    # the region and phase flags already set (the leak).
    m = fp8sm.Machine("upstream")
    with pytest.raises(IndexError) as raised:
        m.recompute_enter(0)
    assert "pop from empty list" in str(raised.value)
    assert isinstance(raised.value.actions, list)
    assert m.checkpoint_phase == "recompute"


def test_pr3213_recompute_of_an_uncaptured_checkpoint_raises_runtime_error_and_changes_nothing():
    # §3.4 FIXED: C.bit unset → RuntimeError, rolled back.
    m = fp8sm.Machine("pr3213")
    before = m.snapshot()
    with pytest.raises(RuntimeError):
        m.recompute_enter(7)
    assert m.snapshot() == before
    assert m.checkpoint_phase == "outside"


def test_upstream_pop_without_a_stash_position_raises_key_error():
    # §3.2 POP: `pos` missing raises KeyError. Module 5 ran in FP8 outside any checkpoint (so
    # its meta is FP8 and it never stashed); a recompute then runs it: the recompute branch pops.
    m = fp8sm.Machine("upstream")
    m.autocast_enter()
    forward_of_one_linear(m, 5)
    assert m.module(5).fp8 and not m.module(5).has_stash_pos
    m.checkpoint_forward_enter(0, reentrant=True)
    m.checkpoint_forward_exit()
    m.autocast_exit()
    m.recompute_enter(0)
    m.autocast_enter(recompute_internal=True)
    with pytest.raises(KeyError) as raised:
        m.module_prepare(5)
    assert "global_fp8_buffer_pos_fwd_recompute" in str(raised.value)


def test_a_copy_is_independent():
    m = fp8sm.Machine("fp8sm")
    m.autocast_enter()
    twin = copy.copy(m)
    assert twin.snapshot() == m.snapshot() and twin.fingerprint() == m.fingerprint()
    twin.autocast_exit()
    assert twin.autocast_depth == 0 and m.autocast_depth == 1
    assert twin.snapshot() != m.snapshot()
    # The copy reports its own actions, not into the original's list.
    assert m.autocast_exit() == [("forward_update",)]


def test_rows_taken_name_rows_of_the_table():
    m = fp8sm.Machine("upstream")
    m.autocast_enter()
    rows = m.rows_taken
    table = fp8sm.Machine.table()
    assert rows and all(0 <= r < len(table) for r in rows)
    assert any("AutocastEnter" in table[r] for r in rows)


def test_unknown_semantics_is_a_value_error():
    with pytest.raises(ValueError, match="expected fp8sm, upstream or pr3213"):
        fp8sm.Machine("te-main")


def test_every_event_and_property_is_documented():
    for name in dir(fp8sm.Machine):
        if name.startswith("_"):
            continue
        assert getattr(fp8sm.Machine, name).__doc__, name
