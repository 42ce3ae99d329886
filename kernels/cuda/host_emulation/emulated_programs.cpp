// The kernel sources, unchanged, compiled by the host compiler with cuda_on_host.hpp standing in
// for CUDA C++ (see there; this file is compiled with -ffp-contract=off).
#include "kernels/cuda/host_emulation/emulated_programs.hpp"

#include <cstring>
#include <utility>

#include "kernels/cuda/host_emulation/cuda_on_host.hpp"

namespace fp8sm::kernels::cuda::emulation::sources {
#include "kernels/cuda/cast.cu"
#include "kernels/cuda/cast_transpose.cu"
#include "kernels/cuda/dequantize.cu"
#include "kernels/cuda/elementwise.cu"
#include "kernels/cuda/gemm.cu"
#include "kernels/cuda/layers.cu"
#include "kernels/cuda/scale_update.cu"
}  // namespace fp8sm::kernels::cuda::emulation::sources

namespace fp8sm::kernels::cuda::emulation {

namespace {

// A kernel parameter from its bytes, as the GPU receives it.
template <class T>
T parameter(const void* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

template <class... Parameters, std::size_t... I>
void call(void (*kernel)(Parameters...), void** args, std::index_sequence<I...>) {
  kernel(parameter<Parameters>(args[I])...);
}

template <class... Parameters>
HostKernel host_kernel(void (*kernel)(Parameters...)) {
  return [kernel](void** args) { call(kernel, args, std::index_sequence_for<Parameters...>{}); };
}

}  // namespace

const std::map<std::string, HostKernel>& host_kernels() {
  using namespace sources;
  static const std::map<std::string, HostKernel> kernels = {
      {"fp8sm_cast_f32_e4m3", host_kernel(fp8sm_cast_f32_e4m3)},
      {"fp8sm_cast_f32_e5m2", host_kernel(fp8sm_cast_f32_e5m2)},
      {"fp8sm_cast_bf16_e4m3", host_kernel(fp8sm_cast_bf16_e4m3)},
      {"fp8sm_cast_bf16_e5m2", host_kernel(fp8sm_cast_bf16_e5m2)},
      {"fp8sm_cast_vec_f32_e4m3", host_kernel(fp8sm_cast_vec_f32_e4m3)},
      {"fp8sm_cast_vec_f32_e5m2", host_kernel(fp8sm_cast_vec_f32_e5m2)},
      {"fp8sm_cast_vec_bf16_e4m3", host_kernel(fp8sm_cast_vec_bf16_e4m3)},
      {"fp8sm_cast_vec_bf16_e5m2", host_kernel(fp8sm_cast_vec_bf16_e5m2)},
      {"fp8sm_cast_transpose_f32_e4m3", host_kernel(fp8sm_cast_transpose_f32_e4m3)},
      {"fp8sm_cast_transpose_f32_e5m2", host_kernel(fp8sm_cast_transpose_f32_e5m2)},
      {"fp8sm_cast_transpose_bf16_e4m3", host_kernel(fp8sm_cast_transpose_bf16_e4m3)},
      {"fp8sm_cast_transpose_bf16_e5m2", host_kernel(fp8sm_cast_transpose_bf16_e5m2)},
      {"fp8sm_cast_transpose_vec_f32_e4m3", host_kernel(fp8sm_cast_transpose_vec_f32_e4m3)},
      {"fp8sm_cast_transpose_vec_f32_e5m2", host_kernel(fp8sm_cast_transpose_vec_f32_e5m2)},
      {"fp8sm_cast_transpose_vec_bf16_e4m3", host_kernel(fp8sm_cast_transpose_vec_bf16_e4m3)},
      {"fp8sm_cast_transpose_vec_bf16_e5m2", host_kernel(fp8sm_cast_transpose_vec_bf16_e5m2)},
      {"fp8sm_dequantize_e4m3", host_kernel(fp8sm_dequantize_e4m3)},
      {"fp8sm_dequantize_e5m2", host_kernel(fp8sm_dequantize_e5m2)},
      {"fp8sm_gemm_tn_e4m3_e4m3", host_kernel(fp8sm_gemm_tn_e4m3_e4m3)},
      {"fp8sm_gemm_tn_e4m3_e5m2", host_kernel(fp8sm_gemm_tn_e4m3_e5m2)},
      {"fp8sm_gemm_tn_e5m2_e4m3", host_kernel(fp8sm_gemm_tn_e5m2_e4m3)},
      {"fp8sm_gemm_tn_e5m2_e5m2", host_kernel(fp8sm_gemm_tn_e5m2_e5m2)},
      {"fp8sm_scale_update", host_kernel(fp8sm_scale_update)},
      {"fp8sm_gather_amaxes", host_kernel(fp8sm_gather_amaxes)},
      {"fp8sm_amax_to_order_keys", host_kernel(fp8sm_amax_to_order_keys)},
      {"fp8sm_amax_from_order_keys", host_kernel(fp8sm_amax_from_order_keys)},
      {"fp8sm_gelu_forward", host_kernel(fp8sm_gelu_forward)},
      {"fp8sm_gelu_backward", host_kernel(fp8sm_gelu_backward)},
      {"fp8sm_layer_norm_forward", host_kernel(fp8sm_layer_norm_forward)},
      {"fp8sm_layer_norm_backward_dx", host_kernel(fp8sm_layer_norm_backward_dx)},
      {"fp8sm_layer_norm_backward_params", host_kernel(fp8sm_layer_norm_backward_params)},
      {"fp8sm_attention_forward", host_kernel(fp8sm_attention_forward)},
      {"fp8sm_attention_backward", host_kernel(fp8sm_attention_backward)},
      {"fp8sm_cross_entropy_rows", host_kernel(fp8sm_cross_entropy_rows)},
      {"fp8sm_cross_entropy_sum", host_kernel(fp8sm_cross_entropy_sum)},
      {"fp8sm_cross_entropy_backward", host_kernel(fp8sm_cross_entropy_backward)},
      {"fp8sm_embedding_forward", host_kernel(fp8sm_embedding_forward)},
      {"fp8sm_embedding_backward", host_kernel(fp8sm_embedding_backward)},
      {"fp8sm_adam", host_kernel(fp8sm_adam)},
      {"fp8sm_relu", host_kernel(fp8sm_relu)},
      {"fp8sm_relu_backward", host_kernel(fp8sm_relu_backward)},
      {"fp8sm_add", host_kernel(fp8sm_add)},
      {"fp8sm_sgd", host_kernel(fp8sm_sgd)},
      {"fp8sm_matmul_nt_f32", host_kernel(fp8sm_matmul_nt_f32)},
      {"fp8sm_transpose_f32", host_kernel(fp8sm_transpose_f32)},
  };
  return kernels;
}

}  // namespace fp8sm::kernels::cuda::emulation
