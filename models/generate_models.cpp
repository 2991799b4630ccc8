// Writes the bundled models (mlp.onnx, cnn.onnx, transformer.onnx) into the
// directory given as argv[1], using ONNX's protobuf classes and a fixed seed.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace {

class GraphBuilder {
 public:
  GraphBuilder(onnx::GraphProto* g, unsigned seed) : g_(g), rng_(seed) {}

  std::string weight(const std::string& name, const std::vector<int64_t>& dims, float stddev) {
    std::normal_distribution<float> dist(0.0f, stddev);
    std::vector<float> v(count(dims));
    for (float& x : v) x = dist(rng_);
    return constant(name, dims, v);
  }
  std::string uniform(const std::string& name, const std::vector<int64_t>& dims, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(count(dims));
    for (float& x : v) x = dist(rng_);
    return constant(name, dims, v);
  }
  std::string constant(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(v.data(), v.size() * sizeof(float));
    return name;
  }
  std::string ints(const std::string& name, const std::vector<int64_t>& v) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return name;
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs, const std::string& name,
                        int outputs = 1) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (int k = 0; k < outputs; ++k) n->add_output(outputs == 1 ? name + "_out" : name + "_out" + std::to_string(k));
    return n;
  }
  std::string op(const std::string& op_type, const std::vector<std::string>& inputs, const std::string& name) {
    return node(op_type, inputs, name)->output(0);
  }
  void io(bool input, const std::string& name, const std::vector<int64_t>& dims) {
    onnx::ValueInfoProto* v = input ? g_->add_input() : g_->add_output();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }

 private:
  static size_t count(const std::vector<int64_t>& dims) {
    size_t n = 1;
    for (int64_t d : dims) n *= static_cast<size_t>(d);
    return n;
  }
  onnx::GraphProto* g_;
  std::mt19937 rng_;
};

void set_int(onnx::NodeProto* n, const std::string& key, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void set_float(onnx::NodeProto* n, const std::string& key, float v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void set_ints(onnx::NodeProto* n, const std::string& key, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

onnx::ModelProto new_model(const std::string& graph_name) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("epprof-model-gen");
  m.set_producer_version("1");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  m.mutable_graph()->set_name(graph_name);
  return m;
}

// MLP: [32,784] -> 1024 -> 1024 -> 10, Gemm + Relu, Softmax head.
onnx::ModelProto mlp() {
  onnx::ModelProto m = new_model("mlp");
  GraphBuilder b(m.mutable_graph(), 1234);
  b.io(true, "input", {32, 784});
  std::string x = "input";
  const int64_t dims[] = {784, 1024, 1024, 10};
  for (int l = 0; l < 3; ++l) {
    const std::string p = "fc" + std::to_string(l + 1);
    const std::string w = b.weight(p + ".weight", {dims[l + 1], dims[l]}, std::sqrt(2.0f / static_cast<float>(dims[l])));
    const std::string bias = b.weight(p + ".bias", {dims[l + 1]}, 0.01f);
    auto* g = b.node("Gemm", {x, w, bias}, p);
    set_int(g, "transB", 1);
    x = g->output(0);
    if (l < 2) x = b.op("Relu", {x}, "relu" + std::to_string(l + 1));
  }
  auto* sm = b.node("Softmax", {x}, "softmax");
  set_int(sm, "axis", -1);
  sm->set_output(0, "probabilities");
  b.io(false, "probabilities", {32, 10});
  return m;
}

std::string conv_bn(GraphBuilder& b, const std::string& x, const std::string& p, int64_t cin, int64_t cout,
                    int64_t stride, bool relu) {
  const std::string w = b.weight(p + ".conv.weight", {cout, cin, 3, 3}, std::sqrt(2.0f / static_cast<float>(cin * 9)));
  auto* c = b.node("Conv", {x, w}, p + ".conv");
  set_ints(c, "kernel_shape", {3, 3});
  set_ints(c, "pads", {1, 1, 1, 1});
  set_ints(c, "strides", {stride, stride});
  auto* bn = b.node("BatchNormalization",
                    {c->output(0), b.uniform(p + ".bn.scale", {cout}, 0.5f, 1.0f), b.weight(p + ".bn.bias", {cout}, 0.05f),
                     b.weight(p + ".bn.mean", {cout}, 0.05f), b.uniform(p + ".bn.var", {cout}, 0.5f, 1.5f)},
                    p + ".bn");
  set_float(bn, "epsilon", 1e-5f);
  return relu ? b.op("Relu", {bn->output(0)}, p + ".relu") : bn->output(0);
}

std::string residual_block(GraphBuilder& b, const std::string& x, const std::string& p, int64_t cin, int64_t cout,
                           int64_t stride) {
  std::string y = conv_bn(b, x, p + ".a", cin, cout, stride, true);
  y = conv_bn(b, y, p + ".b", cout, cout, 1, false);
  std::string shortcut = x;
  if (stride != 1 || cin != cout) {
    const std::string w = b.weight(p + ".down.weight", {cout, cin, 1, 1}, std::sqrt(2.0f / static_cast<float>(cin)));
    auto* c = b.node("Conv", {x, w}, p + ".down");
    set_ints(c, "strides", {stride, stride});
    shortcut = c->output(0);
  }
  return b.op("Relu", {b.op("Add", {y, shortcut}, p + ".add")}, p + ".relu");
}

// Residual CNN: [1,3,64,64] -> stem -> maxpool -> 2 blocks @32ch -> 1 block @64ch/2 -> GAP -> Gemm(10).
onnx::ModelProto cnn() {
  onnx::ModelProto m = new_model("cnn");
  GraphBuilder b(m.mutable_graph(), 5678);
  b.io(true, "input", {1, 3, 64, 64});
  std::string x = conv_bn(b, "input", "stem", 3, 32, 1, true);
  auto* mp = b.node("MaxPool", {x}, "maxpool");
  set_ints(mp, "kernel_shape", {2, 2});
  set_ints(mp, "strides", {2, 2});
  x = mp->output(0);
  x = residual_block(b, x, "layer1.0", 32, 32, 1);
  x = residual_block(b, x, "layer1.1", 32, 32, 1);
  x = residual_block(b, x, "layer2.0", 32, 64, 2);
  x = b.op("GlobalAveragePool", {x}, "gap");
  x = b.op("Flatten", {x}, "flatten");
  auto* fc = b.node("Gemm", {x, b.weight("fc.weight", {10, 64}, 0.125f), b.weight("fc.bias", {10}, 0.01f)}, "fc");
  set_int(fc, "transB", 1);
  fc->set_output(0, "logits");
  b.io(false, "logits", {1, 10});
  return m;
}

std::string layer_norm(GraphBuilder& b, const std::string& x, const std::string& p, int64_t d) {
  auto* ln = b.node("LayerNormalization", {x, b.uniform(p + ".weight", {d}, 0.9f, 1.1f), b.weight(p + ".bias", {d}, 0.02f)}, p);
  set_int(ln, "axis", -1);
  set_float(ln, "epsilon", 1e-5f);
  return ln->output(0);
}

std::string linear(GraphBuilder& b, const std::string& x, const std::string& p, int64_t din, int64_t dout) {
  const std::string w = b.weight(p + ".weight", {din, dout}, 1.0f / std::sqrt(static_cast<float>(din)));
  return b.op("Add", {b.op("MatMul", {x, w}, p + ".matmul"), b.weight(p + ".bias", {dout}, 0.02f)}, p + ".add");
}

std::string heads(GraphBuilder& b, const std::string& x, const std::string& p, const std::string& shape,
                  const std::vector<int64_t>& perm) {
  auto* t = b.node("Transpose", {b.op("Reshape", {x, shape}, p + ".reshape")}, p + ".transpose");
  set_ints(t, "perm", perm);
  return t->output(0);
}

// Pre-LN transformer encoder block: [1,128,256], 4 heads, FFN 1024 with Erf GELU.
onnx::ModelProto transformer() {
  const int64_t S = 128, D = 256, H = 4, Dh = D / H, F = 1024;
  onnx::ModelProto m = new_model("transformer_encoder");
  GraphBuilder b(m.mutable_graph(), 91011);
  b.io(true, "input", {1, S, D});
  const std::string split = b.ints("heads_shape", {1, S, H, Dh});
  const std::string merge = b.ints("merge_shape", {1, S, D});
  std::string h = layer_norm(b, "input", "ln1", D);
  const std::string q = heads(b, linear(b, h, "attn.q", D, D), "attn.q", split, {0, 2, 1, 3});
  const std::string k = heads(b, linear(b, h, "attn.k", D, D), "attn.k", split, {0, 2, 3, 1});
  const std::string v = heads(b, linear(b, h, "attn.v", D, D), "attn.v", split, {0, 2, 1, 3});
  const std::string scale = b.constant("attn.scale", {}, {1.0f / std::sqrt(static_cast<float>(Dh))});
  std::string scores = b.op("Mul", {b.op("MatMul", {q, k}, "attn.qk"), scale}, "attn.scale_mul");
  auto* sm = b.node("Softmax", {scores}, "attn.softmax");
  set_int(sm, "axis", -1);
  std::string ctx = b.op("MatMul", {sm->output(0), v}, "attn.av");
  auto* t = b.node("Transpose", {ctx}, "attn.merge.transpose");
  set_ints(t, "perm", {0, 2, 1, 3});
  ctx = b.op("Reshape", {t->output(0), merge}, "attn.merge.reshape");
  std::string x = b.op("Add", {"input", linear(b, ctx, "attn.out", D, D)}, "residual1");
  h = layer_norm(b, x, "ln2", D);
  h = linear(b, h, "ffn.fc1", D, F);
  // GELU(h) = 0.5 * h * (1 + erf(h / sqrt(2)))
  const std::string erf = b.op("Erf", {b.op("Div", {h, b.constant("gelu.sqrt2", {}, {std::sqrt(2.0f)})}, "gelu.div")}, "gelu.erf");
  const std::string one_plus = b.op("Add", {erf, b.constant("gelu.one", {}, {1.0f})}, "gelu.add");
  h = b.op("Mul", {b.op("Mul", {h, one_plus}, "gelu.mul"), b.constant("gelu.half", {}, {0.5f})}, "gelu.half_mul");
  h = linear(b, h, "ffn.fc2", F, D);
  auto* out = b.node("Add", {x, h}, "residual2");
  out->set_output(0, "output");
  b.io(false, "output", {1, S, D});
  return m;
}

bool write(const std::string& path, const onnx::ModelProto& m) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !m.SerializeToOstream(&out)) {
    std::fprintf(stderr, "epprof_model_gen: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const bool ok = write(dir + "/mlp.onnx", mlp()) && write(dir + "/cnn.onnx", cnn()) &&
                  write(dir + "/transformer.onnx", transformer());
  google::protobuf::ShutdownProtobufLibrary();
  return ok ? 0 : 1;
}
