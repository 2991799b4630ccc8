// The kernels the runtime's gemms (MatMul, Gemm, Conv and the like) run on.
//
// Float gemms run on the runtime's own sgemm where the CPU has AVX-512, or
// AVX2 with FMA; the rest (other CPUs, double, matrix-vector products) on
// OpenBLAS.
//
// Debian's OpenBLAS is built for every x86-64 generation and picks its kernel
// set when it is loaded, by the CPU's features, unless OPENBLAS_CORETYPE
// names one. The choice moves Conv and MatMul times by up to 1.3x (the
// bundled cnn model on a Zen 5 VM: 1.82 ms a run on the AVX2 "Haswell"
// kernels, 1.37 ms on the AVX-512 ones), so a profile records it.
#pragma once

#include <string>

namespace epprof::rt {

// The kernel set OpenBLAS runs on in this process, by OpenBLAS's name for it
// ("Haswell", "SkylakeX", "Cooperlake", ...). Thread-safe.
std::string blas_kernels();

// The runtime's own float gemm kernel on this CPU: "avx512" or "avx2", or
// "openblas" when the CPU has neither and OpenBLAS runs every gemm.
// Thread-safe.
std::string sgemm_kernels();

// The vectors of the runtime's implicit-GEMM Conv (the float convs whose
// output maps fill its vectors: by rows, or with stride 1 narrow rows laid
// end to end) on this CPU: "avx512" or "avx2", or "none" when it does not
// run and every such Conv takes the gemm. Thread-safe.
std::string conv_direct_kernels();

}  // namespace epprof::rt
