// How the element-wise kernels (broadcast.h's same-shape and scalar cases,
// unary.cpp's functions and Clip) split a tensor across the intra-op
// threads: so that each thread reads the elements the kernel before it
// wrote on that thread, in its own core's cache.
//
// Conv and MaxPool give each range its rows of every plane of an NCHW
// tensor, or its planes when they are small (intra_op.h,
// detail::split_by_planes); a MatMul's gemm its rows of C. Run on the
// calling thread alone, an element-wise op after them reads half its input
// from the other core's cache, and the next Conv's worker reads half of
// the op's output from the calling thread's. ppocr_v4_rec's scalar Muls
// after its depthwise Convs ([1,480,6,40], 460 KB) took 10 us in a
// 1-thread session and 50 us in a 2-thread one, unsplit; split, 5 us.
#pragma once
#include <algorithm>
#include <cstdint>

#include "intra_op.h"
#include "kernels/common.h"
#include "kernels/simd.h"

namespace epprof::rt::kernels {

// fn(begin, count) over runs of the elements of a tensor of `shape`, every
// element in exactly one run, across the intra-op threads when the tensor
// is big enough (`bytes` read and written, detail::kMinSplitBytes); else
// fn(0, size) once, on the calling thread. A tensor of rank 4 or more
// splits as the spatial kernels split it (detail::split_by_planes, its
// elements of `element_bytes`): by ranges of whole planes (dims 0 and 1),
// one run a range, or by ranges of every plane's rows (dims 2 .. rank-2),
// one run a plane. Any other splits into contiguous ranges, as a MatMul's
// rows and a 1-D Conv's channel blocks are; those start on a multiple of
// 16 elements, so that no two threads write one cache line. What fn throws
// propagates.
template <typename Fn>
void split_elements(const Shape& shape, int64_t element_bytes, int64_t bytes, const Fn& fn) {
  const int64_t n = shape_size(shape);
  const int threads = detail::intra_op_threads();
  constexpr int64_t kAlign = 16;
  if (threads == 1 || bytes < detail::kMinSplitBytes || n < threads * kAlign) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  const size_t rank = shape.size();
  if (rank >= 4) {
    const int64_t planes = shape[0] * shape[1], plane = n / planes;  // n > 0: no dim is 0
    const int64_t len = shape[rank - 1], rows = plane / len;
    if (detail::split_by_planes(planes, plane * element_bytes)) {
      detail::parallel_for_ranges(planes, detail::intra_op_ranges(planes, 1), [&](int64_t, int64_t p0, int64_t p1) {
        fn(p0 * plane, (p1 - p0) * plane);
      });
      return;
    }
    if (rows >= threads) {
      detail::parallel_for_ranges(rows, detail::intra_op_ranges(rows, 1), [&](int64_t, int64_t r0, int64_t r1) {
        for (int64_t p = 0; p < planes; ++p) fn(p * plane + r0 * len, (r1 - r0) * len);
      });
      return;
    }
  }
  const int64_t blocks = (n + kAlign - 1) / kAlign;
  detail::parallel_for_ranges(blocks, detail::intra_op_ranges(blocks, 1), [&](int64_t, int64_t b0, int64_t b1) {
    const int64_t begin = b0 * kAlign, end = std::min(n, b1 * kAlign);
    fn(begin, end - begin);
  });
}

// out[i] = f(in[i]) over a tensor of `shape` (transform_elements, simd.h),
// split as split_elements says: f must be safe to call from several
// threads at once. `out` may be `in`.
template <typename In, typename Out, typename F>
void transform_split(const In* in, Out* out, const Shape& shape, F f) {
  split_elements(shape, int64_t(sizeof(Out)), shape_size(shape) * int64_t(sizeof(In) + sizeof(Out)),
                 [&](int64_t begin, int64_t count) { transform_elements(in + begin, out + begin, count, f); });
}

}  // namespace epprof::rt::kernels
