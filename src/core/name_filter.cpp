#include "core/name_filter.h"

#include "core/intern.h"

namespace epprof::core {
namespace {

FilterError compile(const char* what, const char* pattern, std::unique_ptr<NameRegex>* out) {
  if (!pattern) return {};
  try {
    *out = std::make_unique<NameRegex>(pattern);
  } catch (const std::regex_error& e) {
    return {EPPROF_INVALID_ARGUMENT, std::string(what) + " '" + pattern +
                                         "' is not a valid ECMAScript regular expression: " + e.what()};
  }
  return {};
}

}  // namespace

NameRegex::NameRegex(const std::string& pattern)
    : pattern_(pattern), re_(pattern, std::regex::ECMAScript | std::regex::optimize) {}

bool NameRegex::matches(uint32_t id) const noexcept {
  const uint32_t page = id >> kPageBits;
  if (page >= kPages) return false;
  std::atomic<uint8_t>* p = pages_[page].load(std::memory_order_acquire);
  if (!p) {
    try {
      std::lock_guard<std::mutex> lock(alloc_mu_);
      p = pages_[page].load(std::memory_order_relaxed);
      if (!p) {
        owned_.emplace_back(new std::atomic<uint8_t>[size_t(1) << kPageBits]());
        p = owned_.back().get();
        pages_[page].store(p, std::memory_order_release);
      }
    } catch (...) {
      return false;  // out of memory: treat as no match
    }
  }
  std::atomic<uint8_t>& e = p[id & ((1u << kPageBits) - 1)];
  uint8_t v = e.load(std::memory_order_relaxed);
  if (v == 0) {
    const std::string* name = interned(id);
    bool m = false;
    try {
      m = name && std::regex_match(*name, re_);
    } catch (...) {
      m = false;  // regex engine limits (very long names): no match
    }
    v = m ? 1 : 2;
    e.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

std::string regex_error(const std::string& pattern) {
  try {
    std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return e.what();
  }
  return {};
}

bool NameFilter::accepts_node(uint32_t op_type, uint32_t node, uint32_t ep) const noexcept {
  if (!op_types.empty() && (op_type == 0 || !contains_name(op_types, op_type))) return false;
  if (!node_names.empty() || node_regex) {
    if (node == 0) return false;
    if (!contains_name(node_names, node) && !(node_regex && node_regex->matches(node))) return false;
  }
  return ep_names.empty() || (ep != 0 && contains_name(ep_names, ep));
}

FilterError intern_names(const char* what, const char* const* names, size_t n, std::vector<uint32_t>* out) {
  if (n && !names)
    return {EPPROF_INVALID_ARGUMENT, std::string(what) + " is NULL with num_" + what + " = " + std::to_string(n)};
  for (size_t i = 0; i < n; ++i) {
    if (!names[i]) return {EPPROF_INVALID_ARGUMENT, std::string(what) + "[" + std::to_string(i) + "] is NULL"};
    const uint32_t id = intern(names[i]);
    if (!id) return {EPPROF_RESOURCE_EXHAUSTED, "the string table is full"};
    out->push_back(id);
  }
  return {};
}

FilterError build_name_filter(const NameFilterLists& in, NameFilter* out) {
  if (FilterError e = intern_names("op_types", in.op_types, in.num_op_types, &out->op_types)) return e;
  if (FilterError e = intern_names("node_names", in.node_names, in.num_node_names, &out->node_names)) return e;
  if (FilterError e = intern_names("ep_names", in.ep_names, in.num_ep_names, &out->ep_names)) return e;
  if (FilterError e = compile("node_name_regex", in.node_name_regex, &out->node_regex)) return e;
  return compile("kernel_name_regex", in.kernel_name_regex, &out->kernel_regex);
}

}  // namespace epprof::core
