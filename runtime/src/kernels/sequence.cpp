// Sequence and Optional ops.
#include "kernels/common.h"

namespace epprof::rt::kernels {

void register_sequence(std::vector<KernelDef>&) {}

}  // namespace epprof::rt::kernels
