/* libbyoc: the C runtime library that byoc's generated code links against.
 *
 * It holds what every model shares in a process: one pool of threads
 * (threads.c) and the compute kernels that are better written once by hand
 * than generated per model (conv2d.c, depthwise.c). Generated C includes this
 * header and calls these functions; docs/architecture.md ("The C runtime")
 * says how the library is built and loaded. Everything exported is prefixed
 * `byoc_rt_`; the ABI is versioned by BYOC_RT_VERSION, which is part of the
 * library's file name, so two versions can share a process.
 */
#ifndef BYOC_RUNTIME_H
#define BYOC_RUNTIME_H

#include <stdint.h>

#define BYOC_RT_VERSION 1

/* The status of a kernel, as byoc's external functions return it
 * (byoc.backends.spec.ALLOCATION_FAILED is BYOC_RT_OUT_OF_MEMORY). */
enum { BYOC_RT_OK = 0, BYOC_RT_FAILED = 1, BYOC_RT_OUT_OF_MEMORY = 2 };

/* ---- Threads --------------------------------------------------------------
 * One pool per process. `byoc_rt_parallel_for(n, task, context)` calls
 * `task(context, i)` once for every i in [0, n), on the calling thread and on
 * the pool's workers, and returns when all calls have returned. Chunks are
 * claimed a few at a time (runs of about 2 us, $BYOC_POOL_BATCH_US, as the
 * thread's last claim measured them, and at most a (2 x threads)th of those
 * left; the first claim one chunk), so a worker the OS has not scheduled (the
 * machine is busy) takes none and nobody waits for it. A call made while the pool is
 * busy (another thread's loop, or from inside a task) runs its loop on the
 * calling thread alone, so the cores are never oversubscribed.
 *
 * Threads: byoc_rt_set_num_threads(n), else $BYOC_NUM_THREADS, else
 * $OMP_NUM_THREADS, else every core this process may run on.
 *
 * Waiting (threads.c has the figures): after a loop, workers spin about
 * 400 us ($BYOC_POOL_SPIN_US), which bridges the host's ops between a model's
 * loops, and while a caller backing off (below) runs loops alone, then sleep;
 * they never spin against each other, give their core away every 20 us
 * (sched_yield) in case it is their caller's, and move off the core their
 * caller runs on (a caller waking workers asleep for over 1 ms first takes
 * its core from theirs, until they are up). A worker that has run 1 ms without a break yields before
 * its next chunk, so a busy core preempts it between chunks rather than
 * inside one (which held the caller up). A worker that finds it was
 * preempted while spinning (its core is wanted by other work), or that ran
 * every chunk of a loop (its caller was not running), spins only briefly for
 * a while, so woken it preempts that work for the next loop instead of
 * sharing the core with it. A loop that held its caller up with a chunk far
 * longer than the caller's own, or that starts while a worker woken over
 * 250 us ago still sleeps, makes the caller run its next loops alone: 2 of
 * them, doubled while workers keep being late, at most 256, and for at most
 * 64 ms ($BYOC_POOL_BACKOFF=0 turns this off; a new thread count tries the
 * workers again). A worker that merely joins a loop late costs nothing: the
 * caller claims the chunks meanwhile. */
typedef void (*byoc_rt_task)(void *context, int64_t index);

void byoc_rt_parallel_for(int64_t n, byoc_rt_task task, void *context);
int32_t byoc_rt_num_threads(void);
void byoc_rt_set_num_threads(int32_t n);

/* What the pool has done since the process started, for profiles and
 * benchmarks: the first `size` of these counters (cumulative; take
 * differences). Loops that ran on the pool, loops their caller ran alone
 * (one chunk, one thread, the pool busy, or backing off), chunks of the
 * pool's loops, chunks workers ran, broadcasts that woke sleeping workers,
 * times a worker went to sleep, loops no worker joined; nanoseconds spent in
 * the pool's loops (caller's view), the caller waiting for chunks other
 * threads held, and from a loop's start to a worker's first chunk (loops a
 * worker joined); times a spinning worker found it had been preempted, late
 * loops, loops run alone while backing off after a late one, loops a worker
 * ran every chunk of (their caller was not running), times a worker found
 * itself on its caller's core and moved off it, nanoseconds from a wake-up to
 * the first woken worker leaving its sleep, times a worker gave its core
 * away between two chunks, times a caller took its own core from a
 * sleeping worker's cores before waking it, and claims (runs of chunks a
 * thread took at once). */
enum {
  BYOC_RT_STAT_LOOPS, BYOC_RT_STAT_ALONE, BYOC_RT_STAT_CHUNKS, BYOC_RT_STAT_WORKER_CHUNKS,
  BYOC_RT_STAT_WAKES, BYOC_RT_STAT_SLEEPS, BYOC_RT_STAT_MISSED, BYOC_RT_STAT_LOOP_NS,
  BYOC_RT_STAT_WAIT_NS, BYOC_RT_STAT_LATE_NS, BYOC_RT_STAT_PREEMPTED, BYOC_RT_STAT_LATE,
  BYOC_RT_STAT_BACKED_OFF, BYOC_RT_STAT_CALLER_AWAY,
  BYOC_RT_STAT_MOVES, BYOC_RT_STAT_WAKE_NS,
  BYOC_RT_STAT_BREAKS, BYOC_RT_STAT_STEERS, BYOC_RT_STAT_CLAIMS, BYOC_RT_STATS
};
void byoc_rt_pool_stats(int64_t *out, int32_t size);

/* ---- Convolution ------------------------------------------------------------
 * out = act(conv2d(data, weight) + bias + residual) over NCHW float32 tensors,
 * the weight packed at compile time as relay.nn.conv2d_packed defines
 * (byoc.dialects.relay.pack_conv2d_weight): [G * ceil(O/G / b), C/G, KH, KW, b],
 * blocks of b output channels side by side, per group, zero-padded.
 *
 *   BYOC_RT_ROWS     b = 8 ("OIHW8o"): the kernel holds vectors of output
 *                    pixels; stride 1 only, but for a 1x1 kernel without
 *                    padding (it reads a subsampled copy).
 *   BYOC_RT_COLUMNS  b = 32 ("OIHW32o"): the kernel holds vectors of output
 *                    channels; any stride.
 *   BYOC_RT_WINOGRAD 3x3 kernels of stride and dilation 1 only ("winograd8o"):
 *                    [G * ceil(O/G / 8), C/G, 4, 4, 8], G g G^T of each 3x3
 *                    kernel g (Winograd's F(2x2, 3x3): G = [1 0 0; 1/2 1/2 1/2;
 *                    1/2 -1/2 1/2; 0 0 1]) in blocks of 8 output channels.
 *   BYOC_RT_WINOGRAD4 the same of Winograd's F(4x4, 3x3) ("winograd4x4_8o"):
 *                    [G * ceil(O/G / 8), C/G, 6, 6, 8], G = [1/4 0 0;
 *                    -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6;
 *                    1/24 -1/12 1/6; 0 0 1].
 *
 * `bias` ([O]) and `residual` (shaped as `out`) may be NULL. Returns BYOC_RT_OK,
 * BYOC_RT_OUT_OF_MEMORY when scratch memory cannot be allocated, or
 * BYOC_RT_FAILED for BYOC_RT_ROWS with a stride it cannot read, BYOC_RT_WINOGRAD(4)
 * with another kernel, stride or dilation, or a `shuffle`. */
enum { BYOC_RT_ROWS = 0, BYOC_RT_COLUMNS = 1, BYOC_RT_WINOGRAD = 2, BYOC_RT_WINOGRAD4 = 3 };
enum { BYOC_RT_LINEAR = 0, BYOC_RT_RELU = 1, BYOC_RT_CLIP = 2, BYOC_RT_GELU = 3 };

typedef struct byoc_rt_conv {
  int64_t batch, channels, height, width;
  int64_t out_channels, out_height, out_width;
  int64_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w;
  int64_t pad_top, pad_left;
  int64_t groups;
  int64_t layout;
  int64_t activation;
  float low, high; /* BYOC_RT_CLIP's bounds */
  /* Depthwise only (0 elsewhere): above 1, `data` is read with its channels
   * shuffled in that many groups (ShuffleNet's channel shuffle): channel c
   * is data's channel (c % shuffle) * (channels / shuffle) + c / shuffle. */
  int64_t shuffle;
} byoc_rt_conv;

int32_t byoc_rt_conv2d(const byoc_rt_conv *conv, const float *data,
                       const float *weight, const float *bias,
                       const float *residual, float *out);

/* A depthwise convolution (groups == channels, one input channel per group,
 * out_channels a multiple of channels) with the same epilogue, its weight as
 * relay.nn.conv2d has it: [O, 1, KH, KW] (`layout` is not read). Returns
 * BYOC_RT_OK, BYOC_RT_OUT_OF_MEMORY, or BYOC_RT_FAILED for more than 64 taps. */
int32_t byoc_rt_depthwise_conv2d(const byoc_rt_conv *conv, const float *data,
                                 const float *weight, const float *bias,
                                 const float *residual, float *out);

/* ---- Pooling ----------------------------------------------------------------
 * out = relay.nn.max_pool2d or avg_pool2d of NCHW float32 data with strides 1
 * or 2 (each dimension its own) and dilation 1 (Inception's 3x3 "same" pools,
 * SqueezeNet's and ResNet's 3x3 stride-2 ones; relay.nn.global_avg_pool2d is
 * an average pool whose kernel is the plane): taps in the padding (and past
 * it, ceil_mode) are -inf for a max and 0 for an average; an average divides
 * by its taps inside the image (`count_include_pad`: inside the image and its
 * explicit padding), at least 1. `out_height` and `out_width` are relay's
 * (ceil_mode decided them). Returns BYOC_RT_OK, BYOC_RT_OUT_OF_MEMORY, or
 * BYOC_RT_FAILED for another stride. */
enum { BYOC_RT_MAX_POOL = 0, BYOC_RT_AVG_POOL = 1 };

typedef struct byoc_rt_pool {
  int64_t batch, channels, height, width, out_height, out_width;
  int64_t kernel_h, kernel_w, stride_h, stride_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  int64_t kind, count_include_pad;
} byoc_rt_pool;

int32_t byoc_rt_pool2d(const byoc_rt_pool *pool, const float *data, float *out);

/* out = pool(conv(data)): byoc_rt_conv2d's output, its epilogue without a
 * residual, pooled by byoc_rt_pool2d (the pool's input is the conv's
 * output), but the conv's output rows are computed a band at a time and
 * pooled while in cache, never written whole (when `conv` is BYOC_RT_COLUMNS
 * with one group and the pool has column stride 2 and a kernel of at most
 * 3x3; otherwise the two one after the other through a buffer of the conv's
 * output). Returns as the two do. */
int32_t byoc_rt_conv2d_pool2d(const byoc_rt_conv *conv, const byoc_rt_pool *pool,
                              const float *data, const float *weight, const float *bias,
                              float *out);

/* ---- Matrix products -------------------------------------------------------
 * out[M, N] = act(a[M, K] x W[N, K]^T + bias + residual), row-major float32,
 * W packed at compile time as relay.nn.dense_packed defines
 * (byoc.dialects.relay.pack_dense_weight): [ceil(N / 32), K, 32], panels of
 * 32 rows of W (output columns) side by side, the last padded with zeros.
 * `bias` ([N]) and `residual` ([M, N]) may be NULL; `activation` any of
 * BYOC_RT_LINEAR, RELU, CLIP, GELU (relay.nn.gelu's erf form, within 1e-7 of
 * the output's scale). Returns BYOC_RT_OK. */
typedef struct byoc_rt_product {
  int64_t m, n, k;
  int64_t activation;
  float low, high; /* BYOC_RT_CLIP's bounds */
} byoc_rt_product;

int32_t byoc_rt_dense(const byoc_rt_product *product, const float *a, const float *weight,
                      const float *bias, const float *residual, float *out);

/* ---- Softmax -----------------------------------------------------------------
 * out[r, :] = exp(x - max) / sum(exp(x - max)), x = data[r, :] + mask[r, :],
 * for each of `rows` contiguous rows of `length` float32 (relay.nn.softmax
 * along the last axis of relay.add(data, mask)), on the calling thread: a
 * batch matmul's task calls it on the scores it just computed. `mask` (an
 * additive attention mask) may be NULL (x = data[r, :]); row r's is at
 * mask + r * mask_row (mask_row 0: one row for all). A row whose x is all
 * -inf is all NaN, as numpy's. `out` may be `data` (in place). Returns
 * BYOC_RT_OK. */
int32_t byoc_rt_softmax(int64_t rows, int64_t length, const float *data, const float *mask,
                        int64_t mask_row, float *out);

/* ---- Layer normalisation -----------------------------------------------------
 * out[r, :] = (data[r, :] - mean) / sqrt(var + epsilon) * gamma + beta for
 * each of `rows` contiguous rows of `length` float32 (relay.nn.layer_norm
 * along the last axis: mean and population variance of the row; `gamma` and
 * `beta` [length], either may be NULL: 1 and 0), rows split across the
 * pool. Returns BYOC_RT_OK. */
int32_t byoc_rt_layer_norm(int64_t rows, int64_t length, const float *data, const float *gamma,
                           const float *beta, float epsilon, float *out);

/* ---- Attention --------------------------------------------------------------
 * For each head h < heads and query row i < rows:
 *   out[h, i, :] = softmax_j(sum_d Q[h, i, d] K[h, j, d]) V[h, j, :]
 * (j < keys, d < depth, the output `width` wide): relay.nn.batch_matmul of
 * the queries and the keys transposed, relay.nn.softmax along the keys, and
 * relay.nn.batch_matmul by the values, with no scale (byoc-simplify folds
 * attention's 1/sqrt(depth) into the queries). Each operand's rows are
 * contiguous; element [h, i, c] of Q is at q[h * q_head + i * q_row + c], and
 * the same for K, V and out (attention's heads read in place in [S, H*D]
 * projections: head stride D, row stride H*D). `mask`, an additive attention
 * mask added to the scores before the softmax (as byoc_rt_softmax), may be
 * NULL; its element [h, i, j] is at
 * mask[(h / mask_group) * mask_head + i * mask_row + j]: mask_group heads
 * share one (a batch's), strides 0 where it is broadcast (mask_group >= 1).
 * Returns BYOC_RT_OK or BYOC_RT_OUT_OF_MEMORY. */
typedef struct byoc_rt_heads {
  int64_t heads, rows, keys, depth, width;
  int64_t q_head, q_row, k_head, k_row, v_head, v_row, o_head, o_row;
  int64_t mask_group, mask_head, mask_row;
} byoc_rt_heads;

int32_t byoc_rt_attention(const byoc_rt_heads *heads, const float *q, const float *k,
                          const float *v, const float *mask, float *out);

/* ---- int8 products ----------------------------------------------------------
 * tile[r * row_step + u * unit_step] = sum_k data[(first_row + r) * stride + k]
 * * w[u][k] for r < rows, u < units, k < depth: data unsigned bytes, w signed
 * bytes packed at compile time as [ceil(units / 16)][ceil(depth / 4)][16][4]
 * (blocks of 16 output channels, each step of 4 bytes of k for all 16 side by
 * side: byoc.backends.ccompiler_int8.vnni_packed), zeros after `units` and
 * `depth`. The sums are exact (int32). */
void byoc_rt_int8_products(int64_t rows, int64_t units, int64_t depth, const void *data,
                           int64_t first_row, int64_t stride, const void *weight,
                           int32_t *tile, int64_t row_step, int64_t unit_step);

/* ---- int8 direct convolution (stride 1) -------------------------------------
 * A one-group, stride-1 convolution without im2col: the image packed as
 * `[groups][rows][width][4]` bytes (byoc_rt_int8_pack_image: 4 channels per
 * group side by side, `rows` x `width` the padded image, the padding and the
 * channels past the last the pad byte), then 64 more bytes of any value (a
 * vector may read past the last position). Output (oy, ox) is position
 * p = oy * width + ox of that grid; positions whose ox is past the output's
 * width are computed too and mean nothing. The weight is packed at compile
 * time as `[ceil(units / 8)][groups][kh][kw][8][4]` (element [b][g][i][j][m][l]
 * = w[8 b + m][4 g + l][i][j], zeros past `units` and the channels:
 * byoc.backends.ccompiler_int8.direct_packed).
 *
 * byoc_rt_int8_conv_products (kh * kw at most BYOC_RT_INT8_DIRECT_MAX_TAPS):
 * tile[u * tile_step + p] = sum over g, i, j, l of
 * image[g][p + i * dilation_h * width + j * dilation_w][l] * w[u][4 g + l][i][j]
 * for p in [first, first + count) and u < units (exact int32 sums; with VNNI
 * 16 positions per vector of sums, the weight's 4 bytes broadcast).
 * byoc_rt_int8_conv_requantize: the same sums requantized instead (the
 * generated epilogue's arithmetic, ccompiler_int8.Epilogue and
 * lower_qnn.saturate_round): with q = round_half_even(clamp((float)(sum +
 * correction[u]) * multiplier[u], low - zero[u], high - zero[u])) + zero[u],
 * out[(out_image * units + u) * out_plane + oy * out_width + ox] = q as a
 * byte (int8 or uint8: low and high are within its range) for the outputs
 * (oy, ox < out_width) among the positions, straight from the registers.
 * byoc_rt_int8_conv_dequantize: the same q dequantized instead, as floats:
 * (float)(q - float_zero[u]) * float_scale[u].
 * byoc_rt_int8_pack_image: groups [first_group, end_group) of the packed
 * image of image `image` of `data` (NCHW bytes, an image `channels` x
 * `height` x `image_width`), placed at row `top` and column `left` of the
 * grid, each byte xor `flip` (0x80 reads int8 as uint8); the group
 * `groups - 1` also fills the 64 bytes after.
 * byoc_rt_int8_conv_weight_sums: sums[u] = the sum of w[u]'s bytes, `steps`
 * = groups * kh * kw of 4 (the data zero point's correction). */
#define BYOC_RT_INT8_DIRECT_MAX_TAPS 64
void byoc_rt_int8_conv_products(int64_t units, int64_t groups, int64_t kh, int64_t kw,
                                int64_t dilation_h, int64_t dilation_w, int64_t rows,
                                int64_t width, const void *image, int64_t first, int64_t count,
                                const void *weight, int32_t *tile, int64_t tile_step);
void byoc_rt_int8_conv_requantize(int64_t units, int64_t groups, int64_t kh, int64_t kw,
                                  int64_t dilation_h, int64_t dilation_w, int64_t rows,
                                  int64_t width, const void *image, int64_t first, int64_t count,
                                  const void *weight, const int32_t *correction,
                                  const float *multiplier, const int32_t *zero, int64_t low,
                                  int64_t high, void *out, int64_t out_image, int64_t out_width,
                                  int64_t out_plane);
void byoc_rt_int8_conv_dequantize(int64_t units, int64_t groups, int64_t kh, int64_t kw,
                                  int64_t dilation_h, int64_t dilation_w, int64_t rows,
                                  int64_t width, const void *image, int64_t first, int64_t count,
                                  const void *weight, const int32_t *correction,
                                  const float *multiplier, const int32_t *zero, int64_t low,
                                  int64_t high, float *out, int64_t out_image, int64_t out_width,
                                  int64_t out_plane, const float *float_scale,
                                  const int32_t *float_zero);
void byoc_rt_int8_pack_image(int64_t channels, int64_t height, int64_t image_width,
                             const void *data, int64_t image, int64_t groups, int64_t rows, int64_t width,
                             int64_t top, int64_t left, int64_t pad, int64_t flip,
                             int64_t first_group, int64_t end_group, void *packed);
void byoc_rt_int8_conv_weight_sums(int64_t units, int64_t steps, const void *weight,
                                   int32_t *sums);

/* ---- quantize ----------------------------------------------------------------
 * out[i] = clamp(round_half_even(x[i] / scale) + zero, low, high) as a byte
 * for i in [first, min(first + chunk, n)): relay.qnn.quantize of float32 to
 * int8 or uint8 with one scale and zero point, bit for bit as lower_qnn
 * lowers it (the float division, its clamp before rounding, NaN to low). */
void byoc_rt_quantize(int64_t n, int64_t first, int64_t chunk, const float *x, float scale,
                      int32_t zero, int64_t low, int64_t high, void *out);

/* Whether byoc_rt_int8_products runs on AVX-512 VNNI (1) or on its portable
 * loop (0: the CPU or the compiler has no VNNI, or $BYOC_RT_INT8_PORTABLE is
 * set to anything but 0 when the first product runs). */
int32_t byoc_rt_int8_uses_vnni(void);

#endif
