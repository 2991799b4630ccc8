// Model loading and run-time input errors: each must be an epprof::rt::Error
// whose kind and message name the problem (and the node).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "epprof/rt/session.h"
#include "epprof/rt/tensor_io.h"
#include "test_models.h"

using namespace epprof::rt;
using namespace epprof::rt::testing;

namespace {

// Loads `model` and returns the error it raises (fails the test if none).
Error load_error(const std::string& model_bytes) {
  try {
    Session::from_bytes(model_bytes);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "model loaded without error";
  return Error(ErrorKind::Io, "none");
}

void expect_mentions(const Error& e, ErrorKind kind, std::initializer_list<const char*> words) {
  EXPECT_EQ(e.kind(), kind) << e.what();
  for (const char* w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << "'" << w << "' not in: " << e.what();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(Loader, LoadsAValidModelAndRunsIt) {
  Session s = Session::from_bytes(bytes(relu_model()));
  ASSERT_EQ(s.inputs().size(), 1u);
  EXPECT_EQ(s.inputs()[0].name, "x");
  EXPECT_EQ(s.inputs()[0].shape, (Shape{2, 3}));
  EXPECT_EQ(s.provider_of(0), "CPUExecutionProvider");
  auto out = s.run({{"x", Tensor::from_vector<float>({2, 3}, {-1, 2, -3, 4, 0, -0.5f})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{0, 2, 0, 4, 0, 0}));
}

TEST(Loader, FileThatIsNotAModel) {
  expect_mentions(load_error("this is plain text, certainly not a protobuf ModelProto\n"), ErrorKind::InvalidModel,
                  {"not an ONNX model"});
  expect_mentions(load_error(""), ErrorKind::InvalidModel, {"not an ONNX model"});
}

TEST(Loader, MissingFile) {
  try {
    Session s("/nonexistent/model.onnx");
    FAIL() << "no error";
  } catch (const Error& e) {
    expect_mentions(e, ErrorKind::Io, {"/nonexistent/model.onnx"});
  }
}

TEST(Loader, TruncatedModel) {
  const std::string full = read_file(std::string(EPPROF_MODELS_DIR) + "/cnn.onnx");
  ASSERT_GT(full.size(), 1000u);
  expect_mentions(load_error(full.substr(0, full.size() / 2)), ErrorKind::InvalidModel, {"truncated"});
}

TEST(Loader, Cycle) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {2});
  add_node(m, "Add", "first", {"x", "b"}, {"a"});
  add_node(m, "Relu", "second", {"a"}, {"b"});
  add_io(m, false, "b", {2});
  expect_mentions(load_error(bytes(m)), ErrorKind::Cycle, {"cycle", "first"});
}

TEST(Loader, DanglingInput) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {2});
  add_node(m, "Add", "adder", {"x", "ghost"}, {"y"});
  add_io(m, false, "y", {2});
  expect_mentions(load_error(bytes(m)), ErrorKind::DanglingInput, {"adder", "Add", "ghost"});
}

TEST(Loader, DanglingGraphOutput) {
  onnx::ModelProto m = relu_model();
  add_io(m, false, "nobody_makes_this", {2});
  expect_mentions(load_error(bytes(m)), ErrorKind::DanglingInput, {"nobody_makes_this"});
}

TEST(Loader, UnsupportedOp) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {2});
  add_node(m, "NoSuchOp", "mystery", {"x"}, {"y"});
  add_io(m, false, "y", {2});
  expect_mentions(load_error(bytes(m)), ErrorKind::UnsupportedOp,
                  {"1 op of the model", "NoSuchOp (opset 17): 1 node, first 'mystery'", "CPUExecutionProvider"});
}

// Every unsupported (domain, op, opset) at once, with its node count and first
// node, custom domains named as such: a user sees the whole gap in one try.
TEST(Loader, EveryUnsupportedOpIsListedAtOnce) {
  onnx::ModelProto m = make_model();
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  add_io(m, true, "x", {2});
  add_node(m, "NoSuchOp", "first_gap", {"x"}, {"a"});
  add_node(m, "Relu", "fine", {"a"}, {"b"});
  add_node(m, "FusedThing", "contrib", {"b"}, {"c"})->set_domain("com.microsoft");
  add_node(m, "NoSuchOp", "second_gap", {"c"}, {"d"});
  add_node(m, "OtherMissingOp", "third_gap", {"d"}, {"y"});
  add_io(m, false, "y", {2});
  const Error e = load_error(bytes(m));
  expect_mentions(e, ErrorKind::UnsupportedOp,
                  {"3 ops of the model", "NoSuchOp (opset 17): 2 nodes, first 'first_gap'",
                   "OtherMissingOp (opset 17): 1 node, first 'third_gap'",
                   "com.microsoft.FusedThing (custom domain 'com.microsoft', version 1): 1 node, first 'contrib'"});
  EXPECT_EQ(std::string(e.what()).find("fine"), std::string::npos) << e.what();
}

TEST(Loader, OpsetNewerThanSupported) {
  onnx::ModelProto m = relu_model();
  m.mutable_opset_import(0)->set_version(19);
  expect_mentions(load_error(bytes(m)), ErrorKind::UnsupportedOpset, {"19", "17"});
}

TEST(Loader, OpOutsideItsOpsetRangeIsUnsupported) {
  onnx::ModelProto m = make_model(13);
  add_io(m, true, "x", {2});
  add_node(m, "LayerNormalization", "ln", {"x", "x"}, {"y"});  // LayerNormalization exists from opset 17
  add_io(m, false, "y", {2});
  expect_mentions(load_error(bytes(m)), ErrorKind::UnsupportedOp, {"LayerNormalization", "ln", "opset 13"});
}

TEST(Loader, InitializerSizeDisagreesWithDims) {
  onnx::ModelProto m = relu_model();
  add_float_init(m, "w", {2, 2}, {1, 2, 3});
  expect_mentions(load_error(bytes(m)), ErrorKind::BadInitializer, {"'w'", "[2,2]", "float_data"});

  onnx::ModelProto r = relu_model();
  auto* t = r.mutable_graph()->add_initializer();
  t->set_name("raw");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_raw_data(std::string(12, '\0'));
  expect_mentions(load_error(bytes(r)), ErrorKind::BadInitializer, {"'raw'", "raw_data"});
}

// External data needs the model's directory: a model given as bytes (the
// fuzzers' way in) has none.
TEST(Loader, ExternalDataFromBytesIsRejected) {
  onnx::ModelProto m = relu_model();
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("ext");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value("weights.bin");
  expect_mentions(load_error(bytes(m)), ErrorKind::InvalidModel,
                  {"initializer 'ext'", "'weights.bin'", "relative to the model file's directory", "loaded from bytes"});
}

TEST(Loader, InitializerThatIsAlsoAGraphInputIsNotRequired) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {3});
  add_io(m, true, "bias", {3});
  add_float_init(m, "bias", {3}, {10, 20, 30});
  add_node(m, "Add", "add", {"x", "bias"}, {"y"});
  add_io(m, false, "y", {3});
  Session s = Session::from_bytes(bytes(m));
  ASSERT_EQ(s.inputs().size(), 1u);
  EXPECT_EQ(s.inputs()[0].name, "x");
  auto out = s.run({{"x", Tensor::from_vector<float>({3}, {1, 2, 3})}});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{11, 22, 33}));
}

TEST(Loader, ValuesProducedTwiceAreRejected) {
  onnx::ModelProto m = relu_model();
  add_node(m, "Relu", "again", {"x"}, {"y"});
  expect_mentions(load_error(bytes(m)), ErrorKind::InvalidModel, {"'y'", "again"});
}

TEST(Loader, TopologicalOrderFromUnsortedNodes) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {2});
  add_node(m, "Relu", "last", {"b"}, {"y"});
  add_node(m, "Add", "first", {"x", "x"}, {"b"});
  add_io(m, false, "y", {2});
  Session s = Session::from_bytes(bytes(m));
  ASSERT_EQ(s.nodes().size(), 2u);
  EXPECT_EQ(s.nodes()[0].name, "first");
  EXPECT_EQ(s.nodes()[1].name, "last");
  auto out = s.run({{"x", Tensor::from_vector<float>({2}, {-1, 3})}});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{0, 6}));
}

// ---- models that crashed libonnx's shape inference (issue 15): each is
// now an error naming the node and the attribute, found before inference.

onnx::ModelProto conv_model(const std::vector<int64_t>& x_dims) {
  onnx::ModelProto m = make_model(13);
  add_io(m, true, "x", x_dims);
  add_float_init(m, "w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  add_node(m, "Conv", "conv", {"x", "w"}, {"y"});
  add_io(m, false, "y", {});
  return m;
}


TEST(LoaderCrashRegressions, ConvWithZeroStrides) {
  onnx::ModelProto m = conv_model({1, 1, 5, 5});
  set_ints(m.mutable_graph()->mutable_node(0), "strides", {0, 0});
  expect_mentions(load_error(bytes(m)), ErrorKind::InvalidModel, {"'conv'", "'strides' [0,0]", "positive"});
}

TEST(LoaderCrashRegressions, MaxPoolWithAZeroStride) {
  onnx::ModelProto m = make_model(13);
  add_io(m, true, "x", {1, 1, 5, 5});
  auto* n = add_node(m, "MaxPool", "pool", {"x"}, {"y"});
  set_ints(n, "kernel_shape", {2, 2});
  set_ints(n, "strides", {1, 0});
  add_io(m, false, "y", {});
  expect_mentions(load_error(bytes(m)), ErrorKind::InvalidModel, {"'pool'", "'strides' [1,0]"});
}

TEST(LoaderCrashRegressions, ConvOnARank2Input) {
  expect_mentions(load_error(bytes(conv_model({5, 5}))), ErrorKind::InvalidModel,
                  {"'conv'", "input 'x' has rank 2", "at least 3"});
}

TEST(LoaderCrashRegressions, PerDimensionAttributesDisagree) {
  onnx::ModelProto m = conv_model({1, 1, 5, 5});
  set_ints(m.mutable_graph()->mutable_node(0), "dilations", {1, 1, 1});
  expect_mentions(load_error(bytes(m)), ErrorKind::InvalidModel, {"'conv'", "gives 2 spatial dims", "'dilations' gives 3"});
  onnx::ModelProto p = conv_model({1, 1, 5, 5});
  set_ints(p.mutable_graph()->mutable_node(0), "pads", {1, 1, 1});
  expect_mentions(load_error(bytes(p)), ErrorKind::InvalidModel, {"'pads'", "odd length"});
}

// The input's rank is known only to shape inference (a Reshape makes it
// rank 2): the convolution's kernel_shape comes from its weight, so
// inference checks it against the rank instead of reading past its arrays;
// the run then fails in the Conv kernel with the node named.
TEST(LoaderCrashRegressions, ConvOnARank2IntermediateFailsCleanly) {
  onnx::ModelProto m = make_model(13);
  add_io(m, true, "x", {1, 1, 5, 5});
  auto* shape = m.mutable_graph()->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(5);
  shape->add_int64_data(5);
  add_float_init(m, "w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  add_node(m, "Reshape", "flat", {"x", "shape"}, {"r"});
  add_node(m, "Conv", "conv", {"r", "w"}, {"y"});
  add_io(m, false, "y", {});
  Session s = Session::from_bytes(bytes(m));
  try {
    s.run({{"x", Tensor(DataType::Float, {1, 1, 5, 5})}});
    FAIL() << "a rank-2 Conv input ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv"), std::string::npos) << e.what();
  }
}

TEST(LoaderChecks, TransposePermMustBeAPermutationOfTheRank) {
  onnx::ModelProto m = make_model(13);
  add_io(m, true, "x", {2, 3});
  set_ints(add_node(m, "Transpose", "t", {"x"}, {"y"}), "perm", {1, 1});
  add_io(m, false, "y", {});
  expect_mentions(load_error(bytes(m)), ErrorKind::InvalidModel, {"'t'", "'perm' [1,1]", "not a permutation"});
  onnx::ModelProto r = make_model(13);
  add_io(r, true, "x", {2, 3});
  set_ints(add_node(r, "Transpose", "t", {"x"}, {"y"}), "perm", {2, 0, 1});
  add_io(r, false, "y", {});
  expect_mentions(load_error(bytes(r)), ErrorKind::InvalidModel, {"'t'", "3 entries", "rank 2"});
}

TEST(LoaderChecks, InputCountFollowsTheSchema) {
  onnx::ModelProto m = make_model(13);
  add_io(m, true, "x", {2});
  add_node(m, "Relu", "r", {"x", "x", "x", "x"}, {"y"});
  add_io(m, false, "y", {2});
  expect_mentions(load_error(bytes(m)), ErrorKind::InvalidModel, {"'r'", "has 4 inputs", "Relu-13 takes 1"});
}

TEST(LoaderChecks, IrVersionNewerThanTheLoaderReads) {
  onnx::ModelProto m = relu_model();
  m.set_ir_version(99);
  expect_mentions(load_error(bytes(m)), ErrorKind::InvalidModel, {"IR version 99", "1 to 10"});
}

TEST(LoaderChecks, NegativeDimsOtherThanUnknownAreRejected) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {-1, -5});
  add_node(m, "Relu", "relu", {"x"}, {"y"});
  add_io(m, false, "y", {-1, 5});
  expect_mentions(load_error(bytes(m)), ErrorKind::InvalidModel, {"'x'", "dimension -5"});
}

TEST(LoaderChecks, OnlyRegularFilesAreRead) {
  char dir[] = "/tmp/epprof_loader_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  auto load_path_error = [](const std::string& path) {
    try {
      Session s(path);
    } catch (const Error& e) {
      return std::make_pair(e.kind(), std::string(e.what()));
    }
    return std::make_pair(ErrorKind::Kernel, std::string("loaded"));
  };
  auto d = load_path_error(dir);
  EXPECT_EQ(d.first, ErrorKind::Io);
  EXPECT_NE(d.second.find("is a directory"), std::string::npos) << d.second;
  // Devices and FIFOs are never read: /dev/zero would grow memory forever.
  auto z = load_path_error("/dev/zero");
  EXPECT_EQ(z.first, ErrorKind::Io);
  EXPECT_NE(z.second.find("not a regular file"), std::string::npos) << z.second;
  const std::string fifo = std::string(dir) + "/model.onnx";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto f = load_path_error(fifo);
  EXPECT_NE(f.second.find("not a regular file"), std::string::npos) << f.second;
  std::remove(fifo.c_str());
  rmdir(dir);
}

TEST(RunInputs, WrongTypeShapeMissingUnknown) {
  Session s = Session::from_bytes(bytes(relu_model()));
  auto run_error = [&](const std::map<std::string, Tensor>& in) {
    try {
      s.run(in);
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "run succeeded";
    return Error(ErrorKind::Io, "none");
  };
  expect_mentions(run_error({{"x", Tensor::from_vector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6})}}), ErrorKind::BadInput,
                  {"'x'", "float", "int64[2,3]"});
  expect_mentions(run_error({{"x", Tensor(DataType::Float, {3, 2})}}), ErrorKind::BadInput, {"'x'", "shape", "[2,3]"});
  expect_mentions(run_error({{"x", Tensor(DataType::Float, {2, 3, 1})}}), ErrorKind::BadInput, {"'x'", "shape"});
  expect_mentions(run_error({}), ErrorKind::BadInput, {"'x'", "missing"});
  expect_mentions(run_error({{"x", Tensor(DataType::Float, {2, 3})}, {"z", Tensor(DataType::Float, {1})}}),
                  ErrorKind::BadInput, {"'z'"});
}

TEST(RunInputs, KernelErrorNamesTheNode) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "a", {2, 3});
  add_io(m, true, "b", {4});
  add_node(m, "Add", "bad_add", {"a", "b"}, {"y"});
  add_io(m, false, "y", {2, 3});
  Session s = Session::from_bytes(bytes(m));
  try {
    s.run({{"a", Tensor(DataType::Float, {2, 3})}, {"b", Tensor(DataType::Float, {4})}});
    FAIL() << "no error";
  } catch (const Error& e) {
    expect_mentions(e, ErrorKind::Kernel, {"bad_add", "Add", "broadcast"});
  }
}

TEST(Tensor, ShapeSizeRefusesNegativeAndOverflowingShapes) {
  EXPECT_EQ(shape_size({}), 1);
  EXPECT_EQ(shape_size({2, 3, 4}), 24);
  EXPECT_EQ(shape_size({int64_t(1) << 31, int64_t(1) << 31}), int64_t(1) << 62);
  EXPECT_EQ(shape_size({0, INT64_MAX, 2}), 0);  // nothing to overflow once a dim is 0
  auto error_of = [](const Shape& shape) -> std::string {
    try {
      shape_size(shape);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Kernel);
      return e.message();
    }
    return "no error";
  };
  EXPECT_EQ(error_of({int64_t(1) << 32, int64_t(1) << 31}), "shape [4294967296,2147483648] overflows");
  EXPECT_EQ(error_of({INT64_MAX, 2, 0}), "shape [9223372036854775807,2,0] overflows");
  EXPECT_EQ(error_of({3, -1}), "negative dimension in shape [3,-1]");
}

TEST(TensorIo, RoundTripThroughPbFile) {
  const Tensor t = Tensor::from_vector<float>({2, 2}, {1.5f, -2, 3, 4});
  const std::string path = ::testing::TempDir() + "/epprof_rt_tensor.pb";
  write_tensor_file(path, t, "my_tensor");
  const NamedTensor back = read_tensor_file(path);
  EXPECT_EQ(back.name, "my_tensor");
  EXPECT_EQ(back.tensor.shape(), (Shape{2, 2}));
  EXPECT_EQ(back.tensor.to_vector<float>(), t.to_vector<float>());
  std::remove(path.c_str());
  EXPECT_THROW(parse_tensor_proto("\xff\xff\xff", 3), Error);
}

// ---- External data (TensorProto.data_location == EXTERNAL) ----------------

namespace {

// A directory of one test's own, removed with its contents at the end.
class ScratchDir {
 public:
  ScratchDir() {
    char tmpl[] = "/tmp/epprof_extdata_XXXXXX";
    if (mkdtemp(tmpl)) path_ = tmpl;
    EXPECT_FALSE(path_.empty()) << "mkdtemp: " << std::strerror(errno);
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void write_bytes(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(out.good()) << path;
}

template <typename T>
std::string raw_bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

void set_external(onnx::TensorProto* t, const std::vector<std::pair<std::string, std::string>>& entries) {
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : entries) {
    auto* kv = t->add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  }
}

// An initializer with no data of its own, whose data is at `entries`.
onnx::TensorProto* add_external_init(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims,
                                     const std::vector<std::pair<std::string, std::string>>& entries,
                                     int elem_type = onnx::TensorProto::FLOAT) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(elem_type);
  for (int64_t d : dims) t->add_dims(d);
  set_external(t, entries);
  return t;
}

// x[2,3] + w[2,3] -> y, with w's data at `entries`.
onnx::ModelProto add_external_weight_model(const std::vector<std::pair<std::string, std::string>>& entries) {
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {2, 3});
  add_external_init(m, "w", {2, 3}, entries);
  add_node(m, "Add", "add", {"x", "w"}, {"y"});
  add_io(m, false, "y", {2, 3});
  return m;
}

void write_model(const std::string& path, const onnx::ModelProto& m) { write_bytes(path, bytes(m)); }

Error load_path_error(const std::string& path) {
  try {
    Session s(path);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << path << " loaded without error";
  return Error(ErrorKind::Io, "none");
}

const std::vector<float> kW = {0.5f, -1.f, 2.f, 3.25f, -4.f, 100.f};
const std::vector<float> kX = {1, 2, 3, 4, 5, 6};

// 16 bytes of something else, w, then more: the loader reads only w's range.
std::string padded_weights() { return std::string(16, '\x7f') + raw_bytes(kW) + std::string(8, '\x11'); }

}  // namespace

TEST(LoaderExternalData, InitializerAtAnOffsetIsReadAndRuns) {
  ScratchDir dir;
  write_bytes(dir / "weights.bin", padded_weights());
  write_model(dir / "model.onnx", add_external_weight_model({{"location", "weights.bin"}, {"offset", "16"},
                                                             {"length", "24"}, {"checksum", "ignored"}}));
  Session s(dir / "model.onnx");
  ASSERT_EQ(s.inputs().size(), 1u);  // w is an initializer, not an input
  auto out = s.run({{"x", Tensor::from_vector<float>({2, 3}, kX)}});
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> want(6);
  for (size_t i = 0; i < 6; ++i) want[i] = kX[i] + kW[i];
  EXPECT_EQ(out[0].to_vector<float>(), want);

  // Without length, the tensor's size is read from the offset; without
  // offset, from the start; in a subdirectory of the model's; through a
  // symlink that stays inside the model's directory.
  std::filesystem::create_directory(dir / "data");
  write_bytes(dir / "data/w.bin", raw_bytes(kW));
  ASSERT_EQ(symlink("data/w.bin", (dir / "link.bin").c_str()), 0);
  for (const char* location : {"data/w.bin", "./data//w.bin", "link.bin"}) {
    write_model(dir / "model2.onnx", add_external_weight_model({{"location", location}}));
    Session s2(dir / "model2.onnx");
    EXPECT_EQ(s2.run({{"x", Tensor::from_vector<float>({2, 3}, kX)}})[0].to_vector<float>(), want) << location;
  }
}

TEST(LoaderExternalData, TwoInitializersShareAFile) {
  ScratchDir dir;
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};
  const std::vector<int64_t> shape = {3, 2};
  // a at offset 0, 8 bytes of padding, the shape at 32, padding after it.
  write_bytes(dir / "shared.bin", raw_bytes(a) + std::string(8, '\0') + raw_bytes(shape) + std::string(5, 'z'));
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {2, 3});
  add_external_init(m, "a", {2, 3}, {{"location", "shared.bin"}, {"offset", "0"}, {"length", "24"}});
  add_external_init(m, "shape", {2}, {{"location", "shared.bin"}, {"offset", "32"}, {"length", "16"}},
                    onnx::TensorProto::INT64);
  add_node(m, "Mul", "mul", {"x", "a"}, {"p"});
  add_node(m, "Reshape", "reshape", {"p", "shape"}, {"r"});
  add_node(m, "Relu", "relu", {"r"}, {"y"});
  auto* y = m.mutable_graph()->add_output();  // no declared shape: shape inference finds it
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  write_model(dir / "model.onnx", m);

  Session s(dir / "model.onnx");
  auto out = s.run({{"x", Tensor::from_vector<float>({2, 3}, {1, -1, 1, -1, 1, -1})}});
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{1, 0, 3, 0, 5, 0}));
  // Shape inference saw the external shape tensor's values: Relu's input is known to be [3,2].
  const Node& relu = s.nodes().back();
  ASSERT_EQ(relu.op_type, "Relu");
  ASSERT_EQ(relu.input_info.size(), 1u);
  EXPECT_TRUE(relu.input_info[0].has_shape);
  EXPECT_EQ(relu.input_info[0].shape, (Shape{3, 2}));
}

// Constant nodes' value tensors and subgraph initializers go through the same reading.
TEST(LoaderExternalData, ConstantValuesAndSubgraphInitializers) {
  ScratchDir dir;
  write_bytes(dir / "weights.bin", padded_weights());
  onnx::ModelProto m = make_model();
  add_io(m, true, "x", {2, 3});
  add_io(m, true, "cond", {}, onnx::TensorProto::BOOL);
  auto* c = add_node(m, "Constant", "const", {}, {"c"});
  auto* value = add_attr(c, "value", onnx::AttributeProto::TENSOR)->mutable_t();
  value->set_data_type(onnx::TensorProto::FLOAT);
  value->add_dims(2);
  value->add_dims(3);
  set_external(value, {{"location", "weights.bin"}, {"offset", "16"}});
  add_node(m, "Add", "add", {"x", "c"}, {"s"});

  auto branch = [&](const std::string& name, bool external) {
    onnx::GraphProto g;
    g.set_name(name);
    auto* t = g.add_initializer();
    t->set_name(name + "_w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(2);
    t->add_dims(3);
    if (external) set_external(t, {{"location", "weights.bin"}, {"offset", "16"}, {"length", "24"}});
    else for (int i = 0; i < 6; ++i) t->add_float_data(0);
    auto* n = g.add_node();
    n->set_op_type("Mul");
    n->add_input("s");
    n->add_input(name + "_w");
    n->add_output(name + "_out");
    auto* o = g.add_output();
    o->set_name(name + "_out");
    o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    return g;
  };
  auto* iff = add_node(m, "If", "if", {"cond"}, {"y"});
  *add_attr(iff, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g() = branch("then", true);
  *add_attr(iff, "else_branch", onnx::AttributeProto::GRAPH)->mutable_g() = branch("else", false);
  add_io(m, false, "y", {2, 3});
  write_model(dir / "model.onnx", m);

  Session s(dir / "model.onnx");
  auto out = s.run({{"x", Tensor::from_vector<float>({2, 3}, kX)}, {"cond", Tensor::scalar<bool>(true)}});
  std::vector<float> want(6);
  for (size_t i = 0; i < 6; ++i) want[i] = (kX[i] + kW[i]) * kW[i];
  EXPECT_EQ(out[0].to_vector<float>(), want);

  // A bad location in the subgraph is refused naming the subgraph.
  auto* then_init = m.mutable_graph()->mutable_node(2)->mutable_attribute(0)->mutable_g()->mutable_initializer(0);
  then_init->mutable_external_data(0)->set_value("nope.bin");
  write_model(dir / "bad.onnx", m);
  expect_mentions(load_path_error(dir / "bad.onnx"), ErrorKind::InvalidModel,
                  {"initializer 'then_w' of subgraph 'if/then_branch'", "'nope.bin'", "No such file"});
}

TEST(LoaderExternalData, LocationsOutsideTheModelsDirectoryAreRefused) {
  ScratchDir dir, elsewhere;
  write_bytes(elsewhere / "secret.bin", raw_bytes(kW));
  write_bytes(dir / "weights.bin", raw_bytes(kW));
  std::filesystem::create_directory(dir / "sub");
  auto refused = [&](const std::string& location, std::initializer_list<const char*> words) {
    write_model(dir / "model.onnx", add_external_weight_model({{"location", location}}));
    const Error e = load_path_error(dir / "model.onnx");
    expect_mentions(e, ErrorKind::InvalidModel, {"initializer 'w'"});
    expect_mentions(e, ErrorKind::InvalidModel, {("'" + location + "'").c_str()});
    expect_mentions(e, ErrorKind::InvalidModel, words);
  };
  refused(elsewhere / "secret.bin", {"absolute path"});
  refused(dir / "weights.bin", {"absolute path"});  // even one inside the directory
  refused("../" + std::filesystem::path(elsewhere.path()).filename().string() + "/secret.bin", {"'..' component"});
  refused("sub/../weights.bin", {"'..' component"});
  refused("sub/..", {"'..' component"});
  ASSERT_EQ(symlink((elsewhere / "secret.bin").c_str(), (dir / "escape.bin").c_str()), 0);
  refused("escape.bin", {"outside the model's directory", "secret.bin"});
  ASSERT_EQ(symlink(elsewhere.path().c_str(), (dir / "escape_dir").c_str()), 0);
  refused("escape_dir/secret.bin", {"outside the model's directory"});
}

TEST(LoaderExternalData, BadFilesRangesAndEntriesAreRefused) {
  ScratchDir dir;
  write_bytes(dir / "weights.bin", padded_weights());  // 48 bytes
  std::filesystem::create_directory(dir / "sub");
  ASSERT_EQ(mkfifo((dir / "fifo.bin").c_str(), 0600), 0);
  auto refused = [&](const std::vector<std::pair<std::string, std::string>>& entries,
                     std::initializer_list<const char*> words) {
    write_model(dir / "model.onnx", add_external_weight_model(entries));
    const Error e = load_path_error(dir / "model.onnx");
    expect_mentions(e, ErrorKind::InvalidModel, {"initializer 'w'"});
    expect_mentions(e, ErrorKind::InvalidModel, words);
  };
  refused({{"location", "missing.bin"}}, {"'missing.bin'", "No such file or directory"});
  refused({{"location", "sub"}}, {"'sub'", "not a regular file"});
  refused({{"location", "fifo.bin"}}, {"'fifo.bin'", "not a regular file"});
  refused({{"location", "weights.bin"}, {"offset", "32"}}, {"offset 32, 24 bytes", "past the end", "48 bytes"});
  refused({{"location", "weights.bin"}, {"offset", "49"}}, {"past the end"});
  refused({{"location", "weights.bin"}, {"offset", "9223372036854775807"}}, {"past the end"});
  refused({{"location", "weights.bin"}, {"length", "20"}}, {"length 20", "24 bytes"});
  refused({{"location", "weights.bin"}, {"length", "48"}}, {"length 48", "24 bytes"});
  for (const char* bad : {"-16", "+16", " 16", "16 ", "1e3", "0x10", "16abc", "", "99999999999999999999"})
    refused({{"location", "weights.bin"}, {"offset", bad}}, {"offset", "not a non-negative decimal integer"});
  refused({{"location", "weights.bin"}, {"length", "-24"}}, {"length '-24'", "not a non-negative decimal integer"});
  refused({{"location", "weights.bin"}, {"color", "blue"}}, {"unknown external_data key 'color'"});
  refused({{"location", "weights.bin"}, {"location", "weights.bin"}}, {"'location' twice"});
  refused({{"offset", "0"}}, {"no external_data 'location'"});
  refused({{"location", ""}}, {"no external_data 'location'"});

  // External and inline data at once.
  onnx::ModelProto m = add_external_weight_model({{"location", "weights.bin"}, {"offset", "16"}});
  m.mutable_graph()->mutable_initializer(0)->set_raw_data(raw_bytes(kW));
  write_model(dir / "model.onnx", m);
  expect_mentions(load_path_error(dir / "model.onnx"), ErrorKind::InvalidModel,
                  {"initializer 'w'", "EXTERNAL", "inline data"});
  m.mutable_graph()->mutable_initializer(0)->clear_raw_data();
  for (float v : kW) m.mutable_graph()->mutable_initializer(0)->add_float_data(v);
  write_model(dir / "model.onnx", m);
  expect_mentions(load_path_error(dir / "model.onnx"), ErrorKind::InvalidModel, {"initializer 'w'", "inline data"});

  // external_data entries on a tensor whose data_location is not EXTERNAL.
  onnx::ModelProto d = add_external_weight_model({{"location", "weights.bin"}});
  d.mutable_graph()->mutable_initializer(0)->set_data_location(onnx::TensorProto::DEFAULT);
  write_model(dir / "model.onnx", d);
  expect_mentions(load_path_error(dir / "model.onnx"), ErrorKind::InvalidModel,
                  {"initializer 'w'", "data_location is not EXTERNAL"});

  // Huge dims are refused by the file's size before anything is allocated.
  onnx::ModelProto h = make_model();
  add_io(h, true, "x", {2, 3});
  add_external_init(h, "w", {1 << 20, 1 << 20, 1 << 10}, {{"location", "weights.bin"}});
  add_node(h, "Add", "add", {"x", "w"}, {"y"});
  add_io(h, false, "y", {2, 3});
  write_model(dir / "model.onnx", h);
  expect_mentions(load_path_error(dir / "model.onnx"), ErrorKind::InvalidModel, {"initializer 'w'", "past the end"});
}
