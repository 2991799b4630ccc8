// Loading an .onnx file into the runtime's graph: validation, initializers,
// graph inputs/outputs, opset handling, shape inference and topological order.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "epprof/rt/graph.h"
#include "epprof/rt/session.h"
#include "epprof/rt/tensor.h"

namespace epprof::rt::detail {

constexpr int kMaxSupportedOpset = 17;  // what libonnx 1.12 knows

struct Model {
  std::string path;
  int64_t ir_version = 0;
  int opset = 0;                       // default ("" / "ai.onnx") domain
  std::map<std::string, int> opsets;   // every imported domain
  std::vector<Node> nodes;             // topological order, Node::index == position
  std::map<std::string, Tensor> initializers;
  std::vector<IoInfo> inputs;          // required inputs (initializers excluded)
  std::vector<IoInfo> outputs;
  std::map<std::string, IoInfo> value_info;  // from the model and shape inference
};

struct LoadOptions {
  bool shape_inference = true;
};

Model load_model_file(const std::string& path, const LoadOptions& options = {});
Model load_model_bytes(const std::string& bytes, const std::string& name, const LoadOptions& options = {});

}  // namespace epprof::rt::detail
