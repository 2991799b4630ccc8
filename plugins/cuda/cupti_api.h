// The CUPTI calls the CUDA EP makes, as a table of function pointers.
// The plugin fills it by opening libcupti at run time (load_cupti), so the
// EP loads and runs where libcupti is missing; tests fill it with fakes
// that behave as CUPTI does, so the source's buffer handling, locking and
// correlation stack run without a GPU.
#pragma once
#include <cupti_activity.h>
#include <cupti_callbacks.h>

#include <string>

namespace epprof::cuda {

struct CuptiApi {
  CUptiResult (*activity_register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) =
      nullptr;
  CUptiResult (*activity_register_timestamp_callback)(CUpti_TimestampCallbackFunc) = nullptr;
  CUptiResult (*activity_enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*activity_disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*activity_flush_all)(uint32_t) = nullptr;
  CUptiResult (*activity_get_next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*activity_get_num_dropped_records)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult (*activity_push_external_correlation_id)(CUpti_ExternalCorrelationKind, uint64_t) = nullptr;
  CUptiResult (*activity_pop_external_correlation_id)(CUpti_ExternalCorrelationKind, uint64_t*) = nullptr;
  CUptiResult (*get_result_string)(CUptiResult, const char**) = nullptr;                       // optional
  CUptiResult (*get_callback_name)(CUpti_CallbackDomain, uint32_t, const char**) = nullptr;  // optional
};

// Opens `library` (dlopen; the default tries libcupti.so.13, then
// libcupti.so) and fills `api`. False with `error` naming the library and
// dlopen's reason, or the missing symbol; `api` is then untouched. The
// library stays open for the life of the process.
bool load_cupti(CuptiApi* api, std::string* error, const char* library = nullptr);

// "CUPTI_ERROR_NOT_INITIALIZED", through api.get_result_string when there
// is one, else "CUPTI error 15".
std::string cupti_result_name(const CuptiApi& api, CUptiResult result);

}  // namespace epprof::cuda
