#include "scope/attribution.h"

#include "core/args.h"
#include "core/intern.h"

namespace epprof::scope {

namespace {

std::string_view interned_view(uint32_t id) {
  const std::string* s = core::interned(id);
  return s ? std::string_view(*s) : std::string_view();
}

}  // namespace

Attribution::Attribution(const DeviceEvents& device) {
  for (const DeviceEvent& d : device.events)
    if (d.event->correlation_id)
      by_id_.emplace(d.event->correlation_id,
                     Entry{exporter::Attribution{d.event->correlation_id, false, false, {}, {}, 0, 0, 0}});
}

void Attribution::resolve(Entry& entry, const core::Record& r, int64_t tid, int64_t ts_ns) {
  exporter::Attribution& a = entry.a;
  a.resolved = true;
  const std::string* name = core::interned(r.name);
  a.parent_name = name ? std::string_view(*name) : std::string_view("?");  // as the trace names it
  a.host_tid = tid;
  a.host_ts_ns = ts_ns;
  entry.node = r.category == EPPROF_CATEGORY_NODE ? core::node_of(&r) : nullptr;
  a.is_node = entry.node != nullptr;
  if (!entry.node) return;
  a.op_name = interned_view(entry.node->op_type);
  a.node_index = entry.node->index;
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

epprof_record session_record(const epprof_event& e, const core::NodeIdentity* node, uint32_t ep, int64_t t0) {
  epprof_record r{};
  r.size = sizeof r;
  r.kind = EPPROF_RECORD_DEVICE_EVENT;
  r.category = uint32_t(e.category);
  r.correlation_id = e.correlation_id;
  r.ts_ns = t0 + e.ts_ns;
  r.dur_ns = e.dur_ns;
  r.name = core::intern(e.name);
  if (e.category == EPPROF_CATEGORY_KERNEL) r.kernel = r.name;
  r.ep = ep;
  r.node_index = EPPROF_RECORD_NO_NODE;
  if (node) {
    r.node = node->name;
    r.op_type = node->op_type;
    r.node_index = node->index;
  }
  return r;
}

}  // namespace epprof::scope
