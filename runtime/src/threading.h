// Intra-op threading: the machine's physical cores (ONNX Runtime's default
// intra-op thread count) and OpenBLAS's process-global thread count, which
// Session::run keeps at 1 (the session's intra-op pool, intra_op.h, splits
// the gemms; OpenBLAS's own threads cost more than they gained on them).
#pragma once

namespace epprof::rt::detail {

// Distinct (physical package, core) pairs among the online CPUs listed in
// /sys/devices/system/cpu; 0 when they cannot be read.
int physical_cores();

// Makes OpenBLAS use `threads` threads (>= 1) for the calls that start
// after it. Process-global; cheap when the count is already `threads` (one
// read of OpenBLAS's count, no call into its setter: about 16 ns with
// Debian's OpenBLAS 0.3.21, measured).
void set_blas_threads(int threads);

// OpenBLAS's current thread count.
int blas_threads();

}  // namespace epprof::rt::detail
