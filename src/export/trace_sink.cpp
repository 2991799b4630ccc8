#include "export/trace_sink.h"

#include <simdjson.h>

#include "epprof/event.h"
#include "export/json_writer.h"

namespace epprof::exporter {

const char* category_name(uint8_t category) noexcept {
  static const char* const kNames[] = {"Session", "Node", "Kernel", "Api", "Memcpy", "Counter", "Memory"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == EPPROF_CATEGORY_COUNT_, "one name per epprof_category");
  return category < EPPROF_CATEGORY_COUNT_ ? kNames[category] : "Unknown";
}

bool JsonTextCheck::valid(std::string_view text) {
  if (valid_.count(std::string(text))) return true;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const bool ok = parser.parse(text.data(), text.size(), true).get(doc) == simdjson::SUCCESS;
  if (ok && valid_.size() < kCacheLimit) valid_.emplace(text);
  return ok;
}

bool attribution_replaces(const Attribution* a, std::string_view key) {
  return a && (key == "correlation_id" || key == "unattributed" ||
               ((a->is_node || a->resolved) && key == "parent_name") ||
               (a->is_node && (key == "op_name" || key == "node_index")));
}

void write_meta_value(JsonWriter& w, const MetaValue& v) {
  switch (v.kind) {
    case MetaValue::Kind::kString:
      w.string(v.str);
      break;
    case MetaValue::Kind::kInt:
      w.i64(v.i64);
      break;
    case MetaValue::Kind::kObject:
      w.raw('{');
      for (size_t i = 0; i < v.members.size(); ++i) {
        if (i) w.raw(',');
        w.string(v.members[i].first);
        w.raw(':');
        write_meta_value(w, v.members[i].second);
      }
      w.raw('}');
      break;
    case MetaValue::Kind::kArray:
      w.raw('[');
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) w.raw(',');
        write_meta_value(w, v.items[i]);
      }
      w.raw(']');
      break;
  }
}

}  // namespace epprof::exporter
