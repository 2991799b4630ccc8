// Resize (opsets 10..17) and the deprecated Upsample (7..9): nearest, linear
// and cubic interpolation over any number of axes, as separable 1-D passes.
//
// Each axis gets a table of taps (input index, weight) per output coordinate,
// following the ONNX reference: the output coordinate is mapped to an input
// coordinate by coordinate_transformation_mode, taps outside the input are
// clamped to its edge (or, with exclude_outside, dropped and the weights
// renormalized), and tf_crop_and_resize coordinates outside the input yield
// extrapolation_value.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/interp_util.h"

namespace epprof::rt::kernels {

namespace {

enum class Mode { Nearest, Linear, Cubic };
enum class Coord { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNn, TfCropAndResize };
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Legacy };

struct ResizeAttrs {
  std::string op;                // "Resize" or "Upsample", for messages
  int version = 13;              // 7 and 9: Upsample; 10, 11, 13: Resize
  Mode mode = Mode::Nearest;
  Coord coord = Coord::HalfPixel;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  float extrapolation = 0.0f;
  std::vector<float> scales;     // Upsample-7's attribute
};

// Per output coordinate of one axis: `taps` (index, weight) pairs, and
// whether the coordinate lies outside a tf_crop_and_resize region.
struct AxisTaps {
  int64_t taps = 1;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<char> outside;
  bool identity = true;          // every output reads its own input element with weight 1
  bool any_outside = false;
};

// Maps NaN to lo, so that the integer casts below stay defined.
double clamp_coord(double x, double lo, double hi) { return x > lo ? (x < hi ? x : hi) : lo; }

AxisTaps axis_taps(const ResizeAttrs& a, int64_t in, int64_t out, double scale, double resized, double roi_start,
                   double roi_end) {
  AxisTaps t;
  t.taps = a.mode == Mode::Nearest ? 1 : a.mode == Mode::Linear ? 2 : 4;
  t.idx.resize(static_cast<size_t>(out * t.taps));
  t.w.resize(t.idx.size());
  t.outside.assign(static_cast<size_t>(out), 0);
  t.identity = in == out;
  const double last = static_cast<double>(in - 1);
  for (int64_t o = 0; o < out; ++o) {
    const double xo = static_cast<double>(o);
    double x = 0.0;
    switch (a.coord) {
      case Coord::HalfPixel: x = (xo + 0.5) / scale - 0.5; break;
      case Coord::PytorchHalfPixel: x = resized > 1 ? (xo + 0.5) / scale - 0.5 : -0.5; break;
      case Coord::AlignCorners: x = resized == 1 ? 0.0 : xo * last / (resized - 1); break;
      case Coord::Asymmetric: x = xo / scale; break;
      case Coord::TfHalfPixelForNn: x = (xo + 0.5) / scale; break;
      case Coord::TfCropAndResize:
        x = resized > 1 ? roi_start * last + xo * (roi_end - roi_start) * last / (resized - 1)
                        : 0.5 * (roi_start + roi_end) * last;
        if (!(x >= 0.0 && x <= last)) {
          t.outside[static_cast<size_t>(o)] = 1;
          t.any_outside = true;
        }
        break;
    }
    // Beyond this range every tap clamps to the same edge element.
    x = clamp_coord(x, -4.0, static_cast<double>(in) + 3.0);
    const double fl = std::floor(x), ratio = x - fl;
    const int64_t base = static_cast<int64_t>(fl);
    int64_t* idx = t.idx.data() + o * t.taps;
    double* w = t.w.data() + o * t.taps;
    if (a.mode == Mode::Nearest) {
      bool up = false;  // take the ceiling
      if (ratio != 0.0) switch (a.nearest) {
          case NearestMode::RoundPreferFloor: up = ratio > 0.5; break;
          case NearestMode::RoundPreferCeil: up = ratio >= 0.5; break;
          case NearestMode::Floor: up = false; break;
          case NearestMode::Ceil: up = true; break;
          case NearestMode::Legacy: up = scale < 1.0; break;  // opset < 11: ceil when downsampling
        }
      idx[0] = std::clamp<int64_t>(base + (up ? 1 : 0), 0, in - 1);
      w[0] = 1.0;
    } else if (a.mode == Mode::Linear) {
      idx[0] = base;
      idx[1] = base + 1;
      w[0] = 1.0 - ratio;
      w[1] = ratio;
    } else {
      cubic_coeffs(ratio, a.cubic_a, w);
      for (int64_t k = 0; k < 4; ++k) idx[k] = base - 1 + k;
    }
    if (a.mode != Mode::Nearest) {
      double sum = 0.0;
      for (int64_t k = 0; k < t.taps; ++k) {
        if (a.exclude_outside && (idx[k] < 0 || idx[k] >= in)) w[k] = 0.0;
        sum += w[k];
        idx[k] = std::clamp<int64_t>(idx[k], 0, in - 1);
      }
      if (a.exclude_outside && sum != 0.0)
        for (int64_t k = 0; k < t.taps; ++k) w[k] /= sum;
    }
    for (int64_t k = 0; k < t.taps; ++k)
      if (w[k] != 0.0 && (idx[k] != o || w[k] != 1.0)) t.identity = false;
  }
  if (t.any_outside) t.identity = false;
  return t;
}

// One interpolating 1-D pass along an axis: x viewed as [outer, in, inner]
// -> y [outer, out, inner].
template <typename T>
void interp_pass(const T* x, T* y, int64_t outer, int64_t in, int64_t inner, const AxisTaps& t, T extrapolation) {
  const int64_t out = static_cast<int64_t>(t.outside.size());
  if (inner == 1) {  // the innermost axis: one sum per element, no row loops (same sums, same order)
    for (int64_t b = 0; b < outer; ++b)
      for (int64_t o = 0; o < out; ++o) {
        if (t.outside[static_cast<size_t>(o)]) {
          y[b * out + o] = extrapolation;
          continue;
        }
        T acc{};
        for (int64_t k = 0; k < t.taps; ++k) {
          const double w = t.w[static_cast<size_t>(o * t.taps + k)];
          if (w != 0.0) acc += static_cast<T>(w) * x[b * in + t.idx[static_cast<size_t>(o * t.taps + k)]];
        }
        y[b * out + o] = acc;
      }
    return;
  }
  for (int64_t b = 0; b < outer; ++b)
    for (int64_t o = 0; o < out; ++o) {
      T* row = y + (b * out + o) * inner;
      if (t.outside[static_cast<size_t>(o)]) {
        std::fill(row, row + inner, extrapolation);
        continue;
      }
      std::fill(row, row + inner, T{});
      for (int64_t k = 0; k < t.taps; ++k) {
        const double w = t.w[static_cast<size_t>(o * t.taps + k)];
        if (w == 0.0) continue;
        const T wk = static_cast<T>(w);
        const T* src = x + (b * in + t.idx[static_cast<size_t>(o * t.taps + k)]) * inner;
        for (int64_t j = 0; j < inner; ++j) row[j] += wk * src[j];
      }
    }
}

// A nearest pass along the innermost axis (rows of one element) of `U`
// elements: a typed gather, where a memcpy per element cost a call each
// (2.5 ns an element on ppocr_v4_det's upsampling).
template <typename U>
void gather_elements(const unsigned char* x, unsigned char* y, int64_t outer, int64_t in, const AxisTaps& t,
                     const unsigned char* fill) {
  const int64_t out = static_cast<int64_t>(t.outside.size());
  U fill_value;
  std::memcpy(&fill_value, fill, sizeof fill_value);
  for (int64_t b = 0; b < outer; ++b) {
    U* row = reinterpret_cast<U*>(y) + b * out;  // heap buffers of U-sized elements: aligned for U
    const U* src = reinterpret_cast<const U*>(x) + b * in;
    for (int64_t o = 0; o < out; ++o)
      row[o] = t.outside[static_cast<size_t>(o)] ? fill_value : src[t.idx[static_cast<size_t>(o)]];
  }
}

// A nearest pass: copies whole rows of `inner` elements of `esize` bytes;
// rows outside a crop region get the `fill` element.
void gather_pass(const unsigned char* x, unsigned char* y, int64_t outer, int64_t in, int64_t inner, size_t esize,
                 const AxisTaps& t, const unsigned char* fill) {
  if (inner == 1 && esize == 4) return gather_elements<uint32_t>(x, y, outer, in, t, fill);
  if (inner == 1 && esize == 8) return gather_elements<uint64_t>(x, y, outer, in, t, fill);
  const int64_t out = static_cast<int64_t>(t.outside.size());
  const size_t row_bytes = static_cast<size_t>(inner) * esize;
  for (int64_t b = 0; b < outer; ++b)
    for (int64_t o = 0; o < out; ++o) {
      unsigned char* row = y + static_cast<size_t>(b * out + o) * row_bytes;
      if (t.outside[static_cast<size_t>(o)]) {
        for (int64_t j = 0; j < inner; ++j) std::memcpy(row + static_cast<size_t>(j) * esize, fill, esize);
        continue;
      }
      std::memcpy(row, x + static_cast<size_t>(b * in + t.idx[static_cast<size_t>(o)]) * row_bytes, row_bytes);
    }
}

// Applies the non-identity axes one after the other. Elem is the buffer's
// element: T for interpolation, unsigned char (with esize) for gathers.
template <typename Elem, typename Pass>
void run_passes(const Elem* x, const Shape& in_shape, const Shape& out_shape, const std::vector<AxisTaps>& taps,
                size_t esize, Elem* out, Pass pass) {
  Shape cur = in_shape;
  std::vector<size_t> axes;
  for (size_t a = 0; a < cur.size(); ++a)
    if (!taps[a].identity) axes.push_back(a);
  if (axes.empty()) {
    std::copy(x, x + shape_size(in_shape) * static_cast<int64_t>(esize), out);
    return;
  }
  // The first pass reads X, the last writes the output, those between go
  // through two scratch buffers (every pass writes every element).
  std::vector<Elem> buf[2];
  const Elem* src = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t a = axes[i];
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d) outer *= cur[d];
    for (size_t d = a + 1; d < cur.size(); ++d) inner *= cur[d];
    Elem* dst = out;
    if (i + 1 < axes.size()) {
      buf[i % 2].resize(static_cast<size_t>(outer * out_shape[a] * inner) * esize);
      dst = buf[i % 2].data();
    }
    pass(src, dst, outer, cur[a], inner, taps[a]);
    cur[a] = out_shape[a];
    src = dst;
  }
}

template <typename T>
Tensor interpolate(const Tensor& x, const Shape& out_shape, const std::vector<AxisTaps>& taps, float extrapolation) {
  Tensor out(x.dtype(), out_shape);
  run_passes(x.data<T>(), x.shape(), out_shape, taps, 1, out.mutable_data<T>(),
             [&](const T* in, T* o, int64_t outer, int64_t len, int64_t inner, const AxisTaps& t) {
               interp_pass(in, o, outer, len, inner, t, static_cast<T>(extrapolation));
             });
  return out;
}

Tensor gather(const Tensor& x, const Shape& out_shape, const std::vector<AxisTaps>& taps, float extrapolation,
              const std::string& op) {
  const size_t esize = element_size(x.dtype());
  std::vector<unsigned char> fill(esize, 0);
  if (std::any_of(taps.begin(), taps.end(), [](const AxisTaps& t) { return t.any_outside; })) {
    if (x.dtype() == DataType::Float) {
      std::memcpy(fill.data(), &extrapolation, esize);
    } else if (x.dtype() == DataType::Double) {
      const double v = extrapolation;
      std::memcpy(fill.data(), &v, esize);
    } else {
      fail(op + " extrapolation_value needs float or double input, got " + x.description());
    }
  }
  Tensor out(x.dtype(), out_shape);
  run_passes(static_cast<const unsigned char*>(x.raw()), x.shape(), out_shape, taps, esize,
             static_cast<unsigned char*>(out.raw_mutable()),
             [&](const unsigned char* in, unsigned char* o, int64_t outer, int64_t len, int64_t inner,
                 const AxisTaps& t) { gather_pass(in, o, outer, len, inner, esize, t, fill.data()); });
  return out;
}

Mode parse_mode(const Node& node, int version) {
  const std::string m = node.attr_string("mode", "nearest");
  if (m == "nearest") return Mode::Nearest;
  if (m == "linear") return Mode::Linear;
  if (m == "cubic" && version >= 11) return Mode::Cubic;
  fail(node.describe() + ": mode must be nearest, linear" + (version >= 11 ? ", cubic" : "") + ", got '" + m + "'");
}

std::unique_ptr<Kernel> make_resize_kernel(ResizeAttrs a);

std::unique_ptr<Kernel> make_resize(const Node& node) {
  ResizeAttrs a;
  a.op = node.op_type;
  a.version = node.op_type == "Upsample" ? (node.opset >= 9 ? 9 : 7) : (node.opset >= 13 ? 13 : node.opset >= 11 ? 11 : 10);
  a.mode = parse_mode(node, a.version);
  if (a.version < 11) {
    // Before opset 11 coordinates are asymmetric; nearest truncates when
    // upsampling and rounds up when downsampling (ONNX Runtime's convention).
    a.coord = Coord::Asymmetric;
    a.nearest = NearestMode::Legacy;
    if (a.version == 7) {
      a.scales = node.attr_floats("scales");
      if (a.scales.empty()) fail(node.describe() + ": the scales attribute is required");
    }
    return make_resize_kernel(a);
  }
  const std::string c = node.attr_string("coordinate_transformation_mode", "half_pixel");
  const std::pair<const char*, Coord> coords[] = {
      {"half_pixel", Coord::HalfPixel},     {"pytorch_half_pixel", Coord::PytorchHalfPixel},
      {"align_corners", Coord::AlignCorners}, {"asymmetric", Coord::Asymmetric},
      {"tf_half_pixel_for_nn", Coord::TfHalfPixelForNn}, {"tf_crop_and_resize", Coord::TfCropAndResize}};
  auto cit = std::find_if(std::begin(coords), std::end(coords), [&](const auto& p) { return c == p.first; });
  if (cit == std::end(coords)) fail(node.describe() + ": unknown coordinate_transformation_mode '" + c + "'");
  a.coord = cit->second;
  const std::string n = node.attr_string("nearest_mode", "round_prefer_floor");
  const std::pair<const char*, NearestMode> nearests[] = {{"round_prefer_floor", NearestMode::RoundPreferFloor},
                                                          {"round_prefer_ceil", NearestMode::RoundPreferCeil},
                                                          {"floor", NearestMode::Floor},
                                                          {"ceil", NearestMode::Ceil}};
  auto nit = std::find_if(std::begin(nearests), std::end(nearests), [&](const auto& p) { return n == p.first; });
  if (nit == std::end(nearests)) fail(node.describe() + ": unknown nearest_mode '" + n + "'");
  a.nearest = nit->second;
  a.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  a.extrapolation = node.attr_float("extrapolation_value", 0.0f);
  return make_resize_kernel(a);
}

std::unique_ptr<Kernel> make_resize_kernel(ResizeAttrs a) {
  return make_kernel([a](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const size_t rank = x.rank();
    const std::string& op = a.op;
    // Where scales and sizes come from: Upsample-7's attribute, input 1 before
    // opset 11, inputs 2 (scales) and 3 (sizes) after, roi in input 1.
    std::vector<float> scales = a.scales;
    std::vector<int64_t> sizes;
    const Tensor* roi_t = nullptr;
    if (a.version == 9 || a.version == 10) {
      const Tensor& s = ctx.input(1);
      require_float(s, (op + " scales").c_str());
      scales = s.to_vector<float>();
    } else if (a.version >= 11) {
      roi_t = ctx.optional_input(1);
      const Tensor* s = ctx.optional_input(2);
      const Tensor* z = ctx.optional_input(3);
      if (s && s->size() > 0) {
        require_float(*s, "Resize scales");
        scales = s->to_vector<float>();
      }
      if (z && z->size() > 0) {
        if (!scales.empty()) fail("Resize takes scales or sizes, not both");
        sizes = to_int64s(*z);
      }
      if (scales.empty() && sizes.empty()) fail("Resize needs non-empty scales or sizes");
    }
    if (!scales.empty() && scales.size() != rank)
      fail(op + " scales has " + std::to_string(scales.size()) + " values for input " + x.description());
    if (!sizes.empty() && sizes.size() != rank)
      fail("Resize sizes has " + std::to_string(sizes.size()) + " values for input " + x.description());
    std::vector<double> roi(2 * rank, 0.0);
    for (size_t d = 0; d < rank; ++d) roi[rank + d] = 1.0;
    if (a.coord == Coord::TfCropAndResize) {
      if (!roi_t || roi_t->size() != static_cast<int64_t>(2 * rank))
        fail("Resize roi must hold " + std::to_string(2 * rank) + " values for tf_crop_and_resize and input " +
             x.description());
      if (roi_t->dtype() == DataType::Float)
        std::copy(roi_t->data<float>(), roi_t->data<float>() + 2 * rank, roi.begin());
      else if (roi_t->dtype() == DataType::Double)
        std::copy(roi_t->data<double>(), roi_t->data<double>() + 2 * rank, roi.begin());
      else
        fail("Resize roi must be float or double, got " + roi_t->description());
    }
    Shape out_shape(rank);
    std::vector<AxisTaps> taps(rank);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t in = x.dim(d);
      double scale, resized;
      if (!sizes.empty()) {
        out_shape[d] = sizes[d];
        if (sizes[d] < 0) fail("Resize sizes must be non-negative, got " + std::to_string(sizes[d]));
        scale = in ? static_cast<double>(sizes[d]) / static_cast<double>(in) : 1.0;
        resized = static_cast<double>(sizes[d]);
      } else {
        scale = scales[d];
        if (!(scale > 0.0) || !std::isfinite(scale))
          fail(op + " scales must be positive and finite, got " + std::to_string(scales[d]));
        if (a.version < 11 && scale < 1.0 && op == "Upsample")
          fail("Upsample scales must be >= 1, got " + std::to_string(scales[d]));
        // tf_crop_and_resize scales the cropped region: floor(in * (end - start) * scale)
        const double crop = a.coord == Coord::TfCropAndResize ? roi[rank + d] - roi[d] : 1.0;
        resized = static_cast<double>(in) * crop * scale;
        const double len = std::floor(resized);
        if (!(len >= 0.0 && len < 9.0e15)) fail(op + " output size along axis " + std::to_string(d) + " is out of range");
        out_shape[d] = static_cast<int64_t>(len);
      }
      if (out_shape[d] > 0 && in == 0) fail(op + " cannot enlarge the empty axis " + std::to_string(d));
      taps[d] = in == 0 ? AxisTaps{} : axis_taps(a, in, out_shape[d], scale, resized, roi[d], roi[rank + d]);
    }
    if (shape_size(out_shape) == 0) {
      ctx.outputs[0] = Tensor(x.dtype(), out_shape);
      return;
    }
    if (a.mode == Mode::Nearest)
      ctx.outputs[0] = gather(x, out_shape, taps, a.extrapolation, op);
    else if (x.dtype() == DataType::Float)
      ctx.outputs[0] = interpolate<float>(x, out_shape, taps, a.extrapolation);
    else if (x.dtype() == DataType::Double)
      ctx.outputs[0] = interpolate<double>(x, out_shape, taps, a.extrapolation);
    else
      fail(op + " linear and cubic modes need float or double input, got " + x.description());
  });
}

}  // namespace

void register_resize(std::vector<KernelDef>& t) {
  t.push_back({"Resize", 10, 17, make_resize});
  t.push_back({"Upsample", 7, 9, make_resize});
}

}  // namespace epprof::rt::kernels
