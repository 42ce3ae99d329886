#include "kernels/cuda/device.hpp"

#include <fmt/core.h>

#include <cstdint>
#include <memory>
#include <stdexcept>

#include "kernels/cuda/device_buffer.hpp"

namespace fp8sm::kernels::cuda {

namespace {

const char* suffix(Format format) { return format == Format::E4M3 ? "e4m3" : "e5m2"; }

// Element-wise kernels: 256 threads a block, grid-stride past 2^20 blocks.
LaunchShape elementwise(std::size_t count) {
  constexpr unsigned kThreads = 256;
  constexpr std::size_t kMaxBlocks = 65535u * 16u;
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  LaunchShape shape;
  shape.grid[0] = static_cast<unsigned>(blocks == 0 ? 1 : (blocks < kMaxBlocks ? blocks : kMaxBlocks));
  shape.block[0] = kThreads;
  return shape;
}

// A thread per item, for the kernels that are not grid-stride (one index each):
// std::invalid_argument where the items would pass the grid elementwise() launches.
LaunchShape thread_each(std::size_t count, const char* what) {
  constexpr std::size_t kMaxThreads = 65535u * 16u * 256u;
  if (count > kMaxThreads) throw std::invalid_argument(fmt::format("{}: {} items, more than one launch holds", what, count));
  return elementwise(count);
}

bool aligned(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

}  // namespace

const std::vector<std::pair<std::string, std::vector<std::string>>>& Device::entry_points() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> entries = {
      {"cast.cu",
       {"fp8sm_cast_f32_e4m3", "fp8sm_cast_f32_e5m2", "fp8sm_cast_bf16_e4m3", "fp8sm_cast_bf16_e5m2",
        "fp8sm_cast_vec_f32_e4m3", "fp8sm_cast_vec_f32_e5m2", "fp8sm_cast_vec_bf16_e4m3", "fp8sm_cast_vec_bf16_e5m2"}},
      {"cast_transpose.cu",
       {"fp8sm_cast_transpose_f32_e4m3", "fp8sm_cast_transpose_f32_e5m2", "fp8sm_cast_transpose_bf16_e4m3",
        "fp8sm_cast_transpose_bf16_e5m2", "fp8sm_cast_transpose_vec_f32_e4m3", "fp8sm_cast_transpose_vec_f32_e5m2",
        "fp8sm_cast_transpose_vec_bf16_e4m3", "fp8sm_cast_transpose_vec_bf16_e5m2"}},
      {"dequantize.cu", {"fp8sm_dequantize_e4m3", "fp8sm_dequantize_e5m2"}},
      {"gemm.cu",
       {"fp8sm_gemm_tn_e4m3_e4m3", "fp8sm_gemm_tn_e4m3_e5m2", "fp8sm_gemm_tn_e5m2_e4m3", "fp8sm_gemm_tn_e5m2_e5m2"}},
      {"scale_update.cu",
       {"fp8sm_scale_update", "fp8sm_gather_amaxes", "fp8sm_amax_to_order_keys", "fp8sm_amax_from_order_keys"}},
      {"elementwise.cu",
       {"fp8sm_relu", "fp8sm_relu_backward", "fp8sm_add", "fp8sm_sgd", "fp8sm_matmul_nt_f32", "fp8sm_transpose_f32"}},
      {"layers.cu",
       {"fp8sm_gelu_forward", "fp8sm_gelu_backward", "fp8sm_layer_norm_forward", "fp8sm_layer_norm_backward_dx",
        "fp8sm_layer_norm_backward_params", "fp8sm_attention_forward", "fp8sm_attention_backward",
        "fp8sm_cross_entropy_rows", "fp8sm_cross_entropy_sum", "fp8sm_cross_entropy_backward",
        "fp8sm_embedding_forward", "fp8sm_embedding_backward", "fp8sm_adam"}},
  };
  return entries;
}

void Device::check_stream(void* stream, const char* what) const {
  if (has_required_stream_ && stream != required_stream_) {
    throw std::logic_error(fmt::format("{}: {} issued on stream {} where this device's work goes on stream {}", name(),
                                       what, stream, required_stream_));
  }
}

void Device::launch_on(const std::string& entry, const LaunchShape& shape, void** args, void* stream) const {
  check_stream(stream, entry.c_str());
  launch(entry, shape, args, stream);
}

void Device::synchronize(void* stream) {
  check_stream(stream, "synchronize");
  ++traffic_.synchronizations;
  do_synchronize(stream);
}

void* Device::allocate(std::size_t bytes, void* stream) {
  check_stream(stream, "allocate");
  return do_allocate(bytes, stream);
}

void Device::release(void* memory, void* stream) noexcept {
  // Never throws: a release on another stream (a buffer outliving the requirement) still frees.
  do_release(memory, stream);
}

void Device::upload(void* device, const void* host, std::size_t bytes, void* stream) {
  check_stream(stream, "upload");
  ++traffic_.uploads;
  traffic_.upload_bytes += bytes;
  do_upload(device, host, bytes, stream);
}

void Device::download(void* host, const void* device, std::size_t bytes, void* stream) {
  check_stream(stream, "download");
  ++traffic_.downloads;
  traffic_.download_bytes += bytes;
  ++traffic_.synchronizations;
  do_download(host, device, bytes, stream);
}

void Device::copy(void* to, const void* from, std::size_t bytes, void* stream) {
  check_stream(stream, "copy");
  ++traffic_.device_copies;
  if (bytes != 0) do_copy(to, from, bytes, stream);
}

void Device::zero(void* device, std::size_t bytes, void* stream) {
  check_stream(stream, "zero");
  if (bytes != 0) do_zero(device, bytes, stream);
}

bool Device::takes_vectorized_cast(const void* in, bool bf16, std::size_t count, const std::uint8_t* out) const {
  return vectorized_ && count % 4 == 0 && aligned(in, bf16 ? 8 : 16) && aligned(out, 4);
}

void Device::cast(const void* in, bool bf16, std::size_t count, const float* scale, Format format, std::uint8_t* out,
                  float* amax, float* scale_inv, void* stream) const {
  const char* input = bf16 ? "bf16" : "f32";
  unsigned long long n = count;
  void* args[] = {&in, &n, &scale, &out, &amax, &scale_inv};
  // An empty cast still writes scale_inv (one block, no values).
  if (takes_vectorized_cast(in, bf16, count, out)) {
    // A thread per 4 values.
    launch_on(fmt::format("fp8sm_cast_vec_{}_{}", input, suffix(format)), elementwise(count / 4), args, stream);
  } else {
    launch_on(fmt::format("fp8sm_cast_{}_{}", input, suffix(format)), elementwise(count), args, stream);
  }
}

bool Device::takes_vectorized_cast_transpose(const void* in, bool bf16, std::size_t rows, std::size_t cols,
                                             const std::uint8_t* out, const std::uint8_t* out_t) const {
  // Every row of `in` starts at a multiple of 4 elements, of `out` / `out_t` at a 4-byte word.
  return vectorized_ && rows % 4 == 0 && cols % 4 == 0 && rows <= 65535u * 64u && cols <= 0xFFFFFFFFu &&
         aligned(in, bf16 ? 8 : 16) && aligned(out, 4) && aligned(out_t, 4);
}

void Device::cast_transpose(const void* in, bool bf16, std::size_t rows, std::size_t cols, const float* scale,
                            Format format, std::uint8_t* out, std::uint8_t* out_t, float* amax, float* scale_inv,
                            void* stream) const {
  if (rows == 0 || cols == 0) {
    cast(in, bf16, 0, scale, format, out, amax, scale_inv, stream);  // scale_inv only
    return;
  }
  const bool vectorized = takes_vectorized_cast_transpose(in, bf16, rows, cols, out, out_t);
  // grid.y is at most 65535 tiles of 64 (vectorized) or 32 rows.
  if ((!vectorized && rows > 65535u * 32u) || cols > 0xFFFFFFFFu) {
    throw std::invalid_argument("cast_transpose: more than 65535 x 32 rows (65535 x 64 where rows and columns are "
                                "multiples of 4) or 2^32 columns");
  }
  auto r = static_cast<unsigned>(rows);
  auto c = static_cast<unsigned>(cols);
  void* args[] = {&in, &r, &c, &scale, &out, &out_t, &amax, &scale_inv};
  const char* input = bf16 ? "bf16" : "f32";
  LaunchShape shape;
  if (vectorized) {
    // One block per 64 x 64 tile, 16 x 16 threads (cast_transpose.cu).
    shape.grid[0] = (c + 63) / 64;
    shape.grid[1] = (r + 63) / 64;
    shape.block[0] = 16;
    shape.block[1] = 16;
    launch_on(fmt::format("fp8sm_cast_transpose_vec_{}_{}", input, suffix(format)), shape, args, stream);
  } else {
    // One block per 32 x 32 tile, 32 x 8 threads.
    shape.grid[0] = (c + 31) / 32;
    shape.grid[1] = (r + 31) / 32;
    shape.block[0] = 32;
    shape.block[1] = 8;
    launch_on(fmt::format("fp8sm_cast_transpose_{}_{}", input, suffix(format)), shape, args, stream);
  }
}

void Device::dequantize(const std::uint8_t* in, std::size_t count, Format format, float scale_inv, float* out,
                        void* stream) const {
  if (count == 0) return;
  unsigned long long n = count;
  void* args[] = {&in, &n, &scale_inv, &out};
  launch_on(fmt::format("fp8sm_dequantize_{}", suffix(format)), elementwise(count), args, stream);
}

void Device::gemm_tn_reference(const std::uint8_t* a, Format a_format, const float* a_scale_inv,
                               const std::uint8_t* b, Format b_format, const float* b_scale_inv, std::size_t m,
                               std::size_t n, std::size_t k, float* c, void* stream) const {
  if (m == 0 || n == 0) return;
  // One thread per output in 16 x 16 blocks (gemm.cu); grid.y is at most 65535.
  if (m > 65535u * 16u || n > 0xFFFFFFFFu || k > 0xFFFFFFFFu) {
    throw std::invalid_argument("gemm_tn_reference: more than 65535 x 16 rows or 2^32 columns");
  }
  auto mm = static_cast<unsigned>(m);
  auto nn = static_cast<unsigned>(n);
  auto kk = static_cast<unsigned>(k);
  void* args[] = {&a, &b, &mm, &nn, &kk, &a_scale_inv, &b_scale_inv, &c};
  LaunchShape shape;
  shape.grid[0] = (nn + 15) / 16;
  shape.grid[1] = (mm + 15) / 16;
  shape.block[0] = 16;
  shape.block[1] = 16;
  launch_on(fmt::format("fp8sm_gemm_tn_{}_{}", suffix(a_format), suffix(b_format)), shape, args, stream);
}

void Device::relu(const float* x, std::size_t count, float* y, void* stream) const {
  if (count == 0) return;
  unsigned long long n = count;
  void* args[] = {&x, &n, &y};
  launch_on("fp8sm_relu", elementwise(count), args, stream);
}

void Device::relu_backward(const float* x, const float* dy, std::size_t count, float* dx, void* stream) const {
  if (count == 0) return;
  unsigned long long n = count;
  void* args[] = {&x, &dy, &n, &dx};
  launch_on("fp8sm_relu_backward", elementwise(count), args, stream);
}

void Device::add(const float* a, const float* b, std::size_t count, float* out, void* stream) const {
  if (count == 0) return;
  unsigned long long n = count;
  void* args[] = {&a, &b, &n, &out};
  launch_on("fp8sm_add", elementwise(count), args, stream);
}

void Device::sgd(float* w, const float* g, float rate, std::size_t count, void* stream) const {
  if (count == 0) return;
  unsigned long long n = count;
  void* args[] = {&w, &g, &rate, &n};
  launch_on("fp8sm_sgd", elementwise(count), args, stream);
}

void Device::matmul_nt(const float* a, const float* b, std::size_t m, std::size_t n, std::size_t k, float* c,
                       void* stream) const {
  if (m == 0 || n == 0) return;
  if (m > 65535u * 16u || n > 0xFFFFFFFFu || k > 0xFFFFFFFFu) {
    throw std::invalid_argument("matmul_nt: more than 65535 x 16 rows or 2^32 columns");
  }
  auto mm = static_cast<unsigned>(m);
  auto nn = static_cast<unsigned>(n);
  auto kk = static_cast<unsigned>(k);
  void* args[] = {&a, &b, &mm, &nn, &kk, &c};
  LaunchShape shape;  // one thread per output in 16 x 16 blocks, as the FP8 reference GEMM
  shape.grid[0] = (nn + 15) / 16;
  shape.grid[1] = (mm + 15) / 16;
  shape.block[0] = 16;
  shape.block[1] = 16;
  launch_on("fp8sm_matmul_nt_f32", shape, args, stream);
}

void Device::transpose(const float* in, std::size_t rows, std::size_t cols, float* out, void* stream) const {
  if (rows == 0 || cols == 0) return;
  if (rows > 0xFFFFFFFFu || cols > 0xFFFFFFFFu) throw std::invalid_argument("transpose: 2^32 rows or columns");
  auto r = static_cast<unsigned>(rows);
  auto c = static_cast<unsigned>(cols);
  unsigned long long n = std::uint64_t{rows} * cols;
  void* args[] = {&in, &r, &c, &out};
  launch_on("fp8sm_transpose_f32", elementwise(n), args, stream);
}

namespace {

// A layer's sizes as the kernels take them.
unsigned narrow(std::size_t value, const char* what) {
  if (value > 0xFFFFFFFFu) throw std::invalid_argument(fmt::format("{}: {} is 2^32 or more", what, value));
  return static_cast<unsigned>(value);
}

}  // namespace

void Device::gelu(const float* x, std::size_t count, float* y, void* stream) const {
  if (count == 0) return;
  unsigned long long n = count;
  void* args[] = {&x, &n, &y};
  launch_on("fp8sm_gelu_forward", thread_each(count, "fp8sm_gelu_forward"), args, stream);
}

void Device::gelu_backward(const float* x, const float* dy, std::size_t count, float* dx, void* stream) const {
  if (count == 0) return;
  unsigned long long n = count;
  void* args[] = {&x, &dy, &n, &dx};
  launch_on("fp8sm_gelu_backward", thread_each(count, "fp8sm_gelu_backward"), args, stream);
}

void Device::layer_norm(const float* x, std::size_t rows, std::size_t cols, const float* gamma, const float* beta,
                        float eps, float* y, float* mean, float* rstd, void* stream) const {
  if (rows == 0) return;
  unsigned r = narrow(rows, "layer_norm rows");
  unsigned c = narrow(cols, "layer_norm cols");
  void* args[] = {&x, &r, &c, &gamma, &beta, &eps, &y, &mean, &rstd};
  launch_on("fp8sm_layer_norm_forward", thread_each(rows, "fp8sm_layer_norm_forward"), args, stream);
}

void Device::layer_norm_backward(const float* x, const float* dy, std::size_t rows, std::size_t cols,
                                 const float* gamma, const float* mean, const float* rstd, float* dx, float* dgamma,
                                 float* dbeta, void* stream) const {
  if (rows == 0 || cols == 0) return;
  unsigned r = narrow(rows, "layer_norm rows");
  unsigned c = narrow(cols, "layer_norm cols");
  void* dx_args[] = {&x, &dy, &r, &c, &gamma, &mean, &rstd, &dx};
  launch_on("fp8sm_layer_norm_backward_dx", thread_each(rows, "fp8sm_layer_norm_backward_dx"), dx_args, stream);
  void* param_args[] = {&x, &dy, &r, &c, &mean, &rstd, &dgamma, &dbeta};
  launch_on("fp8sm_layer_norm_backward_params", thread_each(cols, "fp8sm_layer_norm_backward_params"), param_args, stream);
}

void Device::causal_attention(const float* qkv, std::size_t sequences, std::size_t length, std::size_t width,
                              float* out, float* probabilities, void* stream) const {
  if (sequences == 0 || length == 0) return;
  unsigned s = narrow(sequences, "attention sequences");
  unsigned l = narrow(length, "attention length");
  unsigned w = narrow(width, "attention width");
  void* args[] = {&qkv, &s, &l, &w, &out, &probabilities};
  launch_on("fp8sm_attention_forward", thread_each(std::uint64_t{sequences} * length, "fp8sm_attention_forward"), args, stream);
}

void Device::causal_attention_backward(const float* qkv, const float* probabilities, const float* dout,
                                       std::size_t sequences, std::size_t length, std::size_t width, float* dqkv,
                                       float* scratch, void* stream) const {
  if (sequences == 0 || length == 0) return;
  unsigned s = narrow(sequences, "attention sequences");
  unsigned l = narrow(length, "attention length");
  unsigned w = narrow(width, "attention width");
  void* args[] = {&qkv, &probabilities, &dout, &s, &l, &w, &dqkv, &scratch};
  launch_on("fp8sm_attention_backward", thread_each(sequences, "fp8sm_attention_backward"), args, stream);
}

void Device::cross_entropy(const float* logits, std::size_t rows, std::size_t cols, const int* targets,
                           std::size_t counted, float* probabilities, float* terms, float* loss, void* stream) const {
  unsigned r = narrow(rows, "cross_entropy rows");
  unsigned c = narrow(cols, "cross_entropy cols");
  unsigned n = narrow(counted, "cross_entropy rows");
  if (rows != 0) {
    void* row_args[] = {&logits, &r, &c, &targets, &probabilities, &terms};
    launch_on("fp8sm_cross_entropy_rows", thread_each(rows, "fp8sm_cross_entropy_rows"), row_args, stream);
  }
  void* sum_args[] = {&terms, &targets, &r, &n, &loss};
  launch_on("fp8sm_cross_entropy_sum", thread_each(1, "fp8sm_cross_entropy_sum"), sum_args, stream);
}

void Device::cross_entropy_backward(const float* probabilities, std::size_t rows, std::size_t cols,
                                    const int* targets, std::size_t counted, const float* dloss, float* dlogits,
                                    void* stream) const {
  if (rows == 0 || cols == 0) return;
  unsigned r = narrow(rows, "cross_entropy rows");
  unsigned c = narrow(cols, "cross_entropy cols");
  unsigned n = narrow(counted, "cross_entropy rows");
  void* args[] = {&probabilities, &r, &c, &targets, &n, &dloss, &dlogits};
  launch_on("fp8sm_cross_entropy_backward", thread_each(std::uint64_t{rows} * cols, "fp8sm_cross_entropy_backward"), args, stream);
}

void Device::embedding(const float* table, const int* tokens, std::size_t rows, std::size_t width, float* out,
                       void* stream) const {
  if (rows == 0 || width == 0) return;
  unsigned r = narrow(rows, "embedding rows");
  unsigned w = narrow(width, "embedding width");
  void* args[] = {&table, &tokens, &r, &w, &out};
  launch_on("fp8sm_embedding_forward", thread_each(std::uint64_t{rows} * width, "fp8sm_embedding_forward"), args, stream);
}

void Device::embedding_backward(const float* dy, const int* tokens, std::size_t rows, std::size_t width,
                                float* table_grad, void* stream) const {
  if (rows == 0 || width == 0) return;
  unsigned r = narrow(rows, "embedding rows");
  unsigned w = narrow(width, "embedding width");
  void* args[] = {&dy, &tokens, &r, &w, &table_grad};
  launch_on("fp8sm_embedding_backward", thread_each(width, "fp8sm_embedding_backward"), args, stream);
}

void Device::adam(float* w, const float* g, float* m, float* v, std::size_t count, const AdamConstants& k,
                  void* stream) const {
  if (count == 0) return;
  unsigned long long n = count;
  float beta1 = k.beta1, one_minus_beta1 = k.one_minus_beta1, beta2 = k.beta2, one_minus_beta2 = k.one_minus_beta2;
  float rate = k.rate, correction1 = k.correction1, correction2 = k.correction2, epsilon = k.epsilon;
  void* args[] = {&w, &g, &m, &v, &n, &beta1, &one_minus_beta1, &beta2, &one_minus_beta2, &rate, &correction1,
                  &correction2, &epsilon};
  launch_on("fp8sm_adam", thread_each(count, "fp8sm_adam"), args, stream);
}

void Device::scale_update(float* const* histories, float* const* scales, const float* reduced,
                          const unsigned* slot_begin, unsigned tensors, unsigned total_slots, unsigned history_length,
                          const ScaleUpdateRecipe& recipe, void* stream) const {
  if (total_slots == 0) return;
  // The same float32 constants as the CPU update.
  UpdateConstants constants = update_constants(recipe);
  int most_recent = recipe.algo == AmaxComputeAlgo::MostRecent ? 1 : 0;
  int unfused = recipe.path == UpdatePath::Unfused ? 1 : 0;
  void* args[] = {&histories, &scales, &reduced, &slot_begin, &tensors, &history_length,
                  &constants.fp8_max, &constants.scaled_max, &constants.margin_divisor, &most_recent, &unfused};
  // One warp per slot (scale_update.cu), 8 warps a block.
  LaunchShape shape;
  shape.grid[0] = static_cast<unsigned>((std::uint64_t{total_slots} * 32 + 255) / 256);
  shape.block[0] = 256;
  launch_on("fp8sm_scale_update", shape, args, stream);
}

void Device::gather_amaxes(float* const* histories, const unsigned* slot_begin, unsigned tensors,
                           unsigned total_slots, float* amaxes, void* stream) const {
  if (total_slots == 0) return;
  void* args[] = {&histories, &slot_begin, &tensors, &amaxes};
  launch_on("fp8sm_gather_amaxes", thread_each(total_slots, "fp8sm_gather_amaxes"), args, stream);
}

void Device::amax_to_order_keys(float* amaxes, std::size_t count, void* stream) const {
  if (count == 0) return;
  if (count > 0xFFFFFFFFu) throw std::invalid_argument("amax_to_order_keys: 2^32 amaxes");
  auto n = static_cast<unsigned>(count);
  void* args[] = {&amaxes, &n};
  launch_on("fp8sm_amax_to_order_keys", thread_each(count, "fp8sm_amax_to_order_keys"), args, stream);
}

void Device::amax_from_order_keys(float* keys, std::size_t count, void* stream) const {
  if (count == 0) return;
  if (count > 0xFFFFFFFFu) throw std::invalid_argument("amax_from_order_keys: 2^32 keys");
  auto n = static_cast<unsigned>(count);
  void* args[] = {&keys, &n};
  launch_on("fp8sm_amax_from_order_keys", thread_each(count, "fp8sm_amax_from_order_keys"), args, stream);
}

void Device::update_scales(const std::vector<ScalingMeta*>& metas, const std::vector<float>& reduced,
                           const ScaleUpdateRecipe& recipe) {
  if (metas.empty()) return;
  std::size_t total = 0;
  for (const ScalingMeta* m : metas) {
    if (m == nullptr) throw std::invalid_argument("Device::update_scales: a null meta");
    if (m->history_length != metas.front()->history_length) {
      throw std::invalid_argument("Device::update_scales: the metas of one key must share one amax history length");
    }
    total += m->slots();
  }
  if (reduced.size() != total) {
    throw std::invalid_argument(
        fmt::format("Device::update_scales: {} reduced amaxes for {} slots", reduced.size(), total));
  }
  std::vector<std::unique_ptr<DeviceBuffer<float>>> histories, scales;
  std::vector<float*> history_pointers, scale_pointers;
  std::vector<unsigned> slot_begin = {0};
  for (const ScalingMeta* m : metas) {
    histories.push_back(std::make_unique<DeviceBuffer<float>>(*this, m->amax_history));
    scales.push_back(std::make_unique<DeviceBuffer<float>>(*this, m->scale));
    history_pointers.push_back(histories.back()->get());
    scale_pointers.push_back(scales.back()->get());
    slot_begin.push_back(slot_begin.back() + static_cast<unsigned>(m->slots()));
  }
  DeviceBuffer<float*> d_histories(*this, history_pointers), d_scales(*this, scale_pointers);
  DeviceBuffer<float> d_reduced(*this, reduced);
  DeviceBuffer<unsigned> d_begin(*this, slot_begin);
  scale_update(d_histories.get(), d_scales.get(), d_reduced.get(), d_begin.get(), static_cast<unsigned>(metas.size()),
               slot_begin.back(), static_cast<unsigned>(metas.front()->history_length), recipe);
  for (std::size_t t = 0; t < metas.size(); ++t) {
    histories[t]->download(metas[t]->amax_history.data(), metas[t]->amax_history.size());
    scales[t]->download(metas[t]->scale.data(), metas[t]->scale.size());
  }
}

}  // namespace fp8sm::kernels::cuda
