// The process-wide registry of counter devices, and the configuration
// object behind epprof_counter_config_t. White-box tests use these
// directly (epprof_internal).
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "counters/backend.h"

namespace epprof::counters {

struct Device {
  std::string name;
  std::unique_ptr<Backend> backend;
  std::deque<CounterDef> listed;  // what epprof_counter_get_info enumerates
  std::deque<CounterDef> native;  // PMU-native events resolved by name, kept forever
};

// A planned counter set; shared by the contexts opened from it.
struct Config {
  Device* device = nullptr;
  Plan plan;
};

// Registers `backend` as device `name` (listing its counters plus the
// derived ones). Returns false if the name is taken. Thread-safe.
bool register_device(const std::string& name, std::unique_ptr<Backend> backend);

// The device named `name`, or nullptr. Thread-safe; devices live forever.
Device* find_device(const std::string& name);
std::vector<std::string> device_names();

// The counter `name` of `device`: a listed one or a PMU-native event the
// backend resolves. nullptr when unknown; then *message says so and names
// the closest known counters. Thread-safe.
const CounterDef* find_counter(Device* device, const std::string& name, std::string* message);

// Levenshtein distance (for "did you mean").
size_t edit_distance(const std::string& a, const std::string& b);

// Validates and plans `names` on `device`. Returns nullptr and fills
// *config, or a status (INVALID_ARGUMENT, NOT_FOUND, UNSUPPORTED). The
// MULTIPASS status is the caller's to raise.
epprof_status* build_config(const char* device, const char* const* names, size_t num_names,
                            Config* config);

}  // namespace epprof::counters
