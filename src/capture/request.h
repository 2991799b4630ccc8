// The capture protocol's text: parsing a client's request line and writing
// the listener's reply lines (epprof/capture.h documents both).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace epprof::capture {

// The longest request line, newline included.
constexpr size_t kMaxRequestBytes = 64 * 1024;
constexpr uint64_t kMaxRuns = 1000000;
constexpr int64_t kMaxDurationMs = 86400000;  // a day
constexpr size_t kMaxScopeName = 256;
constexpr size_t kMaxFilterName = 1024;    // a name or regular expression of a filter
constexpr size_t kMaxFilterNames = 1024;   // names in one list

// The request's "filter" (epprof_trace_filter's vocabulary), as text; its
// regular expressions are known to compile.
struct FilterRequest {
  bool present = false;        // the request has a "filter" that sets something
  uint32_t categories = 0;     // bit (1u << epprof_category) per category; 0: all
  std::vector<std::string> op_types, node_names, ep_names;
  std::string node_name_regex, kernel_name_regex;  // empty: none
};

struct Request {
  uint64_t runs = 0;         // exactly one of runs and duration_ms is nonzero
  int64_t duration_ms = 0;
  std::string output;        // absolute path
  std::string scope_name = "capture";
  FilterRequest filter;
};

// Parses one request line (without its newline). On failure returns false
// and sets *error to a message that names the problem ("'runs' must be an
// integer in 1..1000000, not -3"). Never throws but for std::bad_alloc.
bool parse_request(std::string_view line, Request* out, std::string* error);

// `s` as a JSON string literal: quotes, backslashes and control characters
// escaped, and each byte that is not part of valid UTF-8 replaced by U+FFFD,
// so a client's strict parser always accepts it.
std::string json_string(std::string_view s);

}  // namespace epprof::capture
