#include "run_inputs.h"

#include <climits>
#include <cstring>
#include <random>

#include "cli.h"
#include "epprof/rt/error.h"
#include "epprof/rt/tensor_io.h"

namespace epprof::cli {
namespace {

constexpr const char* kCommand = "run";

// "1x3x224x224" (or with commas) as a shape: 1 to 8 dims, each 0..2^31-1.
bool parse_dims(const char* text, rt::Shape* out) {
  out->clear();
  std::string dim;
  for (const char* p = text;; ++p) {
    if (*p == 'x' || *p == ',' || *p == '\0') {
      int64_t d = 0;
      if (dim.empty() || !parse_int(dim.c_str(), 0, INT32_MAX, &d) || out->size() == 8) return false;
      out->push_back(d);
      dim.clear();
      if (!*p) return true;
    } else {
      dim += *p;
    }
  }
}

}  // namespace

int parse_input_option(int argc, char** argv, int& i, InputOptions& o) {
  const std::string a = argv[i];
  if (a != "--input" && a != "--shape" && a != "--seed") return 0;
  const char* v = i + 1 < argc ? argv[++i] : nullptr;
  if (a == "--seed") {
    int64_t n = 0;
    if (!v || !parse_int(v, 0, INT64_MAX, &n)) {
      usage_error(kCommand, "--seed needs an integer in 0.." + std::to_string(INT64_MAX));
      return -1;
    }
    o.seed = uint64_t(n);
  } else if (a == "--input") {
    if (!v || !*v || v[0] == '=') {
      usage_error(kCommand, "--input needs FILE.pb or NAME=FILE.pb");
      return -1;
    }
    const std::string s = v;
    const size_t eq = s.find('=');
    if (eq == std::string::npos)
      o.files.emplace_back("", s);  // named by the file's tensor
    else
      o.files.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  } else {
    rt::Shape shape;
    const char* dims = v ? std::strchr(v, '=') : nullptr;
    if (!dims || dims == v || !parse_dims(dims + 1, &shape)) {
      usage_error(kCommand, "--shape needs NAME=DIMS, the dims joined by 'x', e.g. x=1x3x224x224");
      return -1;
    }
    o.shapes.emplace_back(std::string(v, dims), shape);
  }
  return 1;
}

const char* input_options_help() {
  return "  --input [NAME=]FILE  an input from an ONNX TensorProto file (repeatable); without\n"
         "                       NAME=, the input the file's tensor is named for (as in the\n"
         "                       input_N.pb files of ONNX test data). Inputs not given are\n"
         "                       random (float in [-1,1), int64 0), each dynamic dim 1\n"
         "  --shape NAME=DIMS    the shape of a random input, its dims joined by 'x' (e.g.\n"
         "                       x=1x3x48x320), for a model whose inputs have dynamic dims;\n"
         "                       it must keep the input's rank and fixed dims (repeatable)\n"
         "  --seed N             seed of the random inputs (default 42)\n";
}

std::map<std::string, rt::Tensor> make_inputs(const rt::Session& session, const InputOptions& o,
                                              std::string* guessed) {
  auto input_named = [&](const std::string& name) -> const rt::IoInfo* {
    for (const auto& in : session.inputs())
      if (in.name == name) return &in;
    return nullptr;
  };
  std::map<std::string, rt::Tensor> inputs;
  for (const auto& [given, path] : o.files) {
    rt::NamedTensor t = rt::read_tensor_file(path);
    const std::string& name = given.empty() ? t.name : given;
    const std::string from = given.empty() ? " (the name in " + path + ")" : "";
    if (name.empty())
      throw rt::Error(rt::ErrorKind::BadInput, "--input " + path + ": the tensor in it has no name; give NAME=" + path);
    if (!input_named(name))
      throw rt::Error(rt::ErrorKind::BadInput, "--input: the model has no input named '" + name + "'" + from);
    if (!inputs.emplace(name, std::move(t.tensor)).second)
      throw rt::Error(rt::ErrorKind::BadInput, "--input: input '" + name + "' is given twice" + from);
  }
  std::map<std::string, rt::Shape> shapes;
  for (const auto& [name, shape] : o.shapes) {
    const rt::IoInfo* info = input_named(name);
    if (!info) throw rt::Error(rt::ErrorKind::BadInput, "--shape: the model has no input named '" + name + "'");
    if (inputs.count(name) || !shapes.emplace(name, shape).second)
      throw rt::Error(rt::ErrorKind::BadInput, "--shape: input '" + name + "' is given twice");
    if (!info->has_shape) continue;  // any rank
    const std::string declared =
        "input '" + name + "' is declared " + rt::shape_to_string(info->shape) + " (-1: dynamic)";
    if (shape.size() != info->shape.size())
      throw rt::Error(rt::ErrorKind::BadInput, "--shape " + name + "=" + rt::shape_to_string(shape) + ": " + declared);
    for (size_t d = 0; d < shape.size(); ++d)
      if (info->shape[d] >= 0 && shape[d] != info->shape[d])
        throw rt::Error(rt::ErrorKind::BadInput, "--shape " + name + "=" + rt::shape_to_string(shape) + ": dim " +
                                                     std::to_string(d) + " is fixed; " + declared);
  }
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (const auto& in : session.inputs()) {
    if (inputs.count(in.name)) continue;
    const auto given = shapes.find(in.name);
    if (!in.has_shape && given == shapes.end())
      throw rt::Error(rt::ErrorKind::BadInput,
                      "input '" + in.name + "' has no known rank; give it with --input or --shape");
    rt::Shape shape = given != shapes.end() ? given->second : in.shape;
    bool dynamic = false;
    for (auto& d : shape) {
      dynamic = dynamic || d < 0;
      d = d < 0 ? 1 : d;  // dynamic dims: 1
    }
    if (dynamic) *guessed += (guessed->empty() ? "'" : ", '") + in.name + "' " + rt::shape_to_string(shape);
    double elements = 1;
    for (int64_t d : shape) elements *= double(d);
    if (elements > double(int64_t(1) << 31))
      throw rt::Error(rt::ErrorKind::BadInput, "input '" + in.name + "' " + rt::shape_to_string(shape) +
                                                   " would hold over 2^31 elements; give a smaller --shape");
    rt::Tensor t(in.type, shape);
    if (in.type == rt::DataType::Float) {
      float* p = t.mutable_data<float>();
      for (int64_t i = 0; i < t.size(); ++i) p[i] = uniform(rng);
    } else if (in.type != rt::DataType::Int64) {
      throw rt::Error(rt::ErrorKind::BadInput,
                      "input '" + in.name + "' is " + rt::type_name(in.type) +
                          ": only float and int64 inputs can be generated; give it with --input");
    }
    inputs[in.name] = t;
  }
  return inputs;
}

}  // namespace epprof::cli
