// The shared plugin shell (plugins/common/plugin_shell.h): arguments the
// host should never pass are refused with a status, and *out is never left
// unset on a return.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "epprof/epprof.h"
#include "plugin_shell.h"
#include "support/test_util.h"

namespace epprof::ep_common {
namespace {

class NullEp {
 public:
  static constexpr EpIdentity kIdentity{"null", "NullExecutionProvider"};
  static std::unique_ptr<NullEp> open(const epprof_host_api*, uint64_t, std::string*) { return std::make_unique<NullEp>(); }
  OpSet ops() const { return kBasicOps; }
  bool prepare(const OpKernel&, std::string*) { return true; }
  ComputeResult compute(const OpKernel&, const epprof_ep_tensor*, size_t, epprof_ep_outputs*) { return {}; }
  epprof_ep_profiler* create_profiler() { return nullptr; }
};

TEST(PluginShell, EntryRefusesANullOut) {
  const auto r = epprof::testing::take(plugin_entry<NullEp>(epprof_get_host_api(), EPPROF_EP_PLUGIN_ABI_VERSION, nullptr));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("null EP: entry: out is NULL"), std::string::npos) << r.message;
}

// The cap's variable is named for the EP's short name, and a value that is
// no byte count refuses the EP rather than becoming no cap.
TEST(PluginShell, AMistypedAllocationCapRefusesTheEpByItsVariable) {
  EXPECT_EQ(alloc_limit_variable(NullEp::kIdentity), "EPPROF_NULL_MAX_ALLOC_BYTES");
  EXPECT_EQ(alloc_limit_variable({"opencl", "OpenCLExecutionProvider"}), "EPPROF_OPENCL_MAX_ALLOC_BYTES");
  setenv("EPPROF_NULL_MAX_ALLOC_BYTES", "12kb", 1);
  epprof_ep_plugin* ep = reinterpret_cast<epprof_ep_plugin*>(0x1);
  const auto r = epprof::testing::take(plugin_entry<NullEp>(epprof_get_host_api(), EPPROF_EP_PLUGIN_ABI_VERSION, &ep));
  unsetenv("EPPROF_NULL_MAX_ALLOC_BYTES");
  EXPECT_EQ(r.code, EPPROF_UNSUPPORTED);
  EXPECT_EQ(r.message.rfind("null EP: ", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("EPPROF_NULL_MAX_ALLOC_BYTES"), std::string::npos) << r.message;
  EXPECT_EQ(ep, nullptr);
}

TEST(PluginShell, EntryWithoutAHostLeavesOutNull) {
  epprof_ep_plugin* out = reinterpret_cast<epprof_ep_plugin*>(0x1);
  EXPECT_EQ(plugin_entry<NullEp>(nullptr, EPPROF_EP_PLUGIN_ABI_VERSION, &out), nullptr);
  EXPECT_EQ(out, nullptr);
}

TEST(PluginShell, CreateProfilerRefusesANullOut) {
  epprof_ep_plugin* ep = nullptr;
  EPPROF_ASSERT_OK(plugin_entry<NullEp>(epprof_get_host_api(), EPPROF_EP_PLUGIN_ABI_VERSION, &ep));
  ASSERT_NE(ep, nullptr);
  const auto r = epprof::testing::take(ep->create_profiler(ep, nullptr));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("create_profiler: out is NULL"), std::string::npos) << r.message;
  ep->release(ep);
}

}  // namespace
}  // namespace epprof::ep_common
