// ConvTranspose.
#include "kernels/common.h"

namespace epprof::rt::kernels {

void register_conv_transpose(std::vector<KernelDef>&) {}

}  // namespace epprof::rt::kernels
