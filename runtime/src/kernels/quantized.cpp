// Quantized ops: QuantizeLinear, DequantizeLinear, QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger.
#include "kernels/common.h"

namespace epprof::rt::kernels {

void register_quantized(std::vector<KernelDef>&) {}

}  // namespace epprof::rt::kernels
