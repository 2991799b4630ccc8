// Control flow: If, Loop and Scan. Their GRAPH attributes run through
// KernelContext::subgraphs (the executor runs the subgraph's nodes with the
// run's observers); the factories check each subgraph's input and output
// counts against the node, so a mismatch fails at session creation.
#include <cstring>

#include "kernels/common.h"

namespace epprof::rt::kernels {

namespace {

const Graph& require_graph(const Node& node, const char* attr) {
  const Graph* g = node.attr_graph(attr);
  if (!g) fail("attribute '" + std::string(attr) + "' (a graph) is required");
  return *g;
}

void check_count(const Graph& g, const char* what, size_t got, size_t expected, const std::string& why) {
  if (got != expected)
    fail("subgraph '" + g.name + "' has " + std::to_string(got) + " " + what + ", expected " +
         std::to_string(expected) + " (" + why + ")");
}

const SubgraphRunner& runner(const KernelContext& ctx) {
  if (!ctx.subgraphs) fail("no subgraph runner was given to the kernel");
  return *ctx.subgraphs;
}

bool scalar_bool(const Tensor& t, const char* what) {
  if (!t.is_dense() || t.dtype() != DataType::Bool || t.size() != 1)
    fail(std::string(what) + " must be a bool tensor of one element, got " + t.description());
  return t.data<bool>()[0];
}

// Slice `index` of `t` along `axis`, without that axis.
Tensor slice_along(const Tensor& t, size_t axis, int64_t index) {
  Shape shape = t.shape();
  const int64_t n = shape[axis];
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  Tensor out(t.dtype(), shape);
  const size_t es = element_size(t.dtype());
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= t.dim(d);
  for (size_t d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  const size_t chunk = static_cast<size_t>(inner) * es;
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.raw_mutable());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + static_cast<size_t>(o) * chunk, src + static_cast<size_t>(o * n + index) * chunk, chunk);
  return out;
}

// Stacks same-shaped tensors (at least one) along a new axis `axis` (in
// [0, rank]); the item order is reversed when `reverse`.
Tensor stack_along(const std::vector<Tensor>& items, size_t axis, bool reverse, const char* what) {
  if (items.empty()) fail(std::string(what) + ": nothing to stack");
  const Tensor& first = items.front();
  for (const Tensor& t : items)
    if (!t.is_dense() || t.dtype() != first.dtype() || t.shape() != first.shape())
      fail(std::string(what) + ": iterations produced " + first.description() + " and " + t.description() +
           "; every iteration must produce the same type and shape");
  if (axis > first.rank())
    fail(std::string(what) + ": axis " + std::to_string(axis) + " is out of range for rank " +
         std::to_string(first.rank() + 1));
  Shape shape = first.shape();
  const int64_t n = static_cast<int64_t>(items.size());
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), n);
  Tensor out(first.dtype(), shape);
  const size_t es = element_size(first.dtype());
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= first.dim(d);
  for (size_t d = axis; d < first.rank(); ++d) inner *= first.dim(d);
  const size_t chunk = static_cast<size_t>(inner) * es;
  char* dst = static_cast<char*>(out.raw_mutable());
  for (int64_t i = 0; i < n; ++i) {
    const char* src = static_cast<const char*>(items[static_cast<size_t>(reverse ? n - 1 - i : i)].raw());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + static_cast<size_t>(o * n + i) * chunk, src + static_cast<size_t>(o) * chunk, chunk);
  }
  return out;
}

// A scan output of zero iterations: [0] followed by the declared shape's dims when known.
Tensor empty_scan_output(const IoInfo& info, const char* what) {
  if (info.type == DataType::Undefined || info.kind != ValueKind::Tensor)
    fail(std::string(what) + ": zero iterations and subgraph output '" + info.name + "' has no declared tensor type");
  Shape shape{0};
  if (info.has_shape)
    for (int64_t d : info.shape) shape.push_back(d < 0 ? 0 : d);
  return Tensor(info.type, shape);
}

// ---- If ---------------------------------------------------------------------

std::unique_ptr<Kernel> make_if(const Node& node) {
  const Graph& then_g = require_graph(node, "then_branch");
  const Graph& else_g = require_graph(node, "else_branch");
  for (const Graph* g : {&then_g, &else_g}) {
    check_count(*g, "inputs", g->inputs.size(), 0, "If branches take no inputs");
    check_count(*g, "outputs", g->outputs.size(), node.outputs.size(), "one per output of the If node");
  }
  return make_kernel([&then_g, &else_g](KernelContext& ctx) {
    const bool cond = scalar_bool(ctx.input(0), "input 0 (cond)");
    std::vector<Tensor> out = runner(ctx).run(cond ? then_g : else_g, {});
    for (size_t i = 0; i < ctx.outputs.size(); ++i) ctx.outputs[i] = std::move(out[i]);
  });
}

// ---- Loop -------------------------------------------------------------------

std::unique_ptr<Kernel> make_loop(const Node& node) {
  const Graph& body = require_graph(node, "body");
  if (node.inputs.size() < 2) fail("Loop takes at least 2 inputs (M, cond), got " + std::to_string(node.inputs.size()));
  const size_t n_carried = node.inputs.size() - 2;
  if (node.outputs.size() < n_carried)
    fail("Loop has " + std::to_string(n_carried) + " loop-carried inputs but only " +
         std::to_string(node.outputs.size()) + " outputs");
  const size_t n_scan = node.outputs.size() - n_carried;
  check_count(body, "inputs", body.inputs.size(), 2 + n_carried, "iteration number, condition, loop-carried values");
  check_count(body, "outputs", body.outputs.size(), 1 + n_carried + n_scan,
              "condition, loop-carried values, scan outputs");
  return make_kernel([&body, n_carried, n_scan](KernelContext& ctx) {
    int64_t max_trips = -1;  // none
    if (const Tensor* m = ctx.optional_input(0)) {
      if (!m->is_dense() || m->dtype() != DataType::Int64 || m->size() != 1)
        fail("input 0 (M) must be an int64 tensor of one element, got " + m->description());
      max_trips = std::max<int64_t>(0, m->data<int64_t>()[0]);
    }
    bool cond = true;
    if (const Tensor* c = ctx.optional_input(1)) cond = scalar_bool(*c, "input 1 (cond)");
    std::vector<Tensor> carried(n_carried);
    for (size_t i = 0; i < n_carried; ++i) carried[i] = ctx.input(2 + i);
    std::vector<std::vector<Tensor>> scans(n_scan);
    const SubgraphRunner& run = runner(ctx);
    for (int64_t iter = 0; cond && (max_trips < 0 || iter < max_trips); ++iter) {
      std::vector<Tensor> in;
      in.reserve(2 + n_carried);
      in.push_back(Tensor::scalar<int64_t>(iter));
      in.push_back(Tensor::scalar<bool>(cond));
      for (Tensor& t : carried) in.push_back(std::move(t));
      std::vector<Tensor> out = run.run(body, std::move(in));
      cond = scalar_bool(out[0], "the body's condition output");
      for (size_t i = 0; i < n_carried; ++i) carried[i] = std::move(out[1 + i]);
      for (size_t k = 0; k < n_scan; ++k) scans[k].push_back(std::move(out[1 + n_carried + k]));
    }
    for (size_t i = 0; i < n_carried; ++i) ctx.outputs[i] = std::move(carried[i]);
    for (size_t k = 0; k < n_scan; ++k)
      ctx.outputs[n_carried + k] = scans[k].empty()
                                       ? empty_scan_output(body.outputs[1 + n_carried + k], "Loop scan output")
                                       : stack_along(scans[k], 0, false, "Loop scan output");
  });
}

// ---- Scan -------------------------------------------------------------------

struct ScanSpec {
  const Graph* body;
  size_t n_state, n_in, n_out;
  std::vector<int64_t> in_axes, in_reverse, out_axes, out_reverse;
};

std::vector<int64_t> attr_ints_of_size(const Node& node, const char* key, size_t n, int64_t fallback) {
  std::vector<int64_t> v = node.attr_ints(key, std::vector<int64_t>(n, fallback));
  if (v.size() != n)
    fail("attribute '" + std::string(key) + "' has " + std::to_string(v.size()) + " values, expected " +
         std::to_string(n));
  return v;
}

// Runs the scan for one batch entry: `states` in, final states out; each
// scan input sliced along its axis; per-iteration scan outputs collected.
void scan_once(const ScanSpec& s, const SubgraphRunner& run, std::vector<Tensor>& states,
               const std::vector<const Tensor*>& inputs, int64_t length, std::vector<std::vector<Tensor>>& outs) {
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> in;
    in.reserve(s.n_state + s.n_in);
    for (Tensor& st : states) in.push_back(std::move(st));
    for (size_t j = 0; j < s.n_in; ++j)
      in.push_back(slice_along(*inputs[j], static_cast<size_t>(s.in_axes[j]), s.in_reverse[j] ? length - 1 - t : t));
    std::vector<Tensor> out = run.run(*s.body, std::move(in));
    for (size_t i = 0; i < s.n_state; ++i) states[i] = std::move(out[i]);
    for (size_t k = 0; k < s.n_out; ++k) outs[k].push_back(std::move(out[s.n_state + k]));
  }
}

Tensor finish_scan_output(const ScanSpec& s, std::vector<Tensor>& items, size_t k) {
  if (items.empty()) return empty_scan_output(s.body->outputs[s.n_state + k], "Scan output");
  const int64_t rank = static_cast<int64_t>(items.front().rank()) + 1;
  const int64_t axis = normalize_axis(s.out_axes[k], rank);
  return stack_along(items, static_cast<size_t>(axis), s.out_reverse[k] != 0, "Scan output");
}

ScanSpec scan_spec(const Node& node, size_t first_input) {
  ScanSpec s;
  s.body = &require_graph(node, "body");
  const int64_t m = node.attr_int("num_scan_inputs", -1);
  const size_t given = node.inputs.size() - first_input;
  if (m < 1 || static_cast<size_t>(m) > given)
    fail("attribute 'num_scan_inputs' is " + std::to_string(m) + "; expected 1 to " + std::to_string(given) +
         " (the node's state and scan inputs)");
  s.n_in = static_cast<size_t>(m);
  s.n_state = given - s.n_in;
  if (node.outputs.size() < s.n_state)
    fail("Scan has " + std::to_string(s.n_state) + " state inputs but " + std::to_string(node.outputs.size()) +
         " outputs");
  s.n_out = node.outputs.size() - s.n_state;
  check_count(*s.body, "inputs", s.body->inputs.size(), s.n_state + s.n_in, "state values, then one per scan input");
  check_count(*s.body, "outputs", s.body->outputs.size(), s.n_state + s.n_out,
              "state values, then one per scan output");
  return s;
}

std::unique_ptr<Kernel> make_scan9(const Node& node) {
  ScanSpec s = scan_spec(node, 0);
  s.in_axes = attr_ints_of_size(node, "scan_input_axes", s.n_in, 0);
  s.in_reverse = attr_ints_of_size(node, "scan_input_directions", s.n_in, 0);
  s.out_axes = attr_ints_of_size(node, "scan_output_axes", s.n_out, 0);
  s.out_reverse = attr_ints_of_size(node, "scan_output_directions", s.n_out, 0);
  return make_kernel([s](KernelContext& ctx) {
    ScanSpec spec = s;  // axes normalised per call (they depend on the inputs' ranks)
    std::vector<Tensor> states(spec.n_state);
    for (size_t i = 0; i < spec.n_state; ++i) states[i] = ctx.input(i);
    std::vector<const Tensor*> inputs(spec.n_in);
    int64_t length = -1;
    for (size_t j = 0; j < spec.n_in; ++j) {
      const Tensor& x = ctx.input(spec.n_state + j);
      if (!x.is_dense() || x.rank() == 0)
        fail("scan input " + std::to_string(j) + " must be a tensor of rank >= 1, got " + x.description());
      spec.in_axes[j] = normalize_axis(spec.in_axes[j], static_cast<int64_t>(x.rank()));
      const int64_t len = x.dim(static_cast<size_t>(spec.in_axes[j]));
      if (length >= 0 && len != length)
        fail("scan inputs have different lengths along their scan axes: " + std::to_string(length) + " and " +
             std::to_string(len));
      length = len;
      inputs[j] = &x;
    }
    std::vector<std::vector<Tensor>> outs(spec.n_out);
    scan_once(spec, runner(ctx), states, inputs, length, outs);
    for (size_t i = 0; i < spec.n_state; ++i) ctx.outputs[i] = std::move(states[i]);
    for (size_t k = 0; k < spec.n_out; ++k) ctx.outputs[spec.n_state + k] = finish_scan_output(spec, outs[k], k);
  });
}

// Opset 8: input 0 is the optional sequence_lens; every state and scan
// input has a leading batch axis (scan inputs then their sequence axis), and
// so do the outputs. Iterations past a batch entry's length leave zeros.
std::unique_ptr<Kernel> make_scan8(const Node& node) {
  if (node.inputs.empty()) fail("Scan takes sequence_lens, then state and scan inputs");
  ScanSpec s = scan_spec(node, 1);
  s.in_axes.assign(s.n_in, 0);
  s.in_reverse = attr_ints_of_size(node, "directions", s.n_in, 0);
  s.out_axes.assign(s.n_out, 0);
  s.out_reverse.assign(s.n_out, 0);
  return make_kernel([s](KernelContext& ctx) {
    const size_t first = 1;
    int64_t batch = -1, max_len = -1;
    for (size_t i = 0; i < s.n_state + s.n_in; ++i) {
      const Tensor& x = ctx.input(first + i);
      const size_t min_rank = i < s.n_state ? 1 : 2;
      if (!x.is_dense() || x.rank() < min_rank)
        fail("input " + std::to_string(first + i) + " must be a tensor of rank >= " + std::to_string(min_rank) +
             " (batch axis" + (min_rank == 2 ? ", sequence axis)" : ")") + ", got " + x.description());
      if (batch >= 0 && x.dim(0) != batch) fail("inputs have different batch sizes: " + std::to_string(batch) + " and " + std::to_string(x.dim(0)));
      batch = x.dim(0);
      if (i >= s.n_state) {
        if (max_len >= 0 && x.dim(1) != max_len)
          fail("scan inputs have different sequence lengths: " + std::to_string(max_len) + " and " + std::to_string(x.dim(1)));
        max_len = x.dim(1);
      }
    }
    std::vector<int64_t> lens(static_cast<size_t>(batch), max_len);
    if (const Tensor* sl = ctx.optional_input(0)) {
      lens = to_int64s(*sl);
      if (static_cast<int64_t>(lens.size()) != batch)
        fail("sequence_lens has " + std::to_string(lens.size()) + " values for a batch of " + std::to_string(batch));
      for (int64_t l : lens)
        if (l < 0 || l > max_len)
          fail("sequence_lens value " + std::to_string(l) + " is outside [0, " + std::to_string(max_len) + "]");
    }
    const SubgraphRunner& run = runner(ctx);
    std::vector<std::vector<Tensor>> states_out(s.n_state), outs_per_batch(s.n_out);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> states(s.n_state);
      for (size_t i = 0; i < s.n_state; ++i) states[i] = slice_along(ctx.input(first + i), 0, b);
      std::vector<Tensor> seqs(s.n_in);
      std::vector<const Tensor*> inputs(s.n_in);
      for (size_t j = 0; j < s.n_in; ++j) {
        seqs[j] = slice_along(ctx.input(first + s.n_state + j), 0, b);
        inputs[j] = &seqs[j];
      }
      // Slicing a batch entry's sequence to its length keeps reversal within it.
      std::vector<Tensor> trimmed(s.n_in);
      const int64_t len = lens[static_cast<size_t>(b)];
      if (len != max_len)
        for (size_t j = 0; j < s.n_in; ++j) {
          std::vector<Tensor> steps;
          for (int64_t t = 0; t < len; ++t) steps.push_back(slice_along(seqs[j], 0, t));
          trimmed[j] = steps.empty() ? Tensor() : stack_along(steps, 0, false, "Scan input");
          inputs[j] = &trimmed[j];
        }
      std::vector<std::vector<Tensor>> outs(s.n_out);
      scan_once(s, run, states, inputs, len, outs);
      for (size_t i = 0; i < s.n_state; ++i) states_out[i].push_back(std::move(states[i]));
      for (size_t k = 0; k < s.n_out; ++k) {
        if (outs[k].empty()) fail("Scan output " + std::to_string(k) + ": batch entry " + std::to_string(b) + " has no iterations");
        // Pad to max_len with zeros of the iteration's shape.
        while (static_cast<int64_t>(outs[k].size()) < max_len)
          outs[k].push_back(Tensor(outs[k].front().dtype(), outs[k].front().shape()));
        outs_per_batch[k].push_back(stack_along(outs[k], 0, false, "Scan output"));
      }
    }
    for (size_t i = 0; i < s.n_state; ++i)
      ctx.outputs[i] = stack_along(states_out[i], 0, false, "Scan state output");
    for (size_t k = 0; k < s.n_out; ++k)
      ctx.outputs[s.n_state + k] = stack_along(outs_per_batch[k], 0, false, "Scan output");
  });
}

}  // namespace

void register_control_flow(std::vector<KernelDef>& t) {
  t.push_back({"If", 1, 17, make_if});
  t.push_back({"Loop", 1, 17, make_loop});
  t.push_back({"Scan", 8, 8, make_scan8});
  t.push_back({"Scan", 9, 17, make_scan9});
}

}  // namespace epprof::rt::kernels
