#include "runtime/mpi_amax_reduction.hpp"

#include <fmt/core.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>

#include "runtime/amax_order.hpp"

namespace fp8sm::runtime {
namespace {

std::string error_text(int status) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(status, text, &length) != MPI_SUCCESS) {
    return fmt::format("MPI error code {}", status);
  }
  return std::string(text, static_cast<std::size_t>(length));
}

std::string communicator_name(MPI_Comm communicator) {
  char text[MPI_MAX_OBJECT_NAME];
  int length = 0;
  if (MPI_Comm_get_name(communicator, text, &length) != MPI_SUCCESS || length == 0) {
    return "unnamed MPI communicator";
  }
  return std::string(text, static_cast<std::size_t>(length));
}

}  // namespace

MpiGroup::MpiGroup(MPI_Comm communicator, std::string name) : name_(std::move(name)) {
  int initialised = 0;
  int finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  // Without MPI the communicator's name cannot be asked for yet.
  const std::string which = name_.empty() ? "MpiGroup" : fmt::format("MpiGroup '{}'", name_);
  if (initialised == 0 || finalised != 0) {
    throw std::runtime_error(fmt::format("{}: MPI is {}; construct MpiGroups between MPI_Init and MPI_Finalize", which,
                                         finalised != 0 ? "finalised already" : "not initialised"));
  }
  if (communicator == MPI_COMM_NULL) {
    throw std::runtime_error(fmt::format("{}: the communicator is MPI_COMM_NULL", which));
  }
  if (name_.empty()) name_ = communicator_name(communicator);
  // Fails under the caller's error handler (by default MPI aborts): ours is not set yet.
  check(MPI_Comm_dup(communicator, &communicator_), "MPI_Comm_dup");
  try {
    check(MPI_Comm_set_errhandler(communicator_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_size(communicator_, &size_), "MPI_Comm_size");
    check(MPI_Comm_rank(communicator_, &rank_), "MPI_Comm_rank");
  } catch (...) {
    MPI_Comm_free(&communicator_);
    throw;
  }
}

MpiGroup::~MpiGroup() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised == 0 && communicator_ != MPI_COMM_NULL) MPI_Comm_free(&communicator_);
}

void MpiGroup::all_reduce_max(std::vector<float>& amaxes) {
  // One MAX gives both the largest count and (negated) the smallest: they differ exactly when
  // some rank gave another count, and then every rank learns it and throws, none waits.
  const auto count = static_cast<long long>(amaxes.size());
  long long extremes[2] = {count, -count};
  check(MPI_Allreduce(MPI_IN_PLACE, extremes, 2, MPI_LONG_LONG, MPI_MAX, communicator_),
        "MPI_Allreduce (amax counts)");
  if (extremes[0] != -extremes[1]) {
    throw std::runtime_error(fmt::format("MpiGroup '{}': the ranks reduce different numbers of amaxes (from {} to {}, "
                                         "this rank {}); every rank must update the same key",
                                         name_, -extremes[1], extremes[0], count));
  }
  if (amaxes.empty()) return;
  // After the count check, so that every rank throws here or none does.
  if (amaxes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw std::runtime_error(
        fmt::format("MpiGroup '{}': {} amaxes are more than one MPI_Allreduce can take", name_, amaxes.size()));
  }

  std::vector<std::int32_t> keys(amaxes.size());
  for (std::size_t i = 0; i < amaxes.size(); ++i) keys[i] = amax_order_key(amaxes[i]);
  check(MPI_Allreduce(MPI_IN_PLACE, keys.data(), static_cast<int>(keys.size()), MPI_INT32_T,
                      MPI_MAX, communicator_),
        "MPI_Allreduce (amaxes)");
  for (std::size_t i = 0; i < amaxes.size(); ++i) amaxes[i] = amax_from_order_key(keys[i]);
}

void MpiGroup::check(int status, const char* call) const {
  if (status != MPI_SUCCESS) {
    throw std::runtime_error(fmt::format("MpiGroup '{}': {} failed: {}", name_, call, error_text(status)));
  }
}

}  // namespace fp8sm::runtime
