// Conv, float and double, by one of three lowerings:
// - depthwise (group == C: each output channel reads one input channel; up to
//   4 output channels per input channel) over 1 or 2 spatial dims: a direct
//   SIMD loop over output rows, no im2col, no per-channel 1 x P x K gemm;
// - float on AVX-512, kernels larger than 1x1, output rows of 12 columns or
//   more (conv_direct.h): an implicit GEMM that reads X where it lies;
// - everything else: im2col (skipped for 1x1 stride-1 unpadded kernels) and a
//   gemm (the runtime's sgemm or OpenBLAS) per image, group and tile of
//   output rows.
// All split their work across the intra-op threads (intra_op.h): ranges of
// output rows, or of channels, each written by one thread.
// The bias costs no pass of its own: the implicit GEMM starts its sums from
// it; the gemm lowering writes it into Y and accumulates onto it (OpenBLAS's
// beta = 0 pass over C is replaced by the bias fill), or, with no bias,
// has the product overwrite Y.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/activations.h"
#include "kernels/common.h"
#include "kernels/conv_direct.h"
#include "kernels/conv_geometry.h"
#include "kernels/element_split.h"
#include "kernels/matmul_util.h"
#include "kernels/sgemm.h"
#include "kernels/simd.h"
#include "intra_op.h"

namespace epprof::rt::kernels {

namespace {

// Row-major C[m,n] = A[m,k] * B[k,n] + beta * C, with B's and C's row
// strides (a single column, the 1x1 convs on 1x1 maps of
// squeeze-excitation blocks, is a gemv: blas_gemm).
template <typename T>
void gemm_acc(int64_t m, int64_t n, int64_t k, const T* a, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  blas_gemm(false, false, m, n, k, T(1), a, k, b, ldb, beta, c, ldc);
}


// p[0, n) = v, a vector at a time.
template <typename T>
void fill_value(T* p, int64_t n, T v) {
  using V = typename Simd<T>::V;
  constexpr int64_t L = sizeof(V) / sizeof(T);
  V vv;
  for (int64_t i = 0; i < L; ++i) vv[i] = v;
  int64_t i = 0;
  for (; i + L <= n; i += L) std::memcpy(p + i, &vv, sizeof vv);
  for (; i < n; ++i) p[i] = v;
}

// True when the direct depthwise loop applies: one input channel per group,
// at most 2 spatial dims (the window's leading slot is then the unused size-1
// one), and few output channels per input channel. With many (Mg > 4, as in
// a first layer from one input channel to 24, or a 1-D filterbank from one to
// hundreds) the gemm amortises im2col over Mg rows and beats the direct loop:
// oww_melspectrogram's 1 -> 257-channel convs ran 10x slower direct.
constexpr int64_t kMinChannelsAcross = 16, kMaxRowAcross = 16;  // is_depthwise_short_1d

bool is_depthwise_2d(const ConvShape& cs) {
  return cs.Cg == 1 && cs.group == cs.C && cs.Mg <= 4 && cs.w.spatial <= 2;
}

// One kernel tap of an output row: its weight, and the input element it reads
// for output column 0; column o reads x[o] (the row is contiguous: a padded
// phase row, see conv_depthwise_2d).
template <typename T>
struct Tap {
  const T* x;
  T w;
};

// U vectors V of y, from element i on, plus sum over the taps of w * x:
// accumulated in registers, U independent chains.
template <typename T, typename V, int U>
[[gnu::always_inline]] inline void accumulate_vectors(T* y, const Tap<T>* taps, size_t ntaps, int64_t i) {
  constexpr int64_t L = sizeof(V) / sizeof(T);
  V acc[U];
  for (int u = 0; u < U; ++u) std::memcpy(&acc[u], y + i + u * L, sizeof(V));
  for (size_t t = 0; t < ntaps; ++t)
    for (int u = 0; u < U; ++u) {
      V x;
      std::memcpy(&x, taps[t].x + i + u * L, sizeof x);
      acc[u] += taps[t].w * x;
    }
  for (int u = 0; u < U; ++u) std::memcpy(y + i + u * L, &acc[u], sizeof(V));
}

// y[o] += sum over the taps of w * x[o] for o in [0, n): two vectors W at
// a time, then one, then two and one 16-byte vectors (the short rows of
// small maps), then scalars.
template <typename T, typename W>
[[gnu::always_inline]] inline void accumulate_taps_in(T* y, const Tap<T>* taps, size_t ntaps, int64_t n) noexcept {
  using V = typename Simd<T>::V;
  constexpr int64_t L = sizeof(V) / sizeof(T), LW = sizeof(W) / sizeof(T);
  int64_t i = 0;
  for (; i + 2 * LW <= n; i += 2 * LW) accumulate_vectors<T, W, 2>(y, taps, ntaps, i);
  for (; i + LW <= n; i += LW) accumulate_vectors<T, W, 1>(y, taps, ntaps, i);
  for (; i + 2 * L <= n; i += 2 * L) accumulate_vectors<T, V, 2>(y, taps, ntaps, i);
  for (; i + L <= n; i += L) accumulate_vectors<T, V, 1>(y, taps, ntaps, i);
  for (; i < n; ++i) {
    T acc = y[i];
    for (size_t t = 0; t < ntaps; ++t) acc += taps[t].w * taps[t].x[i];
    y[i] = acc;
  }
}

// Built for the CPU it runs on, with the vectors its registers hold: 64
// bytes for AVX-512, 32 for AVX2 (64-byte vectors there went through the
// stack, and ppocr_v2_cls spent 58% of its time in this loop).
template <typename T>
void accumulate_taps(T* y, const Tap<T>* taps, size_t ntaps, int64_t n) noexcept {
  at_widest_vector<T>([&](auto vec) __attribute__((always_inline)) {
    accumulate_taps_in<T, typename decltype(vec)::type>(y, taps, ntaps, n);
  });
}

// The depthwise convolution plus bias (null: none), a whole output plane at
// a time: each tap is one multiply-add over a contiguous run, however small
// the map (one run per output row took 52 us for ppocr_v4_det's 5x5 convs
// on 6x8 maps, 230K multiply-adds: the loops' overhead was the cost).
//
// Each input plane is first copied, once, into zero-padded phase planes:
// padded row r, column c (input row r - pad_top, column c - pad_left, zero
// outside the input) goes to phase plane (r % sh, c % sw), row r / sh,
// position c / sw; every phase plane has rows of Wq positions. Output
// (oh, ow)'s tap (kh, kw) reads padded (oh*sh + kh*dh, ow*sw + kw*dw), which
// is phase plane (kh*dh % sh, kw*dw % sw) at row oh + kh*dh / sh, position
// ow + kw*dw / sw: at a fixed offset from j = oh * Wq + ow, the same for
// every output. So the plane's outputs are computed as one run of j over
// [0, OH * Wq), in a scratch row of that length, filled with the bias and
// accumulated onto in SIMD registers; the Wq - OW positions past each row's
// end are computed and dropped when the rows are copied to Y. Each phase
// plane has a spare row of zeros for the last rows' dropped positions.
//
// Across the intra-op threads the output rows are split into ranges, each
// range computing its rows of every plane (from the phase rows they read,
// in scratch of its own), as the Conv before it split its rows
// (detail::kMinSplitBytes); or, when X's planes are small, the planes are
// (detail::split_by_planes), each range computing all rows of its planes.
// With one range, a range is the whole plane.
template <typename T>
void conv_depthwise_2d(const T* x, const T* wt, const T* bias, const ConvShape& cs, T* y) {
  const Window& w = cs.w;
  const int64_t H = w.in[1], W = w.in[2], OH = w.out[1], OW = w.out[2], KH = w.k[1], KW = w.k[2];
  const int64_t sh = w.s[1], sw = w.s[2], dh = w.d[1], dw = w.d[2], pt = w.pb[1], pl = w.pb[2];
  if (OH == 0 || OW == 0) return;
  const int64_t planes = cs.N * cs.C;
  // Ranges of rows, or of planes when X's are small, as the kernel that
  // wrote X split it (detail::split_by_planes).
  const int64_t split = conv_row_ranges(cs, OH, int64_t(sizeof(T)));
  const bool by_rows = split == 1 || !detail::split_by_planes(planes, H * W * int64_t(sizeof(T)));
  const int64_t ranges = by_rows ? split : detail::intra_op_ranges(planes, 1);
  const int64_t range_rows = by_rows ? (OH + ranges - 1) / ranges : OH;  // the most output rows a range has
  const int64_t Hpad = (range_rows - 1) * sh + (KH - 1) * dh + 1, Wpad = (OW - 1) * sw + (KW - 1) * dw + 1;
  const int64_t Hq = (Hpad + sh - 1) / sh, Wq = (Wpad + sw - 1) / sw;
  const int64_t phase_plane = (Hq + 1) * Wq, phases = sh * sw;
  const int64_t range_floats = phases * phase_plane + range_rows * Wq;  // the phase planes, then the output run
  std::vector<int64_t> tap_at(static_cast<size_t>(KH * KW));  // tap (kh, kw): its offset from j
  for (int64_t kh = 0; kh < KH; ++kh)
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t r = kh * dh, c = kw * dw;
      tap_at[static_cast<size_t>(kh * KW + kw)] = (r % sh * sw + c % sw) * phase_plane + r / sh * Wq + c / sw;
    }
  const memory::Scratch<T> scratch(static_cast<size_t>(ranges * range_floats));
  detail::parallel_for_ranges(by_rows ? OH : planes, ranges, [&](int64_t range, int64_t begin, int64_t end) {
    T* const phased = scratch.get() + range * range_floats;
    T* const run = phased + phases * phase_plane;
    const int64_t oh0 = by_rows ? begin : 0, rows = by_rows ? end - begin : OH;
    const int64_t p0 = by_rows ? 0 : begin, p1 = by_rows ? planes : end;
    // The taps whose row reads X for some output row of the range: a row of
    // taps that reads only padding adds zeros. A 5x5 kernel over a map 2
    // rows high (ppocr_v2_cls's [1,200,2,96]) has 2 such rows of 5.
    std::vector<size_t> live;
    for (int64_t kh = 0; kh < KH; ++kh) {
      const int64_t first = oh0 * sh + kh * dh - pt, last = (oh0 + rows - 1) * sh + kh * dh - pt;
      if (last < 0 || first >= H) continue;
      for (int64_t kw = 0; kw < KW; ++kw) live.push_back(static_cast<size_t>(kh * KW + kw));
    }
    std::vector<Tap<T>> taps(live.size());
    // The padding is zero in every plane and at the same positions: zeroed
    // once, for the range; each plane then copies only its rows' inside
    // parts over the last plane's (ppocr_v2_cls's 2-row maps padded to 7
    // rows spent more in zeroing and copy calls per plane than in the taps).
    std::fill(phased, phased + phases * phase_plane, T{});
    // Per column phase, the positions q whose column q*sw + cp - pl is
    // inside X: the same in every row (found once: two divisions each).
    std::vector<int64_t> phase_lo(static_cast<size_t>(sw)), phase_hi(static_cast<size_t>(sw));
    for (int64_t cp = 0; cp < sw; ++cp)
      taps_inside(cp - pl, sw, W, Wq, phase_lo[static_cast<size_t>(cp)], phase_hi[static_cast<size_t>(cp)]);
    for (int64_t plane = p0; plane < p1; ++plane) {  // image plane / C, input channel plane % C
      const T* xc = x + plane * H * W;
      for (int64_t rp = 0; rp < sh; ++rp)
        for (int64_t i = 0; i <= Hq; ++i) {  // the spare row too
          const int64_t ih = (oh0 + i) * sh + rp - pt;
          if (ih < 0 || ih >= H) continue;
          for (int64_t cp = 0; cp < sw; ++cp) {
            T* dst = phased + (rp * sw + cp) * phase_plane + i * Wq;
            const int64_t lo = phase_lo[static_cast<size_t>(cp)], hi = phase_hi[static_cast<size_t>(cp)];
            const T* src = xc + ih * W + lo * sw + cp - pl;  // position lo's input element
            if (sw == 1)
              copy_short(dst + lo, src, hi - lo);
            else if (sw == 2)  // a constant stride: the loads vectorise as deinterleaving shuffles
              for (int64_t q = 0; q < hi - lo; ++q) dst[lo + q] = src[2 * q];
            else
              for (int64_t q = 0; q < hi - lo; ++q) dst[lo + q] = src[q * sw];
          }
        }
      // The plane's output channels: image plane / C's channels m = c * Mg + j, one after another in Y.
      for (int64_t om = plane * cs.Mg; om < (plane + 1) * cs.Mg; ++om) {
        const int64_t m = om % cs.M;
        const T* wm = wt + m * KH * KW;
        for (size_t t = 0; t < taps.size(); ++t) taps[t] = {phased + tap_at[live[t]], wm[live[t]]};
        fill_value(run, rows * Wq, bias ? bias[m] : T{});
        accumulate_taps(run, taps.data(), taps.size(), rows * Wq);
        T* ym = y + om * OH * OW + oh0 * OW;
        for (int64_t oh = 0; oh < rows; ++oh) copy_short(ym + oh * OW, run + oh * Wq, OW);
      }
    }
  });
}

// A 1-D depthwise conv over short rows and many channels (Silero VAD's
// [1,258,8] by 5 taps, and its [1,16..32,1..4] ones): computed across the
// channels instead of along each row. Row by row (conv_depthwise_2d), a
// row of 8 outputs filled a vector by half and the per-row setup was the
// cost: 6 us for 10K multiply-adds. Here X is transposed, zero-padded, to
// [padded position][channel] and W to [tap][channel], each output position
// is the bias plus, tap by tap, a product of whole channel vectors, and the
// result is transposed back. The padding adds w * 0, as the row loop's
// zeroed phase rows do. One thread: the whole conv is a few microseconds.
bool is_depthwise_short_1d(const ConvShape& cs) {
  return cs.w.spatial == 1 && cs.Cg == 1 && cs.group == cs.C && cs.Mg == 1 && cs.C >= kMinChannelsAcross &&
         cs.w.out[2] <= kMaxRowAcross;
}

// yt[o][c] = bias[c] (0 without) + sum over k of wk[k][c] * xt[o * s + k * d][c].
template <typename T>
EPPROF_SIMD_CLONES void taps_across_channels(T* yt, const T* xt, const T* wk, const T* bias, int64_t C, int64_t OL,
                                             int64_t K, int64_t s, int64_t d) noexcept {
  for (int64_t o = 0; o < OL; ++o) {
    T* row = yt + o * C;
    for (int64_t c = 0; c < C; ++c) row[c] = bias ? bias[c] : T{};
    for (int64_t k = 0; k < K; ++k) {
      const T* xr = xt + (o * s + k * d) * C;
      const T* wr = wk + k * C;
      for (int64_t c = 0; c < C; ++c) row[c] += wr[c] * xr[c];
    }
  }
}

template <typename T>
void conv_depthwise_short_1d(const T* x, const T* wt, const T* bias, const ConvShape& cs, T* y) {
  const Window& w = cs.w;
  const int64_t C = cs.C, L = w.in[2], OL = w.out[2], K = w.k[2], s = w.s[2], d = w.d[2], pl = w.pb[2];
  if (OL == 0) return;
  const int64_t P = (OL - 1) * s + (K - 1) * d + 1;  // padded positions the outputs read
  const memory::Scratch<T> scratch(static_cast<size_t>((P + K + OL) * C));
  T* const xt = scratch.get();
  T* const wk = xt + P * C;
  T* const yt = wk + K * C;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < K; ++k) wk[k * C + c] = wt[c * K + k];
  // The input positions that land in [0, P) once padded.
  const int64_t i0 = std::min(std::max<int64_t>(0, -pl), L), i1 = std::max(i0, std::min(L, P - pl));
  for (int64_t n = 0; n < cs.N; ++n) {
    const T* xn = x + n * C * L;
    T* yn = y + n * C * OL;
    std::fill(xt, xt + P * C, T{});
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = i0; i < i1; ++i) xt[(i + pl) * C + c] = xn[c * L + i];
    taps_across_channels(yt, xt, wk, bias, C, OL, K, s, d);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t o = 0; o < OL; ++o) yn[c * OL + o] = yt[o * C + c];
  }
}

// Conv's B for sgemm_packing (float): the im2col matrix of one image's
// group (its channels start at x), columns numbered from output row r0 on,
// n of them, packed straight from X into sgemm's panels: the matrix is never
// written out, then read back and packed. Each panel row is an im2col_run
// per output row it covers, as im2col_rows writes them.
struct Im2colPanels {
  const float* x;
  const Window* w;
  int64_t r0, n;
};

// One depth of pack_im2col_panels where output row oh reads input row
// oh + ih0 at every tap and rows are OW wide in X and Y: column j of the
// product (output row r0 + j / OW, column j % OW) reads X's element
// (ih0 + r0) * OW + off + j of the channel plane xc, where that row lies
// inside X and the column's tap inside its row ([lo, hi)); zero elsewhere.
// Columns [j0, end) of panels nr wide, nc / nr of them kc * nr apart from
// `row`, this depth's row of the first; the columns past `end` are zero.
void pack_adjacent_rows(const float* xc, const Window& w, int64_t r0, int64_t ih0, int64_t off, int64_t lo,
                        int64_t hi, int64_t j0, int64_t end, int64_t nc, int64_t nr, int64_t kc, float* row) {
  const int64_t OW = w.out[2];
  // Output rows whose input row lies inside X, and the columns from the
  // first one's first tap inside to the last one's last: all of X there.
  const int64_t first = std::max(r0, -ih0), last = std::min(w.out[1], w.in[1] - ih0);
  int64_t a0 = 0, b0 = 0;
  if (first < last && lo < hi) a0 = (first - r0) * OW + lo, b0 = (last - 1 - r0) * OW + hi;
  const int64_t at = (ih0 + r0) * OW + off;  // column j's element: xc[at + j], for j in [a0, b0)
  for (int64_t c0 = j0; c0 < j0 + nc; c0 += nr, row += kc * nr) {
    const int64_t c1 = c0 + nr;
    // The panel row is an im2col run of columns [c0, c1) over the contiguous
    // stretch [a0, b0) of X, cut at `end`.
    im2col_run(row, xc, c0, c1, a0, std::min(b0, end), 1, at);
    const int64_t a = std::clamp(a0, c0, c1), b = std::clamp(std::min(b0, end), a, c1);
    // Inside [a, b), the columns whose tap falls in a row's padding.
    if (lo > 0 || hi < OW)
      for (int64_t rs = a / OW * OW; rs < b; rs += OW) {
        const int64_t z0 = std::max(rs, a), z1 = std::min(rs + lo, b);
        if (z0 < z1) zero_short(row + (z0 - c0), z1 - z0);
        const int64_t e0 = std::max(rs + hi, a), e1 = std::min(rs + OW, b);
        if (e0 < e1) zero_short(row + (e0 - c0), e1 - e0);
      }
  }
}

void pack_im2col_panels(const void* context, int64_t p0, int64_t kc, int64_t j0, int64_t nc, int64_t nr,
                        float* dst) {
  const Im2colPanels& s = *static_cast<const Im2colPanels*>(context);
  const Window& w = *s.w;
  const int64_t OW = w.out[2], taps = w.k_size(), plane_taps = w.k[1] * w.k[2];
  const int64_t end = std::min(s.n, j0 + nc);  // columns past it are padding
  const bool unit_stride = w.s[2] == 1;
  // A "same" conv of stride 1 over rows as wide as its output's: a tap's
  // input rows for consecutive output rows are consecutive in X, so each
  // depth's row of a panel is one contiguous run of X (see
  // pack_adjacent_rows). Narrow rows (oww_embedding's 8, 4 and 2 columns)
  // cost more per row in im2col_run's bookkeeping than in their copy.
  const bool adjacent_rows = unit_stride && w.s[1] == 1 && w.in[2] == OW && w.in[0] == 1 && w.out[0] == 1;
  // Depth by depth (one input channel and tap each), the block's columns in
  // order, the output row and panel position followed without divisions.
  for (int64_t p = 0; p < kc; ++p) {
    const int64_t c = (p0 + p) / taps, t = (p0 + p) % taps;
    const int64_t kd = t / plane_taps, kh = t / w.k[2] % w.k[1], kw = t % w.k[2];
    const float* xc = s.x + c * w.in_size();
    const int64_t off = kw * w.d[2] - w.pb[2];
    int64_t lo, hi;
    taps_inside(off, w.s[2], w.in[2], OW, lo, hi);
    if (adjacent_rows) {
      pack_adjacent_rows(xc, w, s.r0, kh * w.d[1] - w.pb[1], off, lo, hi, j0, end, nc, nr, kc, dst + p * nr);
      continue;
    }
    const int64_t r = s.r0 + j0 / OW;
    int64_t ow = j0 % OW, od = r / w.out[1], oh = r % w.out[1];
    float* panel = dst + p * nr;  // this depth's row of the current panel
    int64_t q = 0;                // position in it
    for (int64_t col = j0; col < end;) {
      const int64_t len = std::min(std::min(nr - q, OW - ow), end - col);
      const float* src = tap_row(xc, w, od, oh, kd, kh);
      float* out = panel + q;
      if (src && unit_stride && len == 32 && ow >= lo && ow + len <= hi)
        // The common case, a whole row of AVX-512's panels inside the input:
        // one copy of a constant size the compiler inlines.
        std::memcpy(out, src + ow + off, 32 * sizeof(float));
      else
        im2col_run(out, src, ow, ow + len, lo, hi, w.s[2], off);
      col += len;
      if ((q += len) == nr) q = 0, panel += kc * nr;
      if ((ow += len) == OW && (ow = 0, ++oh == w.out[1])) oh = 0, ++od;
    }
    if (q > 0) zero_short(panel + q, nr - q);  // the last panel's padding columns
    for (panel += q > 0 ? kc * nr : 0; panel < dst + (nc / nr) * kc * nr; panel += kc * nr) zero_short(panel, nr);
  }
}

// The columns of pack_im2col_panels' matrix, each whole (BPacker::columns):
// column j0 + j, output position r0 * OW + j0 + j, as its k depths in
// order (channel, then tap). The few-column sgemm reads B so: a 1-D conv
// over a few output positions, an audio model's STFT or encoder. Packed
// into panels a depth at a time and transposed, Silero VAD's encoder Conv
// ([1,129,3] by 128 filters of 3 taps) spent longer packing than in its
// product. Each channel's and row tap's KW taps are one run of X; KW is a
// constant for the common kernel widths (1, 3, 5, 7), so that the run of an
// interior column is a few moves (KW 0: any width). The columns of one
// output row share their input rows: each is found once for all of them,
// and each column's taps inside the row once for all channels.
template <int KW>
void pack_columns(const Im2colPanels& s, int64_t j0, int64_t nc, int64_t k, float* dst) {
  const Window& w = *s.w;
  const int64_t OW = w.out[2], kw = KW > 0 ? KW : w.k[2], dw = w.d[2];
  const int64_t channels = k / w.k_size();
  constexpr int64_t kChunk = 8;  // columns whose taps are worked out at once (the few-column sgemm's most)
  for (int64_t ja = j0; ja < j0 + nc;) {  // [ja, jb): columns of one output row
    const int64_t r = s.r0 + ja / OW, od = r / w.out[1], oh = r % w.out[1];
    const int64_t jb = std::min({j0 + nc, (ja / OW + 1) * OW, ja + kChunk});
    int64_t iw0[kChunk], lo[kChunk], hi[kChunk];  // per column: tap 0's input column, the taps inside the row
    bool inside[kChunk];
    for (int64_t j = ja; j < jb; ++j) {
      const int64_t i = j - ja;
      iw0[i] = j % OW * w.s[2] - w.pb[2];
      taps_inside(iw0[i], dw, w.in[2], kw, lo[i], hi[i]);
      inside[i] = lo[i] == 0 && hi[i] == kw && dw == 1;
    }
    float* run = dst;  // the current tap run's place in column ja
    for (int64_t c = 0; c < channels; ++c) {
      const float* xc = s.x + c * w.in_size();
      for (int64_t kd = 0; kd < w.k[0]; ++kd)
        for (int64_t kh = 0; kh < w.k[1]; ++kh, run += kw) {
          const float* src = tap_row(xc, w, od, oh, kd, kh);
          float* col = run;
          for (int64_t i = 0; i < jb - ja; ++i, col += k) {
            if (src && inside[i]) {
              for (int64_t t = 0; t < kw; ++t) col[t] = src[iw0[i] + t];
              continue;
            }
            for (int64_t t = 0; t < kw; ++t) col[t] = src && t >= lo[i] && t < hi[i] ? src[iw0[i] + t * dw] : 0.0f;
          }
        }
    }
    dst += (jb - ja) * k;
    ja = jb;
  }
}

void pack_im2col_columns(const void* context, int64_t j0, int64_t nc, int64_t k, float* dst) {
  const Im2colPanels& s = *static_cast<const Im2colPanels*>(context);
  switch (s.w->k[2]) {
    case 1: return pack_columns<1>(s, j0, nc, k, dst);
    case 3: return pack_columns<3>(s, j0, nc, k, dst);
    case 5: return pack_columns<5>(s, j0, nc, k, dst);
    case 7: return pack_columns<7>(s, j0, nc, k, dst);
    default: return pack_columns<0>(s, j0, nc, k, dst);
  }
}

// Bytes of im2col columns per tile: small enough to still be in L2 when the
// gemm reads them, large enough for the gemm to run at speed.
constexpr int64_t kColTileBytes = 512 << 10;

// Output channels a channel block of the gemm lowering starts on a
// multiple of (the nearest one to an even split), and holds at least: the
// rows of the AVX-512 sgemm's register tile. Blocks of 32, whole row blocks
// of every kernel (kSplitGemmAlign), split oww_embedding's 72 and 96
// channels 64 + 8 and 64 + 32, and on two threads its Convs took 45-70%
// longer than split by rows.
constexpr int64_t kChannelBlock = 8;

// How many blocks of output channels each of the gemm lowering's `ranges`
// ranges of rows splits into: 1, unless there are fewer ranges than threads
// while the conv is work enough to split, or reads weights enough
// (kMinSplitBytes of W: each thread then reads its blocks' part). A 1-D
// conv with a few output positions, an audio model's STFT, has one output
// row: openWakeWord's melspectrogram, [1,1,1760] by 257 filters of 512
// taps, stride 160, 8 positions, took 57 us on one thread and on two, and
// 35 us split in 2 blocks; Silero VAD's, 258 filters of 256 taps on 3
// positions, is a fifth of the arithmetic but 264 KB of weights, and its
// runs at 2 threads went from 0.119 to 0.100 ms. Each block computes its
// channels of the rows, packing the same columns of X on its own: a
// product's packing is a small part of it when it has channels enough to
// split. (Run whole, the 1x1 and im2col products would split by rows in
// blas_gemm for their arithmetic; the runtime's sgemm fed from X would not,
// and none would for weights alone. At most Mg / kChannelBlock blocks:
// their starts are kChannelBlock or more apart, so none is empty.)
int64_t channel_blocks(const ConvShape& cs, int64_t ranges, int64_t element_bytes) {
  const int64_t threads = detail::intra_op_threads();
  const int64_t weight_bytes = element_bytes * cs.M * cs.K;
  if (ranges >= threads || (cs.macs() < detail::kMinSplitMacs && weight_bytes < detail::kMinSplitBytes)) return 1;
  const int64_t wanted = (threads + ranges - 1) / ranges;
  return std::max<int64_t>(1, std::min(wanted, cs.Mg / kChannelBlock));
}

// The gemm lowering. Every image's every group's output rows, in order, are
// split into ranges across the intra-op threads (one range with one
// thread), and when there are fewer ranges than threads each range's output
// channels into blocks (channel_blocks); one image of small output planes
// splits by channel blocks alone (detail::split_by_planes), as the
// element-wise ops after it split Y by planes. A task, one range's block, sets
// its rows of its channels of Y to the bias (null: the products overwrite
// them), then im2cols a
// tile of its rows at a time into its own scratch and gemms it onto Y's
// matching columns, which no other task writes. The bias
// is written by the thread that accumulates onto it: filled by the caller
// beforehand, half of Y was in the other core's cache when the worker's
// gemm read it (the CNN's 1x1 stride-2 Conv took 26 us at 2 threads, 12 at
// 1). A whole-image im2col buffer can be many times the input (9x for
// 3x3) and falls out of cache before the gemm reads it. A 1x1 stride-1
// unpadded kernel reads X itself as the gemm's B, a range's rows of an
// image in one gemm.
// What FusedConv does to Y beyond the conv, where the gemm lowering runs
// it: fn(context, y, offset, count) finishes Y's elements [offset, offset +
// count), offset from Y's start (so Z, of Y's shape, is read at the same
// offset). Each task calls it on the rows it just accumulated, on the core
// whose cache holds them: run after the conv as an element-wise pass split
// its own way, it read half of Y from the other core (the CNN's 1x1
// stride-2 FusedConv with its residual took as long on two threads as on
// one).
struct RowEpilogue {
  void (*fn)(const void* context, float* y, int64_t offset, int64_t count);
  const void* context;
};

template <typename T>
void conv_im2col_gemm(const T* x, const T* wt, const T* bias, const ConvShape& cs, T* y,
                      const RowEpilogue* post = nullptr) {
  const Window& w = cs.w;
  if (cs.P == 0 || cs.Mg == 0) return;
  const bool pointwise = is_pointwise(w);
  const int64_t rows = w.out[0] * w.out[1], OW = w.out[2];
  // Float where the runtime's sgemm runs the product: its panels are packed
  // from X (pack_im2col_panels), with no im2col scratch; a range's rows of an
  // image and group are one product. Not for a strided 1x1 kernel, whose
  // im2col is a subsampled copy of X, a row at a time: packed a depth at a
  // time, the CNN's 1x1 stride-2 Conv spent 37% of its time packing (17.4
  // us against 14.5 through the scratch).
  const bool from_x = std::is_same_v<T, float> && !pointwise && w.k_size() > 1 && sgemm_runs(cs.Mg, OW);
  const int64_t row_bytes = int64_t(sizeof(T)) * std::max<int64_t>(cs.K * OW, 1);  // of im2col, per output row
  const int64_t tile_rows = pointwise ? rows : std::clamp<int64_t>(kColTileBytes / row_bytes, 1, rows);
  const int64_t units = cs.N * cs.group * rows;
  const int64_t split = conv_row_ranges(cs, units, int64_t(sizeof(T)));
  // One image of small planes splits by channels alone (detail::split_by_planes).
  const bool by_channels = split > 1 && units == rows && cs.Mg >= 2 * kChannelBlock &&
                           detail::split_by_planes(cs.M, rows * OW * int64_t(sizeof(T)));
  const int64_t ranges = by_channels ? 1 : split;
  const int64_t blocks = by_channels ? std::min<int64_t>(cs.Mg / kChannelBlock, detail::intra_op_threads())
                                     : channel_blocks(cs, ranges, int64_t(sizeof(T)));
  const int64_t tasks = ranges * blocks;
  // Each task's tiles, one after another. Uninitialised: im2col_rows writes every element of a tile.
  const int64_t task_col =
      pointwise || from_x ? 0 : cs.K * std::min(tile_rows, (units + ranges - 1) / ranges) * OW;
  const memory::Scratch<T> cols(static_cast<size_t>(tasks * task_col));
  detail::parallel_for(tasks, [&](int64_t task) {
    const int64_t range = task / blocks, block = task % blocks;
    const int64_t begin = units * range / ranges, end = units * (range + 1) / ranges;
    // Channels [m0, m1) of each group, blocks starting on kChannelBlock.
    auto block_start = [&](int64_t b) {
      return b == blocks ? cs.Mg : (cs.Mg * b / blocks + kChannelBlock / 2) / kChannelBlock * kChannelBlock;
    };
    const int64_t m0 = block_start(block), m1 = block_start(block + 1), mc = m1 - m0;
    T* col = cols.get() + task * task_col;
    for (int64_t u = begin; u < end;) {  // u: row u % rows of image and group u / rows
      const int64_t n = u / rows / cs.group, g = u / rows % cs.group, r0 = u % rows;
      const int64_t r1 = std::min(rows, r0 + end - u);
      u += r1 - r0;
      const T* xg = x + (n * cs.C + g * cs.Cg) * w.in_size();
      const T* wg = wt + (g * cs.Mg + m0) * cs.K;
      T* yg = y + (n * cs.M + g * cs.Mg + m0) * cs.P;
      // Without a bias the product overwrites Y (beta 0: the CNN's 1x1
      // stride-2 downsample spent 11% of its time filling Y with zeros).
      const bool fill = bias || cs.K == 0;
      const T beta = fill ? T(1) : T(0);
      if (fill)
        for (int64_t m = 0; m < mc; ++m)
          fill_value(yg + m * cs.P + r0 * OW, (r1 - r0) * OW, bias ? bias[g * cs.Mg + m0 + m] : T{});
      [&] {  // these rows' product onto the bias
        if (cs.K == 0) return;  // nothing to add to the bias
        if (pointwise) {
          gemm_acc(mc, (r1 - r0) * OW, cs.K, wg, xg + r0 * OW, cs.P, beta, yg + r0 * OW, cs.P);
          return;
        }
        if constexpr (std::is_same_v<T, float>) {
          if (from_x) {
            const Im2colPanels panels{xg, &w, r0, (r1 - r0) * OW};
            // sgemm_runs(Mg, OW) held, so it holds for every product of OW columns or more and Mg rows or fewer.
            const BPacker packer{pack_im2col_panels, &panels, pack_im2col_columns};
            if (!sgemm_packing(mc, panels.n, cs.K, 1.0f, wg, cs.K, packer, beta, yg + r0 * OW, cs.P))
              fail("Conv: the runtime's sgemm declined a " + std::to_string(mc) + " x " +
                   std::to_string(panels.n) + " product it runs");
            return;
          }
        }
        // Tiles of equal height (a last sliver would be a slow gemm of its own).
        const int64_t tiles = (r1 - r0 + tile_rows - 1) / tile_rows, height = (r1 - r0 + tiles - 1) / tiles;
        for (int64_t t0 = r0; t0 < r1; t0 += height) {
          const int64_t t1 = std::min(r1, t0 + height), n_cols = (t1 - t0) * OW;
          im2col_rows(xg, cs.Cg, w, t0, t1, col);
          gemm_acc(mc, n_cols, cs.K, wg, col, n_cols, beta, yg + t0 * OW, cs.P);
        }
      }();
      if constexpr (std::is_same_v<T, float>) {
        if (post)
          for (int64_t m = 0; m < mc; ++m) post->fn(post->context, y, (yg - y) + m * cs.P + r0 * OW, (r1 - r0) * OW);
      }
    }
  });
}

// The conv of X and W, whose shapes `cs` resolved. FusedConv's epilogue
// (null for Conv) comes two ways: `epilogue`, applied by the implicit GEMM
// as it stores, when it runs the conv, and `post`, applied by the gemm
// lowering to each task's rows, when it does (float only). *finished says
// whether either was.
template <typename T>
Tensor conv(const Tensor& x, const Tensor& wt, const Tensor* bias, const ConvShape& cs,
            const DirectEpilogue* epilogue = nullptr, const RowEpilogue* post = nullptr, bool* finished = nullptr) {
  if (bias && (bias->dtype() != x.dtype() || bias->rank() != 1 || bias->size() != cs.M))
    fail("Conv bias B must be " + std::string(type_name(x.dtype())) + "[" + std::to_string(cs.M) + "], got " +
         bias->description());
  // Every element is written: the depthwise loop fills each row before it
  // accumulates; the gemm accumulates onto the bias, or onto zeros.
  Tensor out = Tensor::uninitialized(x.dtype(), cs.out_shape);
  T* y = out.mutable_data<T>();
  const T* b = bias ? bias->data<T>() : nullptr;
  if (is_depthwise_short_1d(cs)) {
    conv_depthwise_short_1d(x.data<T>(), wt.data<T>(), b, cs, y);
    return out;
  }
  if (is_depthwise_2d(cs)) {
    conv_depthwise_2d(x.data<T>(), wt.data<T>(), b, cs, y);
    return out;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (conv_direct_runs(cs)) {
      conv_direct(x.data<T>(), wt.data<T>(), b, cs, y, epilogue);
      if (finished) *finished = epilogue != nullptr;
      return out;
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    conv_im2col_gemm(x.data<T>(), wt.data<T>(), b, cs, y, post);
    if (finished) *finished = post != nullptr;
  } else {
    conv_im2col_gemm(x.data<T>(), wt.data<T>(), b, cs, y);
  }
  return out;
}

// The `group` attribute of a Conv or FusedConv, checked.
int64_t conv_group(const Node& node) {
  const int64_t group = node.attr_int("group", 1);
  if (group <= 0) fail(node.describe() + ": group must be positive, got " + std::to_string(group));
  return group;
}

std::unique_ptr<Kernel> make_conv(const Node& node) {
  const WindowAttrs attrs = WindowAttrs::from_node(node);
  const int64_t group = conv_group(node);
  return make_kernel([attrs, group](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& wt = ctx.input(1);
    if (wt.dtype() != x.dtype()) fail("Conv weight W " + wt.description() + " must have the type of X " + x.description());
    auto shape = [&] { return resolve_conv(attrs, group, x.shape(), wt.shape(), "Conv"); };
    if (x.dtype() == DataType::Float)
      ctx.outputs[0] = conv<float>(x, wt, ctx.optional_input(2), shape());
    else if (x.dtype() == DataType::Double)
      ctx.outputs[0] = conv<double>(x, wt, ctx.optional_input(2), shape());
    else
      fail("Conv input X must be float or double, got " + x.description());
  });
}

// ONNX Runtime's contrib FusedConv (com.microsoft, since version 1):
// Y = activation(Conv(X, W, B) + Z), Z optional and of Y's shape, float
// only. The runtime's fusion pass (fusion.h) makes one of Conv [+ Add]
// [+ Relu | Clip]; a model ONNX Runtime optimised and saved may hold any.
enum class Activation { kNone, kRelu, kClip, kLeakyRelu, kSigmoid, kTanh, kHardSigmoid };

struct Epilogue {
  Activation act = Activation::kNone;
  float a = 0.0f, b = 0.0f;  // Clip: min, max; LeakyRelu: alpha; HardSigmoid: alpha, beta
};

Epilogue epilogue_of(const Node& node) {
  Epilogue e;
  const std::string act = node.attr_string("activation", "");
  const std::vector<float> p = node.has_attr("activation_params") ? node.attr_floats("activation_params")
                                                                  : std::vector<float>{};
  auto params = [&](size_t n) {
    if (p.size() != n)
      fail(node.describe() + ": activation " + act + " takes " + std::to_string(n) + " activation_params, got " +
           std::to_string(p.size()));
  };
  if (act.empty()) {
    params(0);
  } else if (act == "Relu") {
    params(0), e.act = Activation::kRelu;
  } else if (act == "Sigmoid") {
    params(0), e.act = Activation::kSigmoid;
  } else if (act == "Tanh") {
    params(0), e.act = Activation::kTanh;
  } else if (act == "Clip") {
    params(2), e.act = Activation::kClip, e.a = p[0], e.b = p[1];
  } else if (act == "LeakyRelu") {
    params(1), e.act = Activation::kLeakyRelu, e.a = p[0];
  } else if (act == "HardSigmoid") {
    params(2), e.act = Activation::kHardSigmoid, e.a = p[0], e.b = p[1];
  } else {
    fail(node.describe() + ": unknown activation '" + act +
         "' (FusedConv takes Relu, Clip, LeakyRelu, Sigmoid, Tanh or HardSigmoid)");
  }
  return e;
}

// One element of Y: + Z, then the activation, by activations.h as the ops do.
template <bool HasZ, Activation A>
[[gnu::always_inline]] inline void epilogue_loop(float* y, const float* z, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) {
    float v = y[i];
    if constexpr (HasZ) v += z[i];
    if constexpr (A == Activation::kRelu) v = activation::relu(v);
    if constexpr (A == Activation::kClip) v = activation::clip(v, a, b);
    if constexpr (A == Activation::kLeakyRelu) v = activation::leaky_relu(v, a);
    if constexpr (A == Activation::kSigmoid) v = activation::sigmoid(v);
    if constexpr (A == Activation::kTanh) v = activation::tanh(v);
    if constexpr (A == Activation::kHardSigmoid) v = activation::hard_sigmoid(v, a, b);
    y[i] = v;
  }
}

template <bool HasZ>
EPPROF_SIMD_CLONES void apply_epilogue(float* y, const float* z, int64_t n, const Epilogue& e) noexcept {
  switch (e.act) {
    case Activation::kNone: epilogue_loop<HasZ, Activation::kNone>(y, z, n, e.a, e.b); break;
    case Activation::kRelu: epilogue_loop<HasZ, Activation::kRelu>(y, z, n, e.a, e.b); break;
    case Activation::kClip: epilogue_loop<HasZ, Activation::kClip>(y, z, n, e.a, e.b); break;
    case Activation::kLeakyRelu: epilogue_loop<HasZ, Activation::kLeakyRelu>(y, z, n, e.a, e.b); break;
    case Activation::kSigmoid: epilogue_loop<HasZ, Activation::kSigmoid>(y, z, n, e.a, e.b); break;
    case Activation::kTanh: epilogue_loop<HasZ, Activation::kTanh>(y, z, n, e.a, e.b); break;
    case Activation::kHardSigmoid: epilogue_loop<HasZ, Activation::kHardSigmoid>(y, z, n, e.a, e.b); break;
  }
}

// FusedConv's epilogue as the gemm lowering applies it (RowEpilogue).
struct FusedRows {
  const float* z;  // null: no Z
  Epilogue e;
  static void apply(const void* context, float* y, int64_t offset, int64_t count) {
    const auto& self = *static_cast<const FusedRows*>(context);
    if (self.z)
      apply_epilogue<true>(y + offset, self.z + offset, count, self.e);
    else
      apply_epilogue<false>(y + offset, nullptr, count, self.e);
  }
};

std::unique_ptr<Kernel> make_fused_conv(const Node& node) {
  const WindowAttrs attrs = WindowAttrs::from_node(node);
  const int64_t group = conv_group(node);
  const Epilogue e = epilogue_of(node);
  return make_kernel([attrs, group, e](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& wt = ctx.input(1);
    if (x.dtype() != DataType::Float || wt.dtype() != DataType::Float)
      fail("FusedConv X and W must be float, got " + x.description() + " and " + wt.description());
    const ConvShape cs = resolve_conv(attrs, group, x.shape(), wt.shape(), "FusedConv");
    const Tensor* z = ctx.optional_input(3);
    if (z && (z->dtype() != DataType::Float || z->shape() != cs.out_shape))
      fail("FusedConv Z must be float" + shape_to_string(cs.out_shape) + " (Y's shape), got " + z->description());
    // Z, Relu, Clip and LeakyRelu go into the implicit GEMM's stores where
    // it runs.
    DirectEpilogue direct;
    direct.z = z ? z->data<float>() : nullptr;
    direct.lo = e.a, direct.hi = e.b, direct.alpha = e.a;
    bool in_stores = true;
    switch (e.act) {
      case Activation::kNone: direct.act = DirectEpilogue::Act::kNone; break;
      case Activation::kRelu: direct.act = DirectEpilogue::Act::kRelu; break;
      case Activation::kClip: direct.act = DirectEpilogue::Act::kClip; break;
      case Activation::kLeakyRelu: direct.act = DirectEpilogue::Act::kLeakyRelu; break;
      default: in_stores = false;
    }
    const bool has_epilogue = z || e.act != Activation::kNone;
    const FusedRows rows{direct.z, e};
    const RowEpilogue post{FusedRows::apply, &rows};
    bool finished = false;
    Tensor y = conv<float>(x, wt, ctx.optional_input(2), cs, in_stores ? &direct : nullptr,
                           has_epilogue ? &post : nullptr, &finished);
    if (!finished && has_epilogue) {  // depthwise, or the implicit GEMM with an activation its stores lack
      // Split as the conv split Y (element_split.h): each thread reads
      // what it wrote.
      float* yd = y.mutable_data<float>();
      const int64_t bytes = int64_t(sizeof(float)) * (z ? 2 : 1) * y.size();
      split_elements(y.shape(), int64_t(sizeof(float)), bytes,
                     [&](int64_t begin, int64_t count) { FusedRows::apply(&rows, yd, begin, count); });
    }
    ctx.outputs[0] = std::move(y);
  });
}

}  // namespace

void register_conv(std::vector<KernelDef>& t) {
  t.push_back({"Conv", 1, 17, make_conv});
  t.push_back({"FusedConv", 1, 1, make_fused_conv, "com.microsoft"});
}

}  // namespace epprof::rt::kernels
