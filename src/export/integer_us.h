// How a slice is written in integer microseconds, as ONNX Runtime writes
// them: header-only, so the Chrome trace sink and the report library's
// converters (which link no libepprof code) round alike.
#pragma once

#include <cstdint>

namespace epprof::exporter {

// The nearest µs, halves up, for negative times too (floor division).
inline int64_t nearest_us(int64_t ns) {
  const int64_t n = ns + 500;
  return n >= 0 ? n / 1000 : -((-(n + 1)) / 1000) - 1;
}

struct IntegerSlice {
  int64_t ts, dur;  // µs
};

// Both ends round to the nearest µs, so totals stay unbiased and a slice
// inside another stays inside it. A slice of nonzero length that would
// round to nothing is written 1 µs long (the writer adds its exact length
// as a "dur_ns" arg), so viewers still draw it.
inline IntegerSlice integer_slice(int64_t ts_ns, int64_t dur_ns) {
  const int64_t ts = nearest_us(ts_ns);
  int64_t dur = nearest_us(ts_ns + dur_ns) - ts;
  if (dur == 0 && dur_ns > 0) dur = 1;
  return {ts, dur};
}

// Whether a slice written in integer µs needs its "dur_ns" arg.
inline bool needs_exact_dur(int64_t dur_ns) { return dur_ns > 0 && dur_ns < 1000; }

}  // namespace epprof::exporter
