#include "scope/trace_filter.h"

#include <string>

#include "core/intern.h"
#include "epprof/profiler.h"
#include "core/args.h"

namespace epprof::scope {

TraceFilter::TraceFilter(const core::TraceFilterSettings& settings) : s_(settings) {}

bool TraceFilter::keep_host(const core::Record& r) {
  const bool kept = r.category == EPPROF_CATEGORY_SESSION ||
                    (keeps(epprof_category(r.category)) && (r.category != EPPROF_CATEGORY_NODE || keep_node(r)));
  host_left_out_ += !kept;
  return kept;
}

bool TraceFilter::keep_plugin(const epprof_event& e, bool host_kept) {
  const bool kept = host_kept && keeps(e.category) &&
                    (!s_.names.kernel_regex || s_.names.accepts_kernel(core::intern(e.name)));
  plugin_left_out_ += !kept;
  return kept;
}

bool TraceFilter::keep_node(const core::Record& r) {
  const core::NameFilter& f = s_.names;
  if (!f.filters_nodes()) return true;
  // The node the event declared; an event that declared none has a name,
  // its own, and no op type or provider.
  if (const core::NodeIdentity* node = core::node_of(&r)) return f.accepts_node(node->op_type, node->name, node->ep);
  return f.accepts_node(0, r.name, 0);
}

exporter::MetaValue TraceFilter::metadata() const {
  using exporter::MetaValue;
  auto names = [](const std::vector<uint32_t>& ids) {
    MetaValue list = MetaValue::array();
    for (uint32_t id : ids) {
      const std::string* s = core::interned(id);
      list.items.push_back(MetaValue::string(s ? *s : std::string()));
    }
    return list;
  };
  const core::NameFilter& f = s_.names;
  MetaValue m = MetaValue::object();
  if (s_.categories) {
    MetaValue list = MetaValue::array();
    for (uint32_t c = 0; c < EPPROF_CATEGORY_COUNT_; ++c)
      if (keeps(epprof_category(c))) list.items.push_back(MetaValue::string(epprof_category_name(epprof_category(c))));
    m.add("categories", std::move(list));
  }
  if (!f.op_types.empty()) m.add("op_types", names(f.op_types));
  if (!f.node_names.empty()) m.add("node_names", names(f.node_names));
  if (f.node_regex) m.add("node_name_regex", MetaValue::string(f.node_regex->pattern()));
  if (!f.ep_names.empty()) m.add("ep_names", names(f.ep_names));
  if (f.kernel_regex) m.add("kernel_name_regex", MetaValue::string(f.kernel_regex->pattern()));
  m.add("left_out_host_events", MetaValue::string(std::to_string(host_left_out_)));
  m.add("left_out_device_events", MetaValue::string(std::to_string(plugin_left_out_)));
  return m;
}

}  // namespace epprof::scope
