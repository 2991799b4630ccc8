// Element loops built for the CPU they run on. The runtime is compiled for
// baseline x86-64 (SSE2) so that one binary runs anywhere; a function marked
// EPPROF_SIMD_CLONES is also compiled for x86-64-v3 (AVX2, FMA) and v4
// (AVX-512), and the loader picks the best one the CPU has (GCC's function
// multi-versioning, through an ifunc). Measured on the transformer's GELU Erf
// over 131,072 floats: 462 us as SSE2, 54 us as AVX-512.
//
// Results may differ between clones in the last bits: the v3 and v4 clones
// contract a * b + c into a fused multiply-add, as ONNX Runtime's kernels do.
// Elsewhere (Clang, other targets) the macro is empty and the loops build
// for the baseline. So it is under ThreadSanitizer: the loader runs an
// ifunc's resolver while relocating, before TSan's runtime is up, and TSan's
// instrumentation of the resolver then crashes the process at start. And so
// it is under AddressSanitizer: a clone is the same source loop compiled
// three times, so the sanitizer checks its memory accesses as well in the
// baseline build, and the clones made elementwise.cpp alone take over two
// minutes to build there. The loops that at_widest_vector() builds per level
// (their own source for each vector width: the implicit GEMM's tiles) are
// built by GCC and Clang, under AddressSanitizer too (CI's, a Clang build,
// runs them), not under ThreadSanitizer.
//
// GCC 12 treats a cloned function as one that cannot throw: an exception
// leaving it terminates the process. So a clone that calls code which may
// throw (an element function that rejects a value, an allocation) catches
// everything into an exception_ptr, and a plain wrapper rethrows it
// (rethrowing() below).
#pragma once
#include <cstdint>
#include <exception>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(__SANITIZE_THREAD__)
#if !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define EPPROF_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
// Functions may also be built per x86-64 level with their own vector
// width: at_widest_vector() below.
#define EPPROF_SIMD_LEVELS 1
#endif
#ifndef EPPROF_SIMD_CLONES
#define EPPROF_SIMD_CLONES
#endif

namespace epprof::rt::kernels {

// 16 and 64 bytes of T as GCC/Clang vector types: the compiler lowers their
// arithmetic to the target's SIMD (a 16-byte vector is one SSE2 register at
// the baseline x86-64 flags, a 64-byte one is one AVX-512 register in the v4
// clones) whatever its loop vectoriser decides: for loops that accumulate
// across taps (conv.cpp's depthwise taps, pool.cpp's MaxPool windows), which
// it does not vectorise.
template <typename T>
struct Simd;
template <>
struct Simd<float> {
  typedef float V __attribute__((vector_size(16)));
  typedef float Wide __attribute__((vector_size(64)));
  // One AVX2 register. GCC keeps a 64-byte vector in memory where the
  // target has no 64-byte registers: in loops that carry one in a
  // variable, AVX2 code built with Wide spills at every step.
  typedef float Half __attribute__((vector_size(32)));
};
template <>
struct Simd<double> {
  typedef double V __attribute__((vector_size(16)));
  typedef double Wide __attribute__((vector_size(64)));
  typedef double Half __attribute__((vector_size(32)));
};

// A vector type as a value, for a generic lambda to take it as an argument.
template <typename V>
struct VectorType {
  using type = V;
};

namespace simd_detail {
#if EPPROF_SIMD_LEVELS
template <typename T, typename Body>
__attribute__((target("arch=x86-64-v4"))) void run_v4(Body& body) noexcept {
  body(VectorType<typename Simd<T>::Wide>{});
}
template <typename T, typename Body>
__attribute__((target("arch=x86-64-v3"))) void run_v3(Body& body) noexcept {
  body(VectorType<typename Simd<T>::Half>{});
}
#endif
}  // namespace simd_detail

// body(VectorType<W>{}), built for the highest x86-64 level this CPU has,
// with W the widest vector of T one of its registers holds: Simd<T>::Wide
// on v4 (AVX-512), Half on v3 (AVX2, FMA), V at the baseline. For loops
// that carry vectors in variables, whose width must follow the CPU, which
// EPPROF_SIMD_CLONES (one source for every level) cannot say: a 64-byte
// vector on an AVX2 machine lives in memory, and such a loop spills at
// every step.
//
// `body` is built for the level only where it is inlined: a lambda marked
// __attribute__((always_inline)) (the [[gnu::]] spelling there names its
// type, which Clang ignores) that calls only inline functions. It must
// not throw. The level is read from the CPU once.
template <typename T, typename Body>
void at_widest_vector(Body&& body) noexcept {
#if EPPROF_SIMD_LEVELS
#if defined(__clang__)  // Clang 14 knows the levels' features, not the levels
  static const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                         __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  static const int level = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                   __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                                   __builtin_cpu_supports("avx512vl")
                               ? 4
                           : v3 ? 3
                                : 0;
#else
  static const int level = __builtin_cpu_supports("x86-64-v4") ? 4 : __builtin_cpu_supports("x86-64-v3") ? 3 : 0;
#endif
  if (level == 4) return simd_detail::run_v4<T>(body);
  if (level == 3) return simd_detail::run_v3<T>(body);
#endif
  body(VectorType<typename Simd<T>::V>{});
}

// Calls clone(error), a cloned function that stores what it caught in
// `error`, and rethrows it here, outside the clone.
template <typename Clone>
void rethrowing(Clone clone) {
  std::exception_ptr error;
  clone(error);
  if (error) std::rethrow_exception(error);
}

namespace simd_detail {
template <typename Loop>
EPPROF_SIMD_CLONES void in_clones(Loop& loop, std::exception_ptr& error) noexcept {
  try {
    loop();
  } catch (...) {
    error = std::current_exception();
  }
}
}  // namespace simd_detail

// Runs loop(), an element loop over values of the types Ts, built in every
// EPPROF_SIMD_CLONES level when one of Ts is float or double, the types
// models compute in, and for the baseline only otherwise: integers, bool
// and the 16-bit floats hold shapes, indices and masks, whose loops SSE2
// still vectorises, and building them three times took 5 to 10 s of the
// compile time of each of elementwise.cpp, unary.cpp and logical.cpp.
// `loop` is a lambda marked __attribute__((always_inline)) that calls only
// inline functions, as for at_widest_vector, so that each clone builds it
// for its level. What it throws propagates.
template <typename... Ts, typename Loop>
void simd_loop(Loop&& loop) {
  if constexpr ((std::is_floating_point_v<Ts> || ...))
    rethrowing([&](std::exception_ptr& error) { simd_detail::in_clones(loop, error); });
  else
    loop();
}

// out[i] = f(in[i]) for i < n. `out` may be `in`. What f throws propagates.
template <typename In, typename Out, typename F>
void transform_elements(const In* in, Out* out, int64_t n, F f) {
  simd_loop<In, Out>([&]() __attribute__((always_inline)) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
  });
}

}  // namespace epprof::rt::kernels
