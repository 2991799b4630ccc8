// Signal processing (opset 17): DFT, STFT, the Blackman/Hamming/Hann windows
// and MelWeightMatrix. Transforms compute in double: a radix-2 FFT for
// power-of-two lengths, a direct DFT with a twiddle table otherwise.
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common.h"

namespace epprof::rt::kernels {

namespace {

using cplx = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;

// A length-n forward or inverse DFT (inverse scaled by 1/n, as numpy's ifft).
class Dft {
 public:
  Dft(int64_t n, bool inverse) : n_(n), inverse_(inverse), pow2_(n > 0 && (n & (n - 1)) == 0) {
    twiddle_.resize(static_cast<size_t>(n));
    const double sign = inverse ? 1.0 : -1.0;
    for (int64_t k = 0; k < n; ++k)
      twiddle_[static_cast<size_t>(k)] = std::polar(1.0, sign * 2.0 * kPi * static_cast<double>(k) / static_cast<double>(n));
  }

  // out[0..n) = DFT of in[0..n); in and out must not alias.
  void run(const cplx* in, cplx* out) const {
    if (pow2_) fft(in, out);
    else direct(in, out);
    if (inverse_)
      for (int64_t k = 0; k < n_; ++k) out[k] /= static_cast<double>(n_);
  }

 private:
  void direct(const cplx* in, cplx* out) const {
    for (int64_t k = 0; k < n_; ++k) {
      cplx sum = 0.0;
      int64_t idx = 0;  // k*j mod n, kept incrementally so it never overflows
      for (int64_t j = 0; j < n_; ++j) {
        sum += in[j] * twiddle_[static_cast<size_t>(idx)];
        idx += k;
        if (idx >= n_) idx -= n_;
      }
      out[k] = sum;
    }
  }

  void fft(const cplx* in, cplx* out) const {
    int bits = 0;
    while ((int64_t{1} << bits) < n_) ++bits;
    for (int64_t i = 0; i < n_; ++i) {
      int64_t rev = 0;
      for (int b = 0; b < bits; ++b) rev |= ((i >> b) & 1) << (bits - 1 - b);
      out[rev] = in[i];
    }
    for (int64_t len = 2; len <= n_; len <<= 1) {
      const int64_t half = len / 2, step = n_ / len;
      for (int64_t start = 0; start < n_; start += len)
        for (int64_t j = 0; j < half; ++j) {
          const cplx t = out[start + j + half] * twiddle_[static_cast<size_t>(j * step)];
          out[start + j + half] = out[start + j] - t;
          out[start + j] += t;
        }
    }
  }

  int64_t n_;
  bool inverse_;
  bool pow2_;
  std::vector<cplx> twiddle_;
};

// A scalar (or one-element) integer input, e.g. STFT's frame_step.
int64_t scalar_int(const Tensor& t, const std::string& what) {
  if ((t.dtype() != DataType::Int32 && t.dtype() != DataType::Int64) || t.size() != 1 || t.rank() > 1)
    fail(what + " must be an int32 or int64 scalar, got " + t.description());
  return to_int64s(t)[0];
}

double scalar_real(const Tensor& t, const std::string& what) {
  if (t.size() == 1 && t.rank() <= 1) {
    switch (t.dtype()) {
      case DataType::Float: return t.data<float>()[0];
      case DataType::Double: return t.data<double>()[0];
      case DataType::Float16: return t.data<Float16>()[0].to_float();
      case DataType::BFloat16: return t.data<BFloat16>()[0].to_float();
      default: break;
    }
  }
  fail(what + " must be a floating-point scalar, got " + t.description());
}

// Reads element `i` of a float or double tensor as double.
template <typename T>
double real_at(const T* p, int64_t i) { return static_cast<double>(p[i]); }

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return T::from_float(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {  // integer output types: saturate, so the cast is defined for any value
    const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (!(v > lo)) return std::numeric_limits<T>::lowest();  // also NaN
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

bool flag_attr(const Node& node, const char* key, int64_t fallback) {
  const int64_t v = node.attr_int(key, fallback);
  if (v != 0 && v != 1) fail(node.describe() + ": attribute '" + key + "' must be 0 or 1, got " + std::to_string(v));
  return v == 1;
}

// The output_datatype attribute of the window ops and MelWeightMatrix: any
// numeric type (no bool).
DataType output_type_attr(const Node& node) {
  const int64_t v = node.attr_int("output_datatype", static_cast<int64_t>(DataType::Float));
  if (v == static_cast<int64_t>(DataType::Bool) || v > static_cast<int64_t>(DataType::BFloat16) || v <= 0 ||
      !is_supported_type(static_cast<int>(v)))
    fail(node.describe() + ": attribute 'output_datatype' must be a numeric TensorProto type, got " + std::to_string(v));
  return static_cast<DataType>(v);
}

Tensor make_tensor(DataType type, const Shape& shape, const std::vector<double>& values) {
  Tensor out(type, shape);
  dispatch_any(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      fail("bool output is not supported");
    } else {
      T* p = out.mutable_data<T>();
      for (size_t i = 0; i < values.size(); ++i) p[i] = from_double<T>(values[i]);
    }
  });
  return out;
}

// ---- DFT ------------------------------------------------------------------

struct DftConfig {
  int64_t axis = 1;
  bool inverse = false;
  bool onesided = false;
};

template <typename T>
void run_dft(const DftConfig& c, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (rank < 2 || (x.shape().back() != 1 && x.shape().back() != 2))
    fail("DFT input must be [batch, signal dims..., 1 or 2] (real or complex), got " + x.description());
  const int64_t comps = x.shape().back();
  const int64_t axis = c.axis < 0 ? c.axis + rank : c.axis;
  if (axis < 0 || axis > rank - 2)
    fail("DFT attribute 'axis' " + std::to_string(c.axis) + " is out of range for input " + x.description() +
         " (the last dimension holds the real and imaginary parts)");
  if (c.onesided && comps == 2) fail("DFT with onesided=1 needs a real input (last dimension 1), got " + x.description());
  const int64_t len = x.dim(static_cast<size_t>(axis));
  int64_t n = len;
  if (const Tensor* dl = ctx.optional_input(1)) {
    n = scalar_int(*dl, "DFT input dft_length");
    if (n <= 0) fail("DFT input dft_length must be positive, got " + std::to_string(n));
  }
  const int64_t n_out = c.onesided ? n / 2 + 1 : n;
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = n_out;
  out_shape.back() = 2;
  Tensor out(data_type_of<T>(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<size_t>(d));
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.dim(static_cast<size_t>(d));
  const Dft dft(n, c.inverse);
  std::vector<cplx> sig(static_cast<size_t>(n)), spec(static_cast<size_t>(n));
  const T* xp = x.data<T>();
  T* yp = out.mutable_data<T>();
  const int64_t used = std::min(len, n);  // the signal is truncated or zero-padded to dft_length
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::fill(sig.begin(), sig.end(), cplx(0.0));
      for (int64_t j = 0; j < used; ++j) {
        const T* e = xp + ((o * len + j) * inner + i) * comps;
        sig[static_cast<size_t>(j)] = cplx(real_at(e, 0), comps == 2 ? real_at(e, 1) : 0.0);
      }
      dft.run(sig.data(), spec.data());
      for (int64_t k = 0; k < n_out; ++k) {
        T* e = yp + ((o * n_out + k) * inner + i) * 2;
        e[0] = static_cast<T>(spec[static_cast<size_t>(k)].real());
        e[1] = static_cast<T>(spec[static_cast<size_t>(k)].imag());
      }
    }
  ctx.outputs[0] = std::move(out);
}

std::unique_ptr<Kernel> make_dft(const Node& node) {
  DftConfig c;
  c.axis = node.attr_int("axis", 1);
  c.inverse = flag_attr(node, "inverse", 0);
  c.onesided = flag_attr(node, "onesided", 0);
  return make_kernel([c](KernelContext& ctx) {
    const DataType type = ctx.input(0).dtype();
    if (type == DataType::Float) run_dft<float>(c, ctx);
    else if (type == DataType::Double) run_dft<double>(c, ctx);
    else fail("DFT input must be float or double, got " + ctx.input(0).description());
  });
}

// ---- STFT -----------------------------------------------------------------

template <typename T>
void run_stft(bool onesided, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2))
    fail("STFT input signal must be [batch, signal_length, 1 or 2] (real or complex), got " + x.description());
  const int64_t batch = x.dim(0), len = x.dim(1), comps = x.dim(2);
  if (onesided && comps == 2) fail("STFT with onesided=1 needs a real signal (last dimension 1), got " + x.description());
  const int64_t step = scalar_int(ctx.input(1), "STFT input frame_step");
  if (step <= 0) fail("STFT input frame_step must be positive, got " + std::to_string(step));
  const Tensor* window = ctx.optional_input(2);
  const Tensor* frame_length_t = ctx.optional_input(3);
  if (window && (window->dtype() != x.dtype() || window->rank() != 1))
    fail(std::string("STFT input window must be 1-D ") + type_name(x.dtype()) + ", got " + window->description());
  if (!window && !frame_length_t) fail("STFT needs a window or a frame_length input");
  const int64_t n = frame_length_t ? scalar_int(*frame_length_t, "STFT input frame_length") : window->dim(0);
  if (n <= 0) fail("STFT frame_length must be positive, got " + std::to_string(n));
  if (window && window->dim(0) != n)
    fail("STFT input window has " + std::to_string(window->dim(0)) + " values, frame_length is " + std::to_string(n));
  if (len < n)
    fail("STFT signal of length " + std::to_string(len) + " is shorter than frame_length " + std::to_string(n));
  const int64_t frames = 1 + (len - n) / step, bins = onesided ? n / 2 + 1 : n;
  Tensor out(data_type_of<T>(), {batch, frames, bins, 2});
  const Dft dft(n, false);
  std::vector<cplx> sig(static_cast<size_t>(n)), spec(static_cast<size_t>(n));
  const T* xp = x.data<T>();
  const T* wp = window ? window->data<T>() : nullptr;
  T* yp = out.mutable_data<T>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < n; ++j) {
        const T* e = xp + (b * len + f * step + j) * comps;
        const double w = wp ? static_cast<double>(wp[j]) : 1.0;
        sig[static_cast<size_t>(j)] = cplx(real_at(e, 0) * w, comps == 2 ? real_at(e, 1) * w : 0.0);
      }
      dft.run(sig.data(), spec.data());
      for (int64_t k = 0; k < bins; ++k) {
        T* e = yp + ((b * frames + f) * bins + k) * 2;
        e[0] = static_cast<T>(spec[static_cast<size_t>(k)].real());
        e[1] = static_cast<T>(spec[static_cast<size_t>(k)].imag());
      }
    }
  ctx.outputs[0] = std::move(out);
}

std::unique_ptr<Kernel> make_stft(const Node& node) {
  const bool onesided = flag_attr(node, "onesided", 1);
  return make_kernel([onesided](KernelContext& ctx) {
    const DataType type = ctx.input(0).dtype();
    if (type == DataType::Float) run_stft<float>(onesided, ctx);
    else if (type == DataType::Double) run_stft<double>(onesided, ctx);
    else fail("STFT input signal must be float or double, got " + ctx.input(0).description());
  });
}

// ---- Windows --------------------------------------------------------------

// Generalised cosine window a0 - a1 cos(2 pi n / N') + a2 cos(4 pi n / N'),
// N' = size (periodic) or size - 1 (symmetric).
struct Cosines {
  double a0, a1, a2;
};

std::unique_ptr<Kernel> make_window(const Node& node, Cosines w) {
  const DataType type = output_type_attr(node);
  const bool periodic = flag_attr(node, "periodic", 1);
  const std::string op = node.op_type;
  return make_kernel([=](KernelContext& ctx) {
    const int64_t size = scalar_int(ctx.input(0), op + " input size");
    if (size < 0) fail(op + " input size must be non-negative, got " + std::to_string(size));
    const int64_t denom = periodic ? size : size - 1;
    std::vector<double> v(static_cast<size_t>(size), 1.0);  // a one-point symmetric window is [1], as numpy's
    if (denom > 0)
      for (int64_t i = 0; i < size; ++i) {
        const double phase = 2.0 * kPi * static_cast<double>(i) / static_cast<double>(denom);
        v[static_cast<size_t>(i)] = w.a0 - w.a1 * std::cos(phase) + w.a2 * std::cos(2.0 * phase);
      }
    ctx.outputs[0] = make_tensor(type, {size}, v);
  });
}

std::unique_ptr<Kernel> make_hann(const Node& node) { return make_window(node, {0.5, 0.5, 0.0}); }
std::unique_ptr<Kernel> make_hamming(const Node& node) { return make_window(node, {25.0 / 46.0, 21.0 / 46.0, 0.0}); }
std::unique_ptr<Kernel> make_blackman(const Node& node) { return make_window(node, {0.42, 0.5, 0.08}); }

// ---- MelWeightMatrix ------------------------------------------------------

// Triangular filters on the mel scale mel(f) = 2595 log10(1 + f/700), as the
// ONNX reference builds them: num_mel_bins + 2 edge points, spaced in mel by
// (high - low) / (num_mel_bins + 2), each mapped to spectrogram bin
// floor((dft_length + 1) * f / sample_rate).
std::unique_ptr<Kernel> make_mel_weight_matrix(const Node& node) {
  const DataType type = output_type_attr(node);
  return make_kernel([type](KernelContext& ctx) {
    const int64_t mel_bins = scalar_int(ctx.input(0), "MelWeightMatrix input num_mel_bins");
    const int64_t dft_length = scalar_int(ctx.input(1), "MelWeightMatrix input dft_length");
    const int64_t sample_rate = scalar_int(ctx.input(2), "MelWeightMatrix input sample_rate");
    const double lower = scalar_real(ctx.input(3), "MelWeightMatrix input lower_edge_hertz");
    const double upper = scalar_real(ctx.input(4), "MelWeightMatrix input upper_edge_hertz");
    if (mel_bins <= 0 || dft_length <= 0 || sample_rate <= 0)
      fail("MelWeightMatrix inputs num_mel_bins, dft_length and sample_rate must be positive, got " +
           std::to_string(mel_bins) + ", " + std::to_string(dft_length) + ", " + std::to_string(sample_rate));
    if (!(lower >= 0.0 && lower < upper))
      fail("MelWeightMatrix needs 0 <= lower_edge_hertz < upper_edge_hertz, got " + std::to_string(lower) + " and " +
           std::to_string(upper));
    const int64_t spec_bins = dft_length / 2 + 1;
    if (static_cast<double>(spec_bins) * static_cast<double>(mel_bins) > 1e9)
      fail("MelWeightMatrix output [" + std::to_string(spec_bins) + "," + std::to_string(mel_bins) + "] is too large");
    const auto mel = [](double f) { return 2595.0 * std::log10(1.0 + f / 700.0); };
    const double low_mel = mel(lower), step = (mel(upper) - low_mel) / static_cast<double>(mel_bins + 2);
    // A filter edge past the last spectrogram bin: upper_edge_hertz above the Nyquist frequency.
    const auto out_of_range = [&] {
      fail("MelWeightMatrix upper_edge_hertz " + std::to_string(upper) + " lies above the Nyquist frequency of " +
           "sample_rate " + std::to_string(sample_rate));
    };
    std::vector<int64_t> edge(static_cast<size_t>(mel_bins + 2));
    for (int64_t i = 0; i < mel_bins + 2; ++i) {
      const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595.0) - 1.0);
      const double bin = std::floor((static_cast<double>(dft_length) + 1.0) * hz / static_cast<double>(sample_rate));
      if (!(bin >= 0.0 && bin <= static_cast<double>(spec_bins))) out_of_range();  // (keeps the cast defined)
      edge[static_cast<size_t>(i)] = static_cast<int64_t>(bin);
    }
    std::vector<double> w(static_cast<size_t>(spec_bins * mel_bins), 0.0);
    const auto at = [&](int64_t row, int64_t col) -> double& {
      if (row < 0 || row >= spec_bins) out_of_range();
      return w[static_cast<size_t>(row * mel_bins + col)];
    };
    for (int64_t m = 0; m < mel_bins; ++m) {
      const int64_t lo = edge[static_cast<size_t>(m)], mid = edge[static_cast<size_t>(m + 1)],
                    hi = edge[static_cast<size_t>(m + 2)];
      if (mid == lo) at(mid, m) = 1.0;
      else
        for (int64_t j = lo; j <= mid; ++j) at(j, m) = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
      for (int64_t j = mid; j < hi; ++j) at(j, m) = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
    }
    ctx.outputs[0] = make_tensor(type, {spec_bins, mel_bins}, w);
  });
}

}  // namespace

void register_signal(std::vector<KernelDef>& t) {
  t.push_back({"DFT", 17, 17, make_dft});
  t.push_back({"STFT", 17, 17, make_stft});
  t.push_back({"BlackmanWindow", 17, 17, make_blackman});
  t.push_back({"HammingWindow", 17, 17, make_hamming});
  t.push_back({"HannWindow", 17, 17, make_hann});
  t.push_back({"MelWeightMatrix", 17, 17, make_mel_weight_matrix});
}

}  // namespace epprof::rt::kernels
