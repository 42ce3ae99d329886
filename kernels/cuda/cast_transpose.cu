// Cast-transpose with amax (kernels/cast.cpp): out = fp8(in * scale) (rows x cols) and its
// transpose out_t (cols x rows), amax := max(amax, max |in|). Both kernels go through a tile in
// shared memory, so both outputs are written with coalesced stores; tiles at the edges are
// partial.
//
// fp8sm_cast_transpose_<input>_<format>: any shape. One block per 32 x 32 tile, 32 x 8
// threads, one element per thread and pass.
// fp8sm_cast_transpose_vec_<input>_<format>: rows and cols multiples of 4, rows of `in`, `out`
// and `out_t` aligned for 4-element accesses (Device::cast_transpose checks). One block per
// 64 x 64 tile, 16 x 16 threads; a thread loads 4 consecutive inputs at once (16 bytes of
// float32, 8 of bf16) and stores 4 codes as one 32-bit word, in `out` and in `out_t`: four times
// the bytes in flight per thread and a quarter of the memory instructions.
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
      const fp8sm_u8 code = fp8sm_cast_value<Format>(x, scale);
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

#define FP8SM_VEC_TILE 64
#define FP8SM_VEC_THREADS 16  // per dimension: 16 x 16 threads, 4 elements each across a row

template <typename In, int Format>
__device__ void fp8sm_cast_transpose_vec(const In* __restrict__ in, unsigned rows, unsigned cols, float scale,
                                         fp8sm_u8* __restrict__ out, fp8sm_u8* __restrict__ out_t, float* amax) {
  // Rows padded by 4 bytes: word-aligned, and the transposed reads spread over the banks.
  __shared__ fp8sm_u32 tile[FP8SM_VEC_TILE][FP8SM_VEC_TILE / 4 + 1];
  typedef typename fp8sm_four<In>::type Four;
  const unsigned tile_row = blockIdx.y * FP8SM_VEC_TILE;
  const unsigned tile_col = blockIdx.x * FP8SM_VEC_TILE;
  const unsigned col = tile_col + 4 * threadIdx.x;  // the first of this thread's 4 columns
  // All four loads first (unrolled; the outputs do not alias the input), then the casts.
  constexpr unsigned kPasses = FP8SM_VEC_TILE / FP8SM_VEC_THREADS;
  Four x[kPasses];
  FP8SM_UNROLL
  for (unsigned pass = 0; pass < kPasses; ++pass) {
    const unsigned row = tile_row + threadIdx.y + pass * FP8SM_VEC_THREADS;
    // cols % 4 == 0: the 4 columns are all in or all out.
    if (row < rows && col < cols) x[pass] = *reinterpret_cast<const Four*>(in + (unsigned long long)row * cols + col);
  }
  int key = 0;
  FP8SM_UNROLL
  for (unsigned pass = 0; pass < kPasses; ++pass) {
    const unsigned r = threadIdx.y + pass * FP8SM_VEC_THREADS;
    const unsigned row = tile_row + r;
    if (row < rows && col < cols) {
      const fp8sm_u32 word = fp8sm_cast_four<Format>(x[pass], scale, key);
      *reinterpret_cast<fp8sm_u32*>(out + (unsigned long long)row * cols + col) = word;
      tile[r][threadIdx.x] = word;
    }
  }
  __syncthreads();
  // out_t's row tile_col + c holds tile column c: this thread stores its 4 entries of tile rows
  // 4 * threadIdx.x .. + 3 (consecutive in out_t) as one word.
  const unsigned t_row0 = 4 * threadIdx.x;  // tile row of the first of the 4
  FP8SM_UNROLL
  for (unsigned pass = 0; pass < kPasses; ++pass) {
    const unsigned c = threadIdx.y + pass * FP8SM_VEC_THREADS;
    if (tile_col + c < cols && tile_row + t_row0 < rows) {  // rows % 4 == 0: all 4 in or all out
      const unsigned shift = 8 * (c % 4);
      fp8sm_u32 word = 0;
      FP8SM_UNROLL
      for (unsigned i = 0; i < 4; ++i) word |= ((tile[t_row0 + i][c / 4] >> shift) & 0xFFu) << (8 * i);
      *reinterpret_cast<fp8sm_u32*>(out_t + (unsigned long long)(tile_col + c) * rows + tile_row + t_row0) = word;
    }
  }
  key = fp8sm_warp_max(key);
  if ((threadIdx.x + threadIdx.y * blockDim.x) % 32 == 0 && key != 0) atomicMax((int*)amax, key);
}

// The entry points: float32 or bf16 input x E4M3 or E5M2, for each kernel.
// The scale is read on the device; scale_inv (may be null) gets 1 / scale.
#define FP8SM_CAST_TRANSPOSE_ENTRY(NAME, KERNEL, IN, FORMAT)                                                     \
  extern "C" __global__ void NAME(const IN* in, unsigned rows, unsigned cols, const float* scale, fp8sm_u8* out, \
                                  fp8sm_u8* out_t, float* amax, float* scale_inv) {                              \
    const float s = *scale;                                                                                      \
    fp8sm_write_scale_inv(s, scale_inv);                                                                         \
    KERNEL<IN, FORMAT>(in, rows, cols, s, out, out_t, amax);                                                     \
  }
FP8SM_ENTRY_POINTS(FP8SM_CAST_TRANSPOSE_ENTRY, fp8sm_cast_transpose, fp8sm_cast_transpose)
FP8SM_ENTRY_POINTS(FP8SM_CAST_TRANSPOSE_ENTRY, fp8sm_cast_transpose_vec, fp8sm_cast_transpose_vec)
