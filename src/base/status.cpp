#include "base/c_enum.h"
#include "base/status.h"

namespace epprof::base {
namespace {

epprof_status g_oom{EPPROF_OUT_OF_MEMORY, "epprof: out of memory"};

}  // namespace

epprof_status* out_of_memory_status() noexcept { return &g_oom; }

epprof_status* make_status(epprof_status_code code, const std::string& message) noexcept {
  if (code == EPPROF_OK) return nullptr;
  try {
    return new epprof_status{code, message};
  } catch (...) {
    return &g_oom;
  }
}

}  // namespace epprof::base

extern "C" {

EPPROF_API epprof_status* epprof_status_create(epprof_status_code code, const char* message) {
  return epprof::base::make_status(code, message ? message : "");
}

EPPROF_API epprof_status_code epprof_status_get_code(const epprof_status* status) {
  return status ? status->code : EPPROF_OK;
}

EPPROF_API const char* epprof_status_get_message(const epprof_status* status) {
  return status ? status->message.c_str() : "";
}

EPPROF_API void epprof_status_release(epprof_status* status) {
  if (status != epprof::base::out_of_memory_status()) delete status;
}

EPPROF_API const char* epprof_status_code_name(epprof_status_code code) {
  static const char* const kNames[] = {
      "OK",           "INVALID_ARGUMENT",   "NOT_FOUND",    "FAILED_PRECONDITION",
      "VERSION_MISMATCH", "IO_ERROR",       "OUT_OF_MEMORY", "RESOURCE_EXHAUSTED",
      "PLUGIN_ERROR", "UNSUPPORTED",        "INTERNAL",      "MULTIPASS"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == EPPROF_MULTIPASS + 1,
                "every status code has a name");
  const uint32_t c = epprof::base::c_enum_value(code);
  if (c >= sizeof(kNames) / sizeof(kNames[0])) return "UNKNOWN";
  return kNames[c];
}

}  // extern "C"
