// Derived counters: measures the host supplies per dispatch (libepprof does
// not know what a node computes; the host's cost model does) and ratios of
// counters of the same configuration.
#include "counters/backend.h"

namespace epprof::counters {
namespace {

CounterDef host(const std::string& device, const char* name, const char* unit, Source source,
                const char* description) {
  CounterDef c = CounterDef::named(name, unit, "host", device, EPPROF_COUNTER_DERIVED, description);
  c.source = source;
  return c;
}

CounterDef ratio(const std::string& device, const char* name, const char* unit, const char* num,
                 const char* den, double scale, const char* description) {
  CounterDef c = CounterDef::named(name, unit, "ratio", device, EPPROF_COUNTER_DERIVED, description);
  c.source = Source::Ratio;
  c.numerator = num;
  c.denominator = den;
  c.scale = scale;
  return c;
}

}  // namespace

std::vector<CounterDef> derived_counters(const std::string& device,
                                         const std::vector<CounterDef>& device_counters) {
  std::vector<CounterDef> out;
  out.push_back(host(device, "duration_ns", "ns", Source::HostDuration,
                     "Wall time of the dispatch on the counting thread, or the duration the host "
                     "supplies (EPPROF_MEASURE_DURATION)."));
  out.push_back(host(device, "flops", "flop", Source::HostFlops,
                     "Floating-point operations of the dispatch, from the host's cost model "
                     "(EPPROF_MEASURE_FLOPS); a multiply-add counts 2."));
  out.push_back(host(device, "bytes", "byte", Source::HostBytes,
                     "Bytes the dispatch reads and writes (inputs plus outputs), from the host's "
                     "cost model (EPPROF_MEASURE_BYTES)."));
  out.push_back(ratio(device, "flop_per_s", "flop/s", "flops", "duration_ns", 1e9,
                      "Achieved floating-point rate: flops / duration_ns * 1e9."));
  out.push_back(ratio(device, "bytes_per_s", "byte/s", "bytes", "duration_ns", 1e9,
                      "Achieved memory traffic rate: bytes / duration_ns * 1e9."));
  out.push_back(ratio(device, "flop_per_byte", "flop/byte", "flops", "bytes", 1.0,
                      "Arithmetic intensity: flops / bytes."));
  CounterDef ipc = ratio(device, "ipc", "instructions/cycle", "instructions", "cycles", 1.0,
                         "Instructions per cycle: instructions / cycles, counted in the same pass.");
  ipc.supported = false;
  ipc.unsupported_reason = "unsupported on this device: it counts no 'instructions' and 'cycles'";
  const CounterDef* instr = nullptr;
  const CounterDef* cycles = nullptr;
  for (const CounterDef& c : device_counters) {
    if (c.name == "instructions") instr = &c;
    if (c.name == "cycles") cycles = &c;
  }
  if (instr && cycles) {
    const CounterDef* bad = !instr->supported ? instr : !cycles->supported ? cycles : nullptr;
    ipc.supported = bad == nullptr;
    ipc.unsupported_reason = bad ? "needs '" + bad->name + "': " + bad->unsupported_reason : "";
  }
  out.push_back(ipc);
  return out;
}

}  // namespace epprof::counters
