// Model loading and run-time input errors: each must be an epprof::rt::Error
// whose kind and message name the problem (and the node).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
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
