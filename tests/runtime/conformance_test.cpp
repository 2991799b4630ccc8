// Runs the ONNX backend test cases (libonnx-testdata) whose ops the CPU EP
// supports and whose graph inputs/outputs are float32 or int64, and compares
// with the reference outputs (rtol 1e-3, atol 1e-5; int64 exact).
//
// usage: runtime_conformance DATA_ROOT KNOWN_FAILURES_FILE [CASE_FILTER]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "epprof/rt/plugin_ep.h"
#include "epprof/rt/session.h"
#include "epprof/rt/tensor_io.h"
#include "onnx/onnx_pb.h"

namespace fs = std::filesystem;
using namespace epprof::rt;

namespace {

int g_data_sets = 0, g_outputs = 0;  // how much was actually compared

bool read_model(const fs::path& path, onnx::ModelProto& m) {
  std::ifstream in(path, std::ios::binary);
  return in && m.ParseFromIstream(&in);
}

bool io_ok(const onnx::ValueInfoProto& v) {
  if (!v.type().has_tensor_type()) return false;
  const int t = v.type().tensor_type().elem_type();
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::INT64;
}

// Empty string: eligible; otherwise why not.
std::string eligibility(const onnx::ModelProto& m, const ExecutionProvider& cpu) {
  std::map<std::string, int> opsets;
  for (const auto& o : m.opset_import()) opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = static_cast<int>(o.version());
  std::set<std::string> inits;
  for (const auto& i : m.graph().initializer()) inits.insert(i.name());
  for (const auto& v : m.graph().input())
    if (!inits.count(v.name()) && !io_ok(v)) return "input type";
  for (const auto& v : m.graph().output())
    if (!io_ok(v)) return "output type";
  for (const auto& n : m.graph().node()) {
    Node node;
    node.op_type = n.op_type();
    node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    node.opset = opsets.count(node.domain) ? opsets[node.domain] : 0;
    if (!cpu.claims(node)) return "op " + n.op_type();
  }
  return "";
}

std::string compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return "got " + got.description() + ", expected " + want.description();
  if (want.dtype() == DataType::Float) {
    const float* g = got.data<float>();
    const float* w = want.data<float>();
    for (int64_t i = 0; i < want.size(); ++i) {
      if (std::isnan(w[i]) && std::isnan(g[i])) continue;
      if (std::isinf(w[i]) && g[i] == w[i]) continue;
      if (!(std::fabs(g[i] - w[i]) <= 1e-5f + 1e-3f * std::fabs(w[i])))
        return "element " + std::to_string(i) + ": got " + std::to_string(g[i]) + ", expected " + std::to_string(w[i]);
    }
    return "";
  }
  if (want.dtype() == DataType::Int64) {
    for (int64_t i = 0; i < want.size(); ++i)
      if (got.data<int64_t>()[i] != want.data<int64_t>()[i])
        return "element " + std::to_string(i) + ": got " + std::to_string(got.data<int64_t>()[i]) + ", expected " +
               std::to_string(want.data<int64_t>()[i]);
    return "";
  }
  return std::string("unexpected output type ") + type_name(want.dtype());
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
        if (!inits.count(name)) inputs[name] = read_tensor_file(f.string()).tensor;
      }
      const std::vector<Tensor> outputs = session.run(inputs);
      ++g_data_sets;
      for (size_t o = 0; o < outputs.size(); ++o) {
        const Tensor want = read_tensor_file((set / ("output_" + std::to_string(o) + ".pb")).string()).tensor;
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
  const auto cpu = make_cpu_execution_provider();
  int eligible = 0, passed = 0, failed_known = 0, unexpected = 0;
  std::vector<std::string> now_passing;
  std::map<std::string, int> skipped_reasons;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    for (const auto& dir : sorted_dirs(root / suite, "test_")) {
      const std::string id = std::string(suite) + "/" + dir.filename().string();
      if (!filter.empty() && id.find(filter) == std::string::npos) continue;
      onnx::ModelProto m;
      if (!read_model(dir / "model.onnx", m)) {
        ++skipped_reasons["unreadable model"];
        continue;
      }
      const std::string why = eligibility(m, *cpu);
      if (!why.empty()) {
        ++skipped_reasons[why];
        continue;
      }
      ++eligible;
      const std::string err = run_case(dir, m);
      const bool is_known = known.count(id) != 0;
      if (err.empty()) {
        ++passed;
        if (is_known) now_passing.push_back(id);
      } else if (is_known) {
        ++failed_known;
        std::printf("KNOWN FAIL  %s: %s\n", id.c_str(), err.c_str());
      } else {
        ++unexpected;
        std::printf("FAIL        %s: %s\n", id.c_str(), err.c_str());
      }
    }
  }
  for (const auto& id : now_passing) std::printf("NOW PASSES  %s (remove it from the known-failures list)\n", id.c_str());
  if (std::getenv("EPPROF_CONFORMANCE_VERBOSE"))
    for (const auto& kv : skipped_reasons) std::printf("skipped %4d: %s\n", kv.second, kv.first.c_str());
  const int failed = failed_known + unexpected;
  if (g_plugin_ep)
    std::printf("runtime_conformance: EP %s ran nodes of %d of the %d eligible cases (the rest on the CPU EP)\n",
                g_plugin_ep->name().c_str(), g_cases_on_plugin, eligible);
  std::printf("runtime_conformance: eligible %d, passed %d, failed %d (known-failing %d, unexpected %d), "
              "known list %zu entries, now passing %zu; %d data sets, %d output tensors compared\n",
              eligible, passed, failed, failed_known, unexpected, known.size(), now_passing.size(), g_data_sets, g_outputs);
  bool ok = unexpected == 0;
  if (eligible == 0) {
    std::printf("no eligible case under %s%s\n", root.c_str(), filter.empty() ? "" : (" matching '" + filter + "'").c_str());
    ok = false;
  }
  if (filter.empty() && static_cast<double>(known.size()) >= 0.1 * eligible) {
    std::printf("the known-failures list (%zu) must stay under 10%% of eligible cases (%d)\n", known.size(), eligible);
    ok = false;
  }
  google::protobuf::ShutdownProtobufLibrary();
  return ok ? 0 : 1;
}
