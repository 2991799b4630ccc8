/* A test plugin whose epprof_plugin lacks a required slot: create_profiler
 * is NULL. The host must refuse it at load with a message naming the slot. */
#include <stddef.h>

#include "epprof/ep_profiler.h"

#define TEST_EXPORT __attribute__((visibility("default")))

/* Static, so a host that does or does not call release leaks nothing. */
static void missing_release(epprof_plugin* self) { (void)self; }

static epprof_plugin missing_plugin = {EPPROF_EP_ABI_VERSION, "missing_slot",
                                       NULL /* create_profiler */, missing_release};

TEST_EXPORT epprof_status* epprof_plugin_entry(const epprof_host_api* host,
                                               uint32_t host_abi_version, epprof_plugin** out);

TEST_EXPORT epprof_status* epprof_plugin_entry(const epprof_host_api* host,
                                               uint32_t host_abi_version, epprof_plugin** out) {
  (void)host;
  (void)host_abi_version;
  *out = &missing_plugin;
  return NULL;
}
