// Args attached after the fact to a profiler's host event, by correlation
// id (epprof_event_annotate): counter values read around a dispatch, known
// only once the dispatch (and its replays) completed, after the node event
// itself was recorded. Stored per recording (a profiler's, a session's)
// until its trace is written.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "epprof/event.h"
#include "epprof/status.h"
#include "export/trace_sink.h"

namespace epprof::core {
class Recording;
}

namespace epprof::scope {

using Annotations = std::unordered_map<uint64_t, std::vector<exporter::ExtraArg>>;

// The C API's args as annotations: NULL, or INVALID_ARGUMENT naming the
// arg and the problem, `fn` first (a key or name value that is not
// interned, an unknown type, a NULL string). A STRING holding a number is a
// number (it also becomes a counter track).
epprof_status* annotation_args(const char* fn, const epprof_arg* args, size_t num_args,
                               std::vector<exporter::ExtraArg>* out);

// Appends `args` to the event `correlation_id` of `owner`.
void annotate(const core::Recording* owner, uint64_t correlation_id, std::vector<exporter::ExtraArg> args);

// Removes and returns everything stored for `owner` (empty if nothing). A
// recording destroyed unwritten has its annotations taken, so a later one
// at the same address starts with none.
Annotations take_annotations(const core::Recording* owner);

}  // namespace epprof::scope
