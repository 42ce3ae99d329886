// The order in which an amax all-reduce takes its maximum (spec §6, Update of one registry key,
// step 2). A cast folds |x| into its amax by comparing float bit patterns as signed 32-bit
// integers (kernels/amax.hpp), so a NaN beats +inf there; the all-reduce across ranks has to
// take the maximum in the same order, or a NaN amax on one rank would be lost, or kept on some
// ranks only, and the ranks' histories would drift apart. Every AmaxReductionGroup reduces in
// this order.
//
// The key of an amax is a signed 32-bit integer whose order is the order wanted:
// - +0 and every positive float, +inf included: its bit pattern. This is all a cast ever puts in
//   row 0, and for it the order is amax_fold's exactly, so reducing the ranks' amaxes gives
//   what one process folding every rank's inputs would hold, bit for bit.
// - NaN of either sign: the bit pattern with the sign cleared, the |NaN| amax_fold would have
//   made of it. That lies above +inf, so a NaN on any rank wins; between NaNs the larger
//   payload wins, as in amax_fold. A NaN comes back with its sign cleared.
// - -0 and negative floats (never written by a cast, but a row 0 could hold them): below +0,
//   in numeric order, so max(-0, +0) is +0, and every rank holding -0 gives -0 back (a group
//   whose ranks all agree returns their value unchanged).
// So the maximum of keys is one integer MAX per element: what MPI_MAX over MPI_INT32_T (or
// ncclMax over ncclInt32) computes, with no special case for NaN inside the reduction.
#pragma once

#include <cstdint>

namespace fp8sm::runtime {

std::int32_t amax_order_key(float amax);

// The inverse of amax_order_key on its image. A key no float maps to (below -inf's key)
// throws std::invalid_argument.
float amax_from_order_key(std::int32_t key);

// The larger of two amaxes in this order: what an all-reduce MAX does for each pair of ranks.
float amax_order_max(float a, float b);

}  // namespace fp8sm::runtime
