/* A test plugin built "for a newer ABI": its epprof_plugin says
 * EPPROF_EP_ABI_VERSION + 1. The host must refuse it at load with a message
 * naming both versions, and must never call its create_profiler. */
#include <stddef.h>

#include "epprof/ep_profiler.h"

#define TEST_EXPORT __attribute__((visibility("default")))

static epprof_status* newer_create_profiler(epprof_plugin* self, epprof_ep_profiler** out) {
  (void)self;
  (void)out;
  return NULL; /* never reached: the host refuses the plugin first */
}

/* Static, so a host that does or does not call release leaks nothing. */
static void newer_release(epprof_plugin* self) { (void)self; }

static epprof_plugin newer_plugin = {EPPROF_EP_ABI_VERSION + 1u, "newer_abi",
                                     newer_create_profiler, newer_release};

TEST_EXPORT epprof_status* epprof_plugin_entry(const epprof_host_api* host,
                                               uint32_t host_abi_version, epprof_plugin** out);

TEST_EXPORT epprof_status* epprof_plugin_entry(const epprof_host_api* host,
                                               uint32_t host_abi_version, epprof_plugin** out) {
  (void)host;
  (void)host_abi_version;
  *out = &newer_plugin;
  return NULL;
}
