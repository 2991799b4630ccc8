// Sequence and Optional ops. Sequences and optionals travel as Tensors
// (Tensor::sequence_of, Tensor::none; see epprof/rt/tensor.h): an optional
// that holds a value is that value, so Optional(x) is x and
// OptionalGetElement of a value is the value.
#include <cstring>

#include "kernels/common.h"

namespace epprof::rt::kernels {

namespace {

const std::vector<Tensor>& require_sequence(const Tensor& t, const char* what) {
  if (!t.is_sequence()) fail(std::string(what) + " must be a sequence, got " + t.description());
  return t.sequence();
}

const Tensor& require_dense(const Tensor& t, const char* what) {
  if (!t.is_dense()) fail(std::string(what) + " must be a tensor, got " + t.description());
  return t;
}

// A position input (int32 or int64 scalar) normalised to [0, n) (or [0, n]
// when `inclusive_end`, for an insertion point).
size_t position_in(const Tensor& t, size_t n, bool inclusive_end) {
  require_dense(t, "input 'position'");
  if (t.size() != 1 || (t.dtype() != DataType::Int64 && t.dtype() != DataType::Int32))
    fail("input 'position' must be an int32 or int64 scalar, got " + t.description());
  const int64_t p = to_int64s(t)[0];
  const int64_t size = static_cast<int64_t>(n);
  const int64_t hi = inclusive_end ? size : size - 1;
  if (p < -size || p > hi)
    fail("position " + std::to_string(p) + " is out of range [" + std::to_string(-size) + ", " + std::to_string(hi) +
         "] for a sequence of " + std::to_string(n));
  return static_cast<size_t>(p < 0 ? p + size : p);
}

DataType dtype_attr(const Node& node, DataType fallback) {
  const int64_t d = node.attr_int("dtype", static_cast<int64_t>(fallback));
  if (d < 0 || d > 1000 || !is_supported_type(static_cast<int>(d)))
    fail("attribute 'dtype' is " + std::to_string(d) + ", not an element type the runtime supports");
  return static_cast<DataType>(d);
}

std::unique_ptr<Kernel> make_sequence_construct(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    if (ctx.num_inputs() == 0) fail("SequenceConstruct takes at least one input");
    std::vector<Tensor> items;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) items.push_back(require_dense(ctx.input(i), "every input"));
    const DataType type = items.front().dtype();
    ctx.outputs[0] = Tensor::sequence_of(type, std::move(items));
  });
}

std::unique_ptr<Kernel> make_sequence_empty(const Node& node) {
  const DataType type = dtype_attr(node, DataType::Float);
  return make_kernel([type](KernelContext& ctx) { ctx.outputs[0] = Tensor::sequence_of(type, {}); });
}

std::unique_ptr<Kernel> make_sequence_at(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const auto& seq = require_sequence(ctx.input(0), "input 0 (input_sequence)");
    ctx.outputs[0] = seq[position_in(ctx.input(1), seq.size(), false)];
  });
}

std::unique_ptr<Kernel> make_sequence_insert(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const Tensor& s = ctx.input(0);
    std::vector<Tensor> items = require_sequence(s, "input 0 (input_sequence)");
    const Tensor& t = require_dense(ctx.input(1), "input 1 (tensor)");
    if (t.dtype() != s.element_type())
      fail("input 1 (tensor) is " + t.description() + " but the sequence holds " + type_name(s.element_type()));
    const size_t at = ctx.optional_input(2) ? position_in(*ctx.optional_input(2), items.size(), true) : items.size();
    items.insert(items.begin() + static_cast<std::ptrdiff_t>(at), t);
    ctx.outputs[0] = Tensor::sequence_of(s.element_type(), std::move(items));
  });
}

std::unique_ptr<Kernel> make_sequence_erase(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const Tensor& s = ctx.input(0);
    std::vector<Tensor> items = require_sequence(s, "input 0 (input_sequence)");
    if (items.empty()) fail("cannot erase from an empty sequence");
    const size_t at = ctx.optional_input(1) ? position_in(*ctx.optional_input(1), items.size(), false) : items.size() - 1;
    items.erase(items.begin() + static_cast<std::ptrdiff_t>(at));
    ctx.outputs[0] = Tensor::sequence_of(s.element_type(), std::move(items));
  });
}

std::unique_ptr<Kernel> make_sequence_length(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const auto& seq = require_sequence(ctx.input(0), "input 0 (input_sequence)");
    ctx.outputs[0] = Tensor::scalar<int64_t>(static_cast<int64_t>(seq.size()));
  });
}

// Copies `count` slices starting at `start` along the axis of a tensor
// viewed as [outer, dim, inner] into `out` (viewed as [outer, count, inner]).
void copy_axis_range(const Tensor& in, int64_t outer, int64_t dim, int64_t inner, int64_t start, int64_t count,
                     Tensor& out, int64_t out_dim, int64_t out_start) {
  const size_t es = element_size(in.dtype());
  const size_t chunk = static_cast<size_t>(count * inner) * es;
  const char* src = static_cast<const char*>(in.raw());
  char* dst = static_cast<char*>(out.raw_mutable());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + static_cast<size_t>((o * out_dim + out_start) * inner) * es,
                src + static_cast<size_t>((o * dim + start) * inner) * es, chunk);
}

std::unique_ptr<Kernel> make_split_to_sequence(const Node& node) {
  const int64_t axis_attr = node.attr_int("axis", 0);
  const int64_t keepdims = node.attr_int("keepdims", 1);
  if (keepdims != 0 && keepdims != 1) fail("attribute 'keepdims' must be 0 or 1, got " + std::to_string(keepdims));
  return make_kernel([axis_attr, keepdims](KernelContext& ctx) {
    const Tensor& x = require_dense(ctx.input(0), "input 0 (input)");
    if (x.rank() == 0) fail("input 0 (input) must have rank >= 1, got " + x.description());
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, static_cast<int64_t>(x.rank())));
    const int64_t dim = x.dim(axis);
    std::vector<int64_t> lengths;
    bool squeeze = false;
    if (const Tensor* split = ctx.optional_input(1)) {
      require_dense(*split, "input 1 (split)");
      const std::vector<int64_t> v = to_int64s(*split);
      if (split->rank() == 0) {
        if (v[0] <= 0) fail("input 1 (split) must be positive, got " + std::to_string(v[0]));
        for (int64_t at = 0; at < dim; at += v[0]) lengths.push_back(std::min(v[0], dim - at));
      } else {
        if (split->rank() != 1) fail("input 1 (split) must be a scalar or 1-D, got " + split->description());
        int64_t total = 0;
        for (int64_t l : v) {
          if (l < 0) fail("input 1 (split) has a negative length " + std::to_string(l));
          total += l;
        }
        if (total != dim)
          fail("input 1 (split) sums to " + std::to_string(total) + ", but axis " + std::to_string(axis) +
               " has " + std::to_string(dim));
        lengths = v;
      }
    } else {
      lengths.assign(static_cast<size_t>(dim), 1);
      squeeze = keepdims == 0;
    }
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (size_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
    std::vector<Tensor> items;
    int64_t start = 0;
    for (int64_t len : lengths) {
      Shape shape = x.shape();
      shape[axis] = len;
      Tensor piece(x.dtype(), shape);
      copy_axis_range(x, outer, dim, inner, start, len, piece, len, 0);
      if (squeeze) shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
      items.push_back(squeeze ? piece.reshaped(shape) : piece);
      start += len;
    }
    ctx.outputs[0] = Tensor::sequence_of(x.dtype(), std::move(items));
  });
}

std::unique_ptr<Kernel> make_concat_from_sequence(const Node& node) {
  if (!node.has_attr("axis")) fail("attribute 'axis' is required");
  const int64_t axis_attr = node.attr_int("axis", 0);
  const int64_t new_axis = node.attr_int("new_axis", 0);
  if (new_axis != 0 && new_axis != 1) fail("attribute 'new_axis' must be 0 or 1, got " + std::to_string(new_axis));
  return make_kernel([axis_attr, new_axis](KernelContext& ctx) {
    const auto& seq = require_sequence(ctx.input(0), "input 0 (input_sequence)");
    if (seq.empty()) fail("input 0 (input_sequence) is empty; there is nothing to concatenate");
    const Tensor& first = seq.front();
    const int64_t rank = static_cast<int64_t>(first.rank());
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr, rank + new_axis));
    if (!new_axis && rank == 0) fail("cannot concatenate scalars without new_axis");
    // With new_axis each item is viewed as having a dim of 1 inserted at `axis`.
    auto item_shape = [&](const Tensor& t) {
      Shape s = t.shape();
      if (new_axis) s.insert(s.begin() + static_cast<std::ptrdiff_t>(axis), 1);
      return s;
    };
    Shape out_shape = item_shape(first);
    out_shape[axis] = 0;
    for (size_t i = 0; i < seq.size(); ++i) {
      const Shape s = item_shape(seq[i]);
      bool ok = s.size() == out_shape.size();
      for (size_t d = 0; ok && d < s.size(); ++d) ok = d == axis || s[d] == out_shape[d];
      if (!ok)
        fail("sequence item " + std::to_string(i) + " is " + seq[i].description() + ", which does not match item 0 (" +
             first.description() + ") outside axis " + std::to_string(axis));
      out_shape[axis] += s[axis];
    }
    Tensor out(first.dtype(), out_shape);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= out_shape[d];
    for (size_t d = axis + 1; d < out_shape.size(); ++d) inner *= out_shape[d];
    int64_t at = 0;
    for (const Tensor& t : seq) {
      const int64_t len = item_shape(t)[axis];
      copy_axis_range(t, outer, len, inner, 0, len, out, out_shape[axis], at);
      at += len;
    }
    ctx.outputs[0] = std::move(out);
  });
}

// SequenceMap: the body runs once per item of input 0; further inputs that
// are sequences (of the same length) give their item too, tensors are
// passed whole. Each body output is gathered into an output sequence.
std::unique_ptr<Kernel> make_sequence_map(const Node& node) {
  const Graph* body = node.attr_graph("body");
  if (!body) fail("attribute 'body' (a graph) is required");
  if (body->inputs.size() != node.inputs.size())
    fail("subgraph '" + body->name + "' has " + std::to_string(body->inputs.size()) + " inputs, expected " +
         std::to_string(node.inputs.size()) + " (one per input of the node)");
  if (body->outputs.size() != node.outputs.size())
    fail("subgraph '" + body->name + "' has " + std::to_string(body->outputs.size()) + " outputs, expected " +
         std::to_string(node.outputs.size()) + " (one per output of the node)");
  return make_kernel([body](KernelContext& ctx) {
    if (!ctx.subgraphs) fail("no subgraph runner was given to the kernel");
    const size_t n = require_sequence(ctx.input(0), "input 0 (input_sequence)").size();
    for (size_t i = 1; i < ctx.num_inputs(); ++i)
      if (ctx.input(i).is_sequence() && ctx.input(i).sequence().size() != n)
        fail("input " + std::to_string(i) + " is a sequence of " + std::to_string(ctx.input(i).sequence().size()) +
             " items; input 0 has " + std::to_string(n));
    std::vector<std::vector<Tensor>> outs(ctx.outputs.size());
    for (size_t k = 0; k < n; ++k) {
      std::vector<Tensor> in;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        const Tensor& x = ctx.input(i);
        in.push_back(x.is_sequence() ? x.sequence()[k] : x);
      }
      std::vector<Tensor> out = ctx.subgraphs->run(*body, std::move(in));
      for (size_t o = 0; o < out.size(); ++o) outs[o].push_back(require_dense(out[o], "each body output"));
    }
    for (size_t o = 0; o < outs.size(); ++o) {
      const DataType type = outs[o].empty() ? body->outputs[o].type : outs[o].front().dtype();
      ctx.outputs[o] = Tensor::sequence_of(type, std::move(outs[o]));  // `type` read before the move
    }
  });
}

std::unique_ptr<Kernel> make_optional(const Node& node) {
  Tensor none;
  if (const Attribute* a = node.attr("type")) {
    if (a->kind != Attribute::Kind::TypeProto)
      fail("attribute 'type' must be a tensor or sequence-of-tensor type of a supported element type");
    none = a->t;
  }
  if (node.num_present_inputs() == 0 && none.empty())
    fail("attribute 'type' is required when the input is omitted");
  return make_kernel([none](KernelContext& ctx) {
    const Tensor* x = ctx.optional_input(0);
    ctx.outputs[0] = x ? *x : none;
  });
}

std::unique_ptr<Kernel> make_optional_has_element(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const Tensor* x = ctx.optional_input(0);
    ctx.outputs[0] = Tensor::scalar<bool>(x && !x->is_none());
  });
}

std::unique_ptr<Kernel> make_optional_get_element(const Node&) {
  return make_kernel([](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.is_none()) fail("input 0 is an empty optional (" + x.description() + ")");
    ctx.outputs[0] = x;
  });
}

}  // namespace

void register_sequence(std::vector<KernelDef>& t) {
  t.push_back({"SequenceConstruct", 11, 17, make_sequence_construct});
  t.push_back({"SequenceEmpty", 11, 17, make_sequence_empty});
  t.push_back({"SequenceAt", 11, 17, make_sequence_at});
  t.push_back({"SequenceInsert", 11, 17, make_sequence_insert});
  t.push_back({"SequenceErase", 11, 17, make_sequence_erase});
  t.push_back({"SequenceLength", 11, 17, make_sequence_length});
  t.push_back({"SplitToSequence", 11, 17, make_split_to_sequence});
  t.push_back({"ConcatFromSequence", 11, 17, make_concat_from_sequence});
  t.push_back({"SequenceMap", 17, 17, make_sequence_map});
  t.push_back({"Optional", 15, 17, make_optional});
  t.push_back({"OptionalHasElement", 15, 17, make_optional_has_element});
  t.push_back({"OptionalGetElement", 15, 17, make_optional_get_element});
}

}  // namespace epprof::rt::kernels
