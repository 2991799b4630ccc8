// The activation functions, one element at a time, in the kernels' compute
// types (float, double; Relu and Clip also the integers). The ops
// (unary.cpp: Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, Clip) and the
// activations a Conv carries (conv.cpp: FusedConv) call the same ones, so a
// graph the fusion pass rewrote computes what the graph as written did.
// Each is branch-free or a select, and inline, so the loops that call them
// vectorise.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/vector_math.h"

namespace epprof::rt::kernels::activation {

template <typename T>
inline T relu(T x) {
  return x > 0 ? x : T(0);  // NaN: 0
}

// max(x, 0) + alpha * min(x, 0) rather than a select of x and alpha * x,
// which did not vectorise: the same values, NaN included (for a finite alpha).
template <typename T>
inline T leaky_relu(T x, T alpha) {
  return std::max(x, T(0)) + alpha * std::min(x, T(0));
}

// float: vector_math.h's sigmoid_f32 (no libm call). double: libm, stable
// in both directions.
template <typename T>
inline T sigmoid(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return sigmoid_f32(x);
  } else {
    if (x >= 0) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  }
}

// float: vector_math.h's tanh_f32 (no libm call, so loops of it vectorise:
// std::tanh kept them scalar). double: libm.
template <typename T>
inline T tanh(T x) {
  return tanh_of(x);
}

// max(0, min(1, alpha * x + beta)); std::max/min with the constant first
// give fmax/fmin's result (NaN: 1) and vectorise, where fmax/fmin are calls.
template <typename T>
inline T hard_sigmoid(T x, T alpha, T beta) {
  return std::max(T(0), std::min(T(1), alpha * x + beta));
}

// As the Clip op: x below lo gives lo, above hi gives hi, so lo > hi gives
// hi everywhere; NaN stays NaN.
template <typename T>
inline T clip(T x, T lo, T hi) {
  if (x < lo) x = lo;
  if (hi < x) x = hi;
  return x;
}

}  // namespace epprof::rt::kernels::activation
