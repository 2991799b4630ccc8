// The per-op summary `epprof run` prints: read back from the trace it just
// wrote, so the table and the trace always agree.
#pragma once

#include <cstdio>
#include <string>

namespace epprof::cli {

// Prints op, count, total ms, mean µs and % of model_run for the NODE events
// of the `max_runs` model_run events after the first `skip_runs` (warm-up),
// in time order. Returns false with *error set if the trace cannot be read.
bool print_op_table(const std::string& trace_path, int skip_runs, int max_runs, FILE* out, std::string* error);

}  // namespace epprof::cli
