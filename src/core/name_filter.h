// Filters by name: exact lists of interned names and regular expressions
// over them, as sessions (session/) filter records and a profiler's trace
// filter (scope/trace_filter.*) filters events. One vocabulary, one matcher:
// the C configs spell the lists alike (op_types, node_names,
// node_name_regex, ep_names, kernel_name_regex), and build_name_filter
// reads them for both.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "epprof/status.h"

namespace epprof::core {

// A regular expression over interned names (ECMAScript, whole name),
// evaluated once per name id and remembered (lock-free; entries are written
// once with the same value).
class NameRegex {
 public:
  explicit NameRegex(const std::string& pattern);  // throws std::regex_error
  bool matches(uint32_t id) const noexcept;
  const std::string& pattern() const { return pattern_; }

 private:
  static constexpr uint32_t kPageBits = 12;
  static constexpr uint32_t kPages = (1u << 22) >> kPageBits;
  std::string pattern_;
  std::regex re_;
  // 0 unknown, 1 match, 2 no match
  mutable std::array<std::atomic<std::atomic<uint8_t>*>, kPages> pages_{};
  mutable std::mutex alloc_mu_;
  mutable std::vector<std::unique_ptr<std::atomic<uint8_t>[]>> owned_;
};

// Empty when `pattern` is a valid ECMAScript regular expression, else why
// not: for checking a pattern without keeping it (the capture listener).
std::string regex_error(const std::string& pattern);

// Whether `id` is in the list (short lists: a linear scan beats a hash).
inline bool contains_name(const std::vector<uint32_t>& v, uint32_t id) noexcept {
  for (uint32_t x : v)
    if (x == id) return true;
  return false;
}

// The name filters, AND-combined; an unset one passes everything. A name
// that is absent (id 0) fails every filter that is set on it.
struct NameFilter {
  std::vector<uint32_t> op_types, node_names, ep_names;
  std::unique_ptr<NameRegex> node_regex, kernel_regex;

  bool empty() const { return !filters_nodes() && !kernel_regex; }
  // Whether a filter on the node (op type, node name, EP) is set.
  bool filters_nodes() const { return !op_types.empty() || !node_names.empty() || node_regex || !ep_names.empty(); }
  // Op type, node (a listed name or the regex: either passes) and EP.
  bool accepts_node(uint32_t op_type, uint32_t node, uint32_t ep) const noexcept;
  bool accepts_kernel(uint32_t kernel) const noexcept {
    return !kernel_regex || (kernel != 0 && kernel_regex->matches(kernel));
  }
};

// The lists of a C config (epprof_session_config, epprof_trace_filter):
// borrowed pointers, as the caller gave them.
struct NameFilterLists {
  const char* const* op_types = nullptr;
  size_t num_op_types = 0;
  const char* const* node_names = nullptr;
  size_t num_node_names = 0;
  const char* node_name_regex = nullptr;
  const char* const* ep_names = nullptr;
  size_t num_ep_names = 0;
  const char* kernel_name_regex = nullptr;
};

// The lists of a C config that spells them as both configs do.
template <class Config>
NameFilterLists name_filter_lists(const Config& c) {
  return {c.op_types,         c.num_op_types, c.node_names,   c.num_node_names,
          c.node_name_regex,  c.ep_names,     c.num_ep_names, c.kernel_name_regex};
}

// Why a filter could not be built: the status code for the C API and a
// message naming the field ("op_types[1] is NULL"). `code` EPPROF_OK: built.
struct FilterError {
  epprof_status_code code = EPPROF_OK;
  std::string message;
  explicit operator bool() const { return code != EPPROF_OK; }
};

// Interns the list `what` (n names; a NULL entry, or NULL names with n > 0,
// is INVALID_ARGUMENT; a full string table RESOURCE_EXHAUSTED).
FilterError intern_names(const char* what, const char* const* names, size_t n, std::vector<uint32_t>* out);
// Interns the lists and compiles the regexes (an invalid one is
// INVALID_ARGUMENT naming the field, the expression and the reason).
FilterError build_name_filter(const NameFilterLists& in, NameFilter* out);

}  // namespace epprof::core
