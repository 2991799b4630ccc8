// Einsum (opsets 12..17) and Det (11..17).
//
// Einsum runs one loop nest over every label of the equation: output labels
// outside, summed labels inside. Each operand sees a label through one stride,
// the sum of the strides of its dims with that label, so a repeated label
// (a diagonal, "ii->i") needs no special case, and a broadcast ellipsis dim of
// size 1 has stride 0.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/reduce_util.h"

namespace epprof::rt::kernels {

namespace {

constexpr int kLetters = 52;  // a-z, A-Z; ellipsis dims get labels from kLetters on

int letter_label(char c) { return std::islower(static_cast<unsigned char>(c)) ? c - 'a' : 26 + (c - 'A'); }
std::string label_letter(int l) { return std::string(1, static_cast<char>(l < 26 ? 'a' + l : 'A' + (l - 26))); }

// One side of a term: its letters' labels, and where "..." stands (-1: none).
struct Term {
  std::vector<int> letters;
  int ellipsis_at = -1;
};

Term parse_term(const std::string& eq, const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (std::isalpha(static_cast<unsigned char>(s[i]))) {
      t.letters.push_back(letter_label(s[i]));
    } else if (s.compare(i, 3, "...") == 0 && t.ellipsis_at < 0) {
      t.ellipsis_at = static_cast<int>(t.letters.size());
      i += 2;
    } else {
      fail("Einsum equation '" + eq + "': unexpected '" + s.substr(i, 1) + "' in term '" + s + "'");
    }
  }
  return t;
}

struct Equation {
  std::vector<Term> inputs;
  Term output;
  bool explicit_output = false;
};

Equation parse_equation(const std::string& raw) {
  std::string eq;
  for (char c : raw)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  Equation e;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    e.inputs.push_back(parse_term(raw, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    e.explicit_output = true;
    e.output = parse_term(raw, eq.substr(arrow + 2));
  }
  return e;
}

template <typename T>
void einsum_compute(const std::vector<const Tensor*>& ops, const std::vector<std::vector<int64_t>>& strides,
                    const std::vector<int64_t>& sizes, const std::vector<int64_t>& out_strides, Tensor& out) {
  using A = acc_t<T>;
  const size_t L = sizes.size(), K = ops.size();
  std::vector<A> acc(static_cast<size_t>(out.size()), A(0));
  int64_t total = 1;
  for (int64_t s : sizes) total *= s;
  if (total > 0) {
    std::vector<const T*> data(K);
    for (size_t k = 0; k < K; ++k) data[k] = ops[k]->data<T>();
    // The last label is the innermost loop; the others advance as an odometer.
    std::vector<int64_t> idx(L, 0), off(K, 0), step(K, 0);
    for (size_t k = 0; k < K; ++k) step[k] = L ? strides[k][L - 1] : 0;
    int64_t out_off = 0;
    const int64_t inner = L ? sizes[L - 1] : 1, out_step = L ? out_strides[L - 1] : 0;
    for (int64_t base = 0; base < total; base += inner) {
      for (int64_t j = 0; j < inner; ++j) {
        A p = A(1);
        for (size_t k = 0; k < K; ++k) p = acc_mul(p, static_cast<A>(data[k][off[k] + j * step[k]]));
        A& a = acc[static_cast<size_t>(out_off + j * out_step)];
        a = acc_add(a, p);
      }
      for (size_t d = L > 0 ? L - 1 : 0; d-- > 0;) {
        for (size_t k = 0; k < K; ++k) off[k] += strides[k][d];
        out_off += out_strides[d];
        if (++idx[d] < sizes[d]) break;
        for (size_t k = 0; k < K; ++k) off[k] -= strides[k][d] * sizes[d];
        out_off -= out_strides[d] * sizes[d];
        idx[d] = 0;
      }
    }
  }
  T* o = out.mutable_data<T>();
  for (size_t i = 0; i < acc.size(); ++i) o[i] = static_cast<T>(acc[i]);
}

std::unique_ptr<Kernel> make_einsum(const Node& node) {
  const std::string raw = node.attr_string("equation", "");
  if (raw.empty()) fail(node.describe() + ": attribute 'equation' is required");
  const Equation eq = parse_equation(raw);
  if (eq.inputs.size() != node.inputs.size())
    fail(node.describe() + ": equation '" + raw + "' has " + std::to_string(eq.inputs.size()) + " terms for " +
         std::to_string(node.inputs.size()) + " inputs");
  return make_kernel([=](KernelContext& ctx) {
    const size_t K = eq.inputs.size();
    std::vector<const Tensor*> ops(K);
    // Ellipsis dims of each operand, and the widest ellipsis (they align right, as in numpy).
    std::vector<int64_t> ell(K, 0);
    int64_t ell_rank = 0;
    for (size_t k = 0; k < K; ++k) {
      ops[k] = &ctx.input(k);
      if (ops[k]->dtype() != ops[0]->dtype())
        fail("Einsum '" + raw + "': input types differ: " + ops[0]->description() + " and " + ops[k]->description());
      const int64_t r = static_cast<int64_t>(ops[k]->rank()), n = static_cast<int64_t>(eq.inputs[k].letters.size());
      if (eq.inputs[k].ellipsis_at < 0 ? r != n : r < n)
        fail("Einsum '" + raw + "': term " + std::to_string(k) + " does not match input " + ops[k]->description());
      ell[k] = r - n;
      ell_rank = std::max(ell_rank, ell[k]);
    }
    // Size of each label (-1: not used), ellipsis dims broadcasting, letters exact.
    std::vector<int64_t> size(static_cast<size_t>(kLetters + ell_rank), -1);
    std::vector<int> count(size.size(), 0);
    std::vector<std::vector<int>> dim_labels(K);
    for (size_t k = 0; k < K; ++k) {
      const Term& t = eq.inputs[k];
      for (size_t i = 0; i < t.letters.size(); ++i) {
        if (static_cast<int>(i) == t.ellipsis_at)
          for (int64_t e = 0; e < ell[k]; ++e) dim_labels[k].push_back(static_cast<int>(kLetters + ell_rank - ell[k] + e));
        dim_labels[k].push_back(t.letters[i]);
      }
      if (t.ellipsis_at == static_cast<int>(t.letters.size()))
        for (int64_t e = 0; e < ell[k]; ++e) dim_labels[k].push_back(static_cast<int>(kLetters + ell_rank - ell[k] + e));
      for (size_t d = 0; d < dim_labels[k].size(); ++d) {
        const size_t l = static_cast<size_t>(dim_labels[k][d]);
        const int64_t v = ops[k]->dim(d);
        ++count[l];
        if (size[l] < 0 || (l >= kLetters && size[l] == 1)) size[l] = v;
        else if (size[l] != v && !(l >= kLetters && v == 1))
          fail("Einsum '" + raw + "': dimension " + std::to_string(d) + " of input " + std::to_string(k) + " is " +
               std::to_string(v) + ", but its label has size " + std::to_string(size[l]));
      }
    }
    // Output labels: explicit, or the ellipsis then the letters used once, in ASCII order.
    std::vector<int> out_labels;
    if (eq.explicit_output) {
      const Term& t = eq.output;
      for (size_t i = 0; i <= t.letters.size(); ++i) {
        if (static_cast<int>(i) == t.ellipsis_at)
          for (int64_t e = 0; e < ell_rank; ++e) out_labels.push_back(static_cast<int>(kLetters + e));
        if (i == t.letters.size()) break;
        const int l = t.letters[i];
        if (count[static_cast<size_t>(l)] == 0)
          fail("Einsum '" + raw + "': output label '" + label_letter(l) + "' does not appear in the inputs");
        if (std::find(out_labels.begin(), out_labels.end(), l) != out_labels.end())
          fail("Einsum '" + raw + "': output label '" + label_letter(l) + "' is repeated");
        out_labels.push_back(l);
      }
    } else {
      for (int64_t e = 0; e < ell_rank; ++e) out_labels.push_back(static_cast<int>(kLetters + e));
      for (int l = 26; l < kLetters; ++l)  // 'A'..'Z' sort before 'a'..'z'
        if (count[static_cast<size_t>(l)] == 1) out_labels.push_back(l);
      for (int l = 0; l < 26; ++l)
        if (count[static_cast<size_t>(l)] == 1) out_labels.push_back(l);
    }
    // Loop order: output labels, then the summed ones.
    std::vector<int> loop = out_labels;
    for (size_t l = 0; l < size.size(); ++l)
      if (count[l] > 0 && std::find(out_labels.begin(), out_labels.end(), static_cast<int>(l)) == out_labels.end())
        loop.push_back(static_cast<int>(l));
    const size_t L = loop.size();
    std::vector<int64_t> sizes(L), out_strides(L, 0);
    Shape out_shape;
    for (size_t i = 0; i < L; ++i) sizes[i] = size[static_cast<size_t>(loop[i])];
    for (size_t i = 0; i < out_labels.size(); ++i) out_shape.push_back(sizes[i]);
    for (size_t i = out_labels.size(), s = 1; i-- > 0;) {
      out_strides[i] = static_cast<int64_t>(s);
      s *= static_cast<size_t>(sizes[i]);
    }
    std::vector<std::vector<int64_t>> strides(K, std::vector<int64_t>(L, 0));
    for (size_t k = 0; k < K; ++k) {
      int64_t s = 1;
      for (size_t d = dim_labels[k].size(); d-- > 0;) {
        const int l = dim_labels[k][d];
        const size_t pos = static_cast<size_t>(std::find(loop.begin(), loop.end(), l) - loop.begin());
        if (ops[k]->dim(d) != 1) strides[k][pos] += s;  // size-1 ellipsis dims broadcast
        s *= ops[k]->dim(d);
      }
    }
    Tensor out(ops[0]->dtype(), out_shape);
    dispatch_numeric(ops[0]->dtype(), [&](auto tag) {
      einsum_compute<decltype(tag)>(ops, strides, sizes, out_strides, out);
    });
    ctx.outputs[0] = std::move(out);
  });
}

// Determinant of each trailing [M, M] matrix, by LU decomposition with
// partial pivoting (in double).
std::unique_ptr<Kernel> make_det(const Node& node) {
  const std::string what = node.describe();
  return make_kernel([what](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    const size_t r = x.rank();
    if (r < 2 || x.dim(r - 1) != x.dim(r - 2))
      fail(what + ": input must be a batch of square matrices [..., M, M], got " + x.description());
    if (x.dtype() != DataType::Float && x.dtype() != DataType::Double)
      fail(what + ": input must be float or double, got " + x.description());
    const int64_t M = x.dim(r - 1);
    const Shape out_shape(x.shape().begin(), x.shape().end() - 2);
    Tensor out(x.dtype(), out_shape);
    std::vector<double> a(static_cast<size_t>(M * M));
    for (int64_t b = 0, B = shape_size(out_shape); b < B; ++b) {
      for (int64_t i = 0; i < M * M; ++i)
        a[static_cast<size_t>(i)] = x.dtype() == DataType::Float ? x.data<float>()[b * M * M + i]
                                                                 : x.data<double>()[b * M * M + i];
      double det = 1.0;
      for (int64_t c = 0; c < M && det != 0.0; ++c) {
        int64_t p = c;
        for (int64_t i = c + 1; i < M; ++i)
          if (std::abs(a[static_cast<size_t>(i * M + c)]) > std::abs(a[static_cast<size_t>(p * M + c)])) p = i;
        const double pivot = a[static_cast<size_t>(p * M + c)];
        if (pivot == 0.0) {
          det = 0.0;
          break;
        }
        if (p != c) {
          for (int64_t j = 0; j < M; ++j) std::swap(a[static_cast<size_t>(p * M + j)], a[static_cast<size_t>(c * M + j)]);
          det = -det;
        }
        det *= pivot;
        for (int64_t i = c + 1; i < M; ++i) {
          const double f = a[static_cast<size_t>(i * M + c)] / pivot;
          for (int64_t j = c + 1; j < M; ++j) a[static_cast<size_t>(i * M + j)] -= f * a[static_cast<size_t>(c * M + j)];
        }
      }
      if (x.dtype() == DataType::Float) out.mutable_data<float>()[b] = static_cast<float>(det);
      else out.mutable_data<double>()[b] = det;
    }
    ctx.outputs[0] = std::move(out);
  });
}

}  // namespace

void register_einsum(std::vector<KernelDef>& t) {
  t.push_back({"Einsum", 12, 17, make_einsum});
  t.push_back({"Det", 11, 17, make_det});
}

}  // namespace epprof::rt::kernels
