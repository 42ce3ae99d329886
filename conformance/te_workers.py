"""Runs many programs on TE in a few long-lived worker processes, each program from the state
TE's import left, and checks that it did.

A fork per program gives every program TE's import-time globals for free, but forking (and
ending) a process that holds torch costs about 35 ms where a program runs in about 1 ms. A
worker here runs program after program instead, and after each it

- *resets* what a program can change: every global of every loaded `transformer_engine.*`
  module (and of the harness's own modules: te_stubs' stand-ins live there), every class
  attribute of their classes (`FP8GlobalStateManager.quantization_state`, the counter
  te_harness installs), the attributes of their functions (torch's decorators cache there),
  and, in place, the contents of the containers and TE objects reachable from all those as
  the worker started (`activation_recompute_forward`'s FIFO, the quantization state's fields
  and buffers); the `lru_cache`s that were empty then; torch's CPU random state;
- *checks* it: a digest of all that, and of what the reset does not restore (the code,
  defaults and closure cells of every function held there, what those cells hold, the
  version counter of every tensor held there, the attributes of foreign objects held there,
  the filled `lru_cache`s, which TE modules are loaded, and torch's global state: grad and
  inference mode, saved-tensor hooks, function and dispatch mode stacks, autocast, anomaly
  mode, default dtype), must equal the digest taken as the worker started. A program that
  leaves anything behind is a harness failure naming the place, and its worker is replaced.

The digest is what the objects hold, by identity, so a value replaced by an equal one shows.
It does not see inside foreign objects beyond their attributes (a torch module's buffers, a
C extension's state), the globals of modules other than TE's and the harness's (a function a
caller patched into TE is seen with its closure, not with its module), or torch's C++ state
other than the modes above (its caches, the autograd engine's threads).

Workers are forked from the process that loaded TE when the pool first runs a program, so
what that process patched before then (a test's mutant) is part of every worker's starting
state, and what it patches later reaches no worker: start another pool. That process must not
run programs itself. Results come back in submission order; a program that runs past the
timeout has its worker killed and is a harness failure, never a result.

    with Workers(te, jobs=2) as pool:
        results = pool.map(texts)                            # te_harness.run_program(te, text)
        results = pool.map(texts, function=module.run_it)    # module.run_it(te, text) -> dict

Run as a script, it times the two ways of running programs on TE (docs/conformance.md):

    te_workers.py --te-source DIR [--jobs J] [--fresh] [--random N --seed S --length L]
"""

from __future__ import annotations

import argparse
import collections
import functools
import gc
import itertools
import multiprocessing.connection
import operator
import os
import pickle
import signal
import sys
import time
import traceback
import types
import warnings
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import torch

HERE = Path(__file__).resolve().parent

# The harness's own modules hold state a run reads (te_stubs' stand-ins, installed into TE):
# they are reset and checked as TE's are.
HARNESS_MODULES = ("transformer_engine_torch", "te_stubs", "te_harness", "te_loader", "scenario")

DEFAULT_TIMEOUT = 60.0


class HarnessFailure(Exception):
    """A program the harness could not run to a result: a stub failed or was missing, the
    program left state behind, ran past its timeout, or its worker died."""

    def __init__(self, message: str, index: int = -1, text: str = ""):
        super().__init__(message)
        self.index, self.text = index, text


def _is_state_module(name) -> bool:
    return isinstance(name, str) and (name == "transformer_engine" or name.startswith("transformer_engine.")
                                      or name in HARNESS_MODULES)


def state_module_names() -> List[str]:
    return sorted(name for name in sys.modules if _is_state_module(name))


# ---- the state, its reset and its digest ------------------------------------------------------------
#
# A snapshot is a list of records, one per object whose contents a program could change, found
# by walking from the state modules' globals when the worker starts. Each record keeps the
# object, a fingerprint of its contents (what it holds, by identity, so an object replaced by
# an equal one still shows) and a shallow copy of them. The reset restores, in place, every
# record of its domain whose fingerprint changed: each copy points at the original objects of
# the next level, so that restores the whole graph reachable from the modules. The digest is
# the fingerprints of all records, reset or not, plus what no record holds (which modules are
# loaded, torch's global state). Records are compared in chunks of one kind, each in one pass
# of C-level iteration (a program changes a handful of records among thousands): only a chunk
# that differs is halved until the records that changed are found, and those are read one by
# one from then on.

_MISSING = object()
CHUNK = 64


def _keys_text(keys) -> List[str]:
    return [_key_text(k) for k in keys][:5]


def _key_text(key) -> str:
    if isinstance(key, (str, int, float, bool)) or key is None:
        return repr(key) if not isinstance(key, str) else key
    return f"<{type(key).__name__}>"


class _Kind:
    """How one kind of record is fingerprinted, copied, restored and described.

    `read(objs)` fingerprints many objects in one pass of C-level iteration: a `shape`
    compared by value (lengths, sizes) and the objects they hold, compared by identity (so
    an object replaced by an equal one still shows), without allocating anything per item."""

    def read(self, objs) -> tuple:
        return tuple(map(self.shape_of, objs)), ()

    def shape_of(self, obj) -> object:
        raise NotImplementedError

    def copy(self, obj) -> object:
        return None

    def restore(self, obj, saved) -> object:
        """Puts the contents back in place; returns what it dropped (its caller frees it)."""
        raise NotImplementedError

    def describe(self, record: "_Record") -> Optional[str]:
        return f"{record.path}: changed"


def _fingerprint(kind: _Kind, objs) -> tuple:
    shape, items = kind.read(objs)
    return shape, tuple(items)


def _unchanged(kind: _Kind, objs, pristine: tuple) -> bool:
    shape, items = kind.read(objs)
    return shape == pristine[0] and all(map(operator.is_, items, pristine[1]))


class _Dicts(_Kind):
    """Module namespaces, dicts, objects' __dict__."""

    def read(self, objs):
        return tuple(map(len, objs)), itertools.chain(itertools.chain.from_iterable(objs),
                                                      itertools.chain.from_iterable(map(dict.values, objs)))

    def copy(self, d):
        return dict(d)

    def restore(self, d, saved):
        dropped = list(d.values())
        d.clear()
        d.update(saved)
        return dropped

    def describe(self, record):
        return _namespace_change(record.path, record.saved, record.obj)


class _Empty(_Kind):
    """A dict, list, set or deque empty at the start (most functions' attributes): its length
    alone tells whether it still is, without iterating it."""

    def __init__(self, full: _Kind):
        self.full = full

    def read(self, objs):
        return tuple(map(len, objs)), ()

    def copy(self, obj):
        return self.full.copy(obj)

    def restore(self, obj, saved):
        return self.full.restore(obj, saved)

    def describe(self, record):
        return self.full.describe(record)


class _Classes(_Kind):
    """Class attributes (a class's namespace changes only through setattr and delattr)."""

    def read(self, classes):
        spaces = tuple(map(vars, classes))
        return tuple(map(len, spaces)), itertools.chain(
            itertools.chain.from_iterable(spaces),
            itertools.chain.from_iterable(map(types.MappingProxyType.values, spaces)))

    def copy(self, cls):
        return dict(vars(cls))

    def restore(self, cls, saved):
        namespace = vars(cls)
        dropped = dict(namespace)
        for name in [n for n in namespace if n not in saved]:
            delattr(cls, name)
        for name, value in saved.items():
            if namespace.get(name, _MISSING) is not value:
                setattr(cls, name, value)
        return dropped

    def describe(self, record):
        now = vars(record.obj)
        if {k: id(v) for k, v in now.items()} == {k: id(v) for k, v in record.saved.items()}:
            return None  # the same attributes in another order, as a restore's setattr leaves them
        return _namespace_change(record.path, record.saved, now)


def _namespace_change(path: str, before: dict, now) -> str:
    added = [k for k in now if k not in before]
    removed = [k for k in before if k not in now]
    rebound = [k for k, v in now.items() if k in before and before[k] is not v]
    parts = [f"{what} {_keys_text(keys)}" for what, keys in
             (("added", added), ("removed", removed), ("rebound", rebound)) if keys]
    return f"{path}: " + (", ".join(parts) if parts else "reordered")


class _Sequences(_Kind):
    """Lists and deques."""

    def read(self, objs):
        return tuple(map(len, objs)), itertools.chain.from_iterable(objs)

    def copy(self, obj):
        return list(obj)

    def restore(self, obj, saved):
        dropped = list(obj)
        if isinstance(obj, list):
            obj[:] = saved
        else:
            obj.clear()
            obj.extend(saved)
        return dropped

    def describe(self, record):
        return f"{record.path}: a {type(record.obj).__name__} of {len(record.saved)} items, now {len(record.obj)}"


class _Sets(_Kind):
    def shape_of(self, s):
        return frozenset(map(id, s))

    def copy(self, s):
        return set(s)

    def restore(self, s, saved):
        dropped = list(s)
        s.clear()
        s.update(saved)
        return dropped

    def describe(self, record):
        return f"{record.path}: a set of {len(record.saved)} items, now {len(record.obj)}"


class _Slots(_Kind):
    """The __slots__ of an object, one kind per list of names: those set at the start (read
    in one pass), or those unset then (which must stay unset)."""

    def __init__(self, names: tuple, set_at_start: bool):
        self.names, self.set_at_start = names, set_at_start
        self.get = operator.attrgetter(*names)

    def read(self, objs):
        if not self.set_at_start:
            return tuple(map(self.shape_of, objs)), ()
        values = map(self.get, objs)  # an AttributeError (a slot emptied) reads as changed
        return len(objs), itertools.chain.from_iterable(values) if len(self.names) > 1 else values

    def shape_of(self, obj):
        return tuple(hasattr(obj, name) for name in self.names)

    def copy(self, obj):
        return {name: getattr(obj, name, _MISSING) for name in self.names}

    def restore(self, obj, saved):
        dropped = [getattr(obj, name, None) for name in saved]
        for name, value in saved.items():
            if value is _MISSING:
                if hasattr(obj, name):
                    delattr(obj, name)
            elif getattr(obj, name, _MISSING) is not value:
                setattr(obj, name, value)
        return dropped

    def describe(self, record):
        rebound = [n for n, v in record.saved.items() if getattr(record.obj, n, _MISSING) is not v]
        return f"{record.path}: slots rebound {rebound[:5]}"


class _Functions(_Kind):
    parts = tuple(map(operator.attrgetter, ("__code__", "__defaults__", "__kwdefaults__")))

    def read(self, functions):
        return len(functions), itertools.chain.from_iterable(map(part, functions) for part in self.parts)

    def describe(self, record):
        return f"{record.path}: its code or defaults rebound"


class _Cells(_Kind):
    """A closure's variables."""

    def read(self, cells):
        return tuple(map(_cell_is_set, cells)), map(_cell_contents, cells)

    def describe(self, record):
        return f"{record.path}: rebound"


def _cell_is_set(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _cell_contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


class _Caches(_Kind):
    """functools.lru_cache: the reset empties one that was empty at the start."""

    def shape_of(self, f):
        return f.cache_info().currsize

    def restore(self, f, saved):
        f.cache_clear()  # what it held was computed from the arguments, by functions of TE

    def describe(self, record):
        return f"{record.path}: {record.pristine[0][0]} cached results, now {record.obj.cache_info().currsize}"


class _Tensors(_Kind):
    def shape_of(self, t):
        return t._version, tuple(t.shape), t.dtype, t.device

    def describe(self, record):
        return (f"{record.path}: a tensor written in place or changed ({record.pristine[0][0]}, "
                f"now {self.shape_of(record.obj)})")


DICTS, CLASSES, SEQUENCES, SETS = _Dicts(), _Classes(), _Sequences(), _Sets()
FUNCTIONS, CELLS, CACHES, TENSORS = _Functions(), _Cells(), _Caches(), _Tensors()
EMPTY = {id(kind): _Empty(kind) for kind in (DICTS, SEQUENCES, SETS)}


class _Record:
    __slots__ = ("path", "obj", "kind", "pristine", "saved", "reset")

    def __init__(self, path: str, obj, kind: _Kind, reset: bool):
        self.path, self.obj, self.kind, self.reset = path, obj, kind, reset
        self.pristine = _fingerprint(kind, (obj,))
        self.saved = kind.copy(obj)


class _Chunk:
    """Records of one kind, compared in one pass; one that differs is halved until the
    records that changed are found (a program changes a few records of a chunk at most). The
    halves' fingerprints are taken with the whole's, at the start."""

    __slots__ = ("kind", "records", "objs", "pristine")

    def __init__(self, kind: _Kind, records: List[_Record]):
        self.kind, self.records = kind, records
        self.objs = tuple(r.obj for r in records)
        self.pristine: Dict[tuple, tuple] = {}
        if records:
            self._fingerprint_halves(0, len(records))

    def _fingerprint_halves(self, lo: int, hi: int) -> None:
        if hi - lo > 1:
            self.pristine[lo, hi] = _fingerprint(self.kind, self.objs[lo:hi])
            middle = (lo + hi) // 2
            self._fingerprint_halves(lo, middle)
            self._fingerprint_halves(middle, hi)

    def changed(self, lo: int = 0, hi: int = -1) -> List[_Record]:
        hi = len(self.records) if hi < 0 else hi
        if hi - lo == 1:
            r = self.records[lo]
            return [] if _record_unchanged(r) else [r]
        try:
            if _unchanged(self.kind, self.objs[lo:hi], self.pristine[lo, hi]):
                return []
        except Exception:  # noqa: BLE001  (what cannot be read as it was has changed)
            pass
        middle = (lo + hi) // 2
        return self.changed(lo, middle) + self.changed(middle, hi)


def _record_unchanged(r: _Record) -> bool:
    try:
        return _unchanged(r.kind, (r.obj,), r.pristine)
    except Exception:  # noqa: BLE001  (what cannot be read as it was has changed)
        return False


def _describe(r: _Record) -> Optional[str]:
    try:
        return r.kind.describe(r)
    except Exception as e:  # noqa: BLE001  (the place is known even if its change cannot be told)
        return f"{r.path}: changed ({type(e).__name__} while telling how)"


def _chunks(records: List[_Record]) -> List[_Chunk]:
    by_kind: Dict[int, List[_Record]] = {}
    for r in records:
        by_kind.setdefault(id(r.kind), []).append(r)
    return [_Chunk(rs[0].kind, rs[i:i + CHUNK]) for rs in by_kind.values() for i in range(0, len(rs), CHUNK)]


class _Walk:
    """Finds the records: from each state module's globals into its classes and functions,
    containers, TE objects and tensors, and one level into foreign objects. `reset` says
    whether the reset restores what is found: the state modules' namespaces, their classes'
    attributes, and the containers and TE objects reachable from those; what functions hold,
    foreign objects and tensors are checked only."""

    def __init__(self):
        self.records: List[_Record] = []
        self.seen = set()
        self.slot_kinds: Dict[tuple, _Slots] = {}

    def add(self, path: str, obj, kind: _Kind, reset: bool) -> None:
        if id(kind) in EMPTY and not obj:
            kind = EMPTY[id(kind)]
        self.records.append(_Record(path, obj, kind, reset))

    def modules(self, names: List[str]) -> None:
        """Each module's namespace, then what each defines (so a class or function is named
        after its own module), then what the modules import from one another."""
        for name in names:
            namespace = vars(sys.modules[name])
            self.seen.update((id(sys.modules[name]), id(namespace)))
            self.add(name, namespace, DICTS, reset=True)
        for defined_here in (True, False):
            for name in names:
                for key, value in list(vars(sys.modules[name]).items()):
                    # Dunders (__builtins__, __spec__, __loader__) are the import system's.
                    if key.startswith("__") and key.endswith("__"):
                        continue
                    if (getattr(value, "__module__", None) == name) == defined_here:
                        self.value(f"{name}.{key}", value, reset=True)

    def value(self, path: str, value, reset: bool, foreign: int = 0) -> None:
        if value is None or isinstance(value, (bool, int, float, complex, str, bytes)) or id(value) in self.seen:
            return
        self.seen.add(id(value))
        if isinstance(value, types.ModuleType):
            return  # a state module is a root of its own; another is not TE's state
        if isinstance(value, type):
            if _is_state_module(getattr(value, "__module__", None)):
                self.cls(path, value)
            return
        if isinstance(value, functools._lru_cache_wrapper):
            self.add(path + " (lru_cache)", value, CACHES, reset=value.cache_info().currsize == 0)
            self.value(path, value.__wrapped__, reset=False)
            return
        if isinstance(value, types.FunctionType):
            # Any function the state holds (TE's, the harness's, one a test or a caller
            # patched in, torch's that TE imported), but not through a foreign object.
            if not foreign:
                self.function(path, value)
            return
        if isinstance(value, (staticmethod, classmethod)):
            self.value(path, value.__func__, reset=False)
            return
        if isinstance(value, property):
            for part in ("fget", "fset", "fdel"):
                self.value(f"{path}.{part}", getattr(value, part), reset=False)
            return
        if isinstance(value, functools.partial):
            for part in ("func", "args", "keywords"):
                self.value(f"{path}.{part}", getattr(value, part), reset=False)
            return
        if isinstance(value, torch.Tensor):
            self.add(path, value, TENSORS, reset=False)
            return
        if isinstance(value, (tuple, frozenset)):  # immutable: only what they hold
            for i, item in enumerate(value):
                self.value(f"{path}[{i}]", item, reset, foreign)
            return
        if isinstance(value, dict):
            self.add(path, value, DICTS, reset)
            for key, item in list(value.items()):
                self.value(f"{path}[{_key_text(key)}]", item, reset, foreign)
            return
        if isinstance(value, (list, collections.deque)):
            self.add(path, value, SEQUENCES, reset)
            for i, item in enumerate(value):
                self.value(f"{path}[{i}]", item, reset, foreign)
            return
        if isinstance(value, set):
            self.add(path, value, SETS, reset)
            for item in value:
                self.value(f"{path}{{{_key_text(item)}}}", item, reset, foreign)
            return
        if not _is_state_module(getattr(type(value), "__module__", None)):
            # A foreign object TE holds (a logger, a torch library handle): its attributes are
            # checked, not reset, and what they hold no further than one more foreign level.
            if foreign >= 1:
                return
            foreign, reset = foreign + 1, False
        self.instance(path, value, reset, foreign)

    def instance(self, path: str, obj, reset: bool, foreign: int) -> None:
        namespace = getattr(obj, "__dict__", None)
        if isinstance(namespace, dict) and id(namespace) not in self.seen:
            self.seen.add(id(namespace))
            self.add(path, namespace, DICTS, reset)
            for key, item in list(namespace.items()):
                self.value(f"{path}.{key}", item, reset, foreign)
        names = [name for klass in type(obj).__mro__ for name in _slot_names(klass)]
        if names and not foreign:  # a foreign object's slots (dataclass fields, typing forms) are its own
            # One kind per list of slots: those set now are read in one pass, those unset
            # (read one by one) must stay so.
            set_now = tuple(name for name in names if hasattr(obj, name))
            unset = tuple(name for name in names if name not in set_now)
            for group, is_set, suffix in ((set_now, True, " (slots)"), (unset, False, " (unset slots)")):
                if group:
                    kind = self.slot_kinds.setdefault((group, is_set), _Slots(group, is_set))
                    self.add(path + suffix, obj, kind, reset)
            for name in set_now:
                self.value(f"{path}.{name}", getattr(obj, name), reset, foreign)

    def cls(self, path: str, cls: type) -> None:
        self.add(path, cls, CLASSES, reset=True)
        for key, value in list(vars(cls).items()):
            if key not in ("__dict__", "__weakref__"):
                self.value(f"{path}.{key}", value, reset=True)

    def function(self, path: str, f: types.FunctionType) -> None:
        self.add(path, f, FUNCTIONS, reset=False)
        self.seen.add(id(f.__dict__))
        # Its attributes are reset (torch's decorators cache on them at the first call).
        self.add(path + ".__dict__", f.__dict__, DICTS, reset=True)
        for key, item in list(f.__dict__.items()):
            self.value(f"{path}.{key}", item, reset=False)
        for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            self.add(f"{path} (closure {name})", cell, CELLS, reset=False)
            try:
                self.value(f"{path} (closure {name})", cell.cell_contents, reset=False)
            except ValueError:
                pass
        self.value(f"{path} (defaults)", f.__defaults__, reset=False)
        self.value(f"{path} (keyword defaults)", f.__kwdefaults__, reset=False)


def _slot_names(klass) -> List[str]:
    slots = vars(klass).get("__slots__", ())
    slots = (slots,) if isinstance(slots, str) else slots
    return [s for s in slots if s not in ("__dict__", "__weakref__")]


def torch_state() -> tuple:
    """torch's process-wide state that a program enters and must leave as it found it."""
    modes = torch.overrides._get_current_function_mode_stack()
    return (
        ("grad mode", torch.is_grad_enabled()),
        ("inference mode", torch.is_inference_mode_enabled()),
        ("saved-tensor hooks (top of the stack)", torch._C._autograd._top_saved_tensors_default_hooks(True)),
        ("saved-tensor hooks enabled", torch._C._autograd._saved_tensors_hooks_is_enabled()),
        ("function mode stack", tuple(type(m).__qualname__ for m in modes)),
        ("dispatch mode stack depth", torch._C._len_torch_dispatch_stack()),
        ("autocast (cpu)", torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")),
        ("autocast (cuda)", torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda")),
        ("autocast cache", torch.is_autocast_cache_enabled()),
        ("anomaly mode", torch.is_anomaly_enabled()),
        ("default dtype", torch.get_default_dtype()),
        ("deterministic algorithms", torch.are_deterministic_algorithms_enabled()),
        ("torch.cuda.is_available", torch.cuda.is_available),
        ("torch.cuda.is_current_stream_capturing", torch.cuda.is_current_stream_capturing),
        ("warnings filters", len(warnings.filters)),
    )


class Pristine:
    """The state as a worker starts (TE as its import left it, with the harness's stand-ins and
    whatever the parent patched before forking): taken once, then reset and checked after
    every program."""

    def __init__(self):
        walk = _Walk()
        self.modules = state_module_names()
        self.all_modules = tuple(sys.modules)
        walk.modules(self.modules)
        self.records = walk.records
        self.chunks = _chunks(self.records)
        # Records that a program changed once are read one by one from then on (the same few
        # change in most programs: the quantization state, distributed.py's flags, the counter),
        # so that the chunks they left stay whole and are read in one pass each.
        self.hot: List[_Record] = []
        self.rng = torch.get_rng_state()
        self.torch = torch_state()

    def _changed(self) -> List[_Record]:
        changed = [r for r in self.hot if not _record_unchanged(r)]
        for i, chunk in enumerate(self.chunks):
            found = chunk.changed()
            if found:
                # The rest of the chunk was read unchanged: its fingerprints now are the
                # pristine ones.
                self.chunks[i] = _Chunk(chunk.kind, [r for r in chunk.records if r not in found])
                self.hot += found
                changed += found
        self.chunks = [chunk for chunk in self.chunks if chunk.records]
        return changed

    def reset(self) -> Optional[str]:
        """Restores what a program changed in the reset's domain, then checks the digest:
        None when all is as at the start, else what is not, by place.

        Every record is read once: those that changed and that the reset covers are restored,
        then read again; those that changed and that it does not cover are reported, as is
        one the restore left changed. Between the two readings only the restores run (what
        they drop is kept alive until after the second one: no finalizer runs there either),
        and a restore writes into its own record only, so what the first reading found
        unchanged still is."""
        changed = self._changed()
        dropped = [r.kind.restore(r.obj, r.saved) for r in changed if r.reset]
        torch.set_rng_state(self.rng)
        left = [what for what in map(_describe, [r for r in changed if not _record_unchanged(r)]) if what]
        # Another module imported (torch's, lazily) is not TE's state; a TE module is.
        modules = self.modules if tuple(sys.modules) == self.all_modules else state_module_names()
        if modules != self.modules:
            added = sorted(set(modules) - set(self.modules))
            removed = sorted(set(self.modules) - set(modules))
            left.append(f"the loaded TE modules: new {added[:5]}, gone {removed[:5]}")
        else:
            self.all_modules = tuple(sys.modules)
        for before, now in zip(self.torch, torch_state()):
            if before != now:
                left.append(f"torch's {before[0]}: {before[1:]}, now {now[1:]}")
        del dropped
        return "; ".join(left) if left else None


# ---- the workers ----------------------------------------------------------------------------------

def _collect_leftovers() -> None:
    """Collects what the program left unreachable (finalized now, not during the next program),
    then freezes what survived, so that the next collections look at the next program's objects
    only. What survives is the pristine state and what a program leaked out of the collector's
    sight: a reentrant checkpoint in a graph the program saved and did not free (`save`, then
    no backward or `backward retain`) keeps its run alive through a cycle that passes through
    torch's C++ autograd nodes, which the collector cannot follow (one program in twenty of
    CI's list). Unfrozen, those piled up and every collection walked them again: at 33 000
    programs, a collection cost more than the program."""
    gc.collect()
    gc.freeze()


def _worker(conn, te, function: Callable, reuse: bool) -> None:
    """A worker's life: take the pristine state, then run programs until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops its workers itself
    pristine = Pristine() if reuse else None
    gc.freeze()  # collections after a program look at the program's objects only
    functions: Dict[bytes, Callable] = {}
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        index, pickled, text = message
        if pickled is None:
            run = function
        else:
            run = functions.get(pickled) or functions.setdefault(pickled, pickle.loads(pickled))
        result, failure = None, None
        try:
            result = run(te, text)
        except BaseException as e:  # noqa: BLE001  (a harness failure: reported, then the worker goes)
            failure = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
        if pristine is not None:
            _collect_leftovers()
            leak = pristine.reset()
            if leak and failure is None:
                failure = f"the program left state behind that the reset did not undo: {leak}"
        conn.send((index, result, failure))
        if failure is not None or not reuse:
            return


class _Handle:
    """The parent's side of one worker."""

    def __init__(self, pid: int, conn):
        self.pid, self.conn = pid, conn
        self.task: Optional[int] = None  # the index of the program it runs
        self.started = 0.0


class Workers:
    """A pool of `jobs` workers forked from this process (which has loaded TE), started at its
    first use. `reuse=False` gives a fresh worker to every program (a fork per program, as
    before the pool: for comparison)."""

    def __init__(self, te, jobs: Optional[int] = None, timeout: float = DEFAULT_TIMEOUT,
                 function: Optional[Callable] = None, reuse: bool = True):
        import te_harness

        self.te = te
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.timeout = timeout
        self.function = function or te_harness.run_program
        self.reuse = reuse
        self.handles: List[_Handle] = []

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- running ------------------------------------------------------------------------------

    def run(self, text: str, function: Optional[Callable] = None) -> dict:
        return self.map([text], function)[0]

    def map(self, texts: Sequence[str], function: Optional[Callable] = None,
            failures: str = "raise") -> List[dict]:
        """function(te, text) for every text, in the workers; the results in the order of
        `texts`. `function` defaults to the pool's (te_harness.run_program); another must be a
        module-level function (it is sent to the workers by name). A harness failure raises
        HarnessFailure for the first failing program in that order (`failures="return"`: its
        place holds {"harness_failure": message} and the others run on)."""
        pickled = None if function is None or function is self.function else pickle.dumps(function)
        results: List[Optional[dict]] = [None] * len(texts)
        errors: Dict[int, str] = {}
        pending = collections.deque(range(len(texts)))
        busy: Dict[int, _Handle] = {}  # pid -> handle
        while pending or busy:
            while pending and len(busy) < self.jobs and not (errors and failures == "raise"):
                index = pending.popleft()
                handle = self._idle_worker(busy)
                handle.task, handle.started = index, time.monotonic()
                try:
                    handle.conn.send((index, pickled, texts[index]))
                except (BrokenPipeError, ConnectionResetError, OSError):
                    errors[index] = self._retire(handle, "the worker had gone before the program reached it")
                    continue
                busy[handle.pid] = handle
            if not busy:
                break
            deadline = min(h.started for h in busy.values()) + self.timeout
            ready = multiprocessing.connection.wait([h.conn for h in busy.values()],
                                                    timeout=max(0.0, deadline - time.monotonic()))
            for conn in ready:
                handle = next(h for h in busy.values() if h.conn is conn)
                del busy[handle.pid]
                index = handle.task
                try:
                    _, result, failure = conn.recv()
                except (EOFError, OSError):
                    errors[index] = self._retire(handle, "the worker running it died")
                    continue
                handle.task = None
                if failure is not None:
                    errors[index] = failure
                    self._retire(handle, None)
                elif not self.reuse:
                    self._retire(handle, None)
                    results[index] = result
                else:
                    results[index] = result
            now = time.monotonic()
            for handle in [h for h in busy.values() if now - h.started >= self.timeout]:
                del busy[handle.pid]
                errors[handle.task] = f"timed out after {self.timeout:g} s (its worker was killed)"
                self._retire(handle, None, kill=True)
            if errors and failures == "raise":
                pending.clear()  # what is running finishes: the first failure in order is known then
        if errors and failures == "raise":
            index = min(errors)
            raise HarnessFailure(f"{errors[index]}\nwhile running:\n{texts[index]}", index, texts[index])
        for index, message in errors.items():
            results[index] = {"harness_failure": message}
        return results  # type: ignore[return-value]

    # ---- the processes ------------------------------------------------------------------------

    def _idle_worker(self, busy: Dict[int, _Handle]) -> _Handle:
        for handle in self.handles:
            if handle.pid not in busy:
                return handle
        return self._start()

    def _start(self) -> _Handle:
        parent_end, child_end = multiprocessing.Pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker: never returns into the caller's code
            status = 0
            try:
                parent_end.close()
                for handle in self.handles:  # the other workers' ends: their EOF must reach the parent
                    handle.conn.close()
                _worker(child_end, self.te, self.function, self.reuse)
            except BaseException:  # noqa: BLE001
                traceback.print_exc()
                status = 1
            finally:
                os._exit(status)
        child_end.close()
        handle = _Handle(pid, parent_end)
        self.handles.append(handle)
        return handle

    def _retire(self, handle: _Handle, why: Optional[str], kill: bool = False) -> str:
        """Ends a worker (it exits by itself after a failure; a hung one is killed) and says
        why, with its exit status."""
        if kill:
            try:
                os.kill(handle.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        handle.conn.close()
        _, status = os.waitpid(handle.pid, 0)
        self.handles.remove(handle)
        if why is None:
            return ""
        return f"{why} ({_status_text(status)})"

    def close(self) -> None:
        """Stops the workers: an idle one when told, one still running a program (the caller
        was interrupted) at once."""
        for handle in list(self.handles):
            try:
                handle.conn.send(None)
            except OSError:
                pass
            self._retire(handle, None, kill=handle.task is not None)


def _status_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.WEXITSTATUS(status)}"


# ---- timing ----------------------------------------------------------------------------------------

def main(argv: Optional[List[str]] = None) -> int:
    sys.path.insert(0, str(HERE))
    import te_conformance

    parser = argparse.ArgumentParser(description="times programs on TE: reused workers, or a fork per program")
    parser.add_argument("--te-source", type=Path, required=True)
    parser.add_argument("--explorer", default=str(HERE.parent / "build" / "explorer" / "explorer"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--fresh", action="store_true", help="a fresh worker per program (a fork per program)")
    parser.add_argument("--breakdown", action="store_true",
                        help="where one reused worker's time goes: the runs, the collections, the resets and checks")
    parser.add_argument("--random", type=int, default=1000, metavar="N")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--length", type=int, default=30)
    args = parser.parse_args(argv)

    te = te_conformance.load_te(args.te_source)
    texts = [text for _, text in te_conformance.corpus_files(HERE.parent / "spec" / "catalogue")]
    texts += [text for _, text in te_conformance.random_corpus(args.explorer, args.random, args.seed, args.length)]
    if args.breakdown:
        return _breakdown(te, texts)
    # CPU time, the parent's (forks, dispatch) and its children's (the workers, reaped when the
    # pool closes), is what a program costs whatever else the machine runs; wall time is not.
    cpu_before = _cpu_seconds()
    with Workers(te, jobs=args.jobs, reuse=not args.fresh) as pool:
        started = time.monotonic()
        pool.map(texts)
        elapsed = time.monotonic() - started
    cpu = _cpu_seconds() - cpu_before
    way = "a fork per program" if args.fresh else "reused workers"
    print(f"{len(texts)} programs on TE, {way}, jobs {args.jobs}: {elapsed:.1f} s wall "
          f"({len(texts) / elapsed / args.jobs:.0f} programs/s per job), {cpu:.1f} s of CPU: "
          f"{cpu / len(texts) * 1e3:.1f} ms of CPU per program, {len(texts) / cpu:.0f} programs/s per core")
    return 0


def _cpu_seconds() -> float:
    import resource

    return sum(usage.ru_utime + usage.ru_stime
               for usage in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))


def _breakdown(te, texts: List[str]) -> int:
    """A worker's loop, timed by part (CPU time), in a child of this process (as a worker is)."""
    import te_harness

    pid = os.fork()
    if pid == 0:
        try:
            pristine = Pristine()
            gc.freeze()
            spent = collections.Counter()
            for text in texts:
                started = time.process_time()
                te_harness.run_program(te, text)
                ran = time.process_time()
                _collect_leftovers()
                collected = time.process_time()
                leak = pristine.reset()
                spent["run"] += ran - started
                spent["collection"] += collected - ran
                spent["reset and check"] += time.process_time() - collected
                if leak:
                    print(f"left behind: {leak}")
            print(f"{len(texts)} programs, {len(pristine.records)} records: " +
                  ", ".join(f"{part} {seconds / len(texts) * 1e3:.2f} ms" for part, seconds in spent.items()) +
                  " per program")
            sys.stdout.flush()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
