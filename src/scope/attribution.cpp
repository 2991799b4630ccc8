#include "scope/attribution.h"

#include <cstdlib>
#include <string>

#include "core/intern.h"

namespace epprof::scope {

Attribution::Attribution(const DeviceEvents& device) {
  for (const DeviceEvent& d : device.events)
    if (d.event->correlation_id)
      by_id_.emplace(d.event->correlation_id,
                     Entry{exporter::Attribution{d.event->correlation_id, false, false, {}, {}, {}, 0, 0}});
}

void Attribution::resolve(exporter::Attribution& a, const core::Record& r, std::string_view name, int64_t tid,
                          int64_t ts_ns) {
  a.resolved = true;
  a.is_node = r.category == EPPROF_CATEGORY_NODE;
  a.parent_name.assign(name);
  a.host_tid = tid;
  a.host_ts_ns = ts_ns;
  if (!a.is_node) return;
  static const uint32_t kOpName = core::intern("op_name");
  static const uint32_t kNodeIndex = core::intern("node_index");
  core::ArgIterator it(&r);
  core::ArgView v;
  while (it.next(v)) {
    std::string* dst = v.key == kOpName ? &a.op_name : v.key == kNodeIndex ? &a.node_index : nullptr;
    if (!dst) continue;
    if (v.is_int)
      *dst = std::to_string(v.i64);
    else
      dst->assign(v.str);
  }
}

const exporter::Attribution* Attribution::of(const epprof_event& e) {
  static const exporter::Attribution kNoId{};
  if (e.correlation_id) {
    const exporter::Attribution* a = &by_id_.at(e.correlation_id).a;
    if (!a->resolved) ++unattributed_;
    return a;
  }
  if (!is_device_category(e.category)) return nullptr;
  ++unattributed_;
  return &kNoId;
}

std::string_view node_of_event(std::string_view name) {
  constexpr std::string_view kSuffix = "_kernel_time";  // ONNX Runtime's node event names
  if (name.size() > kSuffix.size() && name.substr(name.size() - kSuffix.size()) == kSuffix)
    name.remove_suffix(kSuffix.size());
  return name;
}

epprof_record session_record(const epprof_event& e, const exporter::Attribution* a, uint32_t ep, int64_t t0) {
  epprof_record r{};
  r.kind = EPPROF_RECORD_DEVICE_EVENT;
  r.category = uint32_t(e.category);
  r.correlation_id = e.correlation_id;
  r.ts_ns = t0 + e.ts_ns;
  r.dur_ns = e.dur_ns;
  r.name = core::intern(e.name);
  if (e.category == EPPROF_CATEGORY_KERNEL) r.kernel = r.name;
  r.ep = ep;
  r.node_index = EPPROF_RECORD_NO_NODE;
  if (a && a->is_node) {
    r.node = core::intern(node_of_event(a->parent_name));
    r.op_type = core::intern(a->op_name);
    char* end = nullptr;
    const unsigned long index = std::strtoul(a->node_index.c_str(), &end, 10);
    if (end && *end == '\0' && !a->node_index.empty()) r.node_index = uint32_t(index);
  }
  return r;
}

}  // namespace epprof::scope
