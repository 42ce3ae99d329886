"""The cost of fp8sm's TE plugin per module per step, on TE's own code on the CPU (the
conformance harness: TE 2.20.x's Python state code on real torch, its C++ extension stubbed).

Each measurement runs one program of STEPS training steps, each `autocast on { linear L0 ..
linear L{M-1} } backward step`, on TE without the plugin and with it under each semantics,
alternating, REPEATS times, in one process (the modules are made in the first step of each
run, the same in both). The overhead per module per step is the difference of the times
divided by STEPS * M (the fastest run of each: the least disturbed):

    build/te-venv/bin/python bench/te_plugin_overhead.py --te-source build/te-src/2.20.2 [--modules M]
        [--steps S] [--repeats R]

(scripts/te-env.sh installs the environment; `pip install .` puts the package in it.)
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "conformance"))

import te_conformance  # noqa: E402
import te_harness  # noqa: E402


def program(modules: int, steps: int) -> str:
    body = "".join(f"  linear L{m}\n" for m in range(modules))
    one_step = f"autocast on {{\n{body}}}\nbackward\n"
    return "step\n".join([one_step] * steps)


def timed_run(te, text: str, pristine) -> float:
    # Each run from TE's state as loaded (its global amax buffers would otherwise hold every
    # earlier run's modules, and each update reduce them all).
    te.manager.quantization_state = copy.deepcopy(pristine)
    # The collector's pauses land anywhere in a run: collected before, off during.
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        result = te_harness.run_program(te, text)
        seconds = time.perf_counter() - start
    finally:
        gc.enable()
    if any(step["raised"] for step in result["steps"]):
        raise SystemExit(f"the benchmark program raised on TE: {result['steps']}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--te-source", type=Path, required=True)
    parser.add_argument("--modules", type=int, default=8)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()

    te = te_conformance.load_te(args.te_source)
    import fp8sm.te

    text = program(args.modules, args.steps)
    per = args.steps * args.modules
    pristine = copy.deepcopy(te.manager.quantization_state)
    timed_run(te, text, pristine)  # warm: imports, first-call caches
    print(f"TE {fp8sm.te._modules._installed_version()} on the CPU harness, {args.modules} Linear modules, "
          f"{args.steps} steps a run, the fastest of {args.repeats} runs each")
    for semantics in fp8sm.SEMANTICS:
        without, with_plugin = [], []
        for _ in range(args.repeats):
            without.append(timed_run(te, text, pristine))
            fp8sm.te.install(semantics)
            try:
                with_plugin.append(timed_run(te, text, pristine))
            finally:
                fp8sm.te.uninstall()
        base, plugged = min(without), min(with_plugin)
        print(f"{semantics:>8}: without {base / per * 1e6:7.1f} us, with {plugged / per * 1e6:7.1f} us per module "
              f"per step: plugin {(plugged - base) / per * 1e6:+.1f} us per module per step "
              f"({plugged / base:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
