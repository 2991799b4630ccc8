// Unary math and activation functions.
#include "kernels/common.h"

namespace epprof::rt::kernels {

void register_unary(std::vector<KernelDef>&) {}

}  // namespace epprof::rt::kernels
