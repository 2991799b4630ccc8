// The built-in CPU execution provider: claims every op in the kernel table
// within its domain's opset range.
#include "cpu_ep.h"

#include "epprof/rt/execution_provider.h"
#include "kernels/common.h"

namespace epprof::rt {

namespace {

const kernels::KernelDef* find_def(const Node& node) {
  for (const auto& d : kernels::cpu_kernel_table())
    if (node.op_type == d.op_type && node.domain == d.domain && node.opset >= d.since_version &&
        node.opset <= d.max_version)
      return &d;
  return nullptr;
}

class CpuExecutionProvider final : public ExecutionProvider {
 public:
  std::string name() const override { return "CPUExecutionProvider"; }
  bool claims(const Node& node) const override { return find_def(node) != nullptr; }
  std::unique_ptr<Kernel> create_kernel(const Node& node) const override {
    const kernels::KernelDef* d = find_def(node);
    if (!d) throw Error(ErrorKind::UnsupportedOp, "CPUExecutionProvider has no kernel for " + node.describe());
    return d->factory(node);
  }
};

}  // namespace

std::shared_ptr<ExecutionProvider> make_cpu_execution_provider() { return std::make_shared<CpuExecutionProvider>(); }

bool detail::is_cpu_execution_provider(const ExecutionProvider& p) {
  return dynamic_cast<const CpuExecutionProvider*>(&p) != nullptr;
}

std::vector<OpSupport> cpu_supported_ops() {
  std::vector<OpSupport> out;
  for (const auto& d : kernels::cpu_kernel_table()) out.push_back({d.op_type, d.since_version, d.max_version, d.domain});
  return out;
}

}  // namespace epprof::rt
