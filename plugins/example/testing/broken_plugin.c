/* Test plugins the host must refuse at load, from one source:
 * - BROKEN_NEWER_ABI: the epprof_plugin is "for a newer ABI" and says
 *   EPPROF_EP_ABI_VERSION + 1. The refusal names both versions, and the
 *   host never calls its create_profiler.
 * - BROKEN_MISSING_SLOT: a required slot, create_profiler, is NULL. The
 *   refusal names the slot. */
#include <stddef.h>

#include "epprof/ep_profiler.h"

#define TEST_EXPORT __attribute__((visibility("default")))

#if defined(BROKEN_NEWER_ABI)
static epprof_status* broken_create_profiler(epprof_plugin* self, epprof_ep_profiler** out) {
  (void)self;
  (void)out;
  return NULL; /* never reached: the host refuses the plugin first */
}
#define BROKEN_PLUGIN {EPPROF_EP_ABI_VERSION + 1u, "newer_abi", broken_create_profiler, broken_release}
#elif defined(BROKEN_MISSING_SLOT)
#define BROKEN_PLUGIN {EPPROF_EP_ABI_VERSION, "missing_slot", NULL /* create_profiler */, broken_release}
#else
#error "define BROKEN_NEWER_ABI or BROKEN_MISSING_SLOT"
#endif

/* Static, so a host that does or does not call release leaks nothing. */
static void broken_release(epprof_plugin* self) { (void)self; }

static epprof_plugin broken_plugin = BROKEN_PLUGIN;

TEST_EXPORT epprof_status* epprof_plugin_entry(const epprof_host_api* host, uint32_t host_abi_version,
                                               epprof_plugin** out);

TEST_EXPORT epprof_status* epprof_plugin_entry(const epprof_host_api* host, uint32_t host_abi_version,
                                               epprof_plugin** out) {
  (void)host;
  (void)host_abi_version;
  *out = &broken_plugin;
  return NULL;
}
