#include "cupti_api.h"

#include <dlfcn.h>

namespace epprof::cuda {

namespace {

template <class Fn>
bool bind(void* lib, const char* symbol, Fn* out, std::string* missing) {
  void* p = dlsym(lib, symbol);
  if (!p) {
    if (missing->empty()) *missing = symbol;
    return false;
  }
  *out = reinterpret_cast<Fn>(p);
  return true;
}

}  // namespace

bool load_cupti(CuptiApi* api, std::string* error, const char* library) {
  const char* const kDefaults[] = {"libcupti.so.13", "libcupti.so"};
  void* lib = nullptr;
  std::string tried;
  if (library) {
    lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!lib) tried = dlerror();
  } else {
    for (const char* name : kDefaults) {
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
      if (!tried.empty()) tried += "; ";
      tried += dlerror();
    }
  }
  if (!lib) {
    *error = "CUPTI is not loadable (" + tried + ")";
    return false;
  }
  CuptiApi a;
  std::string missing;
  bind(lib, "cuptiActivityRegisterCallbacks", &a.activity_register_callbacks, &missing);
  bind(lib, "cuptiActivityRegisterTimestampCallback", &a.activity_register_timestamp_callback, &missing);
  bind(lib, "cuptiActivityEnable", &a.activity_enable, &missing);
  bind(lib, "cuptiActivityDisable", &a.activity_disable, &missing);
  bind(lib, "cuptiActivityFlushAll", &a.activity_flush_all, &missing);
  bind(lib, "cuptiActivityGetNextRecord", &a.activity_get_next_record, &missing);
  bind(lib, "cuptiActivityGetNumDroppedRecords", &a.activity_get_num_dropped_records, &missing);
  bind(lib, "cuptiActivityPushExternalCorrelationId", &a.activity_push_external_correlation_id, &missing);
  bind(lib, "cuptiActivityPopExternalCorrelationId", &a.activity_pop_external_correlation_id, &missing);
  std::string optional;
  bind(lib, "cuptiGetResultString", &a.get_result_string, &optional);
  bind(lib, "cuptiGetCallbackName", &a.get_callback_name, &optional);
  if (!missing.empty()) {
    *error = "the CUPTI library loaded lacks " + missing;
    dlclose(lib);
    return false;
  }
  *api = a;
  return true;  // never closed: CUPTI calls back into the process until it exits
}

std::string cupti_result_name(const CuptiApi& api, CUptiResult result) {
  const char* s = nullptr;
  if (api.get_result_string && api.get_result_string(result, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

}  // namespace epprof::cuda
