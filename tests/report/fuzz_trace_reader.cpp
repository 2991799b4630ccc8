// libFuzzer target: the trace reader and the analyses on top of it must
// reject any input with an error, never crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "report/reader.h"
#include "report/report.h"
#include "report/trace_model.h"
#include "report/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  epprof::report::Trace trace;
  std::string error;
  if (epprof::report::load_trace_buffer(text, {}, &trace, &error)) {
    for (auto by : {epprof::report::GroupBy::kOp, epprof::report::GroupBy::kKernel})
      (void)epprof::report::build_report(trace, {by, 0});
  }
  (void)epprof::report::validate_trace_buffer(std::string(text));
  return 0;
}
