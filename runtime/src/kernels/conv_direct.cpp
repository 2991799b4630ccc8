// Conv as an implicit GEMM (conv_direct.h). Y's rows are output channels and
// its columns output positions; the reduction runs over p = (input channel,
// kernel row, kernel column), W's own row-major order.
//
// X is first copied, once per call, into zero-padded "phase rows": padded
// column c of a padded input row goes to phase c % s, position c / s, for
// the column stride s. Output column o's tap at kernel column kw reads padded
// column o*s + kw*d = (o + q)*s + r, with kw*d = q*s + r: position o + q of
// phase r. So for every p, sixteen consecutive output columns of one output
// row read sixteen consecutive floats, at one offset per p from the segment's
// start (the offset table). No bounds test, no packing.
//
// The output is cut into segments of 16 columns of one output row (the last
// of a row shorter, its lanes masked). A tile is 8 output channels by two
// segments: 16 zmm accumulators. Per p it loads one vector per segment,
// broadcasts 8 weights read in place from W's rows, and issues 16 FMAs. The
// tile's two segments may lie in different rows (an 8x16 or 16x16 map is
// cut into whole rows), each with its own start.
#include "kernels/conv_direct.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "intra_op.h"
#include "memory_hooks.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define EPPROF_CONV_DIRECT_X86 1
#endif

namespace epprof::rt::kernels {

namespace {

constexpr int64_t kLanes = 16;  // floats in a zmm register
constexpr int64_t kRows = 8;    // output channels in a tile
constexpr int64_t kSegs = 2;    // segments in a tile

// A segment is used in full by at least this share of its lanes, on average
// over a row: a 12-column row fills 12 of 16, a 40-column row 40 of 48.
// Below it (8-column rows use half) the gemm's panels, which run across
// rows, waste less.
constexpr double kMinLaneUse = 0.75;

// Where the padded copy puts each input element. Each range of tiles pads
// the input rows its own output rows read, every channel, into a buffer of
// its own: the rows the thread then reads are in its own cache, not in the
// other core's (splitting the copy across the threads made the 2-thread
// conv no faster than the 1-thread one on these VMs).
struct PaddedLayout {
  int64_t phase;  // floats in a phase row
  int64_t row;    // floats from one padded row to the next: stride * phase
  int64_t rows;   // padded rows a range's buffer holds per channel
  int64_t plane;  // floats per channel: rows * row
};

// The padded rows that output rows [0, out_rows) read.
int64_t padded_rows(const Window& w, int64_t out_rows) { return (out_rows - 1) * w.s[1] + (w.k[1] - 1) * w.d[1] + 1; }

PaddedLayout padded_layout(const Window& w, int64_t max_out_rows) {
  PaddedLayout l;
  const int64_t cols = (w.out[2] - 1) * w.s[2] + (w.k[2] - 1) * w.d[2] + 1;
  l.phase = (cols + w.s[2] - 1) / w.s[2];
  l.row = w.s[2] * l.phase;
  l.rows = padded_rows(w, max_out_rows);
  l.plane = l.rows * l.row;
  return l;
}

// dst[j] = src[j + off] for j in [lo, hi) and 0 for the rest of [0, n):
// loops the compiler vectorises (a row is a few dozen floats; memcpy and
// memset calls cost more than the copy).
inline void zero_copy_zero(float* __restrict dst, const float* __restrict src, int64_t off, int64_t lo, int64_t hi,
                           int64_t n) {
  for (int64_t j = 0; j < lo; ++j) dst[j] = 0.0f;
  for (int64_t j = lo; j < hi; ++j) dst[j] = src[j + off];
  for (int64_t j = hi; j < n; ++j) dst[j] = 0.0f;
}

// Padded rows [first, first + rows) of `channels` planes of X (xc, H x W
// each) into their phase rows at dst, l.plane floats per channel.
void pad_rows(const float* x, int64_t channels, const Window& w, const PaddedLayout& l, int64_t first, int64_t rows,
              float* dst) {
  const int64_t H = w.in[1], W = w.in[2], s = w.s[2], pl = w.pb[2];
  // Phase r's position j holds input column j*s + r - pl: inside for j in [lo[r], hi[r]).
  int64_t lo[8], hi[8];
  const bool gather = s > 8;  // a stride past 8: positions found one by one
  for (int64_t r = 0; r < s && !gather; ++r) taps_inside(r - pl, s, W, l.phase, lo[r], hi[r]);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t ih = first + i - w.pb[1];
      float* const out = dst + c * l.plane + i * l.row;
      if (ih < 0 || ih >= H) {
        zero_copy_zero(out, nullptr, 0, 0, 0, l.row);
        continue;
      }
      const float* src = x + (c * H + ih) * W;
      if (s == 1) {
        zero_copy_zero(out, src, -pl, lo[0], hi[0], l.phase);
        continue;
      }
      for (int64_t r = 0; r < s; ++r) {
        float* ph = out + r * l.phase;
        int64_t a = 0, b = 0;
        if (gather)
          taps_inside(r - pl, s, W, l.phase, a, b);
        else
          a = lo[r], b = hi[r];
        for (int64_t j = 0; j < a; ++j) ph[j] = 0.0f;
        for (int64_t j = a; j < b; ++j) ph[j] = src[j * s + r - pl];
        for (int64_t j = b; j < l.phase; ++j) ph[j] = 0.0f;
      }
    }
}

int64_t segments_per_row(const Window& w) { return (w.out[2] + kLanes - 1) / kLanes; }

#ifdef EPPROF_CONV_DIRECT_X86

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

// The epilogue on one stored vector: z at its lanes (k), then the activation.
__attribute__((target("avx512f"))) inline __m512 finish_vector(__m512 v, const DirectEpilogue& e, const float* z,
                                                                __mmask16 k) {
  if (z) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, z));
  switch (e.act) {
    case DirectEpilogue::Act::kNone: break;
    case DirectEpilogue::Act::kRelu: {  // v > 0 ? v : 0 (NaN: 0)
      const __m512 zero = _mm512_setzero_ps();
      v = _mm512_mask_mov_ps(zero, _mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), v);
      break;
    }
    case DirectEpilogue::Act::kClip: {
      const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
      v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ), lo);
      v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(hi, v, _CMP_LT_OQ), hi);
      break;
    }
    case DirectEpilogue::Act::kLeakyRelu: {  // max(v, 0) + alpha * min(v, 0)
      // The zero first: vmaxps and vminps return their second operand when
      // either is NaN, so NaN stays NaN, as in activations.h. The maskz
      // forms with every lane set: GCC 12's unmasked ones pass an undefined
      // vector that -Wmaybe-uninitialized reports.
      const __m512 zero = _mm512_setzero_ps();
      const __mmask16 all = 0xffff;
      v = _mm512_fmadd_ps(_mm512_set1_ps(e.alpha), _mm512_maskz_min_ps(all, zero, v),
                          _mm512_maskz_max_ps(all, zero, v));
      break;
    }
  }
  return v;
}

// The tile of rows [0, mr) of W (row r at w + r * ldw) by the segments at x0
// and x1 (lanes k0, k1), onto y0 and y1 (row r at + r * ldy), starting from
// the bias, finished by `e` (Z's rows at zoff past y0's and y1's). Rows at or
// past mr read row 0, so that the reads stay inside W, and are not stored.
__attribute__((target("avx512f,fma"))) void tile(int64_t K, const float* w, int64_t ldw, int64_t mr,
                                                 const float* x0, const float* x1, const int64_t* off,
                                                 const float* bias, float* y0, float* y1, int64_t ldy,
                                                 __mmask16 k0, __mmask16 k1, const DirectEpilogue& e,
                                                 ptrdiff_t zoff0, ptrdiff_t zoff1) {
  __m512 acc[kRows][kSegs];
  const float* wr[kRows];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    const bool real = r < mr;
    acc[r][0] = acc[r][1] = _mm512_set1_ps(bias && real ? bias[r] : 0.0f);
    wr[r] = w + (real ? r : 0) * ldw;
  }
  for (int64_t p = 0; p < K; ++p) {
    const int64_t o = off[p];
    const __m512 b0 = _mm512_loadu_ps(x0 + o), b1 = _mm512_loadu_ps(x1 + o);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512 a = _mm512_set1_ps(wr[r][p]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
  const bool finish = e.z || e.act != DirectEpilogue::Act::kNone;
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    if (r >= mr) break;
    float *o0 = y0 + r * ldy, *o1 = y1 + r * ldy;
    if (finish) {
      acc[r][0] = finish_vector(acc[r][0], e, e.z ? e.z + zoff0 + r * ldy : nullptr, k0);
      acc[r][1] = finish_vector(acc[r][1], e, e.z ? e.z + zoff1 + r * ldy : nullptr, k1);
    }
    _mm512_mask_storeu_ps(o0, k0, acc[r][0]);
    _mm512_mask_storeu_ps(o1, k1, acc[r][1]);
  }
}

__mmask16 lanes_mask(int64_t lanes) { return lanes >= kLanes ? __mmask16(0xffff) : __mmask16((1u << lanes) - 1); }

#else

bool cpu_has_avx512() { return false; }

#endif

}  // namespace

bool conv_direct_runs(const ConvShape& cs) {
  static const bool avx512 = cpu_has_avx512();
  const Window& w = cs.w;
  // A 1x1 kernel (strided, or padded) has too short a reduction per
  // channel for the padded copy to pay: the gemm ran them in 60% of the time.
  if (!avx512 || w.spatial > 2 || w.k_size() == 1) return false;
  if (cs.K == 0 || cs.P == 0 || cs.Mg == 0) return false;
  const int64_t segs = segments_per_row(w);
  return double(w.out[2]) >= kMinLaneUse * double(segs * kLanes);
}

void conv_direct(const float* x, const float* wt, const float* bias, const ConvShape& cs, float* y,
                 const DirectEpilogue* epilogue) {
#ifdef EPPROF_CONV_DIRECT_X86
  const Window& w = cs.w;
  const int64_t OW = w.out[2], spr = segments_per_row(w);
  const int64_t segs = w.out[1] * spr, tiles = (segs + kSegs - 1) / kSegs;
  const int64_t units = cs.N * cs.group * tiles;  // u: tile u % tiles of image and group u / tiles
  const int64_t ranges = conv_row_ranges(cs, units, int64_t(sizeof(float)));
  // A range's tiles of one image and group span at most this many output rows.
  const int64_t range_tiles = std::min(tiles, (units + ranges - 1) / ranges);
  const int64_t max_rows = std::min(w.out[1], (range_tiles * kSegs + spr - 1) / spr + 1);
  const PaddedLayout l = padded_layout(w, max_rows);
  // Plus one vector: the last segment's masked-off lanes read past the last plane.
  const int64_t range_floats = cs.Cg * l.plane + kLanes;
  const memory::Scratch<float> padded(static_cast<size_t>(ranges * range_floats));

  // p = (c, kh, kw) reads its channel's plane, kernel row kh's padded row, and
  // kernel column kw's phase and position.
  std::vector<int64_t> off(static_cast<size_t>(cs.K));
  for (int64_t c = 0, p = 0; c < cs.Cg; ++c)
    for (int64_t kh = 0; kh < w.k[1]; ++kh)
      for (int64_t kw = 0; kw < w.k[2]; ++kw, ++p) {
        const int64_t col = kw * w.d[2];
        off[static_cast<size_t>(p)] = c * l.plane + kh * w.d[1] * l.row + col % w.s[2] * l.phase + col / w.s[2];
      }

  const DirectEpilogue e = epilogue ? *epilogue : DirectEpilogue{};
  detail::parallel_for_ranges(units, ranges, [&](int64_t range, int64_t begin, int64_t end) {
    float* const buf = padded.get() + range * range_floats;
    std::fill(buf + cs.Cg * l.plane, buf + range_floats, 0.0f);
    for (int64_t u = begin; u < end;) {
      // This range's tiles of one image and group: [t0, t1), output rows [oh0, oh1].
      const int64_t n = u / tiles / cs.group, g = u / tiles % cs.group, t0 = u % tiles;
      const int64_t t1 = std::min(tiles, t0 + end - u);
      u += t1 - t0;
      const int64_t oh0 = t0 * kSegs / spr, oh1 = (std::min(segs, t1 * kSegs) - 1) / spr;
      pad_rows(x + (n * cs.C + g * cs.Cg) * w.in_size(), cs.Cg, w, l, oh0 * w.s[1], padded_rows(w, oh1 - oh0 + 1),
               buf);
      float* const yg = y + (n * cs.M + g * cs.Mg) * cs.P;
      // Segment i of this image and group: its start in buf, its output and lanes.
      auto segment = [&](int64_t i, float*& yseg, __mmask16& mask) {
        const int64_t oh = i / spr, ow = i % spr * kLanes;
        yseg = yg + oh * OW + ow;
        mask = lanes_mask(std::min(kLanes, OW - ow));
        return buf + (oh - oh0) * w.s[1] * l.row + ow;
      };
      for (int64_t t = t0; t < t1; ++t) {
        float *y0, *y1;
        __mmask16 k0, k1;
        const float* x0 = segment(t * kSegs, y0, k0);
        const float* x1 = x0;
        if (t * kSegs + 1 < segs)
          x1 = segment(t * kSegs + 1, y1, k1);
        else
          y1 = y0, k1 = 0;  // an odd last segment: the second one is stored nowhere
        for (int64_t m = 0; m < cs.Mg; m += kRows) {
          const int64_t gm = g * cs.Mg + m;
          float *ty0 = y0 + m * cs.P, *ty1 = y1 + m * cs.P;
          tile(cs.K, wt + gm * cs.K, cs.K, std::min(kRows, cs.Mg - m), x0, x1, off.data(),
               bias ? bias + gm : nullptr, ty0, ty1, cs.P, k0, k1, e, ty0 - y, ty1 - y);
        }
      }
    }
  });
#else
  (void)x, (void)wt, (void)bias, (void)cs, (void)y, (void)epilogue;
  fail("Conv: the direct convolution needs x86-64 with AVX-512");
#endif
}

}  // namespace epprof::rt::kernels
