#include "scope/memory.h"

#include "core/intern.h"
#include "epprof/profiler.h"

namespace epprof::scope {

MemoryLedger::MemoryLedger() : model_run_name_(core::intern("model_run")) {}

MemoryLedger::Device& MemoryLedger::device(uint32_t name) {
  auto [it, fresh] = devices_.try_emplace(name);
  if (fresh) {
    const std::string* n = core::interned(name);
    it->second.name = n ? *n : "device " + std::to_string(name);
    if (!first_device_) first_device_ = name;
  }
  return it->second;
}

uint64_t MemoryLedger::owner(int64_t tid, int64_t ts_ns) {
  auto it = open_.find(tid);
  if (it == open_.end()) return 0;
  std::vector<Open>& stack = it->second;
  while (!stack.empty() && stack.back().end_ns < ts_ns) stack.pop_back();
  return stack.empty() ? 0 : stack.back().correlation_id;
}

void MemoryLedger::host_event(const core::Record& r, int64_t tid, int64_t ts_ns, int64_t end_ns) {
  std::vector<Open>& stack = open_[tid];
  while (!stack.empty() && stack.back().end_ns < ts_ns) stack.pop_back();
  stack.push_back({end_ns, r.correlation_id});
  if (r.category == EPPROF_CATEGORY_SESSION && r.name == model_run_name_) run_end_ = std::max(run_end_, end_ns);
  if (r.category != EPPROF_CATEGORY_NODE) return;
  // A node's args describe its device when it allocates, else the first
  // device: its state when the node started stands for both ends. (The
  // entry may exist already: a plugin's event that came a little early.)
  auto [it, fresh] = nodes_.try_emplace(r.correlation_id);
  Node& n = it->second;
  if (fresh && !devices_.empty()) {
    const Device& d = devices_.at(first_device_);
    n.start_in_use = d.in_use;
    n.start_held = d.held;
    n.start_peak = d.peak;
  }
}

MemoryLedger::Sample MemoryLedger::memory_event(const core::Record& r, int64_t tid, int64_t ts_ns) {
  return apply(r.name, owner(tid, ts_ns), false, r.correlation_id, r.dur, r.flags & core::kRecordMemoryAlloc,
               r.category, ts_ns);
}

bool MemoryLedger::plugin_event(const epprof_event& e, Sample* out) {
  std::string_view kind, id_text, bytes_text, tag_text = "other";
  for (size_t i = 0; i < e.keys.size(); ++i) {
    if (e.keys[i] == "kind") kind = e.values[i];
    if (e.keys[i] == "allocation_id") id_text = e.values[i];
    if (e.keys[i] == "bytes") bytes_text = e.values[i];
    if (e.keys[i] == "tag") tag_text = e.values[i];
  }
  auto decimal = [](std::string_view t, uint64_t* v) {
    if (t.empty() || t.size() > 20) return false;
    uint64_t n = 0;
    for (char c : t) {
      if (c < '0' || c > '9' || n > (UINT64_MAX - uint64_t(c - '0')) / 10) return false;
      n = n * 10 + uint64_t(c - '0');
    }
    *v = n;
    return true;
  };
  static const char* const kTags[] = {"other", "output", "temporary", "initializer", "input", "arena_chunk"};
  static_assert(sizeof(kTags) / sizeof(kTags[0]) == EPPROF_MEMORY_TAG_COUNT_, "one name per tag");
  uint8_t tag = EPPROF_MEMORY_TAG_COUNT_;
  for (uint8_t t = 0; t < EPPROF_MEMORY_TAG_COUNT_; ++t)
    if (tag_text == kTags[t]) tag = t;
  uint64_t id = 0, bytes = 0;
  const bool alloc = kind == "alloc";
  if ((!alloc && kind != "free") || !decimal(id_text, &id) || (alloc && (!decimal(bytes_text, &bytes) || !bytes)) ||
      tag == EPPROF_MEMORY_TAG_COUNT_ || e.name.empty()) {
    ++invalid_plugin_events_;
    return false;
  }
  *out = apply(core::intern(e.name), e.correlation_id, true, id, bytes, alloc, tag, e.ts_ns);
  return true;
}

MemoryLedger::Sample MemoryLedger::apply(uint32_t device_name, uint64_t owner_id, bool owner_is_explicit,
                                         uint64_t allocation_id, uint64_t bytes, bool alloc, uint8_t tag,
                                         int64_t ts_ns) {
  Device& d = device(device_name);
  const bool in_run = ts_ns <= run_end_;
  int64_t change = 0;
  bool arena = false;
  if (alloc) {
    ++d.allocations;
    arena = tag == EPPROF_MEMORY_ARENA_CHUNK;
    change = int64_t(bytes);
    live_[LiveKey{allocation_id, device_name}] = Live{bytes, device_name, tag, in_run};
  } else {
    ++d.frees;
    auto it = live_.find(LiveKey{allocation_id, device_name});
    if (it == live_.end()) {
      ++d.unmatched_frees;
    } else {
      arena = it->second.tag == EPPROF_MEMORY_ARENA_CHUNK;
      change = -int64_t(it->second.bytes);
      live_.erase(it);
    }
  }
  (arena ? d.held : d.in_use) += change;
  d.peak = std::max(d.peak, d.in_use);
  if (owner_id) {
    auto it = nodes_.find(owner_id);
    // A plugin names its owner; a device clock running a little early can
    // put the event before its node starts: keep it for the node.
    if (it == nodes_.end() && owner_is_explicit) it = nodes_.emplace(owner_id, Node{}).first;
    if (it != nodes_.end()) {
      Node& n = it->second;
      if (!arena) (change > 0 ? n.allocated : n.freed) += change > 0 ? change : -change;
      if (!n.device) n.device = device_name;
      if (n.device == device_name) {
        n.in_use_at_end = d.in_use;
        n.peak = d.peak;
        n.held = d.held;
      }
    }
  }
  // Bytes in use and bytes arena chunks hold are two curves: an arena's
  // chunks move the second, never the first.
  if (arena) return {"mem_arena_held " + d.name, std::to_string(d.held)};
  return {"mem_in_use " + d.name, std::to_string(d.in_use)};
}

void MemoryLedger::node_args(uint64_t correlation_id, std::vector<exporter::ExtraArg>* out) {
  auto it = nodes_.find(correlation_id);
  if (it == nodes_.end()) return;
  const Node& n = it->second;
  const bool own = n.device != 0;
  // Not counter tracks of their own: the device's track holds the curve.
  auto add = [&](const char* key, int64_t v) { out->push_back({key, std::to_string(v), false}); };
  add("mem_bytes_in_use", own ? n.in_use_at_end : n.start_in_use);
  add("mem_in_use_peak", own ? n.peak : n.start_peak);
  add("mem_arena_held", own ? n.held : n.start_held);
  add("mem_in_use_delta", n.allocated - n.freed);
  add("mem_allocated_bytes", n.allocated);
  add("mem_freed_bytes", n.freed);
  nodes_.erase(it);
}

exporter::MetaValue MemoryLedger::metadata() const {
  using exporter::MetaValue;
  // The leak line: live at the end, allocated inside a model_run, and not
  // a weight or an arena's own chunk.
  std::map<uint32_t, std::pair<int64_t, uint64_t>> leaked;  // device -> bytes, allocations
  for (const auto& [key, l] : live_) {
    if (!l.in_run || l.tag == EPPROF_MEMORY_INITIALIZER || l.tag == EPPROF_MEMORY_ARENA_CHUNK) continue;
    auto& [bytes, count] = leaked[l.device];
    bytes += int64_t(l.bytes);
    ++count;
  }
  MetaValue out = MetaValue::object();
  for (const auto& [name, d] : devices_) {
    auto num = [](int64_t v) { return MetaValue::string(std::to_string(v)); };
    const auto leak = leaked.count(name) ? leaked.at(name) : std::pair<int64_t, uint64_t>{0, 0};
    MetaValue dev = MetaValue::object();
    dev.add("peak_in_use_bytes", num(d.peak));
    dev.add("in_use_at_end_bytes", num(d.in_use));
    dev.add("arena_held_at_end_bytes", num(d.held));
    dev.add("allocations", num(int64_t(d.allocations)));
    dev.add("frees", num(int64_t(d.frees)));
    dev.add("unmatched_frees", num(int64_t(d.unmatched_frees)));
    dev.add("leaked_bytes", num(leak.first));
    dev.add("leaked_allocations", num(int64_t(leak.second)));
    if (invalid_plugin_events_) dev.add("invalid_plugin_events", num(int64_t(invalid_plugin_events_)));
    out.add(d.name, std::move(dev));
  }
  return out;
}

}  // namespace epprof::scope
