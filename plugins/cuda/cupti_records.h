// CUPTI activity records → the plain structs of records.h. Needs CUPTI's
// headers only (no CUPTI call), so tests build CUPTI records by hand and
// parse them without a GPU.
#pragma once
#include <cupti_activity.h>

#include "records.h"

namespace epprof::cuda {

// The activity kinds the EP enables, in the order it enables them. The
// RUNTIME and DRIVER API kinds are there for the join: CUPTI writes an
// external-correlation record only in front of an API record (records.h).
constexpr CUpti_ActivityKind kTracedKinds[] = {
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,    CUPTI_ACTIVITY_KIND_MEMCPY,  CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_MEMORY2};

// The name of an API call, or null: CUPTI's cuptiGetCallbackName where the
// plugin has it. Called for each API record parsed.
using CallbackNamer = const char* (*)(bool driver, uint32_t cbid);

// Appends `record` to `batch` if it is of a traced kind; returns whether it
// was. The kernel name is copied (CUPTI owns the string). May throw
// std::bad_alloc.
bool parse_cupti_record(const CUpti_Activity* record, RecordBatch* batch, CallbackNamer namer = nullptr);

}  // namespace epprof::cuda
