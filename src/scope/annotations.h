// Args attached after the fact to a profiler's host event, by correlation
// id (epprof_event_annotate): counter values read around a dispatch, known
// only once the dispatch (and its replays) completed, after the node event
// itself was recorded. Stored per profiler until its trace is written.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "export/trace_sink.h"

namespace epprof::scope {

using Annotations = std::unordered_map<uint64_t, std::vector<exporter::ExtraArg>>;

// Appends `args` to the event `correlation_id` of the profiler at `owner`.
void annotate(const void* owner, uint64_t correlation_id, std::vector<exporter::ExtraArg> args);

// Removes and returns everything stored for `owner` (empty if nothing).
Annotations take_annotations(const void* owner);

}  // namespace epprof::scope
