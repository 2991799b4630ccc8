#include "epprof/rt/blas.h"

// OpenBLAS's own API (its cblas.h), declared here for the reason
// threading.cpp gives.
extern "C" char* openblas_get_corename(void);

namespace epprof::rt {

std::string blas_kernels() {
  const char* name = openblas_get_corename();
  return name ? name : "";
}

}  // namespace epprof::rt
