// `epprof report --by memory`: what a trace recorded with memory profiling
// (epprof run --memory, or a host's epprof_memory_alloc / _free) says about
// memory, over the measured runs.
#pragma once

#include <string>
#include <vector>

#include "report/format.h"
#include "report/trace_model.h"

namespace epprof::report {

struct MemoryReport {
  bool any = false;  // the trace has memory data at all
  // Per process and device: the peak over the whole scope, bytes in use at
  // its end, and the leak line (live at the end, allocated inside a run).
  struct Device {
    int64_t pid = 0;
    std::string device;
    double peak = 0, end = 0, leaked = 0, leaked_allocations = 0;
  };
  // Per measured run: its peak in use, and the node running then.
  struct RunPeak {
    int64_t pid = 0;
    int run_index = 0;
    std::string device, node, op;
    double peak = 0;
  };
  // Per op and per node, summed over the measured runs' executions:
  // bytes allocated, freed, and activation bytes (allocated and still live
  // when the node ended: its outputs).
  struct Usage {
    std::string key, op;
    uint64_t count = 0;
    double allocated = 0, freed = 0, activation = 0;
  };
  std::vector<Device> devices;
  std::vector<RunPeak> runs;
  std::vector<Usage> ops;    // by allocated, largest first
  std::vector<Usage> nodes;  // by activation, largest first
};

MemoryReport build_memory_report(const Trace& trace);
std::vector<Table> memory_tables(const MemoryReport& r);
// text, csv or json; says so when the trace has no memory data.
void write_memory_report(const MemoryReport& r, const std::string& source, Format f, std::string* out);

}  // namespace epprof::report
