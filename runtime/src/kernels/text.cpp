// Text ops: TfIdfVectorizer over integer token ids. String tensors do not
// exist in this runtime, so pool_strings models are rejected at load.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/common.h"

namespace epprof::rt::kernels {

namespace {

// ---- TfIdfVectorizer ----------------------------------------------------------

// The pool's n-grams as a trie: node 0 is the root, an edge (parent, token)
// leads to a child, and a node that ends a pool n-gram names its position in
// the pool. Scanning one candidate n-gram is then one lookup per token, and a
// longer n-gram reuses the walk of its prefix.
class NgramTrie {
 public:
  static constexpr int64_t kNone = -1;

  int64_t child(int64_t node, int64_t token) const {
    auto it = edges_.find(Edge{node, token});
    return it == edges_.end() ? kNone : it->second;
  }
  int64_t ngram_at(int64_t node) const { return ngram_[static_cast<size_t>(node)]; }

  // Adds pool n-gram number `ngram` with tokens [first, first + n); false if
  // the pool already holds the same token sequence.
  bool insert(const int64_t* first, int64_t n, int64_t ngram) {
    int64_t node = 0;
    for (int64_t k = 0; k < n; ++k) {
      auto [it, added] = edges_.emplace(Edge{node, first[k]}, static_cast<int64_t>(ngram_.size()));
      if (added) ngram_.push_back(kNone);
      node = it->second;
    }
    int64_t& slot = ngram_[static_cast<size_t>(node)];
    if (slot != kNone) return false;
    slot = ngram;
    return true;
  }

 private:
  struct Edge {
    int64_t parent, token;
    bool operator==(const Edge& o) const { return parent == o.parent && token == o.token; }
  };
  struct EdgeHash {
    size_t operator()(const Edge& e) const {
      // splitmix64's finaliser over both words: token ids are often small and dense.
      uint64_t h = static_cast<uint64_t>(e.token) * 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(e.parent);
      h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
      h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
      return static_cast<size_t>(h ^ (h >> 31));
    }
  };
  std::unordered_map<Edge, int64_t, EdgeHash> edges_;
  std::vector<int64_t> ngram_{kNone};  // per node; the root ends no n-gram
};

enum class TfIdfMode { TF, IDF, TFIDF };

std::unique_ptr<Kernel> make_tfidf_vectorizer(const Node& node) {
  for (const char* required : {"mode", "min_gram_length", "max_gram_length", "max_skip_count", "ngram_counts",
                               "ngram_indexes"})
    if (!node.has_attr(required)) fail(std::string("attribute '") + required + "' is required");
  if (node.has_attr("pool_strings"))
    fail("attribute 'pool_strings' is not supported: this runtime has no string tensors (use pool_int64s)");
  if (!node.has_attr("pool_int64s")) fail("attribute 'pool_int64s' is required");

  const std::string mode_name = node.attr_string("mode", "");
  TfIdfMode mode;
  if (mode_name == "TF") mode = TfIdfMode::TF;
  else if (mode_name == "IDF") mode = TfIdfMode::IDF;
  else if (mode_name == "TFIDF") mode = TfIdfMode::TFIDF;
  else fail("attribute 'mode' must be 'TF', 'IDF' or 'TFIDF', got '" + mode_name + "'");

  const int64_t min_n = node.attr_int("min_gram_length", 0);
  const int64_t max_n_attr = node.attr_int("max_gram_length", 0);
  const int64_t max_skip = node.attr_int("max_skip_count", 0);
  if (min_n < 1 || max_n_attr < min_n)
    fail("attributes 'min_gram_length' (" + std::to_string(min_n) + ") and 'max_gram_length' (" +
         std::to_string(max_n_attr) + ") must satisfy 1 <= min_gram_length <= max_gram_length");
  if (max_skip < 0) fail("attribute 'max_skip_count' must be >= 0, got " + std::to_string(max_skip));

  const std::vector<int64_t> pool = node.attr_ints("pool_int64s");
  const std::vector<int64_t> starts = node.attr_ints("ngram_counts");
  const std::vector<int64_t> indexes = node.attr_ints("ngram_indexes");
  const int64_t pool_size = static_cast<int64_t>(pool.size());
  const int64_t levels = static_cast<int64_t>(starts.size());  // the pool holds 1-grams .. levels-grams
  if (starts.empty() || starts[0] != 0)
    fail("attribute 'ngram_counts' must start with 0 (where the 1-grams begin in the pool)");

  for (size_t i = 1; i < starts.size(); ++i)
    if (starts[i] < starts[i - 1] || starts[i] > pool_size)
      fail("attribute 'ngram_counts' must be non-decreasing and within the pool of " + std::to_string(pool_size) +
           " values, got " + std::to_string(starts[i]) + " at position " + std::to_string(i));

  // ngram_counts is CSR-like: level n (1-based) is pool[starts[n-1], starts[n]), n tokens per n-gram.
  NgramTrie trie;
  int64_t ngrams = 0;
  for (int64_t n = 1; n <= levels; ++n) {
    const int64_t begin = starts[static_cast<size_t>(n - 1)];
    const int64_t end = n < levels ? starts[static_cast<size_t>(n)] : pool_size;
    if ((end - begin) % n != 0)
      fail("attribute 'ngram_counts' gives the " + std::to_string(n) + "-grams " + std::to_string(end - begin) +
           " pool values, not a multiple of " + std::to_string(n));
    for (int64_t p = begin; p < end; p += n, ++ngrams)
      if (!trie.insert(&pool[static_cast<size_t>(p)], n, ngrams))
        fail("attribute 'pool_int64s' holds the same " + std::to_string(n) + "-gram twice (again at pool position " +
             std::to_string(p) + ")");
  }
  if (static_cast<int64_t>(indexes.size()) != ngrams)
    fail("attribute 'ngram_indexes' has " + std::to_string(indexes.size()) +
         " values; the pool holds " + std::to_string(ngrams) + " n-grams");
  if (indexes.empty()) fail("attribute 'ngram_indexes' is empty: the output would have no size");
  // The output row is dense, so bound its width to something allocatable.
  constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max() - 1;
  for (int64_t v : indexes)
    if (v < 0 || v > kMaxIndex)
      fail("attribute 'ngram_indexes' holds " + std::to_string(v) + ", expected a value in [0, " +
           std::to_string(kMaxIndex) + "]");
  const int64_t width = *std::max_element(indexes.begin(), indexes.end()) + 1;

  std::vector<float> weights = node.attr_floats("weights");
  if (weights.empty()) weights.assign(indexes.size(), 1.0f);
  else if (weights.size() != indexes.size())
    fail("attribute 'weights' has " + std::to_string(weights.size()) + " values; expected one per n-gram (" +
         std::to_string(indexes.size()) + ")");

  // Longer candidates can never be in the pool.
  const int64_t max_n = std::min(max_n_attr, levels);

  return make_kernel([=, trie = std::move(trie)](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DataType::Int32 && x.dtype() != DataType::Int64)
      fail("input X must be int32 or int64 (string tensors are not supported), got " +
           x.description());
    if (x.rank() != 1 && x.rank() != 2)
      fail("input X must be 1-D [C] or 2-D [N, C], got " + x.description());
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
    const int64_t c = x.dim(x.rank() - 1);
    const std::vector<int64_t> tokens = to_int64s(x);
    Tensor y(DataType::Float, x.rank() == 2 ? Shape{rows, width} : Shape{width});
    float* out = y.mutable_data<float>();
    std::vector<int64_t> counts(static_cast<size_t>(ngrams));

    for (int64_t r = 0; r < rows; ++r) {
      const int64_t* row = tokens.data() + r * c;
      std::fill(counts.begin(), counts.end(), 0);
      for (int64_t p = 0; p < c; ++p) {
        const int64_t first = trie.child(0, row[p]);
        if (first == NgramTrie::kNone) continue;
        // A 1-gram is the same token whatever the skip: count it once.
        if (min_n == 1 && trie.ngram_at(first) != NgramTrie::kNone) ++counts[static_cast<size_t>(trie.ngram_at(first))];
        // Every gap (skip + 1) gives distinct positions for n >= 2; gaps reaching
        // past the row's end give no 2-gram, so stop there (also avoids overflow).
        for (int64_t gap = 1; max_n >= 2 && gap - 1 <= max_skip && gap < c - p; ++gap) {
          int64_t at = first;
          for (int64_t n = 2, i = p + gap; n <= max_n && i < c; ++n, i += gap) {
            at = trie.child(at, row[i]);
            if (at == NgramTrie::kNone) break;
            const int64_t g = trie.ngram_at(at);
            if (n >= min_n && g != NgramTrie::kNone) ++counts[static_cast<size_t>(g)];
          }
        }
      }
      // IDF truncates counts to 1 before weighting; TF ignores the weights.
      float* y_row = out + r * width;
      for (size_t g = 0; g < counts.size(); ++g) {
        if (counts[g] == 0) continue;
        const float tf = static_cast<float>(counts[g]);
        const float v = mode == TfIdfMode::TF ? tf : mode == TfIdfMode::IDF ? weights[g] : tf * weights[g];
        y_row[indexes[g]] += v;
      }
    }
    ctx.outputs[0] = std::move(y);
  });
}

}  // namespace

void register_text(std::vector<KernelDef>& t) { t.push_back({"TfIdfVectorizer", 9, 17, make_tfidf_vectorizer}); }

}  // namespace epprof::rt::kernels
