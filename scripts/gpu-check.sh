#!/usr/bin/env bash
# The GPU checks in one command, for a machine with an NVIDIA GPU: build, run the GPU tests
# (they must run, not skip; the NCCL one needs two GPUs and is reported, not failed, with one),
# the CUDA runtime with train_mlp, and the benchmarks (kernels, a device-resident training
# step). Writes every output under $OUT (default: gpu-check-results/) and exits non-zero if a
# check failed.
#
#   OUT=/some/folder scripts/gpu-check.sh
#
# On a machine that cannot reach a package archive, run scripts/fetch-gpu-deps.sh first where
# apt works and bring the .deps/ folder along: its packages are unpacked into a private prefix
# (never into /) and the build looks there. MPI is optional here.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check-results}"
mkdir -p "$out"
status=0

{ nvidia-smi || true; } > "$out/nvidia-smi.txt" 2>&1
if compgen -G ".deps/*.deb" > /dev/null; then
  root="$PWD/.deps/root"
  mkdir -p "$root"
  for f in .deps/*.deb; do dpkg -x "$f" "$root"; done
  export CMAKE_PREFIX_PATH="$root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export CPATH="$root/usr/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  scripts/setup.sh > "$out/setup.log" 2>&1 || { echo "setup failed (see $out/setup.log)"; exit 1; }
fi
# Warnings are not errors here: the GPU machine's compiler may differ from CI's.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFP8SM_REQUIRE_CUDA=ON -DCUDAToolkit_ROOT=/usr/local/cuda \
  > "$out/configure.log" 2>&1 || { echo "configure failed (see $out/configure.log)"; exit 1; }
cmake --build build -j"$(nproc)" --target test_cuda_kernels test_cuda_runtime kernel_bandwidth train_mlp train_transformer \
  test_runtime test_runtime_properties test_device_backend_properties test_emulated_kernels test_kernels_fp8 \
  train_step test_device_residency test_cuda_residency \
  > "$out/build.log" 2>&1 \
  || { echo "build failed (see $out/build.log)"; exit 1; }
# The NCCL check exists where MPI and NCCL were found; ctest runs it under the label gpu.
if cmake --build build --target help | grep -q nccl_amax_reduction_check; then
  cmake --build build -j"$(nproc)" --target nccl_amax_reduction_check >> "$out/build.log" 2>&1 \
    || { echo "build failed (see $out/build.log)"; exit 1; }
fi

# GPU tests: every kernel against the CPU reference, the runtime on the CUDA backend.
ctest --test-dir build -L gpu --output-on-failure > "$out/gpu-tests.log" 2>&1 || status=1
# NCCL takes one GPU a rank: with a single GPU its test skips, saying so. The test of the
# backend's refusal without a GPU skips where one is usable. Any other skip fails.
if grep "Skipped" "$out/gpu-tests.log" | grep -v nccl | grep -qv ACudaBackendWithoutAGpuSaysWhy; then
  echo "GPU tests were skipped (no usable GPU?): see $out/gpu-tests.log"
  status=1
fi
# The runtime's own tests on this machine too (those that were built); the device backend's
# property runs on the GPU ("cuda-exact") as well as on the emulation here.
ctest --test-dir build -R "runtime\.Runtime|runtime\.DeviceResidency|kernels\.emulated" --output-on-failure > "$out/runtime-tests.log" 2>&1 \
  || status=1
RC_PARAMS=max_success=1000 build/tests/runtime/test_device_backend_properties > "$out/device-backend-properties.log" 2>&1 \
  || status=1
grep -q '"cuda-exact"' "$out/device-backend-properties.log" \
  || { echo "the device backend property did not run on the GPU"; status=1; }

build/examples/train_mlp --backend cuda --checkpoint reentrant --granularity per-layer > "$out/train_mlp_cuda.txt" 2>&1 || status=1
build/examples/train_mlp --backend cpu --checkpoint reentrant --granularity per-layer > "$out/train_mlp_cpu.txt" 2>&1 || status=1
# The transformer, device-resident, must print the CPU's losses to the last digit with the exact
# GEMM (its other layers share their exp, log and erf with the CPU), and train with cuBLASLt.
for backend in cpu cuda-exact cuda; do
  build/examples/train_transformer --backend "$backend" --checkpoint nested --steps 30 \
    > "$out/train_transformer_$backend.txt" 2>&1 || status=1
done
cmp -s "$out/train_transformer_cpu.txt" "$out/train_transformer_cuda-exact.txt" \
  || { echo "train_transformer on cuda-exact differs from the CPU"; status=1; }
build/bench/kernel_bandwidth > "$out/kernel_bandwidth.txt" 2>&1 || status=1
# A device-resident step at 8 x 4096 (the state machine's share), exact GEMM too, and the CPU
# at a size it can do in the time.
build/bench/train_step --backend cuda > "$out/train_step_cuda.txt" 2>&1 || status=1
build/bench/train_step --backend cuda --checkpoint reentrant > "$out/train_step_cuda_reentrant.txt" 2>&1 || status=1
build/bench/train_step --backend cuda-exact --width 1024 --batch 1024 > "$out/train_step_cuda_exact.txt" 2>&1 || status=1
build/bench/train_step --backend cpu --width 512 --batch 512 --steps 3 > "$out/train_step_cpu.txt" 2>&1 || status=1

tail -n 3 "$out/gpu-tests.log"
tail -n 1 "$out/train_mlp_cuda.txt" "$out/train_mlp_cpu.txt" "$out"/train_transformer_*.txt
cat "$out/kernel_bandwidth.txt"
cat "$out/train_step_cuda.txt"
exit $status
