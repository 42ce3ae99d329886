// The amax accumulator of a quantizer slot (spec §6, Cast): "max(row0, max|x|), an atomic max on
// non-negative float bit patterns". The GPU does it with an integer atomicMax on the float's
// bits; the reference orders values the same way, so the two agree bit for bit, NaN included.
#pragma once

namespace fp8sm::kernels {

// Folds |value| into `amax`, comparing bit patterns as signed 32-bit integers:
// - for non-negative floats this is the numeric order, +0 < subnormals < normals < +inf;
// - every NaN's magnitude lies above +inf, so a NaN input wins and, once in, stays (only a
//   NaN with a larger payload replaces it): the NaN reaches the update, which decides;
// - an accumulator with its sign bit set (say -0.0f) is below every |value|.
float amax_fold(float amax, float value);

}  // namespace fp8sm::kernels
