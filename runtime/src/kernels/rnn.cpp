// Recurrent ops: RNN, GRU and LSTM (opsets 7..17). One engine runs all three.
// Per direction, the input projection X*W^T of every time step is a single
// GEMM; each step then does one GEMM H_{t-1}*R^T for the whole batch and the
// gate arithmetic row by row. A batch row whose sequence (sequence_lens) has
// ended keeps its state and gets zeros in Y; its Y_h/Y_c are the state after
// its last valid step (zeros for a length-0 sequence, as ONNX Runtime does).
#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common.h"
#include "kernels/matmul_util.h"
#include "kernels/simd.h"
#include "kernels/vector_math.h"
#include "memory_hooks.h"

namespace epprof::rt::kernels {

namespace {

enum class Cell { Rnn, Gru, Lstm };

enum class ActKind {
  Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus
};

struct Activation {
  ActKind kind = ActKind::Tanh;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// The activation functions of the recurrent ops, which of activation_alpha /
// activation_beta each consumes, and the value it takes when the list has run
// out. The spec gives no defaults here; these are the standalone ops'
// defaults (ScaledTanh has none: 1 and 1 make it plain Tanh).
struct ActInfo {
  const char* name;  // lower case; names match case-insensitively, as in ONNX Runtime
  ActKind kind;
  bool uses_alpha, uses_beta;
  float alpha, beta;
};
constexpr ActInfo kActivations[] = {
    {"relu", ActKind::Relu, false, false, 0.0f, 0.0f},
    {"tanh", ActKind::Tanh, false, false, 0.0f, 0.0f},
    {"sigmoid", ActKind::Sigmoid, false, false, 0.0f, 0.0f},
    {"affine", ActKind::Affine, true, true, 1.0f, 0.0f},
    {"leakyrelu", ActKind::LeakyRelu, true, false, 0.01f, 0.0f},
    {"thresholdedrelu", ActKind::ThresholdedRelu, true, false, 1.0f, 0.0f},
    {"scaledtanh", ActKind::ScaledTanh, true, true, 1.0f, 1.0f},
    {"hardsigmoid", ActKind::HardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", ActKind::Elu, true, false, 1.0f, 0.0f},
    {"softsign", ActKind::Softsign, false, false, 0.0f, 0.0f},
    {"softplus", ActKind::Softplus, false, false, 0.0f, 0.0f},
};

// Applies `act` in place to x[0..n), built for the CPU it runs on
// (kernels/simd.h): an LSTM step's sigmoids and tanhs of 4 x 128 gates took
// 1.3 us as baseline SSE2.
template <typename T>
EPPROF_SIMD_CLONES void activate(const Activation& act, T* x, int64_t n) noexcept {
  const T a = static_cast<T>(act.alpha), b = static_cast<T>(act.beta);
  const T zero = 0, one = 1;
  switch (act.kind) {
    case ActKind::Relu: for (int64_t i = 0; i < n; ++i) x[i] = std::max(x[i], zero); break;
    case ActKind::Tanh: for (int64_t i = 0; i < n; ++i) x[i] = tanh_of(x[i]); break;  // vectorised (vector_math.h)
    case ActKind::Sigmoid:
      if constexpr (std::is_same_v<T, float>) {
        for (int64_t i = 0; i < n; ++i) x[i] = sigmoid_f32(x[i]);  // vectorised (vector_math.h)
      } else {
        for (int64_t i = 0; i < n; ++i) x[i] = one / (one + std::exp(-x[i]));
      }
      break;
    case ActKind::Affine: for (int64_t i = 0; i < n; ++i) x[i] = a * x[i] + b; break;
    case ActKind::LeakyRelu: for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= zero ? x[i] : a * x[i]; break;
    case ActKind::ThresholdedRelu: for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= a ? x[i] : zero; break;
    case ActKind::ScaledTanh: for (int64_t i = 0; i < n; ++i) x[i] = a * tanh_of(b * x[i]); break;
    case ActKind::HardSigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(a * x[i] + b, zero), one);
      break;
    case ActKind::Elu: for (int64_t i = 0; i < n; ++i) x[i] = x[i] >= zero ? x[i] : a * (std::exp(x[i]) - one); break;
    case ActKind::Softsign: for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (one + std::fabs(x[i])); break;
    case ActKind::Softplus:  // log(1 + e^x) without overflowing e^x for large x
      for (int64_t i = 0; i < n; ++i)
        x[i] = x[i] > zero ? x[i] + std::log1p(std::exp(-x[i])) : std::log1p(std::exp(x[i]));
      break;
  }
}

// The `clip` attribute bounds every activation's input to [-clip, clip].
template <typename T>
void clip_to(T* x, int64_t n, float clip) {
  if (clip <= 0.0f) return;  // no clip attribute
  const T c = static_cast<T>(clip);
  for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], -c), c);
}

// C[m,n] (row stride ldc) = A[m,k] (row stride lda) * B[n,k]^T (row stride ldb).
template <typename T>
void gemm_abt(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  constexpr int64_t kMax = std::numeric_limits<blasint>::max();
  if (m > kMax || n > kMax || lda > kMax || ldb > kMax || ldc > kMax)
    fail("recurrent GEMM dimensions exceed the BLAS integer range");
  blas_gemm(false, true, m, n, k, T(1), a, lda, b, ldb, T(0), c, ldc);  // batch 1: a gemv
}

struct Config {
  Cell cell = Cell::Rnn;
  std::string op;             // "RNN", "GRU", "LSTM", for messages
  int64_t gates = 1;          // weight blocks per direction: 1, 3 (zrh) or 4 (iofc)
  int64_t hidden = 0;         // hidden_size; 0: taken from R
  int64_t num_dirs = 1;
  bool reverse = false;       // direction == "reverse" (the second direction of "bidirectional" always is)
  size_t acts_per_dir = 1;
  std::vector<Activation> acts;  // acts_per_dir per direction
  float clip = 0.0f;          // 0: no clip
  bool linear_before_reset = false;
  bool input_forget = false;
  bool batch_major = false;   // layout = 1
  bool out_y = false, out_yh = false, out_yc = false;
};

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::vector<Activation> parse_activations(const Node& node, const Config& c,
                                          const std::vector<const char*>& defaults) {
  const size_t want = c.acts_per_dir * static_cast<size_t>(c.num_dirs);
  std::vector<std::string> names;
  if (const Attribute* a = node.attr("activations")) {
    if (a->kind != Attribute::Kind::Strings) fail(node.describe() + ": attribute 'activations' must be a list of strings");
    names = a->strings;
    if (names.size() != want)
      fail(node.describe() + ": attribute 'activations' has " + std::to_string(names.size()) + " entries, expected " +
           std::to_string(want) + " (" + std::to_string(c.acts_per_dir) + " per direction)");
  } else {
    for (int64_t d = 0; d < c.num_dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  // activation_alpha/beta are consumed in order by the functions that use them.
  const std::vector<float> alphas = node.attr_floats("activation_alpha"), betas = node.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> acts;
  for (const std::string& name : names) {
    const std::string key = lower(name);
    const ActInfo* info = nullptr;
    for (const ActInfo& candidate : kActivations)
      if (key == candidate.name) info = &candidate;
    if (!info)
      fail(node.describe() + ": unknown activation '" + name +
           "' (expected Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, "
           "Softsign or Softplus)");
    Activation act{info->kind, info->alpha, info->beta};
    if (info->uses_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (info->uses_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    acts.push_back(act);
  }
  return acts;
}

bool flag_attr(const Node& node, const char* key) {
  const int64_t v = node.attr_int(key, 0);
  if (v != 0 && v != 1) fail(node.describe() + ": attribute '" + key + "' must be 0 or 1, got " + std::to_string(v));
  return v == 1;
}

// Requires `t` to be a T tensor of exactly `shape`.
template <typename T>
void expect_shape(const Config& c, const Tensor& t, const Shape& shape, const char* what) {
  if (t.dtype() != data_type_of<T>() || t.shape() != shape)
    fail(c.op + " input " + what + " must be " + type_name(data_type_of<T>()) + shape_to_string(shape) + ", got " +
         t.description());
}

template <typename T>
void run_recurrent(const Config& c, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 3)
    fail(c.op + " input X must be 3-D [" + (c.batch_major ? "batch_size, seq_length" : "seq_length, batch_size") +
         ", input_size], got " + x.description());
  const int64_t seq = x.dim(c.batch_major ? 1 : 0), batch = x.dim(c.batch_major ? 0 : 1), in = x.dim(2);
  const int64_t D = c.num_dirs, G = c.gates;
  const Tensor& w = ctx.input(1);
  const Tensor& r = ctx.input(2);
  if (r.rank() != 3) fail(c.op + " input R must be 3-D [num_directions, gates*hidden_size, hidden_size], got " + r.description());
  const int64_t H = c.hidden > 0 ? c.hidden : r.dim(2);
  if (H > std::numeric_limits<int32_t>::max()) fail(c.op + " input R " + r.description() + " is too large");
  const int64_t GH = G * H;
  expect_shape<T>(c, w, {D, GH, in}, "W");
  expect_shape<T>(c, r, {D, GH, H}, "R");
  // Scratch below holds seq*batch*G*H values; refuse absurd shapes (e.g. input_size 0 with huge dims).
  if (static_cast<double>(seq) * static_cast<double>(batch) * static_cast<double>(GH) > 1e12)
    fail(c.op + ": " + x.description() + " with hidden_size " + std::to_string(H) + " is too large");

  const Tensor* bias_t = ctx.optional_input(3);
  if (bias_t) expect_shape<T>(c, *bias_t, {D, 2 * GH}, "B");
  std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
  if (const Tensor* sl = ctx.optional_input(4)) {
    if (sl->shape() != Shape{batch} || (sl->dtype() != DataType::Int32 && sl->dtype() != DataType::Int64))
      fail(c.op + " input sequence_lens must be int32[" + std::to_string(batch) + "], got " + sl->description());
    lens = to_int64s(*sl);
    for (int64_t len : lens)
      if (len < 0 || len > seq)
        fail(c.op + " input sequence_lens has " + std::to_string(len) + ", outside [0, seq_length=" +
             std::to_string(seq) + "]");
  }
  const Shape state_shape = c.batch_major ? Shape{batch, D, H} : Shape{D, batch, H};
  const Tensor* init_h = ctx.optional_input(5);
  if (init_h) expect_shape<T>(c, *init_h, state_shape, "initial_h");
  const bool lstm = c.cell == Cell::Lstm, gru = c.cell == Cell::Gru;
  const Tensor* init_c = lstm ? ctx.optional_input(6) : nullptr;
  if (init_c) expect_shape<T>(c, *init_c, state_shape, "initial_c");
  const Tensor* peep = lstm ? ctx.optional_input(7) : nullptr;
  if (peep) expect_shape<T>(c, *peep, {D, 3 * H}, "P");

  // Time-major copy of X for layout 1, so each time step's rows are contiguous.
  const T* xs = x.data<T>();
  std::vector<T> x_tm;
  if (c.batch_major) {
    x_tm.resize(static_cast<size_t>(x.size()));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < seq; ++t)
        std::copy_n(xs + (b * seq + t) * in, in, x_tm.data() + (t * batch + b) * in);
    xs = x_tm.data();
  }
  // Outputs in layout 0 ([seq, D, batch, H] and [D, batch, H]), transposed at the end for layout 1.
  Tensor y(data_type_of<T>(), c.out_y ? Shape{seq, D, batch, H} : Shape{0});
  Tensor yh(data_type_of<T>(), {D, batch, H}), yc(data_type_of<T>(), lstm ? Shape{D, batch, H} : Shape{0});
  const auto state_at = [&](const Tensor& t, int64_t d, int64_t b) {
    return t.data<T>() + (c.batch_major ? b * D + d : d * batch + b) * H;
  };

  const int64_t max_len = lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end());
  // GRU's default candidate needs (r (.) H_{t-1}) * Rh^T, so its step GEMM covers only z and r.
  const bool gru_split = gru && !c.linear_before_reset;
  const int64_t n_rec = gru_split ? 2 * H : GH;
  const memory::Scratch<T> xw(static_cast<size_t>(seq * batch * GH), /*zeroed=*/true);  // every step's input projection
  std::vector<T> rec(static_cast<size_t>(batch * GH));
  std::vector<T> h(static_cast<size_t>(batch * H)), cell(lstm ? h.size() : 0), rh(gru_split ? h.size() : 0);
  std::vector<T> bias(static_cast<size_t>(GH)), rb_h(static_cast<size_t>(H));

  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = c.reverse || d == 1;
    const T* wd = w.data<T>() + d * GH * in;
    const T* rd = r.data<T>() + d * GH * H;
    const Activation* act = c.acts.data() + static_cast<size_t>(d) * c.acts_per_dir;
    // Input projection of all steps; both biases folded in, except GRU's Rbh
    // with linear_before_reset, which sits inside the reset gate's product.
    gemm_abt<T>(seq * batch, GH, in, xs, in, wd, in, xw.get(), GH);
    std::fill(rb_h.begin(), rb_h.end(), T(0));
    if (bias_t) {
      const T* wb = bias_t->data<T>() + d * 2 * GH;
      const T* rb = wb + GH;
      for (int64_t j = 0; j < GH; ++j) bias[j] = wb[j] + rb[j];
      if (gru && c.linear_before_reset)
        for (int64_t j = 0; j < H; ++j) {
          bias[2 * H + j] = wb[2 * H + j];
          rb_h[j] = rb[2 * H + j];
        }
      for (int64_t row = 0; row < seq * batch; ++row)
        for (int64_t j = 0; j < GH; ++j) xw[row * GH + j] += bias[j];
    }
    for (int64_t b = 0; b < batch; ++b) {
      T* hb = h.data() + b * H;
      if (init_h) std::copy_n(state_at(*init_h, d, b), H, hb);
      else std::fill(hb, hb + H, T(0));
      if (lstm) {
        T* cb = cell.data() + b * H;
        if (init_c) std::copy_n(state_at(*init_c, d, b), H, cb);
        else std::fill(cb, cb + H, T(0));
      }
    }
    const T* p_i = peep ? peep->data<T>() + d * 3 * H : nullptr;
    const T* p_o = p_i ? p_i + H : nullptr;
    const T* p_f = p_i ? p_i + 2 * H : nullptr;

    for (int64_t s = 0; s < max_len; ++s) {
      gemm_abt<T>(batch, n_rec, H, h.data(), H, rd, H, rec.data(), GH);
      // Step s of row b reads time step t(b): rows run backwards from their own last step when reversed.
      const auto time_of = [&](int64_t b) { return reverse ? lens[static_cast<size_t>(b)] - 1 - s : s; };
      const auto active = [&](int64_t b) { return s < lens[static_cast<size_t>(b)]; };
      for (int64_t b = 0; b < batch; ++b) {
        if (!active(b)) continue;
        T* g = rec.data() + b * GH;
        const T* xg = xw.get() + (time_of(b) * batch + b) * GH;
        for (int64_t j = 0; j < (gru ? 2 * H : GH); ++j) g[j] += xg[j];  // GRU's h part is summed below
        T* hb = h.data() + b * H;
        if (c.cell == Cell::Rnn) {
          clip_to(g, H, c.clip);
          activate(act[0], g, H);
          std::copy_n(g, H, hb);
        } else if (gru) {
          clip_to(g, 2 * H, c.clip);
          activate(act[0], g, 2 * H);  // z and r
          if (gru_split) {
            for (int64_t j = 0; j < H; ++j) rh[b * H + j] = g[H + j] * hb[j];
          } else {
            T* gh = g + 2 * H;
            for (int64_t j = 0; j < H; ++j) gh[j] = xg[2 * H + j] + g[H + j] * (gh[j] + rb_h[j]);
          }
        } else {
          T *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H, *cb = cell.data() + b * H;
          if (p_i)
            for (int64_t j = 0; j < H; ++j) {
              gi[j] += p_i[j] * cb[j];
              gf[j] += p_f[j] * cb[j];
            }
          clip_to(gi, H, c.clip);
          activate(act[0], gi, H);
          if (c.input_forget) {  // coupled gates: f = 1 - i (ONNX Runtime's reading)
            for (int64_t j = 0; j < H; ++j) gf[j] = T(1) - gi[j];
          } else {
            clip_to(gf, H, c.clip);
            activate(act[0], gf, H);
          }
          clip_to(gc, H, c.clip);
          activate(act[1], gc, H);
          for (int64_t j = 0; j < H; ++j) cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
          if (p_o)
            for (int64_t j = 0; j < H; ++j) go[j] += p_o[j] * cb[j];
          clip_to(go, H, c.clip);
          activate(act[0], go, H);
          std::copy_n(cb, H, gc);  // gc is free again: it holds h(C_t)
          activate(act[2], gc, H);
          for (int64_t j = 0; j < H; ++j) hb[j] = go[j] * gc[j];
        }
      }
      if (gru) {
        if (gru_split) gemm_abt<T>(batch, H, H, rh.data(), H, rd + 2 * H * H, H, rec.data() + 2 * H, GH);
        for (int64_t b = 0; b < batch; ++b) {
          if (!active(b)) continue;
          T* g = rec.data() + b * GH;
          T* gh = g + 2 * H;
          if (gru_split) {
            const T* xg = xw.get() + (time_of(b) * batch + b) * GH;
            for (int64_t j = 0; j < H; ++j) gh[j] += xg[2 * H + j];
          }
          clip_to(gh, H, c.clip);
          activate(act[1], gh, H);
          T* hb = h.data() + b * H;
          for (int64_t j = 0; j < H; ++j) hb[j] = (T(1) - g[j]) * gh[j] + g[j] * hb[j];
        }
      }
      if (c.out_y)
        for (int64_t b = 0; b < batch; ++b)
          if (active(b))
            std::copy_n(h.data() + b * H, H, y.mutable_data<T>() + ((time_of(b) * D + d) * batch + b) * H);
    }
    for (int64_t b = 0; b < batch; ++b) {
      if (lens[static_cast<size_t>(b)] == 0) continue;  // stays zero
      std::copy_n(h.data() + b * H, H, yh.mutable_data<T>() + (d * batch + b) * H);
      if (lstm) std::copy_n(cell.data() + b * H, H, yc.mutable_data<T>() + (d * batch + b) * H);
    }
  }

  // Layout 1: Y [batch, seq, D, H], Y_h and Y_c [batch, D, H].
  const auto to_batch_major = [&](const Tensor& t, int64_t outer) {
    if (!c.batch_major) return t;
    Tensor out(t.dtype(), {batch, outer, H});
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t b = 0; b < batch; ++b)
        std::copy_n(t.data<T>() + (o * batch + b) * H, H, out.mutable_data<T>() + (b * outer + o) * H);
    return out;
  };
  if (c.out_y) {
    Tensor out = to_batch_major(y, seq * D);
    ctx.outputs[0] = c.batch_major ? out.reshaped({batch, seq, D, H}) : out;
  }
  if (c.out_yh) ctx.outputs[1] = to_batch_major(yh, D);
  if (c.out_yc) ctx.outputs[2] = to_batch_major(yc, D);
}

std::unique_ptr<Kernel> make_recurrent(const Node& node, Cell cell) {
  Config c;
  c.cell = cell;
  c.op = node.op_type;
  c.gates = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  const int64_t hidden = node.attr_int("hidden_size", 0);
  if (node.has_attr("hidden_size") && (hidden <= 0 || hidden > std::numeric_limits<int32_t>::max()))
    fail(node.describe() + ": attribute 'hidden_size' must be in [1, 2^31), got " + std::to_string(hidden));
  c.hidden = hidden;
  const std::string direction = node.attr_string("direction", "forward");
  if (direction == "bidirectional") c.num_dirs = 2;
  else if (direction == "reverse") c.reverse = true;
  else if (direction != "forward")
    fail(node.describe() + ": attribute 'direction' must be forward, reverse or bidirectional, got '" + direction + "'");
  const std::vector<const char*> defaults = cell == Cell::Rnn   ? std::vector<const char*>{"Tanh"}
                                            : cell == Cell::Gru ? std::vector<const char*>{"Sigmoid", "Tanh"}
                                                                : std::vector<const char*>{"Sigmoid", "Tanh", "Tanh"};
  c.acts_per_dir = defaults.size();
  c.acts = parse_activations(node, c, defaults);
  if (node.has_attr("clip")) {
    c.clip = node.attr_float("clip", 0.0f);
    if (!(c.clip > 0.0f)) fail(node.describe() + ": attribute 'clip' must be positive, got " + std::to_string(c.clip));
  }
  if (cell == Cell::Gru) c.linear_before_reset = flag_attr(node, "linear_before_reset");
  if (cell == Cell::Lstm) c.input_forget = flag_attr(node, "input_forget");
  if (node.opset >= 14) c.batch_major = flag_attr(node, "layout");
  else if (node.has_attr("layout")) fail(node.describe() + ": attribute 'layout' needs opset 14, model has " + std::to_string(node.opset));
  c.out_y = node.has_output(0);
  c.out_yh = node.has_output(1);
  c.out_yc = cell == Cell::Lstm && node.has_output(2);
  return make_kernel([c](KernelContext& ctx) {
    const DataType type = ctx.input(0).dtype();
    if (type == DataType::Float) run_recurrent<float>(c, ctx);
    else if (type == DataType::Double) run_recurrent<double>(c, ctx);
    else fail(c.op + " input X must be float or double, got " + ctx.input(0).description());
  });
}

std::unique_ptr<Kernel> make_rnn(const Node& node) { return make_recurrent(node, Cell::Rnn); }
std::unique_ptr<Kernel> make_gru(const Node& node) { return make_recurrent(node, Cell::Gru); }
std::unique_ptr<Kernel> make_lstm(const Node& node) { return make_recurrent(node, Cell::Lstm); }

}  // namespace

void register_rnn(std::vector<KernelDef>& t) {
  t.push_back({"RNN", 7, 17, make_rnn});
  t.push_back({"GRU", 7, 17, make_gru});
  t.push_back({"LSTM", 7, 17, make_lstm});
}

}  // namespace epprof::rt::kernels
