// Window geometry shared by Conv and the pooling ops: kernel, strides, pads,
// dilations and auto_pad, resolved against an input's spatial dims.
#pragma once
#include <vector>

#include "kernels/common.h"

namespace epprof::rt::kernels {

struct WindowAttrs {
  std::vector<int64_t> kernel;     // may be empty for Conv (taken from W)
  std::vector<int64_t> strides, pads, dilations;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
  static WindowAttrs from_node(const Node& node);
};

// Resolved geometry, always padded to 3 spatial dims (leading dims of size 1).
struct Window {
  size_t spatial = 0;              // original number of spatial dims
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
  Shape out_spatial() const;       // the `spatial` real output dims
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};

// `input` is N x C x spatial...; `kernel` the spatial kernel dims.
Window resolve_window(const WindowAttrs& attrs, const Shape& input, const std::vector<int64_t>& kernel);

}  // namespace epprof::rt::kernels
