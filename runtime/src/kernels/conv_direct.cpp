// Conv as an implicit GEMM (conv_direct.h). Y's rows are output channels and
// its columns output positions; the reduction runs over p = (input channel,
// kernel row, kernel column), W's own row-major order.
//
// X is first copied, once per call, into zero-padded "phase rows": padded
// column c of a padded input row goes to phase c % s, position c / s, for
// the column stride s. Output column o's tap at kernel column kw reads padded
// column o*s + kw*d = (o + q)*s + r, with kw*d = q*s + r: position o + q of
// phase r. So for every p, a vector's worth of consecutive output columns of
// one output row read as many consecutive floats, at one offset per p from
// the segment's start (the offset table). No bounds test, no packing.
//
// The output is cut into segments of one vector's lanes of one output row
// (the last of a row shorter, its extra lanes not stored). A tile is R
// output channels by S segments, R * S vector accumulators: per p it loads
// one vector per segment, broadcasts R weights read in place from W's rows,
// and issues R * S multiply-adds. A tile's segments may lie in different
// rows (an 8x16 or 16x16 map is cut into whole rows), each with its own
// start. The vector and the tile follow the CPU (Tiling below): on AVX-512,
// 16 lanes and 8 x 2 tiles; on AVX2, 8 lanes and 4 x 3.
//
// A map too narrow for whole vectors per row (4 or 2 columns) is cut flat
// instead, where the conv has stride 1: its output rows laid end to end at
// the padded rows' pitch, so that position oh * pitch + o reads padded
// position oh * pitch + o + offset, linear across rows. A segment is a
// vector of consecutive positions; those past a row's last column (the
// pitch's k - 1 extra ones) are computed and not stored (Cut below).
#include "kernels/conv_direct.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "intra_op.h"
#include "kernels/common.h"
#include "kernels/simd.h"
#include "memory_hooks.h"

namespace epprof::rt::kernels {

namespace {

// A tile for vectors V: its lanes, output channels (rows) and segments.
// Its R * S accumulators, S loaded vectors and a broadcast weight fit the
// level's registers: 32 on AVX-512 (8 x 2), 16 on AVX2 (4 x 3; 6 x 2 would
// split the usual 32 or 64 channels unevenly).
template <typename V>
struct Tiling {
  static constexpr int64_t kLanes = int64_t(sizeof(V) / sizeof(float));
  static constexpr int kRows = kLanes >= 16 ? 8 : 4;
  static constexpr int kSegs = kLanes >= 16 ? 2 : 3;
};

// The tiling of the widest vector this CPU's registers hold
// (at_widest_vector), as plain numbers; lanes 0 where that vector is
// narrower than 8 floats: below AVX2, conv_direct does not run.
struct TileShape {
  int64_t lanes = 0, rows = 0, segs = 0;
};
TileShape tile_shape() {
  TileShape t;
  at_widest_vector<float>([&](auto vec) __attribute__((always_inline)) {
    using T = Tiling<typename decltype(vec)::type>;
    if (T::kLanes >= 8) t = TileShape{T::kLanes, T::kRows, T::kSegs};
  });
  return t;
}
const TileShape& cpu_tile_shape() {
  static const TileShape t = tile_shape();
  return t;
}

// set_conv_direct_allowed's switch.
std::atomic<bool> g_allowed{true};

// The tiles' lanes hold outputs in at least this share, over the output
// map, cut by rows: with 16 lanes, a 12-column row fills 12 of 16, a
// 40-column row 40 of 48. Below it the gemm's panels, which run across
// rows, waste less: 8-column rows in 16 lanes use half; one row of 8
// outputs (openWakeWord's melspectrogram, a 1-D conv) in one 3-segment AVX2
// tile a third, and took 30% longer than the gemm.
constexpr double kMinLaneUse = 0.75;

// Cut flat, at least this share. The gemm of a map of 2 or 4 columns runs
// at a third of the implicit GEMM's rate: its im2col copies runs of 2 to 4
// floats, each with a run's bookkeeping (oww_embedding's 96-channel convs
// on 12 x 4 maps: 18 GFLOP/s, where the bundled CNN's run at 50 here).
constexpr double kMinFlatLaneUse = 0.5;

// How a conv's output map is cut into segments of `lanes` positions.
struct Cut {
  bool flat = false;    // flat: rows end to end at `pitch`; else by rows, `per_row` segments each
  int64_t pitch = 0;    // flat: positions per output row, OW and the k - 1 extra
  int64_t per_row = 0;  // by rows: segments per row
  int64_t segs = 0;     // segments per image and group (0: the implicit GEMM does not run)
};

// The share of the tiles' lanes that hold outputs, for `segs` segments of
// a map of `outputs`.
double lane_use(int64_t outputs, int64_t segs, const TileShape& t) {
  const int64_t tiles = (segs + t.segs - 1) / t.segs;
  return double(outputs) / double(tiles * t.segs * t.lanes);
}

// The cut conv_direct makes of this conv's map; segs 0 where none pays.
Cut cut_of(const Window& w, const TileShape& t) {
  Cut c;
  const int64_t rows = w.out[1], outputs = rows * w.out[2];
  c.per_row = (w.out[2] + t.lanes - 1) / t.lanes;
  if (lane_use(outputs, rows * c.per_row, t) >= kMinLaneUse) {
    c.segs = rows * c.per_row;
    return c;
  }
  if (w.s[1] != 1 || w.s[2] != 1) return c;
  c.flat = true;
  c.pitch = w.out[2] + (w.k[2] - 1) * w.d[2];
  const int64_t segs = (rows * c.pitch + t.lanes - 1) / t.lanes;
  if (lane_use(outputs, segs, t) >= kMinFlatLaneUse) c.segs = segs;
  return c;
}

// The floats past the last channel's padded plane that a range's loads
// may read, zero: a segment's lanes past its row's (or, cut flat, the
// map's) end, which are not stored, reach at most a tile's lanes and a
// kernel row's width past it.
int64_t slack_floats(const Window& w, const TileShape& t) { return t.segs * t.lanes + (w.k[2] - 1) * w.d[2] + 1; }

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
        if (s == 2)  // a constant stride: the loads vectorise as deinterleaving shuffles
          for (int64_t j = a; j < b; ++j) ph[j] = src[j * 2 + r - pl];
        else
          for (int64_t j = a; j < b; ++j) ph[j] = src[j * s + r - pl];
        for (int64_t j = b; j < l.phase; ++j) ph[j] = 0.0f;
      }
    }
}

// One segment of a tile: where its loads start in the padded copy, where it
// stores in Y (and its offset from Y's start, for Z), and which of its
// lanes it stores: its first `lanes` (0: none, a tile's missing last
// segment), or, cut flat, lane l at y + scatter[l] where that is not -1.
struct Segment {
  const float* x;
  float* y;
  ptrdiff_t at;
  int64_t lanes;
  const int32_t* scatter = nullptr;
};

// Vectors go by reference here: passed or returned by value, a 64-byte one
// warns of an ABI that, inlined, it never has.

// Lane-by-lane moves between a vector and memory, for segments that store
// some of their lanes or store them through a scatter table. Each lane's
// index is a constant (a fold over L...), so the lanes stay in the
// register: indexed by a variable, the vector went to the stack, and, these
// inlined into tile(), the compiler stored every finished accumulator there
// before choosing a path.

// The first n floats at p, 0 in the other lanes.
template <typename V, size_t... L>
[[gnu::always_inline]] inline void load_first_lanes(V& a, const float* p, int64_t n, std::index_sequence<L...>) {
  a = V{(int64_t(L) < n ? p[L] : 0.0f)...};
}

// v's first n lanes at p.
template <typename V, size_t... L>
[[gnu::always_inline]] inline void store_first_lanes(float* p, const V& v, int64_t n, std::index_sequence<L...>) {
  ((int64_t(L) < n ? (void)(p[L] = v[L]) : (void)0), ...);
}

// Lane l: z[scatter[l]], or 0 where that is -1.
template <typename V, size_t... L>
[[gnu::always_inline]] inline void gather_lanes(V& a, const float* z, const int32_t* scatter,
                                                std::index_sequence<L...>) {
  a = V{(scatter[L] >= 0 ? z[scatter[L]] : 0.0f)...};
}

// Lane l of v at y + scatter[l], where that is not -1.
template <typename V, size_t... L>
[[gnu::always_inline]] inline void scatter_lanes(float* y, const V& v, const int32_t* scatter,
                                                 std::index_sequence<L...>) {
  ((scatter[L] >= 0 ? (void)(y[scatter[L]] = v[L]) : (void)0), ...);
}

template <typename V>
using LaneIndices = std::make_index_sequence<size_t(Tiling<V>::kLanes)>;

// v += z at the segment's stored lanes (store_segment's), 0 at the others.
template <typename V>
[[gnu::always_inline]] inline void add_segment(V& v, const float* z, const Segment& seg) {
  V a;
  if (seg.scatter)
    gather_lanes(a, z, seg.scatter, LaneIndices<V>());
  else if (seg.lanes == Tiling<V>::kLanes)
    std::memcpy(&a, z, sizeof a);
  else
    load_first_lanes(a, z, seg.lanes, LaneIndices<V>());
  v += a;
}

template <typename V>
[[gnu::always_inline]] inline void store_segment(float* y, const V& v, const Segment& seg) {
  if (seg.scatter)
    scatter_lanes(y, v, seg.scatter, LaneIndices<V>());
  else if (seg.lanes == Tiling<V>::kLanes)
    std::memcpy(y, &v, sizeof v);
  else
    store_first_lanes(y, v, seg.lanes, LaneIndices<V>());
}

// The epilogue on one vector: Z at the segment's lanes added (z null:
// none), then the activation, lane by lane as activations.h computes it.
// kWhole: the segment has every lane and no scatter table (tile()).
template <bool kWhole, typename V>
[[gnu::always_inline]] inline void finish_vector(V& v, const DirectEpilogue& e, const float* z, const Segment& seg) {
  if (z) {
    if constexpr (kWhole) {
      V a;
      std::memcpy(&a, z, sizeof a);
      v += a;
    } else {
      add_segment(v, z, seg);
    }
  }
  const V zero{};
  switch (e.act) {
    case DirectEpilogue::Act::kNone: break;
    case DirectEpilogue::Act::kRelu: v = v > zero ? v : zero; break;  // NaN: 0
    case DirectEpilogue::Act::kClip:
      v = v < e.lo ? zero + e.lo : v;
      v = e.hi < v ? zero + e.hi : v;
      break;
    case DirectEpilogue::Act::kLeakyRelu:  // max(v, 0) + alpha * min(v, 0); NaN stays NaN
      v = (v < zero ? zero : v) + e.alpha * (zero < v ? zero : v);
      break;
  }
}

// The tile of rows [0, mr) of W (row r at w + r * ldw) by the segments
// `seg`, onto Y's channels from the one `first` floats past the segments'
// (row r at + r * ldy), starting from the bias, finished by `e`. Rows at or
// past mr read row 0, so that the reads stay inside W, and are not stored.
// kWhole: every segment stores all its lanes, in place (no scatter table),
// so Z is read and Y written a whole vector at a time, with no lane-by-lane
// path beside it: with one, the compiler stored every finished accumulator
// to the stack before choosing, an extra store per vector that cost a
// short reduction (the CNN's 3-channel stem, K = 27) 15% of its time.
template <typename V, bool kWhole>
[[gnu::always_inline]] inline void tile(int64_t K, const float* w, int64_t ldw, int64_t mr, const Segment* seg,
                                        const int64_t* off, const float* bias, ptrdiff_t first, int64_t ldy,
                                        const DirectEpilogue& e) {
  constexpr int R = Tiling<V>::kRows, S = Tiling<V>::kSegs;
  V acc[R][S];
  const float* wr[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const bool real = r < mr;
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) acc[r][s] = V{} + (bias && real ? bias[r] : 0.0f);
    wr[r] = w + (real ? r : 0) * ldw;
  }
  const float* x[S];
#pragma GCC unroll 4
  for (int s = 0; s < S; ++s) x[s] = seg[s].x;
  for (int64_t p = 0; p < K; ++p) {
    const int64_t o = off[p];
    V b[S];
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) std::memcpy(&b[s], x[s] + o, sizeof(V));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float a = wr[r][p];
#pragma GCC unroll 4
      for (int s = 0; s < S; ++s) acc[r][s] += a * b[s];
    }
  }
  const bool finish = e.z || e.act != DirectEpilogue::Act::kNone;
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    if (r >= mr) break;
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) {
      const ptrdiff_t row = first + r * ldy;
      V v = acc[r][s];
      if (finish) finish_vector<kWhole>(v, e, e.z ? e.z + seg[s].at + row : nullptr, seg[s]);
      if constexpr (kWhole)
        std::memcpy(seg[s].y + row, &v, sizeof v);
      else
        store_segment(seg[s].y + row, v, seg[s]);
    }
  }
}

}  // namespace

int64_t conv_direct_lanes() { return cpu_tile_shape().lanes; }

bool conv_direct_runs(const ConvShape& cs) {
  const TileShape& t = cpu_tile_shape();
  const Window& w = cs.w;
  // A 1x1 kernel (strided, or padded) has too short a reduction per
  // channel for the padded copy to pay: the gemm ran them in 60% of the time.
  if (!g_allowed.load(std::memory_order_relaxed) || t.lanes == 0 || w.spatial > 2 || w.k_size() == 1) return false;
  if (cs.K == 0 || cs.P == 0 || cs.Mg == 0) return false;
  return cut_of(w, t).segs > 0;
}

void set_conv_direct_allowed(bool allowed) { g_allowed.store(allowed, std::memory_order_relaxed); }

void conv_direct(const float* x, const float* wt, const float* bias, const ConvShape& cs, float* y,
                 const DirectEpilogue* epilogue) {
  const TileShape& ts = cpu_tile_shape();
  if (ts.lanes == 0) fail("Conv: the direct convolution needs x86-64 with AVX2 or AVX-512");
  const Window& w = cs.w;
  const Cut cut = cut_of(w, ts);
  if (cut.segs == 0) fail("Conv: the direct convolution does not run this conv");
  const int64_t OW = w.out[2], L = ts.lanes, positions = w.out[1] * cut.pitch;  // positions: cut flat
  const int64_t segs = cut.segs, tiles = (segs + ts.segs - 1) / ts.segs;
  const int64_t units = cs.N * cs.group * tiles;  // u: tile u % tiles of image and group u / tiles
  const int64_t ranges = conv_row_ranges(cs, units, int64_t(sizeof(float)));
  // The output rows that segments [i0, i1) of an image and group cover: [first, last].
  auto rows_of = [&](int64_t i0, int64_t i1, int64_t& first, int64_t& last) {
    if (cut.flat) {
      first = i0 * L / cut.pitch, last = (std::min(positions, i1 * L) - 1) / cut.pitch;
    } else {
      first = i0 / cut.per_row, last = (i1 - 1) / cut.per_row;
    }
  };
  // A range's tiles of one image and group span at most this many output rows.
  const int64_t range_segs = std::min(tiles, (units + ranges - 1) / ranges) * ts.segs;
  const int64_t span =
      cut.flat ? (range_segs * L + cut.pitch - 1) / cut.pitch : (range_segs + cut.per_row - 1) / cut.per_row;
  const PaddedLayout l = padded_layout(w, std::min(w.out[1], span + 1));
  const int64_t range_floats = cs.Cg * l.plane + slack_floats(w, ts);
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
    // Cut flat, the lanes not stored read past the padded rows of the
    // range's last output row: zeros, not whatever the buffer held.
    std::fill(cut.flat ? buf : buf + cs.Cg * l.plane, buf + range_floats, 0.0f);
    for (int64_t u = begin; u < end;) {
      // This range's tiles of one image and group: [t0, t1), output rows [oh0, oh1].
      const int64_t n = u / tiles / cs.group, g = u / tiles % cs.group, t0 = u % tiles;
      const int64_t t1 = std::min(tiles, t0 + end - u);
      u += t1 - t0;
      int64_t oh0, oh1;
      rows_of(t0 * ts.segs, std::min(segs, t1 * ts.segs), oh0, oh1);
      pad_rows(x + (n * cs.C + g * cs.Cg) * w.in_size(), cs.Cg, w, l, oh0 * w.s[1], padded_rows(w, oh1 - oh0 + 1),
               buf);
      float* const yg = y + (n * cs.M + g * cs.Mg) * cs.P;
      // Segment i of this image and group; past the last, one stored
      // nowhere. Cut flat, its lane table goes to `scatter`.
      auto segment = [&](int64_t i, int32_t* scatter) {
        if (i >= segs) return Segment{buf, yg, 0, 0};
        if (cut.flat) {
          for (int64_t lane = 0, v = i * L; lane < L; ++lane, ++v) {
            const int64_t oh = v / cut.pitch, ow = v % cut.pitch;
            scatter[lane] = v < positions && ow < OW ? int32_t(oh * OW + ow) : -1;
          }
          return Segment{buf + (i * L - oh0 * cut.pitch), yg, yg - y, L, scatter};
        }
        const int64_t oh = i / cut.per_row, ow = i % cut.per_row * L;
        return Segment{buf + (oh - oh0) * w.s[1] * l.row + ow, yg + oh * OW + ow, yg + oh * OW + ow - y,
                       std::min(L, OW - ow)};
      };
      // The tiles, built for this CPU's vectors.
      at_widest_vector<float>([&](auto vec) __attribute__((always_inline)) {
        using V = typename decltype(vec)::type;
        using T = Tiling<V>;
        if constexpr (T::kLanes >= 8) {
          int32_t scatter[T::kSegs][T::kLanes];
          for (int64_t t = t0; t < t1; ++t) {
            Segment seg[T::kSegs];
            for (int s = 0; s < T::kSegs; ++s) seg[s] = segment(t * T::kSegs + s, scatter[s]);
            bool whole = true;
            for (int s = 0; s < T::kSegs; ++s) whole &= seg[s].lanes == T::kLanes && !seg[s].scatter;
            for (int64_t m = 0; m < cs.Mg; m += T::kRows) {
              const int64_t gm = g * cs.Mg + m;
              auto run = [&](auto kWhole) __attribute__((always_inline)) {
                tile<V, decltype(kWhole)::value>(cs.K, wt + gm * cs.K, cs.K, std::min<int64_t>(T::kRows, cs.Mg - m),
                                                 seg, off.data(), bias ? bias + gm : nullptr, m * cs.P, cs.P, e);
              };
              whole ? run(std::true_type{}) : run(std::false_type{});
            }
          }
        }
      });
    }
  });
}

}  // namespace epprof::rt::kernels
