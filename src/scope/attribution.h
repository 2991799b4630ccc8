// The way out of a scope, stage 3: attribution. Every device event names,
// by correlation id, the host event that caused it; the merged host stream
// resolves each id named (the first, outermost, host event with it wins),
// and a device event with no id, or an id no host event of the scope has,
// stays unattributed and is counted. What a node event says of its node is
// typed, as the host declared it (epprof_node_args_intern, core::
// NodeIdentity), never read back from names or args.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "core/args.h"
#include "core/record.h"
#include "epprof/session.h"
#include "export/trace_sink.h"
#include "scope/device_events.h"

namespace epprof::scope {

class Attribution {
 public:
  // The ids `device` names, still unresolved.
  explicit Attribution(const DeviceEvents& device);

  // Offers a host event, in merged order (cheap when no device event
  // names its id). `kept`: whether the trace keeps it (trace_filter.*).
  void host_event(const core::Record& r, int64_t tid, int64_t ts_ns, bool kept) {
    if (by_id_.empty()) return;
    auto it = by_id_.find(r.correlation_id);
    if (it != by_id_.end() && !it->second.a.resolved) {
      resolve(it->second, r, tid, ts_ns);
      it->second.left_out = !kept;
    }
  }

  // Whether `e` names an id that no host event offered so far has (one
  // may still come).
  bool waiting(const epprof_event& e) const {
    auto it = by_id_.find(e.correlation_id);
    return e.correlation_id && it != by_id_.end() && !it->second.a.resolved;
  }

  // Whether the host event `e` is attributed to was left out of the trace.
  bool host_left_out(const epprof_event& e) const {
    auto it = e.correlation_id ? by_id_.find(e.correlation_id) : by_id_.end();
    return it != by_id_.end() && it->second.left_out;
  }

  // What device event `e` is attributed to: nullptr for a non-device event
  // without an id; otherwise an attribution, unresolved (and counted) when
  // no host event has its id.
  const exporter::Attribution* of(const epprof_event& e);
  uint64_t unattributed() const { return unattributed_; }

  // The node the host event `e` is attributed to declared
  // (epprof_node_args_intern), or nullptr.
  const core::NodeIdentity* node(const epprof_event& e) const {
    auto it = e.correlation_id ? by_id_.find(e.correlation_id) : by_id_.end();
    return it != by_id_.end() ? it->second.node : nullptr;
  }

 private:
  struct Entry {
    exporter::Attribution a;
    const core::NodeIdentity* node = nullptr;  // what the host event declared, if anything
    bool left_out = false;  // the host event that resolved it is not in the trace
  };
  static void resolve(Entry& entry, const core::Record& r, int64_t tid, int64_t ts_ns);

  std::unordered_map<uint64_t, Entry> by_id_;  // only ids device events name
  uint64_t unattributed_ = 0;
};

// A device event as a session record (epprof/session.h), with the node it
// is attributed to (or nullptr); `t0` turns the trace's relative time back
// into host-clock time.
epprof_record session_record(const epprof_event& e, const core::NodeIdentity* node, uint32_t ep, int64_t t0);

}  // namespace epprof::scope
