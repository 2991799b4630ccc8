#include "cupti_records.h"

namespace epprof::cuda {

namespace {

// A Record whose DeviceWork is CUPTI's record `c`'s.
template <class Record, class Cupti>
Record device_record(const Cupti& c) {
  Record r;
  static_cast<DeviceWork&>(r) = {c.correlationId, c.start, c.end, c.deviceId, c.contextId, c.streamId};
  return r;
}

}  // namespace

bool parse_cupti_record(const CUpti_Activity* record, RecordBatch* batch, CallbackNamer namer) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      ApiRecord r;
      r.correlation_id = a->correlationId;
      r.start_ns = a->start;
      r.end_ns = a->end;
      r.cbid = a->cbid;
      r.thread_id = a->threadId;
      r.driver = record->kind == CUPTI_ACTIVITY_KIND_DRIVER;
      r.name = namer ? namer(r.driver, r.cbid) : nullptr;
      batch->api.push_back(r);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      KernelRecord r = device_record<KernelRecord>(*k);
      r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
      r.block[0] = k->blockX, r.block[1] = k->blockY, r.block[2] = k->blockZ;
      r.static_shared_bytes = k->staticSharedMemory;
      r.dynamic_shared_bytes = k->dynamicSharedMemory;
      r.registers_per_thread = k->registersPerThread;
      if (k->name) r.name = k->name;
      batch->kernels.push_back(std::move(r));
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      MemcpyRecord r = device_record<MemcpyRecord>(*m);
      r.runtime_correlation_id = m->runtimeCorrelationId;
      r.bytes = m->bytes;
      r.copy_kind = m->copyKind;
      batch->memcpys.push_back(r);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      MemsetRecord r = device_record<MemsetRecord>(*m);
      r.bytes = m->bytes;
      r.value = m->value;
      batch->memsets.push_back(r);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(record);
      if (m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
          m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
        return true;  // of the kind, but nothing to report
      MemoryRecord r;
      r.correlation_id = m->correlationId;
      r.timestamp_ns = m->timestamp;
      r.address = m->address;
      r.bytes = m->bytes;
      r.release = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
      r.device_id = m->deviceId;
      r.stream_id = m->streamId;
      batch->memory.push_back(r);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      batch->external.push_back(
          ExternalCorrelationRecord{static_cast<uint32_t>(e->externalKind), e->externalId, e->correlationId});
      return true;
    }
    default:
      return false;
  }
}

static_assert(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 == kExternalKindEpprof, "records.h mirrors CUPTI's kind");
static_assert(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD == static_cast<int>(CopyKind::HtoD) &&
                  CUPTI_ACTIVITY_MEMCPY_KIND_DTOH == static_cast<int>(CopyKind::DtoH) &&
                  CUPTI_ACTIVITY_MEMCPY_KIND_DTOD == static_cast<int>(CopyKind::DtoD) &&
                  CUPTI_ACTIVITY_MEMCPY_KIND_PTOP == static_cast<int>(CopyKind::PtoP),
              "CopyKind mirrors CUpti_ActivityMemcpyKind");

}  // namespace epprof::cuda
