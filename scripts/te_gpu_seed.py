"""The seed's seven configurations (the PR #3213 discussion; spec/catalogue rows 1-7) on real
Transformer Engine on a GPU, without fp8sm's TE plugin and with it under each semantics: the
forward and backward update counts of one training step and its loss.

    python scripts/te_gpu_seed.py [--json FILE]

Without the plugin TE main gives the seed's counts (1/1, 2/1, 4/1, 2/1, 2/3, 4/3, 3/2); with
it under fp8sm every configuration gives 1/1, and the losses are those without it (the plugin
changes when the scaling is updated, not the first step's casts). Exit 0 when both hold.
Run by scripts/te-gpu-check.sh.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import torch
import transformer_engine.pytorch as te
from transformer_engine.common.recipe import DelayedScaling
from transformer_engine.pytorch.quantization import FP8GlobalStateManager

import fp8sm.te

# The conformance harness's update counter, so that the GPU check counts as it does.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))
from te_update_counter import UpdateCounter  # noqa: E402

# The configurations, each with the catalogue file that writes it as a scenario; that file's
# first line carries the seed's upstream counts ("(seed: upstream F/B)").
CONFIGURATIONS = {
    "no checkpoint": "01-no-checkpoint.scn",
    "non-reentrant/single": "02-nonreentrant-single.scn",
    "non-reentrant/per-layer": "03-nonreentrant-per-layer.scn",
    "reentrant/single/1 layer": "04-reentrant-single-1-layer.scn",
    "reentrant/single/3 layers": "05-reentrant-single-3-layers.scn",
    "reentrant/per-layer": "06-reentrant-per-layer.scn",
    "nested reentrant": "07-nested-reentrant.scn",
}
CATALOGUE = Path(__file__).resolve().parents[1] / "spec" / "catalogue"


def seed_counts(file_name: str) -> tuple:
    first_line = (CATALOGUE / file_name).read_text().splitlines()[0]
    forward, backward = re.search(r"seed: upstream (\d+)/(\d+)", first_line).groups()
    return int(forward), int(backward)


SEED_UPSTREAM = {name: seed_counts(file_name) for name, file_name in CONFIGURATIONS.items()}
WIDTH, ROWS = 64, 32


def step(configuration: str) -> tuple:
    torch.manual_seed(0)
    layers = [te.Linear(WIDTH, WIDTH, params_dtype=torch.float32).cuda() for _ in range(3)]
    x = torch.randn(ROWS, WIDTH, device="cuda", requires_grad=True)

    def run(modules, h):
        for m in modules:
            h = m(h)
        return h

    def ckpt(function, h, reentrant):
        return te.distributed.checkpoint(function, h, use_reentrant=reentrant)

    def per_layer(h, reentrant):
        for m in layers:
            h = ckpt(m, h, reentrant)
        return h

    forwards = {
        "no checkpoint": lambda: run(layers, x),
        "non-reentrant/single": lambda: ckpt(lambda h: run(layers, h), x, False),
        "non-reentrant/per-layer": lambda: per_layer(x, False),
        "reentrant/single/1 layer": lambda: ckpt(layers[0], x, True),
        "reentrant/single/3 layers": lambda: ckpt(lambda h: run(layers, h), x, True),
        "reentrant/per-layer": lambda: per_layer(x, True),
        "nested reentrant": lambda: ckpt(lambda h: run(layers[1:], ckpt(layers[0], h, True)), x, True),
    }
    counter = UpdateCounter(FP8GlobalStateManager)
    try:
        with te.autocast(enabled=True, recipe=DelayedScaling()):
            out = forwards[configuration]()
        loss = out.float().pow(2).mean()
        loss.backward()
        torch.cuda.synchronize()
    finally:
        counter.remove()
    return (counter.forward, counter.backward), float(loss)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    results = {"te": None, "runs": {}}
    import transformer_engine

    results["te"] = getattr(transformer_engine, "__version__", "?")
    ok = True
    for plugin in [None, "upstream", "pr3213", "fp8sm"]:
        name = plugin or "without the plugin"
        results["runs"][name] = {}
        for configuration in SEED_UPSTREAM:
            if plugin:
                fp8sm.te.install(plugin)
            try:
                counts, loss = step(configuration)
            finally:
                if plugin:
                    fp8sm.te.uninstall()
            results["runs"][name][configuration] = {"forward": counts[0], "backward": counts[1], "loss": loss}
            print(f"{name:>20} {configuration:>26}: {counts[0]}/{counts[1]} loss {loss:.6f}", flush=True)
            if plugin in (None, "upstream") and counts != SEED_UPSTREAM[configuration]:
                ok = False
            if plugin == "fp8sm" and counts != (1, 1):
                ok = False
    base = results["runs"]["without the plugin"]
    for name, runs in results["runs"].items():
        for configuration, run in runs.items():
            if abs(run["loss"] - base[configuration]["loss"]) > 1e-6 * max(1.0, abs(base[configuration]["loss"])):
                print(f"loss differs: {name} {configuration}: {run['loss']} vs {base[configuration]['loss']}")
                ok = False
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1)
    print("te-gpu-check:", "the seed's counts without the plugin and under upstream, 1/1 under fp8sm" if ok
          else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
