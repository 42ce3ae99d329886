// The NCCL amax reduction against the MPI one, with real ranks on real GPUs (ctest runs it under
// mpirun -np 2): every rank trains the same network on different data twice, on the CUDA backend
// with the exact GEMM, once reducing amaxes over an NcclGroup (on the device, on the backend's
// stream) and once over an MpiGroup (on the host, the reference). After every step both must hold
// byte-identical amax histories and scales, equal on every rank, at 1/1 updates. The groups are
// also compared directly on hand-picked amaxes (-0, NaN of both signs with payloads, infinity).
// Exit status 0 when all holds, 1 with a line per mismatch, 77 (skipped, saying why) where there
// is no GPU for every rank: NCCL takes one GPU a rank.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/backends.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/fp8sm_runtime.hpp"
#include "runtime/mpi_amax_reduction.hpp"
#include "runtime/nccl_amax_reduction.hpp"

namespace {

using fp8sm::runtime::Matrix;
namespace rt = fp8sm::runtime;
constexpr int kSkipped = 77;

std::vector<float> meta_values(const rt::Context& ctx) {
  std::vector<float> out;
  for (std::size_t m = 0; m < ctx.module_count(); ++m) {
    const rt::ModuleMeta meta = ctx.meta(static_cast<fp8sm::spec::ModuleId>(m));
    for (const auto* s : {&meta.forward, &meta.backward}) {
      out.insert(out.end(), s->amax_history.begin(), s->amax_history.end());
      out.insert(out.end(), s->scale.begin(), s->scale.end());
    }
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One training of a few steps with `group`; the metas after each step.
std::vector<std::vector<float>> train(rt::AmaxReductionGroup& group, int rank, int& failures) {
  rt::Recipe recipe;
  recipe.amax_history_len = 8;
  rt::Context ctx(recipe, rt::make_backend("cuda-exact"), fp8sm::spec::Semantics::Fp8sm, &group);
  std::vector<std::unique_ptr<rt::Linear>> layers;
  for (int i = 0; i < 3; ++i) layers.push_back(std::make_unique<rt::Linear>(ctx, fmt::format("L{}", i), 16, 16, 10u + i));
  std::mt19937_64 random(1000u + static_cast<unsigned>(rank));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<std::vector<float>> after;
  for (int step = 0; step < 6; ++step) {
    Matrix x(16, 16);
    for (float& v : x.values) v = uniform(random) * static_cast<float>(1 + rank * 3);
    Matrix y;
    {
      rt::Autocast fp8(ctx);
      y = rt::checkpoint(ctx, rt::CheckpointMode::Reentrant,
                         [&](const Matrix& in) { return layers[2]->forward(rt::relu(ctx, layers[1]->forward(in))); },
                         layers[0]->forward(x));
    }
    ctx.backward(Matrix(16, 16, 0.01f * static_cast<float>(rank + 1)));
    const rt::StepCounts counts = ctx.end_step();
    if (counts.forward_updates != 1 || counts.backward_updates != 1) {
      std::fprintf(stderr, "rank %d, %s, step %d: %d/%d updates\n", rank, group.name().c_str(), step,
                   counts.forward_updates, counts.backward_updates);
      ++failures;
    }
    after.push_back(meta_values(ctx));
  }
  return after;
}

int run(int rank, int size) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    if (rank == 0) std::printf("skipped: no usable GPU (%s)\n", rt::cuda_unavailable_reason().c_str());
    return kSkipped;
  }
  if (devices < size) {
    if (rank == 0) std::printf("skipped: %d ranks need %d GPUs (NCCL takes one a rank), this machine has %d\n", size, size, devices);
    return kSkipped;
  }
  cudaSetDevice(rank);
  rt::NcclGroup::Id id{};
  if (rank == 0) id = rt::NcclGroup::unique_id();
  MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
  rt::NcclGroup nccl(id, size, rank);
  rt::MpiGroup mpi;
  int failures = 0;

  // The groups themselves, on the host.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {-0.0f, rank == 0 ? nan : 1.0f, rank == 1 ? -nan : 0.5f,
                          std::numeric_limits<float>::infinity(), static_cast<float>(rank)};
  std::vector<float> b = a;
  nccl.all_reduce_max(a);
  mpi.all_reduce_max(b);
  if (!same_bits(a, b)) {
    std::fprintf(stderr, "rank %d: NCCL and MPI reduce the hand-picked amaxes differently\n", rank);
    ++failures;
  }

  // Trainings: NCCL on the device against MPI on the host, step by step.
  const auto with_nccl = train(nccl, rank, failures);
  const auto with_mpi = train(mpi, rank, failures);
  for (std::size_t s = 0; s < with_mpi.size(); ++s) {
    if (!same_bits(with_nccl[s], with_mpi[s])) {
      std::fprintf(stderr, "rank %d, step %zu: the metas differ between NCCL and MPI\n", rank, s);
      ++failures;
    }
    std::vector<float> first(with_mpi[s].size());
    if (rank == 0) first = with_mpi[s];
    MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
    if (!same_bits(first, with_mpi[s])) {
      std::fprintf(stderr, "rank %d, step %zu: the metas differ from rank 0's\n", rank, s);
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 1;
  try {
    status = run(rank, size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    status = 1;
  }
  int worst = status;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
