// Indexing ops: gather and scatter families, slicing, TopK, ArgMax/ArgMin and friends.
#include "kernels/common.h"

namespace epprof::rt::kernels {

void register_indexing(std::vector<KernelDef>&) {}

}  // namespace epprof::rt::kernels
