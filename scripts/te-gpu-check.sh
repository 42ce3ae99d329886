#!/usr/bin/env bash
# The seed's seven configurations on real Transformer Engine on a GPU, without fp8sm's TE
# plugin and with it under each semantics: counts and losses (scripts/te_gpu_seed.py;
# docs/te-plugin.md). For a GPU machine without network access, in two halves:
#
#   scripts/te-gpu-check.sh --prepare    # here, with network: gpu-wheels/ (fp8sm's wheel for the
#                                        # GPU machine's Python, TE's wheels) and their sizes
#   scripts/te-gpu-check.sh [OUT]        # there: installs from gpu-wheels/, runs, results in OUT
#
# The GPU machine has Python 3.12 and torch with CUDA 13; TE 2.20.2 for it is
# transformer-engine-cu13 (a wheel of about 264 MiB) and transformer-engine-torch (a source
# distribution, compiled against the installed torch at install time). What travels with a
# working tree is limited (64 MiB): --prepare says whether TE's wheels fit; when they do not,
# the run half needs TE installed on the GPU machine already, and says so when it is not.
# Exit status: 0 the checks hold, 1 they do not, 3 it could not run (no GPU, no TE).
set -euo pipefail
cd "$(dirname "$0")/.."
readonly WHEELS=gpu-wheels
readonly GPU_PYTHON="${GPU_PYTHON:-python3.12}"   # the GPU machine's Python (a pyenv: PYENV_VERSION=3.12.1)
readonly TRAVEL_LIMIT_MB=64

if [ "${1:-}" = "--prepare" ]; then
  mkdir -p "$WHEELS"
  "$GPU_PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$WHEELS" . >&2
  echo "fp8sm for $GPU_PYTHON: $(ls "$WHEELS"/fp8sm-*.whl)"
  te_dir="$(mktemp -d)"
  if "$GPU_PYTHON" -m pip download --quiet --no-deps --dest "$te_dir" "transformer-engine-cu13==2.20.2" \
     "transformer-engine==2.20.2" >&2; then
    te_mb=$(du -sm "$te_dir" | cut -f1)
    if [ "$te_mb" -le "$TRAVEL_LIMIT_MB" ]; then
      mv "$te_dir"/*.whl "$WHEELS"/
      echo "TE's wheels ($te_mb MiB) are in $WHEELS/"
    else
      echo "TE's wheels are $te_mb MiB, over the $TRAVEL_LIMIT_MB MiB that travel: not copied" \
           "(transformer-engine-torch is a source distribution besides; TE must be installed on the GPU machine)"
    fi
  fi
  rm -rf "$te_dir"
  exit 0
fi

out="${1:-${OUT:-gpu-check-results}}"
mkdir -p "$out"
python="${PYTHON:-$(command -v "$GPU_PYTHON" || command -v python3)}"
if ! "$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "te-gpu-check: no CUDA device visible to torch: nothing run" | tee "$out/te-gpu-check.txt"
  exit 3
fi
if [ -d "$WHEELS" ]; then
  "$python" -m pip install --quiet --no-index --find-links "$WHEELS" fp8sm >&2
  ls "$WHEELS"/transformer_engine*.whl >/dev/null 2>&1 && \
    "$python" -m pip install --quiet --no-index --find-links "$WHEELS" transformer-engine >&2 || true
fi
if ! "$python" -c "import transformer_engine.pytorch" 2>"$out/te-import-error.txt"; then
  echo "te-gpu-check: Transformer Engine is not installed here and its wheels did not travel" \
       "(see $out/te-import-error.txt): nothing run" | tee "$out/te-gpu-check.txt"
  exit 3
fi
"$python" scripts/te_gpu_seed.py --json "$out/te-gpu-check.json" | tee "$out/te-gpu-check.txt"
