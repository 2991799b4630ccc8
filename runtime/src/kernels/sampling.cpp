// Sampling ops: MaxUnpool, GridSample, RoiAlign, NonMaxSuppression.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/conv_geometry.h"
#include "kernels/interp_util.h"

namespace epprof::rt::kernels {

namespace {

// --- MaxUnpool ----------------------------------------------------------------

// Indices address the tensor MaxPool saw, whose spatial size follows from
// kernel, strides and pads; with output_shape given, each value keeps its
// coordinates in that (possibly larger) output.
std::unique_ptr<Kernel> make_max_unpool(const Node& node) {
  const std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  if (kernel.empty()) fail(node.describe() + ": kernel_shape is required");
  std::vector<int64_t> strides = node.attr_ints("strides"), pads = node.attr_ints("pads");
  const size_t n = kernel.size();
  if (strides.empty()) strides.assign(n, 1);
  if (pads.empty()) pads.assign(2 * n, 0);
  if (strides.size() != n || pads.size() != 2 * n)
    fail(node.describe() + ": strides must have " + std::to_string(n) + " values and pads " + std::to_string(2 * n));
  for (size_t i = 0; i < n; ++i)
    if (kernel[i] <= 0 || strides[i] <= 0 || pads[i] < 0 || pads[i + n] < 0)
      fail(node.describe() + ": kernel_shape and strides must be positive, pads non-negative");
  return make_kernel([kernel, strides, pads, n](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& idx = ctx.input(1);
    require_type(idx, DataType::Int64, "MaxUnpool input I");
    if (x.rank() != n + 2 || idx.shape() != x.shape())
      fail("MaxUnpool expects X of rank " + std::to_string(n + 2) + " and I of X's shape, got " + x.description() +
           " and " + idx.description());
    Shape pooled{x.dim(0), x.dim(1)};  // the shape the indices refer to
    for (size_t i = 0; i < n; ++i) {
      pooled.push_back((x.dim(2 + i) - 1) * strides[i] + kernel[i] - pads[i] - pads[i + n]);
      if (pooled.back() < 0) fail("MaxUnpool pads exceed the unpooled size for input " + x.description());
    }
    Shape out_shape = pooled;
    if (const Tensor* os = ctx.optional_input(2)) {
      out_shape = to_int64s(*os);
      if (out_shape.size() != pooled.size() || out_shape[0] != pooled[0] || out_shape[1] != pooled[1])
        fail("MaxUnpool output_shape " + shape_to_string(out_shape) + " does not match input " + x.description());
      for (size_t i = 2; i < out_shape.size(); ++i)
        if (out_shape[i] < pooled[i])
          fail("MaxUnpool output_shape " + shape_to_string(out_shape) + " is smaller than the unpooled shape " +
               shape_to_string(pooled));
    }
    const int64_t total = shape_size(pooled);
    Tensor out(x.dtype(), out_shape);
    const size_t esize = element_size(x.dtype());
    const auto* src = static_cast<const unsigned char*>(x.raw());
    auto* dst = static_cast<unsigned char*>(out.raw_mutable());
    for (int64_t i = 0; i < x.size(); ++i) {
      int64_t rem = idx.data<int64_t>()[i];
      if (rem < 0 || rem >= total)
        fail("MaxUnpool index " + std::to_string(rem) + " is out of range for shape " + shape_to_string(pooled));
      int64_t o = 0, stride = 1;
      for (size_t d = pooled.size(); d-- > 0;) {
        o += (rem % pooled[d]) * stride;
        rem /= pooled[d];
        stride *= out_shape[d];
      }
      std::copy(src + i * esize, src + (i + 1) * esize, dst + o * esize);
    }
    ctx.outputs[0] = std::move(out);
  });
}

// --- GridSample ---------------------------------------------------------------

enum class GridMode { Bilinear, Nearest, Bicubic };
enum class GridPadding { Zeros, Border, Reflection };

// Reflects x into [lo, hi] (repeatedly, like a ball between two walls).
float reflect(float x, float lo, float hi) {
  const float range = hi - lo;
  if (range <= 0.0f) return lo;
  if (x >= lo && x <= hi) return x;
  const float dx = x < lo ? lo - x : x - hi;
  const float flips = std::floor(dx / range);
  const float r = dx - flips * range;
  const bool even = std::fmod(flips, 2.0f) == 0.0f;
  const float v = x < lo ? (even ? lo + r : hi - r) : (even ? hi - r : lo + r);
  return std::clamp(v, lo, hi);  // rounding far from the image may land just outside
}

struct GridSampler {
  GridMode mode;
  GridPadding padding;
  bool align_corners;
  int64_t H, W;
  float lo_x, hi_x, lo_y, hi_y;  // the image's extent in pixel coordinates

  GridSampler(GridMode m, GridPadding p, bool ac, int64_t h, int64_t w)
      : mode(m), padding(p), align_corners(ac), H(h), W(w) {
    lo_x = ac ? 0.0f : -0.5f;
    lo_y = lo_x;
    hi_x = ac ? static_cast<float>(W - 1) : static_cast<float>(W) - 0.5f;
    hi_y = ac ? static_cast<float>(H - 1) : static_cast<float>(H) - 0.5f;
  }

  // The pixel at integer (r, c), with the padding mode applied outside.
  float pixel(const float* img, int64_t r, int64_t c) const {
    if (padding == GridPadding::Zeros) return (r >= 0 && r < H && c >= 0 && c < W) ? img[r * W + c] : 0.0f;
    if (padding == GridPadding::Reflection) {
      c = static_cast<int64_t>(reflect(static_cast<float>(c), lo_x, hi_x));
      r = static_cast<int64_t>(reflect(static_cast<float>(r), lo_y, hi_y));
    }
    return img[std::clamp<int64_t>(r, 0, H - 1) * W + std::clamp<int64_t>(c, 0, W - 1)];
  }

  // Samples one plane at normalized grid coordinates (gx, gy) in [-1, 1].
  float sample(const float* img, float gx, float gy) const {
    if (!std::isfinite(gx) || !std::isfinite(gy)) return std::numeric_limits<float>::quiet_NaN();
    float x = align_corners ? (gx + 1.0f) / 2.0f * static_cast<float>(W - 1)
                            : ((gx + 1.0f) * static_cast<float>(W) - 1.0f) / 2.0f;
    float y = align_corners ? (gy + 1.0f) / 2.0f * static_cast<float>(H - 1)
                            : ((gy + 1.0f) * static_cast<float>(H) - 1.0f) / 2.0f;
    if (padding == GridPadding::Border) {
      x = std::clamp(x, 0.0f, static_cast<float>(W - 1));
      y = std::clamp(y, 0.0f, static_cast<float>(H - 1));
    } else if (padding == GridPadding::Reflection) {
      x = reflect(x, lo_x, hi_x);
      y = reflect(y, lo_y, hi_y);
    } else {
      // Far outside, every tap is padding: clamp so the integer casts stay defined.
      x = std::clamp(x, -4.0f, static_cast<float>(W) + 4.0f);
      y = std::clamp(y, -4.0f, static_cast<float>(H) + 4.0f);
    }
    if (mode == GridMode::Nearest)
      return pixel(img, static_cast<int64_t>(std::nearbyint(y)), static_cast<int64_t>(std::nearbyint(x)));
    const float fx = std::floor(x), fy = std::floor(y);
    const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
    const float dx = x - fx, dy = y - fy;
    if (mode == GridMode::Bilinear)
      return (1 - dy) * ((1 - dx) * pixel(img, y0, x0) + dx * pixel(img, y0, x0 + 1)) +
             dy * ((1 - dx) * pixel(img, y0 + 1, x0) + dx * pixel(img, y0 + 1, x0 + 1));
    float cx[4], cy[4];
    cubic_coeffs(dx, -0.75f, cx);
    cubic_coeffs(dy, -0.75f, cy);
    float v = 0.0f;
    for (int64_t i = 0; i < 4; ++i) {
      float row = 0.0f;
      for (int64_t j = 0; j < 4; ++j) row += cx[j] * pixel(img, y0 - 1 + i, x0 - 1 + j);
      v += cy[i] * row;
    }
    return v;
  }
};

std::unique_ptr<Kernel> make_grid_sample(const Node& node) {
  const std::string m = node.attr_string("mode", "bilinear"), p = node.attr_string("padding_mode", "zeros");
  GridMode mode;
  if (m == "bilinear")
    mode = GridMode::Bilinear;
  else if (m == "nearest")
    mode = GridMode::Nearest;
  else if (m == "bicubic")
    mode = GridMode::Bicubic;
  else
    fail(node.describe() + ": mode must be bilinear, nearest or bicubic, got '" + m + "'");
  GridPadding padding;
  if (p == "zeros")
    padding = GridPadding::Zeros;
  else if (p == "border")
    padding = GridPadding::Border;
  else if (p == "reflection")
    padding = GridPadding::Reflection;
  else
    fail(node.describe() + ": padding_mode must be zeros, border or reflection, got '" + p + "'");
  const bool align_corners = node.attr_int("align_corners", 0) != 0;
  return make_kernel([mode, padding, align_corners](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& grid = ctx.input(1);
    require_float(x, "GridSample input X");
    require_float(grid, "GridSample input grid");
    if (x.rank() != 4 || grid.rank() != 4 || grid.dim(0) != x.dim(0) || grid.dim(3) != 2)
      fail("GridSample expects X N x C x H x W and grid N x H_out x W_out x 2, got " + x.description() + " and " +
           grid.description());
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), Ho = grid.dim(1), Wo = grid.dim(2);
    Tensor out(DataType::Float, {N, C, Ho, Wo});
    if (out.size() == 0) {
      ctx.outputs[0] = std::move(out);
      return;
    }
    if (H == 0 || W == 0) fail("GridSample input X has an empty spatial dim: " + x.description());
    const GridSampler s(mode, padding, align_corners, H, W);
    float* y = out.mutable_data<float>();
    for (int64_t n = 0; n < N; ++n) {
      const float* g = grid.data<float>() + n * Ho * Wo * 2;
      for (int64_t c = 0; c < C; ++c) {
        const float* img = x.data<float>() + (n * C + c) * H * W;
        float* yc = y + (n * C + c) * Ho * Wo;
        for (int64_t i = 0; i < Ho * Wo; ++i) yc[i] = s.sample(img, g[2 * i], g[2 * i + 1]);
      }
    }
    ctx.outputs[0] = std::move(out);
  });
}

// --- RoiAlign -----------------------------------------------------------------

struct RoiAttrs {
  bool max_mode = false;
  bool half_pixel = false;  // opset 16's default; opset 10 behaves as output_half_pixel
  int64_t out_h = 1, out_w = 1, sampling_ratio = 0;
  float spatial_scale = 1.0f;
};

// One bilinear sample: the four neighbours and their weights (all zero
// outside the image).
struct Bilinear {
  int64_t pos[4] = {0, 0, 0, 0};
  float w[4] = {0, 0, 0, 0};
};

Bilinear roi_sample(float y, float x, int64_t H, int64_t W) {
  Bilinear b;
  // also rejects NaN
  if (!(y >= -1.0f && y <= static_cast<float>(H) && x >= -1.0f && x <= static_cast<float>(W))) return b;
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
  int64_t y_lo = static_cast<int64_t>(y), x_lo = static_cast<int64_t>(x), y_hi, x_hi;
  if (y_lo >= H - 1) {
    y_hi = y_lo = H - 1;
    y = static_cast<float>(y_lo);
  } else {
    y_hi = y_lo + 1;
  }
  if (x_lo >= W - 1) {
    x_hi = x_lo = W - 1;
    x = static_cast<float>(x_lo);
  } else {
    x_hi = x_lo + 1;
  }
  const float ly = y - static_cast<float>(y_lo), lx = x - static_cast<float>(x_lo), hy = 1 - ly, hx = 1 - lx;
  b.pos[0] = y_lo * W + x_lo;
  b.pos[1] = y_lo * W + x_hi;
  b.pos[2] = y_hi * W + x_lo;
  b.pos[3] = y_hi * W + x_hi;
  b.w[0] = hy * hx;
  b.w[1] = hy * lx;
  b.w[2] = ly * hx;
  b.w[3] = ly * lx;
  return b;
}

// Number of samples per bin along one axis: sampling_ratio, else ceil(extent / bins).
int64_t bin_grid(int64_t sampling_ratio, float extent, int64_t bins) {
  if (sampling_ratio > 0) return sampling_ratio;
  const double g = std::ceil(static_cast<double>(extent) / static_cast<double>(bins));
  if (!(g <= 1048576.0)) fail("RoiAlign region of extent " + std::to_string(extent) + " is out of range");
  return g > 0.0 ? static_cast<int64_t>(g) : 0;  // an inverted region has no samples
}

std::unique_ptr<Kernel> make_roi_align(const Node& node) {
  RoiAttrs a;
  const std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") fail(node.describe() + ": mode must be avg or max, got '" + mode + "'");
  a.max_mode = mode == "max";
  const std::string ctm = node.opset >= 16 ? node.attr_string("coordinate_transformation_mode", "half_pixel")
                                           : std::string("output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    fail(node.describe() + ": coordinate_transformation_mode must be half_pixel or output_half_pixel, got '" + ctm +
         "'");
  a.half_pixel = ctm == "half_pixel";
  a.out_h = node.attr_int("output_height", 1);
  a.out_w = node.attr_int("output_width", 1);
  a.sampling_ratio = node.attr_int("sampling_ratio", 0);
  a.spatial_scale = node.attr_float("spatial_scale", 1.0f);
  constexpr int64_t kMaxDim = int64_t{1} << 20;  // keeps the bin and sample counts' products in range
  if (a.out_h <= 0 || a.out_w <= 0 || a.out_h > kMaxDim || a.out_w > kMaxDim || a.sampling_ratio < 0 ||
      a.sampling_ratio > kMaxDim)
    fail(node.describe() + ": output_height and output_width must be in [1, 2^20], sampling_ratio in [0, 2^20]");
  return make_kernel([a](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const Tensor& rois = ctx.input(1);
    const Tensor& bi = ctx.input(2);
    require_float(x, "RoiAlign input X");
    require_float(rois, "RoiAlign input rois");
    if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 4 || bi.rank() != 1 || bi.dim(0) != rois.dim(0))
      fail("RoiAlign expects X N x C x H x W, rois R x 4 and batch_indices R, got " + x.description() + ", " +
           rois.description() + ", " + bi.description());
    const std::vector<int64_t> batch = to_int64s(bi);
    const int64_t R = rois.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    Tensor out(DataType::Float, {R, C, a.out_h, a.out_w});
    float* y = out.mutable_data<float>();
    const float offset = a.half_pixel ? 0.5f : 0.0f;
    std::vector<Bilinear> samples;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t b = batch[static_cast<size_t>(r)];
      if (b < 0 || b >= x.dim(0))
        fail("RoiAlign batch index " + std::to_string(b) + " is out of range for X " + x.description());
      const float* roi = rois.data<float>() + r * 4;
      const float x0 = roi[0] * a.spatial_scale - offset, y0 = roi[1] * a.spatial_scale - offset;
      float rw = roi[2] * a.spatial_scale - offset - x0, rh = roi[3] * a.spatial_scale - offset - y0;
      if (!a.half_pixel) {  // legacy behaviour: regions are at least 1x1
        rw = std::max(rw, 1.0f);
        rh = std::max(rh, 1.0f);
      }
      const float bin_h = rh / static_cast<float>(a.out_h), bin_w = rw / static_cast<float>(a.out_w);
      const int64_t gh = bin_grid(a.sampling_ratio, rh, a.out_h), gw = bin_grid(a.sampling_ratio, rw, a.out_w);
      if (gh * gw > (int64_t{1} << 26) / (a.out_h * a.out_w))
        fail("RoiAlign region " + std::to_string(r) + " needs too many samples (" + std::to_string(gh) + " x " +
             std::to_string(gw) + " per bin)");
      const float count = static_cast<float>(std::max<int64_t>(gh * gw, 1));
      // The sample positions are the same for every channel.
      samples.clear();
      for (int64_t ph = 0; ph < a.out_h; ++ph)
        for (int64_t pw = 0; pw < a.out_w; ++pw)
          for (int64_t iy = 0; iy < gh; ++iy) {
            const float sy = y0 + static_cast<float>(ph) * bin_h +
                             (static_cast<float>(iy) + 0.5f) * bin_h / static_cast<float>(gh);
            for (int64_t ix = 0; ix < gw; ++ix) {
              const float sx = x0 + static_cast<float>(pw) * bin_w +
                               (static_cast<float>(ix) + 0.5f) * bin_w / static_cast<float>(gw);
              samples.push_back(roi_sample(sy, sx, H, W));
            }
          }
      for (int64_t c = 0; c < C; ++c) {
        const float* img = x.data<float>() + (b * C + c) * H * W;
        float* yc = y + (r * C + c) * a.out_h * a.out_w;
        const Bilinear* s = samples.data();
        for (int64_t o = 0; o < a.out_h * a.out_w; ++o) {
          float acc = 0.0f;
          for (int64_t k = 0; k < gh * gw; ++k, ++s) {
            if (a.max_mode) {  // the largest weighted neighbour, as ONNX Runtime defines max mode
              float v = s->w[0] * img[s->pos[0]];
              for (int j = 1; j < 4; ++j) v = std::max(v, s->w[j] * img[s->pos[j]]);
              acc = k == 0 ? v : std::max(acc, v);
            } else {
              for (int j = 0; j < 4; ++j) acc += s->w[j] * img[s->pos[j]];
            }
          }
          yc[o] = a.max_mode ? acc : acc / count;
        }
      }
    }
    ctx.outputs[0] = std::move(out);
  });
}

// --- NonMaxSuppression --------------------------------------------------------

// A box as (x_min, y_min, x_max, y_max).
struct Box {
  float x0, y0, x1, y1;
};

Box read_box(const float* b, bool center_point) {
  if (center_point) return {b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2};
  // [y1, x1, y2, x2], either corner first
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

bool overlaps(const Box& a, const Box& b, float iou_threshold) {
  const float ix0 = std::max(a.x0, b.x0), iy0 = std::max(a.y0, b.y0);
  const float ix1 = std::min(a.x1, b.x1), iy1 = std::min(a.y1, b.y1);
  if (ix1 <= ix0 || iy1 <= iy0) return false;
  const float inter = (ix1 - ix0) * (iy1 - iy0);
  const float area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
  const float uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

std::unique_ptr<Kernel> make_non_max_suppression(const Node& node) {
  const int64_t cpb = node.attr_int("center_point_box", 0);
  if (cpb != 0 && cpb != 1) fail(node.describe() + ": center_point_box must be 0 or 1, got " + std::to_string(cpb));
  const bool center_point = cpb == 1;
  return make_kernel([center_point](KernelContext& ctx) {
    const Tensor& boxes = ctx.input(0);
    const Tensor& scores = ctx.input(1);
    require_float(boxes, "NonMaxSuppression input boxes");
    require_float(scores, "NonMaxSuppression input scores");
    if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 || scores.dim(0) != boxes.dim(0) ||
        scores.dim(2) != boxes.dim(1))
      fail("NonMaxSuppression expects boxes B x N x 4 and scores B x C x N, got " + boxes.description() + " and " +
           scores.description());
    auto scalar = [&](size_t i, const char* what) -> const Tensor* {
      const Tensor* t = ctx.optional_input(i);
      if (t && t->size() != 1) fail(std::string("NonMaxSuppression ") + what + " must hold one value, got " + t->description());
      return t;
    };
    const Tensor* max_t = scalar(2, "max_output_boxes_per_class");
    const Tensor* iou_t = scalar(3, "iou_threshold");
    const Tensor* score_t = scalar(4, "score_threshold");
    if (max_t) require_type(*max_t, DataType::Int64, "NonMaxSuppression max_output_boxes_per_class");
    if (iou_t) require_float(*iou_t, "NonMaxSuppression iou_threshold");
    if (score_t) require_float(*score_t, "NonMaxSuppression score_threshold");
    const int64_t max_out = max_t ? std::max<int64_t>(max_t->data<int64_t>()[0], 0) : 0;
    const float iou = iou_t ? iou_t->data<float>()[0] : 0.0f;
    if (!(iou >= 0.0f && iou <= 1.0f)) fail("NonMaxSuppression iou_threshold must be in [0, 1], got " + std::to_string(iou));
    const int64_t B = boxes.dim(0), C = scores.dim(1), N = boxes.dim(1);
    std::vector<int64_t> selected;  // (batch, class, box) triples
    std::vector<int64_t> order;
    std::vector<Box> kept;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c) {
        const float* sc = scores.data<float>() + (b * C + c) * N;
        order.clear();
        for (int64_t i = 0; i < N; ++i)
          if (!std::isnan(sc[i]) && (!score_t || sc[i] > score_t->data<float>()[0])) order.push_back(i);
        // highest score first; equal scores keep the lower box index first
        std::stable_sort(order.begin(), order.end(), [sc](int64_t l, int64_t r) { return sc[l] > sc[r]; });
        kept.clear();
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_out) break;
          const Box box = read_box(boxes.data<float>() + (b * N + i) * 4, center_point);
          if (std::any_of(kept.begin(), kept.end(), [&](const Box& k) { return overlaps(k, box, iou); })) continue;
          kept.push_back(box);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    const int64_t count = static_cast<int64_t>(selected.size() / 3);
    ctx.outputs[0] = Tensor::from_vector<int64_t>({count, 3}, selected);
  });
}

}  // namespace

void register_sampling(std::vector<KernelDef>& t) {
  t.push_back({"MaxUnpool", 9, 17, make_max_unpool});
  t.push_back({"GridSample", 16, 17, make_grid_sample});
  t.push_back({"RoiAlign", 10, 17, make_roi_align});
  t.push_back({"NonMaxSuppression", 10, 17, make_non_max_suppression});
}

}  // namespace epprof::rt::kernels
