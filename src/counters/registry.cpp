#include "counters/registry.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include "base/status.h"

namespace epprof::counters {
namespace {

struct Registry {
  std::mutex mu;
  std::deque<Device> devices;  // never shrinks: Device* stay valid
};

Device& add_locked(Registry& r, const std::string& name, std::unique_ptr<Backend> backend) {
  Device& d = r.devices.emplace_back();
  d.name = name;
  d.backend = std::move(backend);
  std::vector<CounterDef> listed = d.backend->list();
  std::vector<CounterDef> derived = derived_counters(name, listed);
  for (CounterDef& c : listed) d.listed.push_back(std::move(c));
  for (CounterDef& c : derived) d.listed.push_back(std::move(c));
  return d;
}

Registry& registry() {
  // The cpu device is probed once, on first use (a few perf_event_open calls).
  static Registry* r = [] {
    auto* reg = new Registry;  // never destroyed: handles and strings outlive static destructors
    add_locked(*reg, "cpu", make_perf_backend());
    return reg;
  }();
  return *r;
}

const CounterDef* find_in(const std::deque<CounterDef>& defs, const std::string& name) {
  for (const CounterDef& c : defs)
    if (c.name == name) return &c;
  return nullptr;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string lower(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

}  // namespace

CounterDef CounterDef::named(std::string name, std::string unit, std::string backend, std::string device,
                             epprof_counter_kind kind, std::string description) {
  CounterDef c;
  c.name = std::move(name);
  c.unit = std::move(unit);
  c.backend = std::move(backend);
  c.device = std::move(device);
  c.kind = kind;
  c.description = std::move(description);
  return c;
}

void CounterDef::fill(epprof_counter_info* out) const {
  // The caller's size covers at least up to `size` (checked by the caller);
  // fields beyond it are not written.
  const size_t size = out->size;
  epprof_counter_info full;
  full.size = size;
  full.name = name.c_str();
  full.description = description.c_str();
  full.unit = unit.c_str();
  full.backend = backend.c_str();
  full.device = device.c_str();
  full.unsupported_reason = unsupported_reason.c_str();
  full.kind = uint32_t(kind);
  full.supported = supported ? 1 : 0;
  std::memcpy(out, &full, std::min(size, sizeof full));
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

bool register_device(const std::string& name, std::unique_ptr<Backend> backend) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const Device& d : r.devices)
    if (d.name == name) return false;
  add_locked(r, name, std::move(backend));
  return true;
}

Device* find_device(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (Device& d : r.devices)
    if (d.name == name) return &d;
  return nullptr;
}

std::vector<std::string> device_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  for (const Device& d : r.devices) out.push_back(d.name);
  return out;
}

const CounterDef* find_counter(Device* device, const std::string& name, std::string* message) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (const CounterDef* c = find_in(device->listed, name)) return c;
  if (const CounterDef* c = find_in(device->native, name)) return c;
  CounterDef native;
  std::string note;
  if (!name.empty() && device->backend->resolve_native(name, &native, &note)) {
    device->native.push_back(std::move(native));
    return &device->native.back();
  }
  // The three closest listed names; case differences count as one edit.
  std::vector<std::pair<size_t, std::string>> scored;
  for (const CounterDef& c : device->listed) {
    size_t d = edit_distance(name, c.name);
    if (lower(name) == lower(c.name)) d = std::min<size_t>(d, 1);
    scored.emplace_back(d, c.name);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> closest;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) closest.push_back(scored[i].second);
  *message = "unknown counter '" + name + "' on device '" + device->name + "'; did you mean: " +
             join(closest) + "?";
  if (!note.empty()) *message += " (" + note + ")";
  return nullptr;
}

epprof_status* build_config(const char* device_name, const char* const* names, size_t num_names,
                            Config* config) {
  const char* fn = "epprof_counter_config_create";
  if (!device_name) return base::null_argument(fn, "device");
  if (!names && num_names > 0) return base::null_argument(fn, "names");
  if (num_names == 0)
    return base::make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": no counter names given");
  Device* device = find_device(device_name);
  if (!device)
    return base::make_status(EPPROF_NOT_FOUND, std::string(fn) + ": unknown counter device '" +
                                                  device_name + "'; known: " + join(device_names()));
  Plan& plan = config->plan;
  std::set<std::string> seen;
  for (size_t i = 0; i < num_names; ++i) {
    if (!names[i])
      return base::make_status(EPPROF_INVALID_ARGUMENT,
                              std::string(fn) + ": names[" + std::to_string(i) + "] is NULL");
    std::string message;
    const CounterDef* c = find_counter(device, names[i], &message);
    if (!c) return base::make_status(EPPROF_INVALID_ARGUMENT, std::string(fn) + ": " + message);
    if (!seen.insert(c->name).second)
      return base::make_status(EPPROF_INVALID_ARGUMENT,
                              std::string(fn) + ": counter '" + c->name + "' is named twice");
    plan.counters.push_back(c);
  }
  // A ratio brings its inputs.
  for (size_t i = 0; i < plan.counters.size(); ++i) {
    const CounterDef* c = plan.counters[i];
    if (c->source != Source::Ratio) continue;
    for (const std::string& in : {c->numerator, c->denominator}) {
      if (seen.count(in)) continue;
      std::string message;
      const CounterDef* input = find_counter(device, in, &message);
      if (!input) {
        if (!c->supported) break;  // reported below with the ratio's own reason
        return base::make_status(EPPROF_INTERNAL, std::string(fn) + ": ratio '" + c->name +
                                                     "' lacks its input: " + message);
      }
      seen.insert(in);
      plan.counters.push_back(input);
    }
  }
  for (const CounterDef* c : plan.counters)
    if (!c->supported)
      return base::make_status(EPPROF_UNSUPPORTED, std::string(fn) + ": counter '" + c->name +
                                                      "' on device '" + device->name +
                                                      "': " + c->unsupported_reason);
  auto index_of = [&](const std::string& name) {
    for (size_t k = 0; k < plan.counters.size(); ++k)
      if (plan.counters[k]->name == name) return int(k);
    return -1;
  };
  plan.numerator_index.assign(plan.counters.size(), -1);
  plan.denominator_index.assign(plan.counters.size(), -1);
  for (size_t i = 0; i < plan.counters.size(); ++i) {
    if (plan.counters[i]->source != Source::Ratio) continue;
    plan.numerator_index[i] = index_of(plan.counters[i]->numerator);
    plan.denominator_index[i] = index_of(plan.counters[i]->denominator);
  }
  const std::string error = plan_passes(device->backend->num_programmable(), &plan);
  if (!error.empty())
    return base::make_status(EPPROF_UNSUPPORTED, std::string(fn) + ": cannot plan on device '" +
                                                    device->name + "': " + error);
  config->device = device;
  return nullptr;
}

}  // namespace epprof::counters
