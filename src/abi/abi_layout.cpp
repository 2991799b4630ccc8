// Pins the layout of every public struct, version by version: reordering or
// resizing a field fails the build instead of breaking plugins and hosts.
#include <cstddef>

#include "epprof/epprof.h"

#define EPPROF_PIN(type, field, offset) \
  static_assert(offsetof(type, field) == (offset), #type "." #field " moved")

// epprof_ep_profiler, ABI version 1 (48 bytes).
EPPROF_PIN(epprof_ep_profiler, abi_version, 0);
EPPROF_PIN(epprof_ep_profiler, start_profiling, 8);
EPPROF_PIN(epprof_ep_profiler, start_event, 16);
EPPROF_PIN(epprof_ep_profiler, stop_event, 24);
EPPROF_PIN(epprof_ep_profiler, end_profiling, 32);
EPPROF_PIN(epprof_ep_profiler, release, 40);
// Version 2 appends host_start.
EPPROF_PIN(epprof_ep_profiler, host_start, 48);
static_assert(sizeof(epprof_ep_profiler) == 56, "epprof_ep_profiler v2 size");

// epprof_plugin, ABI version 1.
EPPROF_PIN(epprof_plugin, abi_version, 0);
EPPROF_PIN(epprof_plugin, name, 8);
EPPROF_PIN(epprof_plugin, create_profiler, 16);
EPPROF_PIN(epprof_plugin, release, 24);
static_assert(sizeof(epprof_plugin) == 32, "epprof_plugin v1 size");

// epprof_host_api, ABI version 1.
EPPROF_PIN(epprof_host_api, abi_version, 0);
EPPROF_PIN(epprof_host_api, status_create, 8);
EPPROF_PIN(epprof_host_api, status_release, 16);
EPPROF_PIN(epprof_host_api, status_get_code, 24);
EPPROF_PIN(epprof_host_api, status_get_message, 32);
EPPROF_PIN(epprof_host_api, clock_now_ns, 40);
EPPROF_PIN(epprof_host_api, event_create, 48);
EPPROF_PIN(epprof_host_api, event_release, 56);
EPPROF_PIN(epprof_host_api, event_get_category, 64);
EPPROF_PIN(epprof_host_api, event_get_name, 72);
EPPROF_PIN(epprof_host_api, event_get_timing, 80);
EPPROF_PIN(epprof_host_api, event_get_correlation_id, 88);
EPPROF_PIN(epprof_host_api, event_arg_count, 96);
EPPROF_PIN(epprof_host_api, event_get_arg, 104);
EPPROF_PIN(epprof_host_api, event_find_arg, 112);
EPPROF_PIN(epprof_host_api, sink_append, 120);
EPPROF_PIN(epprof_host_api, sink_set_metadata, 128);
EPPROF_PIN(epprof_host_api, sink_set_track_name, 136);
static_assert(sizeof(epprof_host_api) == 144, "epprof_host_api v1 size");

// Caller-filled structs grow at the end only.
EPPROF_PIN(epprof_profiler_config, size, 0);
EPPROF_PIN(epprof_profiler_config, trace_path, 8);
EPPROF_PIN(epprof_profiler_config, scope_name, 16);
EPPROF_PIN(epprof_profiler_config, memory_budget_bytes, 24);
EPPROF_PIN(epprof_profiler_config, disk_budget_bytes, 32);
EPPROF_PIN(epprof_profiler_config, spill_directory, 40);
EPPROF_PIN(epprof_profiler_config, timestamp_format, 48);
EPPROF_PIN(epprof_profiler_config, trace_format, 52);
// Appends filter.
EPPROF_PIN(epprof_profiler_config, filter, 56);
static_assert(sizeof(epprof_profiler_config) == 64, "epprof_profiler_config v2 size");

EPPROF_PIN(epprof_node_desc, size, 0);
EPPROF_PIN(epprof_node_desc, name, 8);
EPPROF_PIN(epprof_node_desc, op_type, 12);
EPPROF_PIN(epprof_node_desc, index, 16);
EPPROF_PIN(epprof_node_desc, ep, 20);
static_assert(sizeof(epprof_node_desc) == 24, "epprof_node_desc v1 size");
EPPROF_PIN(epprof_trace_filter, size, 0);
EPPROF_PIN(epprof_trace_filter, categories, 8);
EPPROF_PIN(epprof_trace_filter, reserved, 12);
EPPROF_PIN(epprof_trace_filter, op_types, 16);
EPPROF_PIN(epprof_trace_filter, num_op_types, 24);
EPPROF_PIN(epprof_trace_filter, node_names, 32);
EPPROF_PIN(epprof_trace_filter, num_node_names, 40);
EPPROF_PIN(epprof_trace_filter, node_name_regex, 48);
EPPROF_PIN(epprof_trace_filter, ep_names, 56);
EPPROF_PIN(epprof_trace_filter, num_ep_names, 64);
EPPROF_PIN(epprof_trace_filter, kernel_name_regex, 72);
static_assert(sizeof(epprof_trace_filter) == 80, "epprof_trace_filter v1 size");
EPPROF_PIN(epprof_trace_stats, size, 0);
EPPROF_PIN(epprof_trace_stats, host_events, 8);
EPPROF_PIN(epprof_trace_stats, device_events, 16);
EPPROF_PIN(epprof_trace_stats, dropped_events, 24);
EPPROF_PIN(epprof_trace_stats, unattributed_device_events, 32);
EPPROF_PIN(epprof_trace_stats, spilled_bytes, 40);
EPPROF_PIN(epprof_trace_stats, plugin_errors, 48);
// Appends filtered_events.
EPPROF_PIN(epprof_trace_stats, filtered_events, 56);
static_assert(sizeof(epprof_trace_stats) == 64, "epprof_trace_stats v2 size");
EPPROF_PIN(epprof_arg, key, 0);
EPPROF_PIN(epprof_arg, type, 4);
EPPROF_PIN(epprof_arg, value, 8);
static_assert(sizeof(epprof_arg) == 16, "epprof_arg size");

// Category values are ONNX Runtime's where they overlap.
static_assert(EPPROF_CATEGORY_SESSION == 0 && EPPROF_CATEGORY_NODE == 1 &&
                  EPPROF_CATEGORY_KERNEL == 2 && EPPROF_CATEGORY_API == 3,
              "categories keep ONNX Runtime's numbering");

// epprof/counters.h: caller-filled and caller-read structs grow at the end only.
EPPROF_PIN(epprof_counter_info, size, 0);
EPPROF_PIN(epprof_counter_info, name, 8);
EPPROF_PIN(epprof_counter_info, description, 16);
EPPROF_PIN(epprof_counter_info, unit, 24);
EPPROF_PIN(epprof_counter_info, backend, 32);
EPPROF_PIN(epprof_counter_info, device, 40);
EPPROF_PIN(epprof_counter_info, unsupported_reason, 48);
EPPROF_PIN(epprof_counter_info, kind, 56);
EPPROF_PIN(epprof_counter_info, supported, 60);
static_assert(sizeof(epprof_counter_info) == 64, "epprof_counter_info v1 size");
EPPROF_PIN(epprof_dispatch_measures, size, 0);
EPPROF_PIN(epprof_dispatch_measures, known, 8);
EPPROF_PIN(epprof_dispatch_measures, duration_ns, 16);
EPPROF_PIN(epprof_dispatch_measures, flops, 24);
EPPROF_PIN(epprof_dispatch_measures, bytes, 32);
static_assert(sizeof(epprof_dispatch_measures) == 40, "epprof_dispatch_measures v1 size");
EPPROF_PIN(epprof_counter_value, value, 0);
EPPROF_PIN(epprof_counter_value, raw, 8);
EPPROF_PIN(epprof_counter_value, time_enabled_ns, 16);
EPPROF_PIN(epprof_counter_value, time_running_ns, 24);
EPPROF_PIN(epprof_counter_value, flags, 32);
EPPROF_PIN(epprof_counter_value, pass, 36);
static_assert(sizeof(epprof_counter_value) == 40, "epprof_counter_value size");

// epprof/session.h: records and caller-filled structs grow at the end only.
EPPROF_PIN(epprof_record, size, 0);
EPPROF_PIN(epprof_record, kind, 4);
EPPROF_PIN(epprof_record, category, 8);
EPPROF_PIN(epprof_record, node_index, 12);
EPPROF_PIN(epprof_record, correlation_id, 16);
EPPROF_PIN(epprof_record, ts_ns, 24);
EPPROF_PIN(epprof_record, dur_ns, 32);
EPPROF_PIN(epprof_record, name, 40);
EPPROF_PIN(epprof_record, node, 44);
EPPROF_PIN(epprof_record, op_type, 48);
EPPROF_PIN(epprof_record, ep, 52);
EPPROF_PIN(epprof_record, kernel, 56);
EPPROF_PIN(epprof_record, tid, 60);
EPPROF_PIN(epprof_record, run_id, 64);
EPPROF_PIN(epprof_record, counter_flags, 72);
EPPROF_PIN(epprof_record, reserved, 76);
EPPROF_PIN(epprof_record, value, 80);
EPPROF_PIN(epprof_record, time_enabled_ns, 88);
EPPROF_PIN(epprof_record, time_running_ns, 96);
static_assert(sizeof(epprof_record) == 104, "epprof_record: the first growable layout");
static_assert(sizeof(epprof_record) == EPPROF_RECORD_MIN_SIZE, "EPPROF_RECORD_MIN_SIZE is that layout's size");
EPPROF_PIN(epprof_session_config, size, 0);
EPPROF_PIN(epprof_session_config, replay_mode, 8);
EPPROF_PIN(epprof_session_config, buffer_policy, 12);
EPPROF_PIN(epprof_session_config, buffer_bytes, 16);
EPPROF_PIN(epprof_session_config, watermark_bytes, 24);
EPPROF_PIN(epprof_session_config, callback, 32);
EPPROF_PIN(epprof_session_config, callback_user_data, 40);
EPPROF_PIN(epprof_session_config, trace_path, 48);
EPPROF_PIN(epprof_session_config, categories, 56);
EPPROF_PIN(epprof_session_config, record_kinds, 60);
EPPROF_PIN(epprof_session_config, op_types, 64);
EPPROF_PIN(epprof_session_config, num_op_types, 72);
EPPROF_PIN(epprof_session_config, node_names, 80);
EPPROF_PIN(epprof_session_config, num_node_names, 88);
EPPROF_PIN(epprof_session_config, node_name_regex, 96);
EPPROF_PIN(epprof_session_config, ep_names, 104);
EPPROF_PIN(epprof_session_config, num_ep_names, 112);
EPPROF_PIN(epprof_session_config, kernel_name_regex, 120);
EPPROF_PIN(epprof_session_config, counter_names, 128);
EPPROF_PIN(epprof_session_config, num_counter_names, 136);
EPPROF_PIN(epprof_session_config, dispatch_skip, 144);
EPPROF_PIN(epprof_session_config, dispatch_count, 152);
EPPROF_PIN(epprof_session_config, dispatch_callback, 160);
EPPROF_PIN(epprof_session_config, dispatch_user_data, 168);
EPPROF_PIN(epprof_session_config, counter_record_callback, 176);
EPPROF_PIN(epprof_session_config, counter_record_user_data, 184);
EPPROF_PIN(epprof_session_config, record_size, 192);
static_assert(sizeof(epprof_session_config) == 200, "epprof_session_config: record_size added");
EPPROF_PIN(epprof_session_stats, size, 0);
EPPROF_PIN(epprof_session_stats, records_delivered, 8);
EPPROF_PIN(epprof_session_stats, counter_records, 80);
EPPROF_PIN(epprof_dispatch_info, size, 0);
EPPROF_PIN(epprof_dispatch_info, correlation_id, 8);
EPPROF_PIN(epprof_dispatch_info, node_index, 16);
EPPROF_PIN(epprof_dispatch_info, node_name, 24);
EPPROF_PIN(epprof_dispatch_info, device, 56);
EPPROF_PIN(epprof_dispatch_info, queue, 64);
EPPROF_PIN(epprof_dispatch_info, run_id, 72);
EPPROF_PIN(epprof_dispatch_info, node_name_id, 80);
EPPROF_PIN(epprof_dispatch_info, kernel_name_id, 92);
static_assert(sizeof(epprof_dispatch_info) == 96, "epprof_dispatch_info v1 size");
EPPROF_PIN(epprof_dispatch_request, session, 0);
EPPROF_PIN(epprof_dispatch_request, config, 8);
EPPROF_PIN(epprof_dispatch_request, replay_mode, 16);
EPPROF_PIN(epprof_dispatch_request, pass, 20);

// epprof/capture.h: caller-filled structs grow at the end only.
EPPROF_PIN(epprof_listener_config, size, 0);
EPPROF_PIN(epprof_listener_config, socket_dir, 8);
EPPROF_PIN(epprof_listener_config, request_timeout_ms, 16);
EPPROF_PIN(epprof_listener_config, reserved, 20);
static_assert(sizeof(epprof_listener_config) == 24, "epprof_listener_config v1 size");
EPPROF_PIN(epprof_capture_request, size, 0);
EPPROF_PIN(epprof_capture_request, request_id, 8);
EPPROF_PIN(epprof_capture_request, runs, 16);
EPPROF_PIN(epprof_capture_request, duration_ns, 24);
EPPROF_PIN(epprof_capture_request, trace_path, 32);
EPPROF_PIN(epprof_capture_request, scope_name, 40);
EPPROF_PIN(epprof_capture_request, received_ns, 48);
EPPROF_PIN(epprof_capture_request, client_pid, 56);
EPPROF_PIN(epprof_capture_request, client_uid, 60);
// Appends filter.
EPPROF_PIN(epprof_capture_request, filter, 64);
static_assert(sizeof(epprof_capture_request) == 72, "epprof_capture_request v2 size");
EPPROF_PIN(epprof_capture_result, size, 0);
EPPROF_PIN(epprof_capture_result, code, 8);
EPPROF_PIN(epprof_capture_result, reserved, 12);
EPPROF_PIN(epprof_capture_result, message, 16);
EPPROF_PIN(epprof_capture_result, trace_path, 24);
EPPROF_PIN(epprof_capture_result, runs, 32);
EPPROF_PIN(epprof_capture_result, host_events, 40);
EPPROF_PIN(epprof_capture_result, device_events, 48);
EPPROF_PIN(epprof_capture_result, first_run_ns, 56);
EPPROF_PIN(epprof_capture_result, summary, 64);
// Appends filtered_events.
EPPROF_PIN(epprof_capture_result, filtered_events, 72);
static_assert(sizeof(epprof_capture_result) == 80, "epprof_capture_result v2 size");
