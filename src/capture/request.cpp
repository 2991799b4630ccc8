#include "capture/request.h"

#include <simdjson.h>

#include <cstdio>
#include <set>

#include "core/name_filter.h"
#include "epprof/profiler.h"

namespace epprof::capture {
namespace {

const char* type_name(simdjson::dom::element_type t) {
  switch (t) {
    case simdjson::dom::element_type::ARRAY: return "an array";
    case simdjson::dom::element_type::OBJECT: return "an object";
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64: return "an integer";
    case simdjson::dom::element_type::DOUBLE: return "a number with a fraction or exponent";
    case simdjson::dom::element_type::STRING: return "a string";
    case simdjson::dom::element_type::BOOL: return "a boolean";
    case simdjson::dom::element_type::NULL_VALUE: return "null";
  }
  return "a value";
}

// An integer in [lo, hi], or false with *error naming the key.
bool integer_in(simdjson::dom::element v, std::string_view key, int64_t lo, int64_t hi, int64_t* out,
                std::string* error) {
  const auto t = v.type();
  int64_t n = 0;
  bool ok = false;
  if (t == simdjson::dom::element_type::INT64) {
    ok = v.get_int64().get(n) == simdjson::SUCCESS && n >= lo && n <= hi;
  }
  if (!ok) {
    std::string shown;
    if (t == simdjson::dom::element_type::INT64 || t == simdjson::dom::element_type::UINT64 ||
        t == simdjson::dom::element_type::DOUBLE)
      shown = simdjson::minify(v);
    else
      shown = type_name(t);
    *error = "'" + std::string(key) + "' must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
             ", not " + shown;
    return false;
  }
  *out = n;
  return true;
}

bool string_of(simdjson::dom::element v, std::string_view key, size_t max_len, std::string* out, std::string* error) {
  std::string_view s;
  if (v.get_string().get(s) != simdjson::SUCCESS) {
    *error = "'" + std::string(key) + "' must be a string, not " + type_name(v.type());
    return false;
  }
  if (s.find('\0') != std::string_view::npos) {
    *error = "'" + std::string(key) + "' holds a NUL byte";
    return false;
  }
  if (s.size() > max_len) {
    *error = "'" + std::string(key) + "' is longer than " + std::to_string(max_len) + " bytes";
    return false;
  }
  *out = std::string(s);
  return true;
}

// A list of names: an array of non-empty strings, at most kMaxFilterNames.
bool names_of(simdjson::dom::element v, const std::string& key, std::vector<std::string>* out, std::string* error) {
  simdjson::dom::array list;
  if (v.get_array().get(list) != simdjson::SUCCESS) {
    *error = "'" + key + "' must be an array of strings, not " + type_name(v.type());
    return false;
  }
  if (list.size() == 0 || list.size() > kMaxFilterNames) {
    *error = "'" + key + "' must list 1.." + std::to_string(kMaxFilterNames) + " names";
    return false;
  }
  for (simdjson::dom::element item : list) {
    const std::string at = key + "[" + std::to_string(out->size()) + "]";
    std::string name;
    if (!string_of(item, at, kMaxFilterName, &name, error)) return false;
    if (name.empty()) {
      *error = "'" + at + "' is empty";
      return false;
    }
    out->push_back(std::move(name));
  }
  return true;
}

// A regular expression: a non-empty string that compiles (ECMAScript), so
// a bad one is refused at once rather than when the host takes it.
bool regex_of(simdjson::dom::element v, const std::string& key, std::string* out, std::string* error) {
  if (!string_of(v, key, kMaxFilterName, out, error)) return false;
  std::string why = out->empty() ? "it is empty" : core::regex_error(*out);
  if (why.empty()) return true;
  *error = "'" + key + "' is not a valid ECMAScript regular expression (" + why + ")";
  return false;
}

// The categories, by epprof_category_name.
bool categories_of(simdjson::dom::element v, const std::string& key, uint32_t* out, std::string* error) {
  std::vector<std::string> names;
  if (!names_of(v, key, &names, error)) return false;
  for (size_t i = 0; i < names.size(); ++i) {
    uint32_t c = 0;
    while (c < EPPROF_CATEGORY_COUNT_ && names[i] != epprof_category_name(epprof_category(c))) ++c;
    if (c == EPPROF_CATEGORY_COUNT_) {
      std::string known;
      for (uint32_t k = 0; k < EPPROF_CATEGORY_COUNT_; ++k)
        known += std::string(k ? ", " : "") + epprof_category_name(epprof_category(k));
      *error = "'" + key + "[" + std::to_string(i) + "]' is not a category: " + json_string(names[i].substr(0, 64)) +
               " (known: " + known + ")";
      return false;
    }
    *out |= 1u << c;
  }
  return true;
}

bool filter_of(simdjson::dom::element v, FilterRequest* out, std::string* error) {
  simdjson::dom::object obj;
  if (v.get_object().get(obj) != simdjson::SUCCESS) {
    *error = std::string("'filter' must be an object, not ") + type_name(v.type());
    return false;
  }
  FilterRequest f;
  std::set<std::string_view> seen;
  for (auto field : obj) {
    const std::string key = "filter." + std::string(field.key.substr(0, 64));
    if (!seen.insert(field.key).second) {
      *error = "duplicate key '" + key + "'";
      return false;
    }
    bool ok;
    if (field.key == "categories") ok = categories_of(field.value, key, &f.categories, error);
    else if (field.key == "op_types") ok = names_of(field.value, key, &f.op_types, error);
    else if (field.key == "node_names") ok = names_of(field.value, key, &f.node_names, error);
    else if (field.key == "ep_names") ok = names_of(field.value, key, &f.ep_names, error);
    else if (field.key == "node_name_regex") ok = regex_of(field.value, key, &f.node_name_regex, error);
    else if (field.key == "kernel_name_regex") ok = regex_of(field.value, key, &f.kernel_name_regex, error);
    else {
      *error = "unknown key " + json_string(key) +
               " (known: categories, op_types, node_names, node_name_regex, ep_names, kernel_name_regex)";
      return false;
    }
    if (!ok) return false;
  }
  f.present = f.categories || !f.op_types.empty() || !f.node_names.empty() || !f.ep_names.empty() ||
              !f.node_name_regex.empty() || !f.kernel_name_regex.empty();
  *out = std::move(f);
  return true;
}

}  // namespace

bool parse_request(std::string_view line, Request* out, std::string* error) {
  if (line.size() >= kMaxRequestBytes) {
    *error = "request too long: more than " + std::to_string(kMaxRequestBytes) + " bytes";
    return false;
  }
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
    *error = "empty request: expected one JSON object, e.g. {\"runs\":10,\"output\":\"/tmp/t.json\"}";
    return false;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (const auto err = parser.parse(line.data(), line.size(), true).get(doc)) {
    *error = std::string("request is not valid JSON: ") + simdjson::error_message(err);
    return false;
  }
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) {
    *error = std::string("request must be a JSON object, not ") + type_name(doc.type());
    return false;
  }
  Request r;
  std::set<std::string_view> seen;
  bool has_runs = false, has_duration = false, has_output = false;
  for (auto field : obj) {
    const std::string_view key = field.key;
    if (!seen.insert(key).second) {
      *error = "duplicate key '" + std::string(key) + "'";
      return false;
    }
    int64_t n = 0;
    if (key == "runs") {
      if (!integer_in(field.value, key, 1, int64_t(kMaxRuns), &n, error)) return false;
      r.runs = uint64_t(n);
      has_runs = true;
    } else if (key == "duration_ms") {
      if (!integer_in(field.value, key, 1, kMaxDurationMs, &n, error)) return false;
      r.duration_ms = n;
      has_duration = true;
    } else if (key == "output") {
      if (!string_of(field.value, key, 4095, &r.output, error)) return false;
      if (r.output.empty() || r.output[0] != '/') {
        *error = "'output' must be an absolute path (the host's working directory is not the client's), not '" +
                 r.output + "'";
        return false;
      }
      if (r.output.back() == '/') {
        *error = "'output' names a directory: '" + r.output + "'";
        return false;
      }
      has_output = true;
    } else if (key == "scope_name") {
      if (!string_of(field.value, key, kMaxScopeName, &r.scope_name, error)) return false;
      if (r.scope_name.empty()) r.scope_name = "capture";
    } else if (key == "protocol") {
      if (!integer_in(field.value, key, 1, 1, &n, error)) return false;
    } else if (key == "filter") {
      if (!filter_of(field.value, &r.filter, error)) return false;
    } else {
      std::string shown(key.substr(0, 64));
      *error = "unknown key " + json_string(shown) +
               " (known: runs, duration_ms, output, scope_name, protocol, filter)";
      return false;
    }
  }
  if (has_runs == has_duration) {
    *error = has_runs ? "give 'runs' or 'duration_ms', not both" : "missing 'runs' or 'duration_ms'";
    return false;
  }
  if (!has_output) {
    *error = "missing 'output' (the trace's absolute path)";
    return false;
  }
  *out = std::move(r);
  return true;
}

std::string json_string(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += char(c);
      } else if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += char(c);
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length, and the range its second byte allows
    // (no overlong forms, no surrogates, nothing past U+10FFFF).
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c == 0xe0) len = 3, lo = 0xa0;
    else if (c == 0xed) len = 3, hi = 0x9f;
    else if (c >= 0xe1 && c <= 0xef) len = 3;
    else if (c == 0xf0) len = 4, lo = 0x90;
    else if (c >= 0xf1 && c <= 0xf3) len = 4;
    else if (c == 0xf4) len = 4, hi = 0x8f;
    bool valid = len != 0 && i + len <= n && p[i + 1] >= lo && p[i + 1] <= hi;
    for (size_t k = 2; valid && k < len; ++k) valid = p[i + k] >= 0x80 && p[i + k] <= 0xbf;
    if (valid) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
    }
  }
  out += '"';
  return out;
}

}  // namespace epprof::capture
