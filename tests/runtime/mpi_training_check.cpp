// Data-parallel FP8 training on the runtime with real MPI ranks (ctest runs it under
// mpirun -np 2): every rank trains the same network (same initial weights) on different data,
// with checkpoints, the Context reducing amaxes over an MpiGroup. After every step every rank
// must hold byte-identical amax histories and scales (the weights differ: gradients are not
// all-reduced here, which is not the runtime's business), and the forward and backward update
// counts must be 1 and 1. Exit status 0 when all holds; 1 with a line per mismatch.
#include <fmt/format.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/fp8sm_runtime.hpp"
#include "runtime/mpi_amax_reduction.hpp"

namespace {

using fp8sm::runtime::Matrix;
namespace rt = fp8sm::runtime;

// Every meta's history and scale, forward then backward, module by module.
std::vector<float> meta_bytes(const rt::Context& ctx) {
  std::vector<float> out;
  for (std::size_t m = 0; m < ctx.module_count(); ++m) {
    const rt::ModuleMeta& meta = ctx.meta(static_cast<fp8sm::spec::ModuleId>(m));
    for (const auto* s : {&meta.forward, &meta.backward}) {
      out.insert(out.end(), s->amax_history.begin(), s->amax_history.end());
      out.insert(out.end(), s->scale.begin(), s->scale.end());
    }
  }
  return out;
}

int run(int rank, int size) {
  rt::MpiGroup world;
  rt::Recipe recipe;
  recipe.amax_history_len = 8;
  rt::Context ctx(recipe, rt::make_cpu_backend(), fp8sm::spec::Semantics::Fp8sm, &world);
  std::vector<std::unique_ptr<rt::Linear>> layers;
  for (int i = 0; i < 3; ++i) layers.push_back(std::make_unique<rt::Linear>(ctx, fmt::format("L{}", i), 6, 6, 10u + static_cast<unsigned>(i)));
  std::mt19937_64 random(1000u + static_cast<unsigned>(rank));  // different data on every rank
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  int failures = 0;
  for (int step = 0; step < 10; ++step) {
    Matrix x(4, 6);
    for (float& v : x.values) v = uniform(random) * static_cast<float>(1 + rank * 3);  // other amaxes too
    {
      rt::Autocast fp8(ctx);
      Matrix h = layers[0]->forward(x);
      h = rt::checkpoint(ctx, step % 2 == 0 ? rt::CheckpointMode::Reentrant : rt::CheckpointMode::NonReentrant,
                         [&](const Matrix& in) { return layers[2]->forward(rt::relu(ctx, layers[1]->forward(in))); }, h);
    }
    ctx.backward(Matrix(4, 6, 0.1f * static_cast<float>(rank + 1)));
    const rt::StepCounts counts = ctx.end_step();
    if (counts.forward_updates != 1 || counts.backward_updates != 1) {
      fmt::print(stderr, "rank {} step {}: {}/{} updates, expected 1/1\n", rank, step, counts.forward_updates,
                 counts.backward_updates);
      ++failures;
    }
    const std::vector<float> mine = meta_bytes(ctx);
    std::vector<float> all(mine.size() * static_cast<std::size_t>(size));
    MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, all.data(), static_cast<int>(mine.size()),
                  MPI_FLOAT, MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r) {
      if (std::memcmp(all.data() + static_cast<std::size_t>(r) * mine.size(), mine.data(), mine.size() * sizeof(float)) != 0) {
        fmt::print(stderr, "rank {} step {}: amax histories or scales differ from rank {}'s\n", rank, step, r);
        ++failures;
      }
    }
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int failures = 0;
  if (size < 2) {
    fmt::print(stderr, "mpi_training_check: run it with at least 2 ranks (mpirun -np 2)\n");
    failures = 1;
  } else {
    try {
      failures = run(rank, size);
    } catch (const std::exception& e) {
      fmt::print(stderr, "rank {}: {}\n", rank, e.what());
      failures = 1;
    }
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && total == 0) fmt::print("mpi_training_check: {} ranks, identical scales after every step\n", size);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
