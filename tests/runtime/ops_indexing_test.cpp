// Hand-checked results and error messages of the indexing kernels, through
// small graphs (ONNX's own test data is covered by runtime_conformance).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "epprof/rt/session.h"
#include "kernels/indexing_util.h"
#include "test_models.h"

using namespace epprof::rt;
using namespace epprof::rt::testing;

namespace {

using Attrs = std::function<void(onnx::NodeProto*)>;

// A one-node model: every non-empty input tensor is a graph input (so its
// values reach the kernel only at run time), an empty Tensor marks an omitted
// optional input; outputs are declared by element type only.
onnx::ModelProto one_node(const std::string& op, const std::vector<Tensor>& inputs, const std::vector<DataType>& outs,
                          const Attrs& attrs, int opset) {
  onnx::ModelProto m = make_model(opset);
  std::vector<std::string> in_names, out_names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) {
      in_names.push_back("");
      continue;
    }
    in_names.push_back("in" + std::to_string(i));
    add_io(m, true, in_names.back(), inputs[i].shape(), static_cast<int>(inputs[i].dtype()));
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    out_names.push_back("out" + std::to_string(k));
    auto* v = m.mutable_graph()->add_output();
    v->set_name(out_names.back());
    v->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int>(outs[k]));
  }
  auto* n = add_node(m, op, op + "_node", in_names, out_names);
  if (attrs) attrs(n);
  return m;
}

std::vector<Tensor> run_op(const std::string& op, const std::vector<Tensor>& inputs, const std::vector<DataType>& outs,
                           const Attrs& attrs = {}, int opset = 17) {
  Session s = Session::from_bytes(bytes(one_node(op, inputs, outs, attrs, opset)));
  std::map<std::string, Tensor> feed;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].empty()) feed["in" + std::to_string(i)] = inputs[i];
  return s.run(feed);
}

// The message of the Error that loading or running the node throws ("" if none).
std::string error_of(const std::string& op, const std::vector<Tensor>& inputs, const std::vector<DataType>& outs,
                     const Attrs& attrs = {}, int opset = 17) {
  try {
    run_op(op, inputs, outs, attrs, opset);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR_MENTIONS(msg, text) EXPECT_NE((msg).find(text), std::string::npos) << "message: " << (msg)

Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }
Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
constexpr auto F = DataType::Float;
constexpr auto I64 = DataType::Int64;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();

}  // namespace

TEST(OpsIndexing, SliceNegativeStepsClampAndExtremeValues) {
  const Tensor x = f32({5}, {0, 1, 2, 3, 4});
  // start 10 clamps to 4, end -10 to "before 0": 4, 2, 0.
  auto y = run_op("Slice", {x, i64({1}, {10}), i64({1}, {-10}), i64({1}, {0}), i64({1}, {-2})}, {F})[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{4, 2, 0}));
  // int64 extremes: the whole axis reversed, and one element for a huge step.
  y = run_op("Slice", {x, i64({1}, {kMax}), i64({1}, {kMin}), Tensor(), i64({1}, {-1})}, {F})[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{4, 3, 2, 1, 0}));
  y = run_op("Slice", {x, i64({1}, {1}), i64({1}, {kMax}), Tensor(), i64({1}, {kMax})}, {F})[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1}));
  // Empty ranges give an empty axis.
  y = run_op("Slice", {x, i64({1}, {3}), i64({1}, {1}), Tensor(), Tensor()}, {F})[0];
  EXPECT_EQ(y.shape(), (Shape{0}));
}

TEST(OpsIndexing, SliceOpset9AttributesAndInt32Inputs) {
  const Tensor x = f32({2, 3}, {0, 1, 2, 3, 4, 5});
  auto y = run_op("Slice", {x}, {F}, [](auto* n) {
    set_ints(n, "starts", {1});
    set_ints(n, "ends", {-1});
    set_ints(n, "axes", {-1});
  }, 9)[0];
  EXPECT_EQ(y.shape(), (Shape{2, 1}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 4}));
  auto i32 = [](std::vector<int32_t> v) { return Tensor::from_vector<int32_t>({static_cast<int64_t>(v.size())}, v); };
  y = run_op("Slice", {x, i32({-1, 0}), i32({2, 3}), i32({0, 1}), i32({1, 2})}, {F})[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 5}));
}

// Index inputs that are constants of the session are read once, when it is
// created; the same slices come out when they are initializers, when one of
// them is fed (a graph input may shadow nothing: it is read every run), and
// when an initializer holds values that are not indices (an error per run).
TEST(OpsIndexing, SliceReadsConstantIndicesOnceAndFedOnesEveryRun) {
  auto model = [](bool axes_fed, onnx::TensorProto::DataType starts_type) {
    onnx::ModelProto m = make_model(13);
    add_io(m, true, "x", {2, 6});
    if (axes_fed) add_io(m, true, "axes", {1}, onnx::TensorProto::INT64);
    auto* starts = add_int64_init(m, "starts", {1}, {1});
    if (starts_type != onnx::TensorProto::INT64) {
      starts->clear_int64_data();
      starts->set_data_type(starts_type);
      starts->add_float_data(1.0f);
    }
    add_int64_init(m, "ends", {1}, {-1});
    if (!axes_fed) add_int64_init(m, "axes", {1}, {1});
    add_int64_init(m, "steps", {1}, {2});
    add_node(m, "Slice", "slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
    add_io(m, false, "y", {-1, -1});
    return bytes(m);
  };
  const Tensor x = f32({2, 6}, {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
  Session prepared = Session::from_bytes(model(false, onnx::TensorProto::INT64));
  for (int run = 0; run < 2; ++run) {
    const Tensor y = prepared.run({{"x", x}})[0];
    EXPECT_EQ(y.shape(), (Shape{2, 2}));
    EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 3, 11, 13})) << run;
  }
  Session fed = Session::from_bytes(model(true, onnx::TensorProto::INT64));
  EXPECT_EQ(fed.run({{"x", x}, {"axes", i64({1}, {1})}})[0].to_vector<float>(), (std::vector<float>{1, 3, 11, 13}));
  EXPECT_EQ(fed.run({{"x", x}, {"axes", i64({1}, {0})}})[0].shape(), (Shape{0, 6}));  // rows [1, -1 + 2): none
  Session bad = Session::from_bytes(model(false, onnx::TensorProto::FLOAT));
  for (int run = 0; run < 2; ++run) {
    try {
      bad.run({{"x", x}});
      ADD_FAILURE() << "a float 'starts' was accepted";
    } catch (const Error& e) {
      EXPECT_ERROR_MENTIONS(std::string(e.what()), "input 'starts' must be int64 or int32");
    }
  }
}

TEST(OpsIndexing, SliceErrors) {
  const Tensor x = f32({5}, {0, 1, 2, 3, 4});
  EXPECT_ERROR_MENTIONS(error_of("Slice", {x, i64({1}, {0}), i64({1}, {5}), Tensor(), i64({1}, {0})}, {F}), "step");
  EXPECT_ERROR_MENTIONS(error_of("Slice", {x, i64({2}, {0, 0}), i64({2}, {5, 5}), i64({2}, {0, -1})}, {F}),
                        "given twice");
  EXPECT_ERROR_MENTIONS(error_of("Slice", {x, i64({1}, {0}), i64({2}, {5, 5})}, {F}), "must match");
  EXPECT_ERROR_MENTIONS(error_of("Slice", {x, f32({1}, {0}), i64({1}, {5})}, {F}), "input 'starts'");
}

TEST(OpsIndexing, PadReflectNegativePadsAndOpset2Value) {
  const Tensor x = f32({1, 4}, {1, 2, 3, 4});
  // Reflect two on the left, crop one on the right.
  auto y = run_op("Pad", {x, i64({4}, {0, 2, 0, -1})}, {F}, [](auto* n) { set_string(n, "mode", "reflect"); })[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 2, 1, 2, 3}));
  y = run_op("Pad", {x, i64({4}, {0, 1, 0, 2})}, {F}, [](auto* n) { set_string(n, "mode", "edge"); })[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 1, 2, 3, 4, 4, 4}));
  y = run_op("Pad", {x}, {F}, [](auto* n) {
    set_ints(n, "pads", {1, 0, 0, 1});
    set_float(n, "value", 7);
  }, 10)[0];
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{7, 7, 7, 7, 7, 1, 2, 3, 4, 7}));
}

// Every mode against the definition (numpy's pad, reflecting back and forth
// when a pad is wider than the dim), over begin and end pads from cropping
// to several times the last dim, with the outer dim padded and cropped too.
TEST(OpsIndexing, PadMatchesTheDefinitionInEveryModeAndPadWidth) {
  const int64_t rows = 2, n = 5;
  std::vector<float> xs(rows * n);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(i + 1);
  const Tensor x = f32({rows, n}, xs);
  auto source = [](int64_t i, int64_t size, const std::string& mode) -> int64_t {  // -1: the constant
    if (i >= 0 && i < size) return i;
    if (mode == "constant") return -1;
    if (mode == "edge") return i < 0 ? 0 : size - 1;
    while (i < 0 || i >= size) i = i < 0 ? -i : 2 * (size - 1) - i;
    return i;
  };
  for (const std::string mode : {"constant", "reflect", "edge"})
    for (int64_t top : {-1, 0, 1})
      for (int64_t bottom : {-1, 0, 2})
        for (int64_t left : {-3, -1, 0, 1, 4, 5, 9, 11})
          for (int64_t right : {-3, -1, 0, 2, 4, 6, 10}) {
            const int64_t out_rows = rows + top + bottom, out_cols = n + left + right;
            if (out_cols < 0) continue;
            const auto y = run_op("Pad", {x, i64({4}, {top, left, bottom, right}), f32({}, {-9})}, {F},
                                  [&](auto* node) { set_string(node, "mode", mode); })[0];
            std::vector<float> want;
            for (int64_t r = 0; r < out_rows; ++r)
              for (int64_t c = 0; c < out_cols; ++c) {
                const int64_t sr = source(r - top, rows, mode), sc = source(c - left, n, mode);
                want.push_back(sr < 0 || sc < 0 ? -9.0f : xs[size_t(sr * n + sc)]);
              }
            ASSERT_EQ(y.to_vector<float>(), want) << mode << " pads " << top << "," << left << "," << bottom << ","
                                                  << right;
          }
}

TEST(OpsIndexing, PadErrors) {
  const Tensor x = f32({1, 4}, {1, 2, 3, 4});
  EXPECT_ERROR_MENTIONS(error_of("Pad", {x, i64({4}, {0, 0, 0, 0})}, {F}, [](auto* n) { set_string(n, "mode", "wrap"); }),
                        "attribute 'mode'");
  EXPECT_ERROR_MENTIONS(error_of("Pad", {x, i64({2}, {0, 0})}, {F}), "expected 2 * rank");
  EXPECT_ERROR_MENTIONS(error_of("Pad", {x, i64({4}, {0, -3, 0, -3})}, {F}), "invalid size");
  EXPECT_ERROR_MENTIONS(error_of("Pad", {x, i64({4}, {0, -5, 0, 3})}, {F}), "invalid size");  // crops past the dim
  EXPECT_ERROR_MENTIONS(error_of("Pad", {x, i64({4}, {0, 0, 0, 0}), i64({}, {1})}, {F}), "constant_value");
}

TEST(OpsIndexing, UniqueUnsortedAllOutputs) {
  auto out = run_op("Unique", {f32({6}, {2, 1, 1, 3, 4, 3})}, {F, I64, I64, I64},
                    [](auto* n) { set_int(n, "sorted", 0); });
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(out[1].to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(out[2].to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(out[3].to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 2, 1}));
  // Sorted, NaN last and equal to itself.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  out = run_op("Unique", {f32({4}, {nan, 2, nan, 1})}, {F, I64, I64, I64});
  EXPECT_EQ(out[0].size(), 3);
  EXPECT_EQ(out[1].to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 0}));
  EXPECT_EQ(out[3].to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 2}));
}

TEST(OpsIndexing, TopKTiesTakeLowerIndexFirst) {
  auto out = run_op("TopK", {f32({4}, {1, 3, 3, 2}), i64({1}, {2})}, {F, I64});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_EQ(out[1].to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  out = run_op("TopK", {f32({4}, {2, 1, 1, 3}), i64({1}, {3})}, {F, I64}, [](auto* n) { set_int(n, "largest", 0); });
  EXPECT_EQ(out[1].to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0}));
  // Opset 9: k is an attribute.
  out = run_op("TopK", {f32({2, 2}, {1, 2, 4, 3})}, {F, I64}, [](auto* n) { set_int(n, "k", 1); }, 9);
  EXPECT_EQ(out[1].to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_ERROR_MENTIONS(error_of("TopK", {f32({4}, {1, 2, 3, 4}), i64({1}, {5})}, {F, I64}), "k = 5");
}

TEST(OpsIndexing, ArgMaxSelectLastIndexAndArgMinKeepdims) {
  const Tensor x = f32({2, 3}, {1, 5, 5, 2, 2, 0});
  auto y = run_op("ArgMax", {x}, {I64}, [](auto* n) {
    set_int(n, "axis", 1);
    set_int(n, "select_last_index", 1);
  })[0];
  EXPECT_EQ(y.shape(), (Shape{2, 1}));
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{2, 1}));
  y = run_op("ArgMin", {x}, {I64}, [](auto* n) {
    set_int(n, "axis", -1);
    set_int(n, "keepdims", 0);
  })[0];
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{0, 2}));
  EXPECT_ERROR_MENTIONS(error_of("ArgMax", {f32({0, 2}, {})}, {I64}), "empty axis");
}

TEST(OpsIndexing, HardmaxFlattensBeforeOpset13) {
  const Tensor x = f32({2, 2}, {1, 3, 4, 2});
  // Opset 11, axis 0: one row of 4, a single 1 at the global maximum.
  auto y = run_op("Hardmax", {x}, {F}, [](auto* n) { set_int(n, "axis", 0); }, 11)[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 1, 0}));
  // Opset 13, axis 0: per column.
  y = run_op("Hardmax", {x}, {F}, [](auto* n) { set_int(n, "axis", 0); }, 13)[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 1, 1, 0}));
}

TEST(OpsIndexing, GatherFamiliesCheckIndexRanges) {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  auto i32 = Tensor::from_vector<int32_t>({2}, {-1, 0});
  EXPECT_EQ(run_op("Gather", {x, i32}, {F})[0].to_vector<float>(), (std::vector<float>{3, 4, 1, 2}));
  EXPECT_ERROR_MENTIONS(error_of("Gather", {x, i64({1}, {2})}, {F}), "Gather index 2 is out of range [-2, 2)");
  EXPECT_ERROR_MENTIONS(error_of("GatherElements", {x, i64({1, 1}, {-3})}, {F}), "GatherElements index -3");
  EXPECT_ERROR_MENTIONS(error_of("GatherND", {x, i64({1, 2}, {0, 5})}, {F}), "GatherND index 5");
  EXPECT_ERROR_MENTIONS(error_of("GatherND", {x, i64({1, 3}, {0, 0, 0})}, {F}), "last dimension of indices");
  EXPECT_ERROR_MENTIONS(error_of("GatherElements", {x, i64({1, 3}, {0, 0, 0})}, {F}), "exceed data");
}

TEST(OpsIndexing, ScatterReductionsWrapIntegers) {
  const auto i32 = [](Shape s, std::vector<int32_t> v) { return Tensor::from_vector<int32_t>(std::move(s), v); };
  // Duplicate indices accumulate; int32 overflow wraps instead of being undefined.
  auto y = run_op("ScatterElements", {i32({3}, {2147483647, 1, 1}), i64({2}, {0, 0}), i32({2}, {1, 1})},
                  {DataType::Int32}, [](auto* n) { set_string(n, "reduction", "add"); })[0];
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{-2147483647, 1, 1}));
  y = run_op("ScatterND", {i32({2, 2}, {1, 2, 3, 4}), i64({2, 1}, {1, -1}), i32({2, 2}, {2, 2, 3, 3})},
             {DataType::Int32}, [](auto* n) { set_string(n, "reduction", "mul"); })[0];
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 18, 24}));
  EXPECT_ERROR_MENTIONS(error_of("ScatterND", {i32({2}, {1, 2}), i64({1, 1}, {0}), i32({1}, {1})}, {DataType::Int32},
                                 [](auto* n) { set_string(n, "reduction", "max"); }),
                        "attribute 'reduction'");
  EXPECT_ERROR_MENTIONS(error_of("ScatterElements", {f32({2}, {1, 2}), i64({1}, {0}), f32({2}, {1, 2})}, {F}),
                        "updates");
}

TEST(OpsIndexing, OneHotNegativeAndOutOfRangeIndices) {
  auto y = run_op("OneHot", {i64({3}, {-1, 5, 0}), i64({}, {3}), f32({2}, {0, 1})}, {F})[0];
  EXPECT_EQ(y.shape(), (Shape{3, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 1, 0, 0, 0, 1, 0, 0}));
  EXPECT_ERROR_MENTIONS(error_of("OneHot", {i64({1}, {0}), i64({}, {0}), f32({2}, {0, 1})}, {F}), "depth");
}

TEST(OpsIndexing, CompressNonZeroAndErrors) {
  const Tensor x = f32({2, 2}, {0, 2, -0.0f, 4});
  auto nz = run_op("NonZero", {x}, {I64})[0];
  EXPECT_EQ(nz.shape(), (Shape{2, 2}));
  EXPECT_EQ(nz.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 1}));
  auto cond = Tensor::from_vector<bool>({3}, {false, true, true});
  EXPECT_EQ(run_op("Compress", {x, cond}, {F})[0].to_vector<float>(), (std::vector<float>{2, -0.0f}));
  EXPECT_ERROR_MENTIONS(error_of("Compress", {x, cond}, {F}, [](auto* n) { set_int(n, "axis", 0); }), "longer");
  EXPECT_ERROR_MENTIONS(error_of("Compress", {x, i64({1}, {1})}, {F}), "bool");
}

TEST(OpsIndexing, TensorOpsHandCheckedValues) {
  // CumSum, exclusive and reverse together, on int32.
  auto c = run_op("CumSum", {Tensor::from_vector<int32_t>({4}, {1, 2, 3, 4}), i64({}, {0})}, {DataType::Int32},
                  [](auto* n) {
                    set_int(n, "exclusive", 1);
                    set_int(n, "reverse", 1);
                  })[0];
  EXPECT_EQ(c.to_vector<int32_t>(), (std::vector<int32_t>{9, 7, 4, 0}));
  // Split opset 11 with the attribute; Tile; Expand both ways; Range with a negative delta.
  auto parts = run_op("Split", {f32({5}, {1, 2, 3, 4, 5})}, {F, F}, [](auto* n) { set_ints(n, "split", {2, 3}); }, 11);
  EXPECT_EQ(parts[1].to_vector<float>(), (std::vector<float>{3, 4, 5}));
  auto t = run_op("Tile", {f32({1, 2}, {1, 2}), i64({2}, {2, 2})}, {F})[0];
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2}));
  auto e = run_op("Expand", {f32({2, 1}, {1, 2}), i64({2}, {1, 3})}, {F})[0];
  EXPECT_EQ(e.to_vector<float>(), (std::vector<float>{1, 1, 1, 2, 2, 2}));
  auto r = run_op("Range", {i64({}, {10}), i64({}, {kMin}), i64({}, {kMin})}, {I64})[0];
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{10, 10 + kMin}));  // limit - start overflows int64
  const int64_t q = int64_t{1} << 62;  // a span of nearly 2^64 in steps of -q: 4 values, no overflow
  r = run_op("Range", {i64({}, {kMax}), i64({}, {kMin}), i64({}, {-q})}, {I64})[0];
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{kMax, kMax - q, kMax - q - q, kMax - q - q - q}));
  // Trilu with a k far outside the matrix keeps everything (lower) or nothing (upper).
  auto m = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(run_op("Trilu", {m, i64({}, {kMax})}, {F}, [](auto* n) { set_int(n, "upper", 0); })[0].to_vector<float>(),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(run_op("Trilu", {m, i64({}, {kMax})}, {F})[0].to_vector<float>(), (std::vector<float>{0, 0, 0, 0}));
  // EyeLike with an off-diagonal k and a bool dtype.
  auto eye = run_op("EyeLike", {f32({2, 3}, {0, 0, 0, 0, 0, 0})}, {DataType::Bool}, [](auto* n) {
    set_int(n, "k", 1);
    set_int(n, "dtype", static_cast<int>(DataType::Bool));
  })[0];
  EXPECT_EQ(eye.to_vector<bool>(), (std::vector<bool>{false, true, false, false, false, true}));
}

TEST(OpsIndexing, TensorOpsErrors) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_ERROR_MENTIONS(error_of("Split", {x, i64({2}, {1, 1})}, {F, F}, [](auto* n) { set_int(n, "axis", 1); }),
                        "do not split");
  EXPECT_ERROR_MENTIONS(error_of("Split", {x}, {F, F}, [](auto* n) { set_int(n, "axis", 1); }), "equal parts");
  EXPECT_ERROR_MENTIONS(error_of("Tile", {x, i64({1}, {2})}, {F}), "repeats has 1 values");
  EXPECT_ERROR_MENTIONS(error_of("Tile", {x, i64({2}, {1, -1})}, {F}), "negative dimension");
  EXPECT_ERROR_MENTIONS(error_of("Expand", {x, i64({1}, {2})}, {F}), "cannot be broadcast");
  EXPECT_ERROR_MENTIONS(error_of("Range", {f32({}, {0}), f32({}, {1}), f32({}, {0})}, {F}), "delta must not be 0");
  EXPECT_ERROR_MENTIONS(error_of("Range", {f32({}, {0}), i64({}, {1}), f32({}, {1})}, {F}), "share one type");
  EXPECT_ERROR_MENTIONS(error_of("ReverseSequence", {x, i64({3}, {1, 2, 3})}, {F}, [](auto* n) {
                          set_int(n, "time_axis", 1);
                          set_int(n, "batch_axis", 1);
                        }),
                        "'time_axis'");
  EXPECT_ERROR_MENTIONS(error_of("ReverseSequence", {x, i64({3}, {1, 2, 4})}, {F}), "sequence length 4");
  EXPECT_ERROR_MENTIONS(error_of("DepthToSpace", {f32({1, 4, 1, 1}, {1, 2, 3, 4})}, {F}, [](auto* n) {
                          set_int(n, "blocksize", 2);
                          set_string(n, "mode", "XYZ");
                        }),
                        "attribute 'mode'");
  EXPECT_ERROR_MENTIONS(error_of("SpaceToDepth", {f32({1, 1, 3, 2}, {1, 2, 3, 4, 5, 6})}, {F},
                                 [](auto* n) { set_int(n, "blocksize", 2); }),
                        "not divisible");
  EXPECT_ERROR_MENTIONS(error_of("EyeLike", {x}, {F}, [](auto* n) { set_int(n, "dtype", 8); }), "attribute 'dtype'");
  EXPECT_ERROR_MENTIONS(error_of("CumSum", {x, i64({}, {2})}, {F}), "axis 2");
  EXPECT_ERROR_MENTIONS(error_of("Reshape", {x, i64({2}, {-1, -1})}, {F}), "more than one -1");
}

namespace {
// TfIdfVectorizer over pool 1-gram [1], 2-grams [1,1] [2,2], 3-gram [1,1,1] (output coordinates 0..3).
Attrs tfidf_attrs(const std::string& mode, int64_t min_n, int64_t max_n, int64_t skip, const Attrs& more = {}) {
  return [=](onnx::NodeProto* n) {
    set_string(n, "mode", mode);
    set_int(n, "min_gram_length", min_n);
    set_int(n, "max_gram_length", max_n);
    set_int(n, "max_skip_count", skip);
    if (more) more(n);  // before the defaults: the first of two same-named attributes wins
    auto absent = [n](const char* key) {
      for (const auto& a : n->attribute())
        if (a.name() == key) return false;
      return true;
    };
    if (absent("ngram_counts")) set_ints(n, "ngram_counts", {0, 1, 5});
    if (absent("ngram_indexes")) set_ints(n, "ngram_indexes", {0, 1, 2, 3});
    if (absent("pool_int64s")) set_ints(n, "pool_int64s", {1, 1, 1, 2, 2, 1, 1, 1});
  };
}
}  // namespace

TEST(OpsIndexing, TfIdfVectorizerCountsSkippedNgramsOnce) {
  // Row 0 [1,2,1,2,1]: adjacent pairs match nothing; gap 2 gives [1,1] at (0,2) and (2,4), [2,2] at (1,3)
  // and the 3-gram [1,1,1] at (0,2,4). The 1-gram counts once per position, not once per skip.
  // Row 1 [1,1,1,0,0]: [1,1] at (0,1), (1,2) and (0,2); [1,1,1] at (0,1,2) only.
  const Tensor x = Tensor::from_vector<int32_t>({2, 5}, {1, 2, 1, 2, 1, 1, 1, 1, 0, 0});
  auto y = run_op("TfIdfVectorizer", {x}, {F}, tfidf_attrs("TF", 1, 3, 1))[0];
  EXPECT_EQ(y.shape(), (Shape{2, 4}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 2, 1, 1, 3, 3, 0, 1}));
  // Without skips only row 1's adjacent n-grams remain; min_gram_length 2 drops the 1-gram.
  y = run_op("TfIdfVectorizer", {x}, {F}, tfidf_attrs("TF", 2, 3, 0))[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 0, 2, 0, 1}));
  // max_gram_length 2 never looks for the 3-gram; an int64 max_skip_count is safe.
  y = run_op("TfIdfVectorizer", {i64({5}, {1, 2, 1, 2, 1})}, {F}, tfidf_attrs("TF", 2, 2, kMax))[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 3, 1, 0}));  // [1,1] also at gap 4: (0,4)
}

TEST(OpsIndexing, TfIdfVectorizerWeightsFollowThePool) {
  // The i-th weight scales the i-th pool n-gram, wherever ngram_indexes puts it.
  auto attrs = [](const std::string& mode) {
    return [mode](onnx::NodeProto* n) {
      set_string(n, "mode", mode);
      set_int(n, "min_gram_length", 1);
      set_int(n, "max_gram_length", 1);
      set_int(n, "max_skip_count", 0);
      set_ints(n, "ngram_counts", {0});
      set_ints(n, "ngram_indexes", {2, 0, 1});
      set_ints(n, "pool_int64s", {5, 7, 9});
      auto* w = n->add_attribute();
      w->set_name("weights");
      w->set_type(onnx::AttributeProto::FLOATS);
      for (float v : {0.5f, 2.0f, 4.0f}) w->add_floats(v);
    };
  };
  const Tensor x = i64({4}, {5, 5, 7, 3});  // 5 twice, 7 once, 9 never
  EXPECT_EQ(run_op("TfIdfVectorizer", {x}, {F}, attrs("IDF"))[0].to_vector<float>(), (std::vector<float>{2, 0, 0.5f}));
  EXPECT_EQ(run_op("TfIdfVectorizer", {x}, {F}, attrs("TFIDF"))[0].to_vector<float>(), (std::vector<float>{2, 0, 1}));
  EXPECT_EQ(run_op("TfIdfVectorizer", {x}, {F}, attrs("TF"))[0].to_vector<float>(), (std::vector<float>{1, 0, 2}));
}

TEST(OpsIndexing, TfIdfVectorizerErrors) {
  const Tensor x = i64({3}, {1, 1, 2});
  auto err = [&](const Attrs& more, const Tensor& in) {
    return error_of("TfIdfVectorizer", {in}, {F}, tfidf_attrs("TF", 1, 3, 0, more));
  };
  EXPECT_ERROR_MENTIONS(err([](auto* n) { set_ints(n, "ngram_counts", {0, 6, 5}); }, x), "'ngram_counts'");
  EXPECT_ERROR_MENTIONS(err([](auto* n) { set_ints(n, "ngram_counts", {0, 1, 4}); }, x), "not a multiple of 2");
  EXPECT_ERROR_MENTIONS(err([](auto* n) { set_ints(n, "ngram_indexes", {0, 1, 2}); }, x), "'ngram_indexes' has 3");
  EXPECT_ERROR_MENTIONS(err([](auto* n) { set_ints(n, "ngram_indexes", {0, -1, 2, 3}); }, x), "holds -1");
  EXPECT_ERROR_MENTIONS(err([](auto* n) { set_ints(n, "pool_int64s", {1, 1, 1, 1, 1, 1, 1, 1}); }, x), "twice");
  EXPECT_ERROR_MENTIONS(err(
                            [](auto* n) {
                              auto* w = n->add_attribute();
                              w->set_name("weights");
                              w->set_type(onnx::AttributeProto::FLOATS);
                              w->add_floats(1.0f);
                            },
                            x),
                        "'weights' has 1");
  EXPECT_ERROR_MENTIONS(err(
                            [](auto* n) {
                              auto* s = n->add_attribute();
                              s->set_name("pool_strings");
                              s->set_type(onnx::AttributeProto::STRINGS);
                              s->add_strings("a");
                            },
                            x),
                        "'pool_strings' is not supported");
  EXPECT_ERROR_MENTIONS(error_of("TfIdfVectorizer", {x}, {F}, tfidf_attrs("TF", 3, 2, 0)), "'min_gram_length' (3)");
  EXPECT_ERROR_MENTIONS(error_of("TfIdfVectorizer", {x}, {F}, tfidf_attrs("TF", 1, 2, -1)), "'max_skip_count'");
  EXPECT_ERROR_MENTIONS(error_of("TfIdfVectorizer", {x}, {F}, tfidf_attrs("BM25", 1, 2, 0)), "attribute 'mode'");
  EXPECT_ERROR_MENTIONS(err({}, f32({3}, {1, 1, 2})), "int32 or int64");
  EXPECT_ERROR_MENTIONS(err({}, i64({1, 1, 3}, {1, 1, 2})), "1-D [C] or 2-D [N, C]");
}

// strided_copy against the definition, element by element: views whose dims
// coalesce (contiguous runs, size-1 dims, broadcasts) and views whose dims
// do not (transposes, steps, reversals), at ranks past its inline buffer.
TEST(OpsIndexing, StridedCopyMatchesTheDefinitionWhereverItsDimsCoalesce) {
  struct View {
    Shape shape;
    std::vector<int64_t> strides;
    int64_t offset;
  };
  const std::vector<View> views = {
      {{1, 129, 4}, {1032, 4, 1}, 0},         // Silero's STFT half: one run of 516
      {{1, 129, 4}, {1032, 4, 1}, 516},       // the other half
      {{2, 3, 4}, {12, 4, 1}, 0},             // the whole tensor
      {{2, 3, 4}, {1, 2, 6}, 0},              // a transpose: nothing merges
      {{3, 1, 4}, {0, 7, 1}, 5},              // a broadcast over a size-1 dim
      {{2, 3, 2}, {0, 0, 1}, 3},              // two broadcast dims merge
      {{4, 5}, {-5, 1}, 15},                  // reversed rows, contiguous columns
      {{3, 4}, {8, 2}, 1},                    // stepped columns
      {{1, 1, 1}, {9, 9, 9}, 7},              // one element
      {{2, 1, 2, 1, 2, 1, 2, 1, 2, 3}, {96, 0, 48, 0, 24, 0, 12, 0, 6, 2}, 0},  // rank 10, stepped
      {{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, {512, 256, 128, 64, 32, 16, 8, 4, 2, 1}, 0},  // rank 10, one run
  };
  std::vector<float> src(2048);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.5f - 7.0f;
  for (const View& v : views) {
    const int64_t n = shape_size(v.shape);
    std::vector<float> got(static_cast<size_t>(n), -1.0f), want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      int64_t at = v.offset, rest = i;
      for (size_t d = v.shape.size(); d-- > 0;) {
        at += (rest % v.shape[d]) * v.strides[d];
        rest /= v.shape[d];
      }
      want[static_cast<size_t>(i)] = src[static_cast<size_t>(at)];
    }
    kernels::strided_copy(src.data(), v.offset, v.shape, v.strides, got.data());
    EXPECT_EQ(got, want) << shape_to_string(v.shape) << " strides " << shape_to_string(v.strides);
  }
}
