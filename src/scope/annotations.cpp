#include "scope/annotations.h"

#include <mutex>

namespace epprof::scope {
namespace {

std::mutex g_mu;
std::unordered_map<const void*, Annotations>& table() {
  static auto* t = new std::unordered_map<const void*, Annotations>();  // outlives static dtors
  return *t;
}

}  // namespace

void annotate(const void* owner, uint64_t correlation_id, std::vector<exporter::ExtraArg> args) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& dst = table()[owner][correlation_id];
  for (auto& a : args) dst.push_back(std::move(a));
}

Annotations take_annotations(const void* owner) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = table().find(owner);
  if (it == table().end()) return {};
  Annotations out = std::move(it->second);
  table().erase(it);
  return out;
}

}  // namespace epprof::scope
