// The two FP8 formats of spec §6 and exact conversion between them and float32. Every other
// kernel quantizes and dequantizes through these three functions, so they fix the rounding,
// saturation and NaN rules for the whole library.
#pragma once

#include <cstdint>

namespace fp8sm::kernels {

// E4M3: 1 sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinity, S.1111.111 is NaN;
//       max 448.
// E5M2: 1 sign, 5 exponent bits (bias 15), 2 mantissa bits; IEEE-like: S.11111.00 is infinity,
//       S.11111.{01,10,11} are NaN; max 57344.
// A value outside the enumeration makes every function below throw std::invalid_argument.
enum class Format : std::uint8_t { E4M3, E5M2 };

const char* format_name(Format format);

// The largest finite value: 448 (E4M3) or 57344 (E5M2).
float fp8_max(Format format);

// float32 -> FP8 code, as TE's saturating cast does it:
// - round to nearest, ties to even (on the code's last mantissa bit), subnormals included;
// - a finite value beyond ±max saturates to ±max, and so does ±infinity: the cast saturates,
//   so E5M2's infinity codes are never produced;
// - NaN gives the format's NaN code with the input's sign (0x7F / 0xFF for both formats);
// - the sign of zero is kept (-0.0f -> 0x80).
// Computed on the float's bit pattern with integer arithmetic: exact, no double rounding.
std::uint8_t to_fp8(float value, Format format);

// FP8 code -> float32, exact for every code (every FP8 value is a float32 value). NaN codes give
// a quiet NaN with the code's sign; E5M2's infinity codes give ±infinity.
float from_fp8(std::uint8_t code, Format format);

}  // namespace fp8sm::kernels
