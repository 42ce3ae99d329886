// Cast-transpose with amax (kernels/cast.cpp): out = fp8(in * scale) (rows x cols) and its
// transpose out_t (cols x rows), amax := max(amax, max |in|). One block per 32 x 32 tile
// through shared memory, so both outputs are written with coalesced stores; tiles at the edges
// are partial (any shape works). Block: 32 x 8 threads. Entry points:
// fp8sm_cast_transpose_<input>_<format>.
#include "fp8_device.cuh"

#define FP8SM_TILE 32
#define FP8SM_ROWS_PER_PASS 8

template <typename In, int Format>
__device__ void fp8sm_cast_transpose(const In* in, unsigned rows, unsigned cols, float scale, fp8sm_u8* out,
                                     fp8sm_u8* out_t, float* amax) {
  __shared__ fp8sm_u8 tile[FP8SM_TILE][FP8SM_TILE + 4];
  const unsigned tile_row = blockIdx.y * FP8SM_TILE;
  const unsigned tile_col = blockIdx.x * FP8SM_TILE;
  int key = 0;
  for (unsigned r = threadIdx.y; r < FP8SM_TILE; r += FP8SM_ROWS_PER_PASS) {
    const unsigned row = tile_row + r;
    const unsigned col = tile_col + threadIdx.x;
    if (row < rows && col < cols) {
      const unsigned long long at = (unsigned long long)row * cols + col;
      const float x = fp8sm_widen(in[at]);
      const fp8sm_u8 code = fp8sm_to_fp8<Format>(__fmul_rn(x, scale));
      out[at] = code;
      tile[r][threadIdx.x] = code;
      const int k = fp8sm_amax_key(x);
      key = k > key ? k : key;
    }
  }
  __syncthreads();
  for (unsigned c = threadIdx.y; c < FP8SM_TILE; c += FP8SM_ROWS_PER_PASS) {
    const unsigned col = tile_col + c;               // a row of out_t
    const unsigned row = tile_row + threadIdx.x;     // a column of out_t
    if (col < cols && row < rows) out_t[(unsigned long long)col * rows + row] = tile[threadIdx.x][c];
  }
  key = fp8sm_warp_max(key);
  if ((threadIdx.x & 31) == 0 && key != 0) atomicMax((int*)amax, key);
}

extern "C" __global__ void fp8sm_cast_transpose_f32_e4m3(const float* in, unsigned rows, unsigned cols, float scale,
                                                         fp8sm_u8* out, fp8sm_u8* out_t, float* amax) {
  fp8sm_cast_transpose<float, FP8SM_E4M3>(in, rows, cols, scale, out, out_t, amax);
}
extern "C" __global__ void fp8sm_cast_transpose_f32_e5m2(const float* in, unsigned rows, unsigned cols, float scale,
                                                         fp8sm_u8* out, fp8sm_u8* out_t, float* amax) {
  fp8sm_cast_transpose<float, FP8SM_E5M2>(in, rows, cols, scale, out, out_t, amax);
}
extern "C" __global__ void fp8sm_cast_transpose_bf16_e4m3(const fp8sm_u16* in, unsigned rows, unsigned cols, float scale,
                                                          fp8sm_u8* out, fp8sm_u8* out_t, float* amax) {
  fp8sm_cast_transpose<fp8sm_u16, FP8SM_E4M3>(in, rows, cols, scale, out, out_t, amax);
}
extern "C" __global__ void fp8sm_cast_transpose_bf16_e5m2(const fp8sm_u16* in, unsigned rows, unsigned cols, float scale,
                                                          fp8sm_u8* out, fp8sm_u8* out_t, float* amax) {
  fp8sm_cast_transpose<fp8sm_u16, FP8SM_E5M2>(in, rows, cols, scale, out, out_t, amax);
}
