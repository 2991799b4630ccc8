// Runs every ONNX backend test case of libonnx-testdata (the node,
// pytorch-converted, pytorch-operator and simple suites: 1,072 cases in ONNX
// 1.12) and compares with the reference outputs: float types to rtol 1e-3,
// atol 1e-5 (float16 and bfloat16 to rtol 1e-2), integers and bool exactly.
// A case that does not pass must be in the known-failures list with its
// reason; one that fails unlisted, or passes while listed, fails the test.
// Coverage is reported per suite against all cases, not only runnable ones.
//
// usage: runtime_conformance DATA_ROOT KNOWN_FAILURES_FILE [CASE_SUBSTRING] [--ep PLUGIN_EP.so]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "epprof/rt/plugin_ep.h"
#include "epprof/rt/session.h"
#include "epprof/rt/tensor_io.h"
#include "onnx/onnx_pb.h"

namespace fs = std::filesystem;
using namespace epprof::rt;

namespace {

template <typename F>
void dispatch_element(DataType type, F&& f) {
  switch (type) {
    case DataType::Float: f(float{}); break;
    case DataType::Double: f(double{}); break;
    case DataType::Int64: f(int64_t{}); break;
    case DataType::Int32: f(int32_t{}); break;
    case DataType::Int16: f(int16_t{}); break;
    case DataType::Int8: f(int8_t{}); break;
    case DataType::Uint64: f(uint64_t{}); break;
    case DataType::Uint32: f(uint32_t{}); break;
    case DataType::Uint16: f(uint16_t{}); break;
    case DataType::Uint8: f(uint8_t{}); break;
    case DataType::Bool: f(bool{}); break;
    case DataType::Float16: f(Float16{}); break;
    case DataType::BFloat16: f(BFloat16{}); break;
    case DataType::Undefined: throw std::runtime_error("tensor of undefined type");
  }
}

int g_data_sets = 0, g_outputs = 0;  // how much was actually compared

bool read_model(const fs::path& path, onnx::ModelProto& m) {
  std::ifstream in(path, std::ios::binary);
  return in && m.ParseFromIstream(&in);
}

// An element as a double, for comparing every numeric type one way.
double element_as_double(const Tensor& t, int64_t i) {
  double v = 0;
  dispatch_element(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T x = static_cast<const T*>(t.raw())[i];
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
      v = x.to_float();
    else
      v = static_cast<double>(x);
  });
  return v;
}

std::string compare(const Tensor& got, const Tensor& want) {
  if (want.is_none() || got.is_none())
    return want.is_none() && got.is_none() ? "" : "got " + got.description() + ", expected " + want.description();
  if (want.is_sequence() || got.is_sequence()) {
    if (!want.is_sequence() || !got.is_sequence() || got.sequence().size() != want.sequence().size())
      return "got " + got.description() + ", expected " + want.description();
    for (size_t i = 0; i < want.sequence().size(); ++i)
      if (std::string diff = compare(got.sequence()[i], want.sequence()[i]); !diff.empty())
        return "sequence item " + std::to_string(i) + ": " + diff;
    return "";
  }
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return "got " + got.description() + ", expected " + want.description();
  const bool is_float = want.dtype() == DataType::Float || want.dtype() == DataType::Double ||
                        want.dtype() == DataType::Float16 || want.dtype() == DataType::BFloat16;
  // Integers (int64 up to 2^53 is all the test data holds) and bool: exact.
  for (int64_t i = 0; i < want.size(); ++i) {
    const double g = element_as_double(got, i);
    const double w = element_as_double(want, i);
    if (is_float) {
      if (std::isnan(w) && std::isnan(g)) continue;
      if (std::isinf(w) && g == w) continue;
      const double rtol = want.dtype() == DataType::Float16 || want.dtype() == DataType::BFloat16 ? 1e-2 : 1e-3;
      if (std::fabs(g - w) <= 1e-5 + rtol * std::fabs(w)) continue;
    } else if (g == w) {
      continue;
    }
    return "element " + std::to_string(i) + ": got " + std::to_string(g) + ", expected " + std::to_string(w);
  }
  return "";
}

// ONNX 1.12's test data stores bfloat16 tensors as uint16 (numpy has no
// bfloat16): take the bits as the type the graph declares.
Tensor as_declared(const Tensor& t, const onnx::ValueInfoProto& v) {
  if (t.dtype() != DataType::Uint16 || v.type().tensor_type().elem_type() != onnx::TensorProto::BFLOAT16) return t;
  Tensor out(DataType::BFloat16, t.shape());
  std::memcpy(out.raw_mutable(), t.raw(), t.byte_size());
  return out;
}

std::vector<fs::path> sorted_dirs(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// With --ep, every case runs on [that plugin EP, CPU EP].
std::shared_ptr<ExecutionProvider> g_plugin_ep;
int g_cases_on_plugin = 0;  // cases with at least one node on the plugin EP

// Runs one case; returns "" on success or the first failure.
std::string run_case(const fs::path& dir, const onnx::ModelProto& m) {
  try {
    SessionOptions options;
    if (g_plugin_ep) options.providers = {g_plugin_ep, make_cpu_execution_provider()};
    Session session((dir / "model.onnx").string(), options);
    if (g_plugin_ep) {
      for (size_t i = 0; i < session.nodes().size(); ++i) {
        if (session.provider_of(i) == g_plugin_ep->name()) {
          ++g_cases_on_plugin;
          break;
        }
      }
    }
    std::set<std::string> inits;
    for (const auto& i : m.graph().initializer()) inits.insert(i.name());
    const auto sets = sorted_dirs(dir, "test_data_set_");
    if (sets.empty()) return "no test_data_set";
    for (const auto& set : sets) {
      std::map<std::string, Tensor> inputs;
      for (int i = 0; i < m.graph().input_size(); ++i) {
        const fs::path f = set / ("input_" + std::to_string(i) + ".pb");
        if (!fs::exists(f)) break;
        const std::string& name = m.graph().input(i).name();
        if (inits.count(name)) continue;
        const auto info = std::find_if(session.inputs().begin(), session.inputs().end(),
                                       [&](const IoInfo& in) { return in.name == name; });
        inputs[name] = as_declared(info == session.inputs().end() ? read_tensor_file(f.string()).tensor
                                                                  : read_value_file(f.string(), *info).tensor,
                                   m.graph().input(i));
      }
      const std::vector<Tensor> outputs = session.run(inputs);
      ++g_data_sets;
      for (size_t o = 0; o < outputs.size(); ++o) {
        const Tensor want =
            as_declared(read_value_file((set / ("output_" + std::to_string(o) + ".pb")).string(), session.outputs()[o]).tensor,
                        m.graph().output(static_cast<int>(o)));
        const std::string diff = compare(outputs[o], want);
        ++g_outputs;
        if (!diff.empty())
          return set.filename().string() + " output " + std::to_string(o) + " ('" + session.outputs()[o].name + "'): " + diff;
      }
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::map<std::string, std::string> read_known(const std::string& path) {
  std::map<std::string, std::string> known;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string name, reason;
    ss >> name;
    std::getline(ss, reason);
    if (!name.empty()) known[name] = reason;
  }
  return known;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--ep") continue;
    try {
      g_plugin_ep = load_plugin_ep(args[i + 1]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
    args.erase(args.begin() + long(i), args.begin() + long(i) + 2);
    break;
  }
  if (args.size() < 2) {
    std::fprintf(stderr, "usage: %s DATA_ROOT KNOWN_FAILURES_FILE [CASE_SUBSTRING] [--ep PLUGIN_EP.so]\n", argv[0]);
    return 2;
  }
  const fs::path root = args[0];
  const auto known = read_known(args[1]);
  const std::string filter = args.size() > 2 ? args[2] : "";
  const bool verbose = std::getenv("EPPROF_CONFORMANCE_VERBOSE") != nullptr;
  int total = 0, passed = 0, failed_known = 0, unexpected = 0;
  std::vector<std::string> now_passing;
  std::map<std::string, std::pair<int, int>> per_suite;  // suite -> (passed, cases)
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    for (const auto& dir : sorted_dirs(root / suite, "test_")) {
      const std::string id = std::string(suite) + "/" + dir.filename().string();
      if (!filter.empty() && id.find(filter) == std::string::npos) continue;
      ++total;
      ++per_suite[suite].second;
      onnx::ModelProto m;
      const std::string err = read_model(dir / "model.onnx", m) ? run_case(dir, m) : "unreadable model";
      const bool is_known = known.count(id) != 0;
      if (err.empty()) {
        ++passed;
        ++per_suite[suite].first;
        if (is_known) now_passing.push_back(id);
      } else if (is_known) {
        ++failed_known;
        if (verbose) std::printf("KNOWN FAIL  %s: %s\n", id.c_str(), err.c_str());
      } else {
        ++unexpected;
        std::printf("FAIL        %s: %s\n", id.c_str(), err.c_str());
      }
    }
  }
  for (const auto& id : now_passing) std::printf("NOW PASSES  %s (remove it from the known-failures list)\n", id.c_str());
  for (const auto& kv : per_suite)
    std::printf("runtime_conformance: %-17s %4d of %4d passed (%.1f%%)\n", kv.first.c_str(), kv.second.first,
                kv.second.second, 100.0 * kv.second.first / std::max(1, kv.second.second));
  if (g_plugin_ep)
    std::printf("runtime_conformance: EP %s ran nodes of %d of the %d cases (the rest on the CPU EP)\n",
                g_plugin_ep->name().c_str(), g_cases_on_plugin, total);
  std::printf("runtime_conformance: %d of %d cases passed (%.1f%%); failed %d (known %d, unexpected %d); "
              "known list %zu entries, now passing %zu; %d data sets, %d output tensors compared\n",
              passed, total, 100.0 * passed / std::max(1, total), failed_known + unexpected, failed_known, unexpected,
              known.size(), now_passing.size(), g_data_sets, g_outputs);
  bool ok = unexpected == 0 && now_passing.empty();
  if (filter.empty() && passed < total * 9 / 10 + (total * 9 % 10 != 0)) {
    std::printf("fewer than 90%% of the %d cases pass (%d)\n", total, passed);
    ok = false;
  }
  if (total == 0) {
    std::printf("no case under %s%s\n", root.c_str(), filter.empty() ? "" : (" matching '" + filter + "'").c_str());
    ok = false;
  }
  google::protobuf::ShutdownProtobufLibrary();
  return ok ? 0 : 1;
}
