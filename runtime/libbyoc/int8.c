/* The int8 products of ccompiler's quantized conv2d and dense kernels
 * (byoc.backends.ccompiler_int8): int32 sums of unsigned data bytes times
 * signed weight bytes, the weight packed at compile time (byoc_runtime.h).
 *
 * With AVX-512 VNNI, output channels are in the vector lanes: each step
 * broadcasts 4 data bytes of a row and `vpdpbusd` adds their products with
 * 16 channels' 4 weight bytes (one 64-byte vector of the packed weight) to
 * 16 int32 sums. A register block is 6 rows times 4 vectors (64 channels):
 * 24 accumulators and 4 weight vectors of AVX-512's 32 registers. The
 * generated dot products along k this replaces needed a horizontal sum per
 * output and ran 1.3 to 1.8 times slower.
 *
 * Elsewhere (no VNNI, or $BYOC_RT_INT8_PORTABLE set to anything but 0 when
 * the first product runs) a portable loop over the same packed weight gives
 * the same sums: they are exact in int32 either way.
 */
#include "byoc_runtime.h"
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define INT8_VNNI 1
#else
#define INT8_VNNI 0
#endif

#define INT8_LANES 16 /* output channels per packed block */
#define INT8_GROUP 4  /* bytes of k per lane and step */
#define INT8_MR 6     /* rows per register block */
#define INT8_NV 4     /* packed blocks (vectors) per register block */

/* Bytes [0, bytes) of p (1 to 4) as the low bytes of an int32, zeros above. */
static inline int32_t data_group(const uint8_t *p, int64_t bytes) {
  if (bytes == INT8_GROUP) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
  }
  uint32_t v = p[0];
  if (bytes > 1)
    v |= (uint32_t)p[1] << 8;
  if (bytes > 2)
    v |= (uint32_t)p[2] << 16;
  return (int32_t)v;
}

typedef struct int8_job {
  int64_t units, depth, groups, stride, row_step, unit_step;
  const uint8_t *data;
  const int8_t *weight;
  int32_t *tile;
} int8_job;

/* sum[r][l] for block `block` of 16 channels and `lanes` of them, into the tile. */
static inline void put(const int8_job *j, int64_t row, int64_t block, int lanes,
                       const int32_t *sums) {
  int32_t *out = j->tile + row * j->row_step + block * INT8_LANES * j->unit_step;
  if (j->unit_step == 1) {
    memcpy(out, sums, (size_t)lanes * sizeof *sums);
    return;
  }
  for (int l = 0; l < lanes; l++)
    out[l * j->unit_step] = sums[l];
}

#define PORTABLE_MR 4 /* rows sharing each widened weight vector */

typedef int32_t lanes32 __attribute__((vector_size(4 * INT8_LANES)));
typedef uint32_t ulanes32 __attribute__((vector_size(4 * INT8_LANES)));

/* Without VNNI: a group's 16 lanes of 4 weight bytes read as 16 int32s, each
 * byte b sign-extended by two shifts and multiplied by byte b of PORTABLE_MR
 * rows: vector code on any target (GCC's vector extensions). */
static void portable_products(const int8_job *j, int64_t rows) {
  int64_t blocks = ceil_div(j->units, INT8_LANES);
  for (int64_t nb = 0; nb < blocks; nb++) {
    const int8_t *w = j->weight + nb * j->groups * INT8_LANES * INT8_GROUP;
    int lanes = (int)min64(INT8_LANES, j->units - nb * INT8_LANES);
    for (int64_t row = 0; row < rows; row += PORTABLE_MR) {
      int mr = (int)min64(PORTABLE_MR, rows - row);
      lanes32 sums[PORTABLE_MR] = {{0}};
      for (int64_t g = 0; g < j->groups; g++) {
        int64_t bytes = min64(INT8_GROUP, j->depth - g * INT8_GROUP);
        uint32_t x[PORTABLE_MR] = {0};
        for (int r = 0; r < mr; r++)
          x[r] = (uint32_t)data_group(j->data + (row + r) * j->stride + g * INT8_GROUP, bytes);
        ulanes32 packed; /* shifted left unsigned: no signed overflow */
        memcpy(&packed, w + g * INT8_LANES * INT8_GROUP, sizeof packed);
#pragma GCC unroll 4
        for (int b = 0; b < INT8_GROUP; b++) {
          lanes32 wide = (lanes32)(packed << (24 - 8 * b)) >> 24;
#pragma GCC unroll 4
          for (int r = 0; r < PORTABLE_MR; r++)
            sums[r] += (int32_t)((x[r] >> (8 * b)) & 0xffu) * wide;
        }
      }
      for (int r = 0; r < mr; r++) {
        int32_t out[INT8_LANES];
        memcpy(out, &sums[r], sizeof out);
        put(j, row + r, nb, lanes, out);
      }
    }
  }
}

#if INT8_VNNI
/* acc += the products of d's unsigned bytes and w's signed bytes, 4 to a
 * lane (vpdpbusd), in place. Not _mm512_dpbusd_epi32 on an array of
 * accumulators: GCC 12 copies each accumulator to another register before
 * every one and, with 24 of them, spills them inside the loop (half speed). */
#define DPBUSD(acc, d, w) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(d), "v"(w))

/* The register block's 6 x 4 accumulators by name (r, v); those of rows >= mr
 * or blocks >= nv (enum constants of the function) are never used. */
#define EACH_V(M, r) M(r, 0) M(r, 1) M(r, 2) M(r, 3)
#define EACH_RV(M) EACH_V(M, 0) EACH_V(M, 1) EACH_V(M, 2) EACH_V(M, 3) EACH_V(M, 4) EACH_V(M, 5)
#define EACH_R(M) M(0) M(1) M(2) M(3) M(4) M(5)
#define EACH_W(M) M(0) M(1) M(2) M(3)

#define ZERO(r, v) __m512i acc##r##v = _mm512_setzero_si512();
#define LOAD_W(v)                                                                       \
  const __m512i w##v = v < nv ? _mm512_loadu_si512(wk + v * block_bytes) : _mm512_setzero_si512();
#define BROADCAST(r)                                                                    \
  const __m512i d##r = r < mr ? _mm512_set1_epi32(data_group(x + r * j->stride + k, bytes)) \
                              : _mm512_setzero_si512();
#define PRODUCT(r, v)                                                                   \
  if (r < mr && v < nv)                                                                 \
    DPBUSD(acc##r##v, d##r, w##v);
#define SAVE(r, v)                                                                      \
  if (r < mr && v < nv)                                                                 \
    _mm512_store_si512(sums[r][v], acc##r##v);

/* acc(r, v) += the products of the group of k at byte `k` (`bytes` of it) of
 * row r and its 16 channels' weight bytes in block v (`wk` at that group). */
#define VNNI_STEP(k_, wk_, bytes_)                                                      \
  do {                                                                                  \
    const int64_t k = (k_), bytes = (bytes_);                                           \
    const int8_t *wk = (wk_);                                                           \
    EACH_W(LOAD_W)                                                                      \
    EACH_R(BROADCAST)                                                                   \
    EACH_RV(PRODUCT)                                                                    \
  } while (0)

/* r[i] = column i of the 8 x 8 matrix of rows r[0..7]. */
static inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/* A register block's sums into a tile of [channel][row] (a conv2d's: its
 * output is NCHW): 8 x 8 transposes, then each channel's mr sums stored at
 * once. One int32 at a time, these stores cost more than the products of a
 * 3-channel 3x3 convolution (27 bytes deep). */
static void put_columns(const int8_job *j, int64_t row, int64_t nb, int nv, int mr,
                        int32_t sums[INT8_MR][INT8_NV][INT8_LANES]) {
  for (int v = 0; v < nv; v++) {
    int lanes = (int)min64(INT8_LANES, j->units - (nb + v) * INT8_LANES);
    for (int half = 0; half < INT8_LANES / 8; half++) {
      __m256 r[8];
      for (int i = 0; i < 8; i++)
        r[i] = i < mr ? _mm256_loadu_ps((const float *)&sums[i][v][8 * half]) : _mm256_setzero_ps();
      transpose8(r);
      for (int l = 0; l < 8 && 8 * half + l < lanes; l++) {
        int32_t *out = j->tile + row + ((nb + v) * INT8_LANES + 8 * half + l) * j->unit_step;
        _mm256_mask_storeu_epi32(out, (__mmask8)((1u << mr) - 1u), _mm256_castps_si256(r[l]));
      }
    }
  }
}

/* Rows [row, row + mr) times packed blocks [nb, nb + nv). */
#define VNNI_BODY                                                                       \
  const int64_t full = j->depth / INT8_GROUP, tail = j->depth % INT8_GROUP;             \
  const int64_t block_bytes = j->groups * INT8_LANES * INT8_GROUP;                      \
  const uint8_t *x = j->data + row * j->stride;                                         \
  const int8_t *w = j->weight + nb * block_bytes;                                       \
  EACH_RV(ZERO)                                                                         \
  for (int64_t g = 0; g < full; g++)                                                    \
    VNNI_STEP(g * INT8_GROUP, w + g * INT8_LANES * INT8_GROUP, INT8_GROUP);             \
  if (tail)                                                                             \
    VNNI_STEP(full * INT8_GROUP, w + full * INT8_LANES * INT8_GROUP, tail);             \
  int32_t sums[INT8_MR][INT8_NV][INT8_LANES] __attribute__((aligned(64)));              \
  EACH_RV(SAVE)                                                                         \
  if (j->row_step == 1 && j->unit_step != 1) {                                          \
    put_columns(j, row, nb, nv, mr, sums);                                              \
    return;                                                                             \
  }                                                                                     \
  for (int r = 0; r < mr; r++)                                                          \
    for (int v = 0; v < nv; v++)                                                        \
      put(j, row + r, nb + v, (int)min64(INT8_LANES, j->units - (nb + v) * INT8_LANES), \
          sums[r][v]);

#define VNNI_BLOCK(MR, NV)                                                              \
  static void vnni_block_##MR##_##NV(const int8_job *j, int64_t row, int64_t nb) {     \
    enum { mr = MR, nv = NV };                                                          \
    VNNI_BODY                                                                           \
  }
#define VNNI_ROWS(mr) VNNI_BLOCK(mr, 1) VNNI_BLOCK(mr, 2) VNNI_BLOCK(mr, 3) VNNI_BLOCK(mr, 4)
VNNI_ROWS(1) VNNI_ROWS(2) VNNI_ROWS(3) VNNI_ROWS(4) VNNI_ROWS(5) VNNI_ROWS(6)

typedef void (*vnni_fn)(const int8_job *, int64_t, int64_t);
#define VNNI_ENTRY(mr) \
  {vnni_block_##mr##_1, vnni_block_##mr##_2, vnni_block_##mr##_3, vnni_block_##mr##_4}
static const vnni_fn VNNI_BLOCKS[INT8_MR][INT8_NV] = {
    VNNI_ENTRY(1), VNNI_ENTRY(2), VNNI_ENTRY(3), VNNI_ENTRY(4), VNNI_ENTRY(5), VNNI_ENTRY(6),
};

/* Packed blocks outside, rows inside: a register block's weight (4 vectors
 * per step of k) stays in L1 while it meets every row. */
static void vnni_products(const int8_job *j, int64_t rows) {
  int64_t blocks = ceil_div(j->units, INT8_LANES);
  for (int64_t nb = 0; nb < blocks; nb += INT8_NV) {
    int nv = (int)min64(INT8_NV, blocks - nb);
    for (int64_t row = 0; row < rows; row += INT8_MR) {
      int mr = (int)min64(INT8_MR, rows - row);
      VNNI_BLOCKS[mr - 1][nv - 1](j, row, nb);
    }
  }
}

/* Whether to use VNNI: yes unless $BYOC_RT_INT8_PORTABLE (read once) asks
 * for the portable loop, which tests compare with it. */
static int vnni_wanted(void) {
  static int wanted = -1;
  int now = __atomic_load_n(&wanted, __ATOMIC_RELAXED);
  if (now < 0) {
    const char *portable = getenv("BYOC_RT_INT8_PORTABLE");
    now = portable == NULL || portable[0] == '\0' || strcmp(portable, "0") == 0;
    __atomic_store_n(&wanted, now, __ATOMIC_RELAXED);
  }
  return now;
}
#endif

int32_t byoc_rt_int8_uses_vnni(void) {
#if INT8_VNNI
  return vnni_wanted();
#else
  return 0;
#endif
}

void byoc_rt_int8_products(int64_t rows, int64_t units, int64_t depth, const void *data,
                           int64_t first_row, int64_t stride, const void *weight,
                           int32_t *tile, int64_t row_step, int64_t unit_step) {
  int8_job j = {units,    depth,    ceil_div(depth, INT8_GROUP),
                stride,   row_step, unit_step,
                (const uint8_t *)data + first_row * stride,
                weight,   tile};
#if INT8_VNNI
  if (vnni_wanted()) {
    vnni_products(&j, rows);
    return;
  }
#endif
  portable_products(&j, rows);
}
