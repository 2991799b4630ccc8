#include "scope/annotations.h"

#include <cmath>
#include <cstdlib>
#include <mutex>

#include "base/status.h"
#include "core/intern.h"

namespace epprof::scope {
namespace {

std::mutex g_mu;
std::unordered_map<const core::Recording*, Annotations>& table() {
  static auto* t = new std::unordered_map<const core::Recording*, Annotations>();  // outlives static dtors
  return *t;
}

bool is_number(const char* s) {
  if (!s || !*s) return false;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  return end && *end == 0 && std::isfinite(v);
}

}  // namespace

epprof_status* annotation_args(const char* fn, const epprof_arg* args, size_t num_args,
                               std::vector<exporter::ExtraArg>* out) {
  using base::make_status;
  for (size_t i = 0; i < num_args; ++i) {
    const epprof_arg& a = args[i];
    const std::string* key = a.key ? core::interned(a.key) : nullptr;
    if (!key)
      return make_status(EPPROF_INVALID_ARGUMENT,
                         std::string(fn) + ": arg " + std::to_string(i) + " has a key that is not an interned name id");
    exporter::ExtraArg x;
    x.key = *key;
    switch (a.type) {
      case EPPROF_ARG_INT64:
        x.value = std::to_string(a.value.i64);
        x.number = true;
        break;
      case EPPROF_ARG_STRING:
      case EPPROF_ARG_JSON:
        if (!a.value.str)
          return make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": value of arg '" + *key + "' is NULL");
        x.value = a.value.str;
        x.number = a.type == EPPROF_ARG_STRING && is_number(a.value.str);
        break;
      case EPPROF_ARG_NAME:
      case EPPROF_ARG_JSON_NAME: {
        const std::string* v = a.value.name ? core::interned(a.value.name) : nullptr;
        if (!v)
          return make_status(EPPROF_INVALID_ARGUMENT,
                             std::string(fn) + ": value of arg '" + *key + "' is not an interned name id");
        x.value = *v;
        break;
      }
      default:
        return make_status(EPPROF_INVALID_ARGUMENT,
                           std::string(fn) + ": arg '" + *key + "' has unknown type " + std::to_string(a.type));
    }
    out->push_back(std::move(x));
  }
  return nullptr;
}

void annotate(const core::Recording* owner, uint64_t correlation_id, std::vector<exporter::ExtraArg> args) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& dst = table()[owner][correlation_id];
  for (auto& a : args) dst.push_back(std::move(a));
}

Annotations take_annotations(const core::Recording* owner) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = table().find(owner);
  if (it == table().end()) return {};
  Annotations out = std::move(it->second);
  table().erase(it);
  return out;
}

}  // namespace epprof::scope
