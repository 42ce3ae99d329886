#!/usr/bin/env bash
# The GPU checks in one command, for a machine with an NVIDIA GPU: build, run the GPU tests
# (they must run, not skip), the CUDA runtime with train_mlp, and the kernel benchmark. Writes
# every output under $OUT (default: gpu-check-results/) and exits non-zero if a check failed.
#
#   OUT=/some/folder scripts/gpu-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check-results}"
mkdir -p "$out"
status=0

{ nvidia-smi || true; } > "$out/nvidia-smi.txt" 2>&1
scripts/setup.sh > "$out/setup.log" 2>&1 || { echo "setup failed (see $out/setup.log)"; exit 1; }
scripts/build.sh > "$out/build.log" 2>&1 || { echo "build failed (see $out/build.log)"; exit 1; }

# GPU tests: every kernel against the CPU reference, the runtime on the CUDA backend.
ctest --test-dir build -L gpu --output-on-failure > "$out/gpu-tests.log" 2>&1 || status=1
if grep -q "Skipped" "$out/gpu-tests.log"; then
  echo "GPU tests were skipped (no usable GPU?): see $out/gpu-tests.log"
  status=1
fi
# The runtime's own tests again, now that the CUDA backend is there too.
ctest --test-dir build -L runtime --output-on-failure > "$out/runtime-tests.log" 2>&1 || status=1

build/examples/train_mlp --backend cuda --checkpoint reentrant --granularity per-layer > "$out/train_mlp_cuda.txt" 2>&1 || status=1
build/examples/train_mlp --backend cpu --checkpoint reentrant --granularity per-layer > "$out/train_mlp_cpu.txt" 2>&1 || status=1
build/bench/kernel_bandwidth > "$out/kernel_bandwidth.txt" 2>&1 || status=1

tail -n 3 "$out/gpu-tests.log"
tail -n 1 "$out/train_mlp_cuda.txt" "$out/train_mlp_cpu.txt"
cat "$out/kernel_bandwidth.txt"
exit $status
