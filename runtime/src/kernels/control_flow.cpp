// Control flow: If, Loop and Scan.
#include "kernels/common.h"

namespace epprof::rt::kernels {

void register_control_flow(std::vector<KernelDef>&) {}

}  // namespace epprof::rt::kernels
