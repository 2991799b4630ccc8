// Execution providers loaded from plugin shared libraries that implement the
// C ABI of epprof/ep_plugin.h.
//
// Threading, as the runtime calls the plugin: claims and create_kernel run
// on the thread that creates the Session; compute runs on the thread that
// runs the node, inside that node's observer node_begin/node_end, so a
// profiling observer's start_event/stop_event for the node reach the EP
// profiler on the same thread and the EP tags the device work it issues in
// compute with the node's correlation id. Kernels and the plugin stay alive
// as long as any Session, kernel or profiler plugin made from them.
#pragma once
#include <memory>
#include <string>

#include "epprof/ep_profiler.h"
#include "epprof/rt/execution_provider.h"

namespace epprof::rt {

class PluginExecutionProvider : public ExecutionProvider {
 public:
  // Path of the shared library it was loaded from.
  virtual const std::string& path() const = 0;

  // Whether the plugin has a create_profiler slot.
  virtual bool has_profiler() const = 0;

  // A new epprof_plugin whose create_profiler forwards to this EP's
  // create_profiler slot, for epprof_plugin_register (which takes ownership
  // and releases it at unload). It keeps the EP's library loaded until
  // then. Returns nullptr when the EP has no profiler.
  virtual epprof_plugin* make_profiler_plugin() const = 0;
};

// Loads the EP plugin at `path` (dlopen, entry symbol, version and slot
// checks). Throws Error(ErrorKind::Io) naming the path and the reason: the
// library cannot be loaded, lacks the entry symbol, was built for a newer
// ABI (both versions named), lacks a required slot (named), or its entry
// function failed (the plugin's message, e.g. "no OpenCL device").
std::shared_ptr<PluginExecutionProvider> load_plugin_ep(const std::string& path);

}  // namespace epprof::rt
