// Real models published by others (scripts/models/models.txt), run on the
// reference runtime and compared with ONNX Runtime 1.30's outputs for the
// same inputs. scripts/fetch_models.sh fills the cache: the models, the
// reference inputs and outputs (ONNX TensorProto files) and manifest.txt.
// The cache is $EPPROF_MODEL_CACHE, else ~/.cache/epprof/models; without it
// every test skips, saying so.
//
// Each model: every output matches element by element, with
// |a - b| / (|b| + 1e-3) <= the model's tolerance for floating-point outputs
// and exactly otherwise; then one profiled session runs it twice (the second
// run goes through the profiler's event block) and must give the same
// outputs, bit for bit, and a node event for every node of the graph in
// each run (nodes inside If branches may add more).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "epprof/rt/profiling.h"
#include "epprof/rt/session.h"
#include "epprof/rt/tensor_io.h"
#include "support/test_util.h"

namespace {

using namespace epprof::rt;

constexpr const char* kCacheAbsent = "real-model cache absent: run scripts/fetch_models.sh";

std::string cache_dir() {
  if (const char* env = std::getenv("EPPROF_MODEL_CACHE"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/epprof/models";
}

struct RealModel {
  std::string id;         // empty: the cache is absent
  std::string model;      // path of the .onnx file
  std::string ref;        // directory of input_K.pb / output_K.pb
  double tolerance = 0;
  int inputs = 0, outputs = 0;
  double ort_floor = -1;  // ONNX Runtime's optimised vs unoptimised difference; -1: not recorded
  std::string error;      // a malformed manifest line
};

// manifest.txt: "id model-file reference-dir tolerance inputs outputs
// [ort-floor]" per line, paths relative to the cache; '#' starts a comment.
std::vector<RealModel> load_manifest() {
  const std::string dir = cache_dir();
  std::ifstream in(dir + "/manifest.txt");
  if (!in) return {RealModel{}};
  std::vector<RealModel> models;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    RealModel m;
    std::string model, ref;
    if (!(fields >> m.id >> model >> ref >> m.tolerance >> m.inputs >> m.outputs)) {
      m.id = m.id.empty() ? "line" + std::to_string(n) : m.id;
      m.error = dir + "/manifest.txt line " + std::to_string(n) + " is malformed: '" + line + "'";
    }
    if (!(fields >> m.ort_floor)) m.ort_floor = -1;
    m.model = dir + "/" + model;
    m.ref = dir + "/" + ref;
    models.push_back(m);
  }
  if (models.empty()) return {RealModel{}};
  return models;
}

std::string index_string(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? "," : "") + std::to_string(idx[d]);
  return s + "]";
}

std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) s += (d ? "," : "") + std::to_string(shape[d]);
  return s + "]";
}

template <typename T>
double as_double(const Tensor& t, int64_t i) {
  return static_cast<double>(t.data<T>()[i]);
}

// One element of a non-floating-point tensor, for failure messages.
std::string element_string(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::Int64: return std::to_string(t.data<int64_t>()[i]);
    case DataType::Int32: return std::to_string(t.data<int32_t>()[i]);
    case DataType::Int8: return std::to_string(t.data<int8_t>()[i]);
    case DataType::Uint8: return std::to_string(t.data<uint8_t>()[i]);
    case DataType::Bool: return t.data<bool>()[i] ? "true" : "false";
    default: return "(" + std::to_string(element_size(t.dtype())) + " bytes)";
  }
}

// The first mismatch (floating point: the worst element, if any exceeds the
// tolerance), or "" when `got` matches `want`. `worst_error`, if given,
// receives the largest relative error (0 for exact types that match).
std::string compare(const std::string& what, const Tensor& got, const Tensor& want, double tolerance,
                    double* worst_error = nullptr) {
  if (worst_error) *worst_error = 0;
  if (got.dtype() != want.dtype())
    return what + ": element type " + type_name(got.dtype()) + ", ONNX Runtime gives " + type_name(want.dtype());
  if (got.shape() != want.shape())
    return what + ": shape " + shape_string(got.shape()) + ", ONNX Runtime gives " + shape_string(want.shape());
  const bool is_float = got.dtype() == DataType::Float || got.dtype() == DataType::Double;
  if (!is_float) {
    const auto* a = static_cast<const unsigned char*>(got.raw());
    const auto* b = static_cast<const unsigned char*>(want.raw());
    const size_t es = element_size(got.dtype());
    for (int64_t i = 0; i < got.size(); ++i)
      if (std::memcmp(a + i * es, b + i * es, es) != 0)
        return what + ": element " + index_string(got.shape(), i) + " = " + element_string(got, i) +
               ", ONNX Runtime " + element_string(want, i) + " (" + type_name(got.dtype()) + ": exact match expected)";
    return "";
  }
  double worst = -1;
  int64_t worst_at = -1;
  int64_t over = 0;
  for (int64_t i = 0; i < got.size(); ++i) {
    const double a = got.dtype() == DataType::Float ? as_double<float>(got, i) : as_double<double>(got, i);
    const double b = want.dtype() == DataType::Float ? as_double<float>(want, i) : as_double<double>(want, i);
    double err;
    if (std::isnan(a) || std::isnan(b)) err = std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
    else if (std::isinf(a) || std::isinf(b)) err = a == b ? 0 : INFINITY;
    else err = std::fabs(a - b) / (std::fabs(b) + 1e-3);
    if (err > tolerance) ++over;
    if (err > worst) worst = err, worst_at = i;
  }
  if (worst_error) *worst_error = std::max(worst, 0.0);
  if (over == 0) return "";
  const auto value = [&](const Tensor& t) {
    return t.dtype() == DataType::Float ? as_double<float>(t, worst_at) : as_double<double>(t, worst_at);
  };
  std::ostringstream msg;
  msg.precision(9);
  msg << what << ": " << over << " of " << got.size() << " elements exceed the relative error " << tolerance
      << "; worst: element " << index_string(got.shape(), worst_at) << " = " << value(got) << ", ONNX Runtime "
      << value(want) << ", |a-b|/(|b|+1e-3) = " << worst;
  return msg.str();
}

// gtest prints a failing case's parameter: its id, not its bytes.
void PrintTo(const RealModel& m, std::ostream* os) { *os << (m.id.empty() ? "(cache absent)" : m.id); }

class RealModels : public ::testing::TestWithParam<RealModel> {};

TEST_P(RealModels, MatchesOnnxRuntime) {
  const RealModel& m = GetParam();
  if (m.id.empty()) GTEST_SKIP() << kCacheAbsent << " (looked in " << cache_dir() << ")";
  ASSERT_TRUE(m.error.empty()) << m.error;

  std::map<std::string, Tensor> inputs;
  std::vector<NamedTensor> want;
  try {
    for (int k = 0; k < m.inputs; ++k) {
      NamedTensor t = read_tensor_file(m.ref + "/input_" + std::to_string(k) + ".pb");
      inputs[t.name] = t.tensor;
    }
    for (int k = 0; k < m.outputs; ++k) want.push_back(read_tensor_file(m.ref + "/output_" + std::to_string(k) + ".pb"));
  } catch (const std::exception& e) {
    FAIL() << m.id << ": reference data: " << e.what() << " (run scripts/fetch_models.sh again)";
  }

  std::vector<Tensor> got;
  size_t nodes = 0;  // that run: Constant and folded nodes are initializers by then (runtime/README.md)
  try {
    Session s(m.model);
    ASSERT_EQ(s.outputs().size(), want.size()) << m.id << ": output count";
    for (size_t k = 0; k < want.size(); ++k) ASSERT_EQ(s.outputs()[k].name, want[k].name) << m.id << ": output " << k;
    for (size_t i = 0; i < s.nodes().size(); ++i) nodes += s.node_runs(i);
    got = s.run(inputs);
  } catch (const std::exception& e) {
    FAIL() << m.id << ": " << e.what();
  }
  for (size_t k = 0; k < want.size(); ++k) {
    const std::string what = m.id + " output '" + want[k].name + "'";
    double worst = 0;
    const std::string mismatch = compare(what, got[k], want[k].tensor, m.tolerance, &worst);
    if (!mismatch.empty()) ADD_FAILURE() << mismatch;
    else std::printf("%s: max relative error %.3g (tolerance %g; ONNX Runtime against itself unoptimised: %.3g)\n",
                     what.c_str(), worst, m.tolerance, m.ort_floor);
  }

  // Profiled: the same outputs, and node events for every node in each run.
  epprof::testing::TempDir dir;
  ProfilingOptions po;
  po.trace_path = dir.file("trace.json");
  ProfilingObserver prof(po);
  SessionOptions so;
  so.observer = &prof;
  Session profiled(m.model, so);
  for (int run = 0; run < 2; ++run) {
    const std::vector<Tensor> again = profiled.run(inputs);
    for (size_t k = 0; k < again.size(); ++k) {
      const std::string mismatch = compare(m.id + " profiled run " + std::to_string(run) + " output '" +
                                               want[k].name + "' (against the unprofiled run)",
                                           again[k], got[k], 0);
      if (!mismatch.empty()) ADD_FAILURE() << mismatch;
    }
  }
  const epprof_trace_stats stats = prof.finish();
  EXPECT_EQ(stats.dropped_events, 0u);
  size_t node_events = 0;
  for (const auto& e : epprof::testing::read_trace(po.trace_path))
    if (e.cat == "Node" && e.ph == "X") ++node_events;
  EXPECT_GE(node_events, 2 * nodes) << m.id << ": node events in the profiled runs (2 runs of " << nodes
                                    << " top-level nodes that run)";
}

std::string test_name(const ::testing::TestParamInfo<RealModel>& param) {
  std::string name = param.param.id.empty() ? "cache_absent" : param.param.id;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Cache, RealModels, ::testing::ValuesIn(load_manifest()), test_name);

}  // namespace
