// Shared by the reduction, normalisation, loss and einsum kernels: the
// geometry of a reduction over a set of axes, walked in contiguous runs, and
// overflow-safe accumulation for integer element types.
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/common.h"

namespace epprof::rt::kernels {

// Accumulator type: double for the float types; 64-bit integers for the
// integer types, whose sums and products wrap (computed in uint64_t, so
// overflow is defined behaviour rather than UB).
template <typename T>
using acc_t = std::conditional_t<std::is_floating_point_v<T>, double,
                                 std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

template <typename A>
A acc_add(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <typename A>
A acc_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}

// The sum in double of term(k) over k in [0, n), over 8 independent lanes
// so that loops of it vectorise (one chain of dependent adds stays scalar:
// GCC keeps a reduction in order without -ffast-math; GlobalAveragePool ran
// at 2.3x ONNX Runtime's time that way on ppocr_v4_det). Lane l takes the
// terms k = l (mod 8) of the whole groups of 8; the lanes are then added in
// order, then the rest of the terms.
template <typename Term>
inline double sum_in_lanes(int64_t n, const Term& term) {
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += term(k + l);
  double sum = 0.0;
  for (double l : lanes) sum += l;
  for (; k < n; ++k) sum += term(k);
  return sum;
}

// A reduction of `shape` over the axes marked in `reduced`, with adjacent
// dims of the same kind merged so that the innermost loop is contiguous in
// the input. Output slots are numbered in the input's order with the reduced
// dims removed (equally: kept as 1).
class ReduceGeometry {
 public:
  ReduceGeometry(const Shape& shape, const std::vector<bool>& reduced) {
    count_ = 1;
    slots_ = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;  // size-1 dims change nothing
      (reduced[d] ? count_ : slots_) *= shape[d];
      if (!dims_.empty() && kept_.back() == !reduced[d]) {
        dims_.back() *= shape[d];
      } else {
        dims_.push_back(shape[d]);
        kept_.push_back(!reduced[d]);
      }
    }
    total_ = shape_size(shape);
    // Output strides: 0 along reduced dims, row-major over the kept dims.
    out_strides_.assign(dims_.size(), 0);
    int64_t s = 1;
    for (size_t d = dims_.size(); d-- > 0;)
      if (kept_[d]) {
        out_strides_[d] = s;
        s *= dims_[d];
      }
  }

  int64_t slots() const { return slots_; }  // number of output values
  int64_t count() const { return count_; }  // input elements per output value

  // Calls f(in_offset, slot, len, slot_step) for every contiguous run of the
  // input: elements in_offset + j feed slot + j * slot_step for j < len.
  template <typename F>
  void for_each_run(F&& f) const {
    if (total_ == 0) return;
    if (dims_.empty()) {
      f(int64_t{0}, int64_t{0}, int64_t{1}, int64_t{0});
      return;
    }
    const size_t r = dims_.size();
    const int64_t len = dims_[r - 1], step = out_strides_[r - 1];
    std::vector<int64_t> idx(r, 0);
    int64_t slot = 0;
    for (int64_t base = 0; base < total_; base += len) {
      f(base, slot, len, step);
      for (size_t d = r - 1; d-- > 0;) {
        slot += out_strides_[d];
        if (++idx[d] < dims_[d]) break;
        slot -= out_strides_[d] * dims_[d];
        idx[d] = 0;
      }
    }
  }

 private:
  Shape dims_;
  std::vector<bool> kept_;
  std::vector<int64_t> out_strides_;
  int64_t count_ = 1, slots_ = 1, total_ = 0;
};

// Marks the axes to reduce; throws on an out-of-range or repeated axis.
inline std::vector<bool> reduced_axes(const std::vector<int64_t>& axes, size_t rank, const char* what) {
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    const size_t d = static_cast<size_t>(normalize_axis(a, static_cast<int64_t>(rank)));
    if (reduced[d]) fail(std::string(what) + ": axis " + std::to_string(a) + " is repeated");
    reduced[d] = true;
  }
  return reduced;
}

}  // namespace epprof::rt::kernels
