// The models the runtime benchmarks measure, shared by epprof_runtime_bench
// and epprof_ort_bench: the real models of the model cache with their
// reference inputs (scripts/fetch_models.sh), the bundled models' fixed-seed
// inputs, chains of Relu built in memory, and a median.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "epprof/rt/session.h"
#include "epprof/rt/tensor_io.h"
#include "onnx/onnx_pb.h"

namespace epprof::bench {

// A model to measure: a bundled one (path), one built in memory (by name),
// or a real model of the cache with its reference inputs.
struct ModelRef {
  std::string name, path;
  std::map<std::string, rt::Tensor> inputs;  // empty: random_inputs()
  bool real = false;
  std::vector<std::string> input_files;  // real models: the reference inputs' .pb files, in graph order
};

// The real models of a model cache (manifest.txt, written by
// scripts/fetch_models.sh: "id model-file reference-dir tolerance inputs
// outputs"), each with its reference inputs. Throws when unreadable.
inline std::vector<ModelRef> real_models(const std::string& cache) {
  std::ifstream in(cache + "/manifest.txt");
  if (!in) throw std::runtime_error("no " + cache + "/manifest.txt: run scripts/fetch_models.sh");
  std::vector<ModelRef> models;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    ModelRef m;
    std::string model, ref, tolerance;
    int inputs = 0;
    if (!(fields >> m.name >> model >> ref >> tolerance >> inputs))
      throw std::runtime_error(cache + "/manifest.txt: malformed line '" + line + "'");
    m.path = cache + "/" + model;
    m.real = true;
    for (int k = 0; k < inputs; ++k) {
      m.input_files.push_back(cache + "/" + ref + "/input_" + std::to_string(k) + ".pb");
      rt::NamedTensor t = rt::read_tensor_file(m.input_files.back());
      m.inputs[t.name] = t.tensor;
    }
    models.push_back(std::move(m));
  }
  return models;
}

// A chain of `n` Relu nodes on a [1, width] tensor. Width 64 (relu_chain):
// kernels so small that the hooks run with warm caches, which isolates the
// profiler's own cost from the cache misses a real kernel inflicts on it.
// Width 2^18 (relu_chain_cold): 1 MiB tensors that evict the caches.
// One Relu on [1,1] (epprof_ort_bench's relu_1): a runtime's fixed cost per call.
inline std::string relu_chain_model(int n, int64_t width) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("relu_chain");
  auto io = [width](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(1);
    tt->mutable_shape()->add_dim()->set_dim_value(width);
  };
  io(g->add_input(), "t0");
  for (int i = 0; i < n; ++i) {
    auto* node = g->add_node();
    node->set_op_type("Relu");
    node->set_name("relu" + std::to_string(i));
    node->add_input("t" + std::to_string(i));
    node->add_output("t" + std::to_string(i + 1));
  }
  io(g->add_output(), "t" + std::to_string(n));
  return m.SerializeAsString();
}

// $EPPROF_MODEL_CACHE, else ~/.cache/epprof/models (as fetch_models.sh).
inline std::string default_model_cache() {
  if (const char* env = std::getenv("EPPROF_MODEL_CACHE"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/epprof/models";
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The bundled models' inputs: uniform in [-1, 1) from a fixed seed (float
// inputs; others zero), dynamic dimensions set to 1.
inline std::map<std::string, rt::Tensor> random_inputs(const rt::Session& s) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::map<std::string, rt::Tensor> in;
  for (const auto& i : s.inputs()) {
    rt::Shape shape = i.shape;
    for (auto& d : shape) d = d < 0 ? 1 : d;
    rt::Tensor t(i.type, shape);
    if (i.type == rt::DataType::Float)
      for (int64_t k = 0; k < t.size(); ++k) t.mutable_data<float>()[k] = u(rng);
    in[i.name] = t;
  }
  return in;
}

}  // namespace epprof::bench
