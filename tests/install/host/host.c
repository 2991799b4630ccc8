/* host.c: a minimal outside host of the installed epprof package.
 * usage: epprof_install_host PLUGIN_PATH TRACE_PATH
 * Loads the plugin, profiles a few nested events on the main thread, stops,
 * and checks every status and the trace statistics. Exit 0 on success. */
#include <stdio.h>
#include <string.h>

#include <epprof/epprof.h>

static int failures = 0;

/* Expects `status` to have `code` (EPPROF_OK: NULL). Releases it. */
static void expect(epprof_status* status, epprof_status_code code, const char* what) {
  epprof_status_code got = epprof_status_get_code(status);
  if (got != code) {
    fprintf(stderr, "FAIL: %s: expected %s, got %s: %s\n", what, epprof_status_code_name(code),
            epprof_status_code_name(got), epprof_status_get_message(status));
    ++failures;
  }
  epprof_status_release(status);
}

int main(int argc, char** argv) {
  epprof_plugin_t plugin = {0};
  epprof_profiler_t prof = {0};
  epprof_profiler_config config;
  epprof_trace_stats stats;
  epprof_name_id run_name = 0, node_name = 0, op_key = 0;
  epprof_arg arg;
  FILE* trace;
  int i, c;

  if (argc != 3) {
    fprintf(stderr, "usage: %s PLUGIN_PATH TRACE_PATH\n", argv[0]);
    return 2;
  }
  printf("epprof %s\n", epprof_version());

  /* Bad input gets a clear status. */
  expect(epprof_profiler_create(NULL, &prof), EPPROF_INVALID_ARGUMENT, "create(NULL config)");
  expect(epprof_plugin_load("/nonexistent/libnothing.so", &plugin), EPPROF_NOT_FOUND,
         "load(missing file)");

  expect(epprof_plugin_load(argv[1], &plugin), EPPROF_OK, "plugin_load");
  memset(&config, 0, sizeof config);
  config.size = sizeof config;
  config.trace_path = argv[2];
  config.scope_name = "install test";
  expect(epprof_profiler_create(&config, &prof), EPPROF_OK, "profiler_create");
  expect(epprof_profiler_add_plugin(prof, plugin), EPPROF_OK, "add_plugin");
  expect(epprof_intern("model_run", &run_name), EPPROF_OK, "intern");
  expect(epprof_intern("node_kernel_time", &node_name), EPPROF_OK, "intern");
  expect(epprof_intern("op_name", &op_key), EPPROF_OK, "intern");
  expect(epprof_set_thread_name("main"), EPPROF_OK, "set_thread_name");
  expect(epprof_profiler_start(prof), EPPROF_OK, "profiler_start");

  for (i = 0; i < 10; ++i) {
    uint64_t run_id = epprof_correlation_id_next();
    uint64_t node_id = epprof_correlation_id_next();
    expect(epprof_event_begin(prof, EPPROF_CATEGORY_SESSION, run_name, run_id), EPPROF_OK, "begin run");
    expect(epprof_event_begin(prof, EPPROF_CATEGORY_NODE, node_name, node_id), EPPROF_OK, "begin node");
    arg.key = op_key;
    arg.type = EPPROF_ARG_STRING;
    arg.value.str = "Conv";
    expect(epprof_event_end(prof, node_id, &arg, 1), EPPROF_OK, "end node");
    expect(epprof_event_end(prof, run_id, NULL, 0), EPPROF_OK, "end run");
  }

  memset(&stats, 0, sizeof stats);
  stats.size = sizeof stats;
  expect(epprof_profiler_stop(prof, &stats), EPPROF_OK, "profiler_stop");
  expect(epprof_profiler_destroy(prof), EPPROF_OK, "profiler_destroy");
  expect(epprof_profiler_destroy(prof), EPPROF_NOT_FOUND, "destroy(stale handle)");
  expect(epprof_plugin_unload(plugin), EPPROF_OK, "plugin_unload");

  printf("host events %llu, device events %llu, unattributed %llu\n",
         (unsigned long long)stats.host_events, (unsigned long long)stats.device_events,
         (unsigned long long)stats.unattributed_device_events);
  if (stats.host_events < 20) {
    fprintf(stderr, "FAIL: expected at least 20 host events\n");
    ++failures;
  }
  if (stats.device_events == 0 || stats.unattributed_device_events != 0) {
    fprintf(stderr, "FAIL: expected attributed device events from the plugin\n");
    ++failures;
  }
  trace = fopen(argv[2], "rb");
  c = EOF;
  if (trace != NULL) {
    do c = fgetc(trace);
    while (c == ' ' || c == '\n' || c == '\r' || c == '\t');
  }
  if (c != '[') {
    fprintf(stderr, "FAIL: %s is not a JSON array\n", argv[2]);
    ++failures;
  }
  if (trace != NULL) fclose(trace);

  if (failures != 0) {
    fprintf(stderr, "%d failure(s)\n", failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}
