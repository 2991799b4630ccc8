// The host-side C API: profiler lifecycle, handles, the event calls and
// their error cases, and what the written trace contains.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>

#include "support/test_util.h"

namespace {

using epprof::testing::config_for;
using epprof::testing::name_id;
using epprof::testing::read_trace;
using epprof::testing::take;
using epprof::testing::TempDir;
using epprof::testing::TraceEvent;

using ProfilerApi = epprof::testing::ProfilerTest;

TEST_F(ProfilerApi, NestedEventsAreWrittenWithTheirArgs) {
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  const epprof_name_id run = name_id("model_run"), node = name_id("conv_kernel_time");
  const uint64_t outer = epprof_correlation_id_next(), inner = epprof_correlation_id_next();
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_SESSION, run, outer));
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, node, inner));
  epprof_arg args[4];
  args[0] = {name_id("op_name"), EPPROF_ARG_STRING, {}};
  args[0].value.str = "Conv";
  args[1] = {name_id("node_index"), EPPROF_ARG_INT64, {}};
  args[1].value.i64 = -12;
  args[2] = {name_id("input_type_shape"), EPPROF_ARG_JSON, {}};
  args[2].value.str = "[{\"float\":[1,3,224,224]}]";
  args[3] = {name_id("broken_json"), EPPROF_ARG_JSON, {}};
  args[3].value.str = "[{\"float\":";
  EPPROF_ASSERT_OK(epprof_event_end(p_, inner, args, 4));
  EPPROF_ASSERT_OK(epprof_event_end(p_, outer, nullptr, 0));
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  auto events = stop_and_read(&stats);
  EXPECT_EQ(stats.host_events, 2u);
  const TraceEvent *r = nullptr, *n = nullptr;
  for (auto& e : events) {
    if (e.name == "model_run") r = &e;
    if (e.name == "conv_kernel_time") n = &e;
  }
  ASSERT_TRUE(r && n);
  EXPECT_EQ(r->cat, "Session");
  EXPECT_EQ(n->cat, "Node");
  EXPECT_EQ(n->ph, "X");
  EXPECT_LE(r->ts, n->ts);
  EXPECT_GE(r->ts + r->dur, n->ts + n->dur);
  EXPECT_EQ(n->arg("op_name"), "Conv");
  EXPECT_EQ(n->arg("node_index"), "-12");
  EXPECT_EQ(n->arg("correlation_id"), std::to_string(inner));
  // Valid raw JSON stays raw (not a string); invalid raw JSON becomes a string.
  EXPECT_FALSE(n->has_arg("input_type_shape"));
  EXPECT_EQ(n->arg("broken_json"), "[{\"float\":");
  // The child comes first: events are written by end time, as ONNX
  // Runtime writes them.
  EXPECT_GT(r - events.data(), n - events.data());
}

TEST_F(ProfilerApi, InternedArgValuesAreExportedLikeTheirText) {
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  const uint64_t id = epprof_correlation_id_next();
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, name_id("relu_kernel_time"), id));
  epprof_arg args[2];
  args[0] = {name_id("op_name"), EPPROF_ARG_NAME, {}};
  args[0].value.name = name_id("Relu \"quoted\"");
  args[1] = {name_id("output_type_shape"), EPPROF_ARG_JSON_NAME, {}};
  args[1].value.name = name_id("[{\"float\":[2,3]}]");
  EPPROF_ASSERT_OK(epprof_event_end(p_, id, args, 2));
  const auto events = stop_and_read();
  const TraceEvent* n = nullptr;
  for (auto& e : events)
    if (e.name == "relu_kernel_time") n = &e;
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->arg("op_name"), "Relu \"quoted\"");
  EXPECT_FALSE(n->has_arg("output_type_shape"));  // raw JSON, not a string
  EXPECT_NE(n->args_json.find("\"output_type_shape\":[{\"float\":[2,3]}]"), std::string::npos) << n->args_json;
}

TEST_F(ProfilerApi, InternedArgValuesMustBeInternedIds) {
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  const uint64_t id = epprof_correlation_id_next();
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, name_id("n"), id));
  for (uint32_t type : {uint32_t(EPPROF_ARG_NAME), uint32_t(EPPROF_ARG_JSON_NAME)}) {
    for (epprof_name_id bad : {epprof_name_id(0), epprof_name_id(4000000)}) {
      epprof_arg a{name_id("k"), type, {}};
      a.value.name = bad;
      auto r = take(epprof_event_end(p_, id, &a, 1));
      EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT) << "type " << type << " id " << bad;
      EXPECT_NE(r.message.find("value of arg 'k' is not an interned name id"), std::string::npos) << r.message;
    }
  }
  EPPROF_EXPECT_OK(epprof_event_end(p_, id, nullptr, 0));  // the failed ends closed nothing
}

// Args in the order the set and the event list them, as the trace has them.
std::vector<std::string> arg_keys_in_order(const TraceEvent& e, const std::vector<std::string>& keys) {
  std::vector<std::pair<size_t, std::string>> at;
  for (const auto& k : keys) {
    const size_t pos = e.args_json.find("\"" + k + "\":");
    if (pos != std::string::npos) at.emplace_back(pos, k);
  }
  std::sort(at.begin(), at.end());
  std::vector<std::string> out;
  for (auto& a : at) out.push_back(a.second);
  return out;
}

TEST_F(ProfilerApi, AnArgSetIsExportedInItsPlace) {
  std::string big(1000, 'y');  // long enough to be interned, not inlined
  epprof_arg set_args[4];
  set_args[0] = {name_id("op_name"), EPPROF_ARG_NAME, {}};
  set_args[0].value.name = name_id("Conv");
  set_args[1] = {name_id("node_index"), EPPROF_ARG_INT64, {}};
  set_args[1].value.i64 = 7;
  set_args[2] = {name_id("input_type_shape"), EPPROF_ARG_JSON, {}};
  std::string shape = "[{\"float\":[1,3]}]";
  set_args[2].value.str = shape.c_str();
  set_args[3] = {name_id("note"), EPPROF_ARG_STRING, {}};
  set_args[3].value.str = big.c_str();
  epprof_arg_set_id set = 0, again = 0, other = 0;
  EPPROF_ASSERT_OK(epprof_arg_set_intern(set_args, 4, &set));
  shape[13] = '9';  // the set copied the text it was given
  EPPROF_ASSERT_OK(epprof_arg_set_intern(set_args, 4, &again));
  EXPECT_NE(set, 0u);
  EXPECT_NE(again, set) << "a different value is a different set";
  shape[13] = '3';
  EPPROF_ASSERT_OK(epprof_arg_set_intern(set_args, 4, &again));
  EXPECT_EQ(again, set) << "the same list gets the same id";
  EPPROF_ASSERT_OK(epprof_arg_set_intern(set_args, 2, &other));
  EXPECT_NE(other, set);

  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  const uint64_t a = epprof_correlation_id_next(), b = epprof_correlation_id_next();
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, name_id("alone"), a));
  epprof_arg only{0, EPPROF_ARG_SET, {}};
  only.value.set = set;
  EPPROF_ASSERT_OK(epprof_event_end(p_, a, &only, 1));
  // A set among other args: its args stand where it stands.
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, name_id("mixed"), b));
  epprof_arg mixed[3] = {{name_id("first"), EPPROF_ARG_INT64, {}}, {0, EPPROF_ARG_SET, {}},
                         {name_id("last"), EPPROF_ARG_STRING, {}}};
  mixed[0].value.i64 = 1;
  mixed[1].value.set = other;
  mixed[2].value.str = "z";
  EPPROF_ASSERT_OK(epprof_event_end(p_, b, mixed, 3));
  const auto events = stop_and_read();
  const TraceEvent *alone = nullptr, *mix = nullptr;
  for (auto& e : events) {
    if (e.name == "alone") alone = &e;
    if (e.name == "mixed") mix = &e;
  }
  ASSERT_TRUE(alone && mix);
  EXPECT_EQ(alone->arg("op_name"), "Conv");
  EXPECT_EQ(alone->arg("node_index"), "7");
  EXPECT_EQ(alone->arg("note"), big);
  EXPECT_NE(alone->args_json.find("\"input_type_shape\":[{\"float\":[1,3]}]"), std::string::npos) << alone->args_json;
  EXPECT_EQ(arg_keys_in_order(*alone, {"op_name", "node_index", "input_type_shape", "note"}),
            (std::vector<std::string>{"op_name", "node_index", "input_type_shape", "note"}));
  EXPECT_EQ(mix->arg("first"), "1");
  EXPECT_EQ(mix->arg("op_name"), "Conv");
  EXPECT_EQ(mix->arg("last"), "z");
  EXPECT_FALSE(mix->has_arg("note"));
  EXPECT_EQ(arg_keys_in_order(*mix, {"first", "op_name", "node_index", "last"}),
            (std::vector<std::string>{"first", "op_name", "node_index", "last"}));
}

// Node-like events (one arg set) inside session-like ones (no args), many
// chunks' worth: the entry points' fast path stops at each chunk's end and
// the general path rolls over; every event comes out, nested, with its args.
TEST_F(ProfilerApi, EventsAcrossManyChunksAreAllKept) {
  epprof_arg set_args[2] = {{name_id("op_name"), EPPROF_ARG_NAME, {}}, {name_id("node_index"), EPPROF_ARG_INT64, {}}};
  set_args[0].value.name = name_id("Relu");
  set_args[1].value.i64 = 3;
  epprof_arg set{0, EPPROF_ARG_SET, {}};
  EPPROF_ASSERT_OK(epprof_arg_set_intern(set_args, 2, &set.value.set));
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  const epprof_name_id run = name_id("run"), node = name_id("node_kernel_time");
  constexpr int kRuns = 1000, kNodes = 7;  // 1 + 2 * 7 slots a run: chunk ends fall everywhere
  for (int r = 0; r < kRuns; ++r) {
    const uint64_t outer = epprof_correlation_id_next();
    EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_SESSION, run, outer));
    for (int n = 0; n < kNodes; ++n) {
      const uint64_t id = epprof_correlation_id_next();
      EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, node, id));
      EPPROF_ASSERT_OK(epprof_event_end(p_, id, &set, 1));
    }
    // A lone INT64 arg, as a runtime ends a run with its id; the extremes too.
    epprof_arg run_id{name_id("run_id"), EPPROF_ARG_INT64, {}};
    run_id.value.i64 = r == 0 ? INT64_MIN : r == 1 ? INT64_MAX : -r;
    EPPROF_ASSERT_OK(epprof_event_end(p_, outer, &run_id, 1));
  }
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  const auto events = stop_and_read(&stats);
  EXPECT_EQ(stats.host_events, uint64_t(kRuns) * (kNodes + 1));
  // Written by end time: each run's nodes, then the run.
  int runs = 0, nodes = 0;
  std::vector<const TraceEvent*> children;
  for (const auto& e : events) {
    if (e.name == "run") {
      const int64_t want = runs == 0 ? INT64_MIN : runs == 1 ? INT64_MAX : -runs;
      EXPECT_EQ(e.arg("run_id"), std::to_string(want)) << "run " << runs;
      EXPECT_EQ(children.size(), size_t(kNodes)) << "run " << runs;
      for (const TraceEvent* c : children) {
        EXPECT_LE(e.ts, c->ts);
        EXPECT_GE(e.ts + e.dur, c->ts + c->dur);
      }
      children.clear();
      ++runs;
    } else if (e.name == "node_kernel_time") {
      ++nodes;
      children.push_back(&e);
      EXPECT_EQ(e.arg("op_name"), "Relu");
      EXPECT_EQ(e.arg("node_index"), "3");
    }
  }
  EXPECT_TRUE(children.empty());
  EXPECT_EQ(runs, kRuns);
  EXPECT_EQ(nodes, kRuns * kNodes);
}

TEST_F(ProfilerApi, BadArgSetsAreRejected) {
  epprof_arg ok{name_id("k"), EPPROF_ARG_INT64, {}};
  epprof_arg_set_id set = 0;
  EXPECT_EQ(take(epprof_arg_set_intern(&ok, 1, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_arg_set_intern(nullptr, 1, &set)).code, EPPROF_INVALID_ARGUMENT);
  EPPROF_ASSERT_OK(epprof_arg_set_intern(nullptr, 0, &set));  // the empty set is a set
  epprof_arg nested{0, EPPROF_ARG_SET, {}};
  nested.value.set = set;
  auto r = take(epprof_arg_set_intern(&nested, 1, &set));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("sets do not nest"), std::string::npos) << r.message;
  std::vector<epprof_arg> many(33, ok);
  r = take(epprof_arg_set_intern(many.data(), many.size(), &set));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("at most 32"), std::string::npos) << r.message;

  // On events: an id never handed out, a key on a set, and too many args once expanded.
  epprof_arg_set_id full = 0;
  EPPROF_ASSERT_OK(epprof_arg_set_intern(many.data(), 32, &full));
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  const uint64_t id = epprof_correlation_id_next();
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, name_id("n"), id));
  epprof_arg bad{0, EPPROF_ARG_SET, {}};
  bad.value.set = 900000;
  r = take(epprof_event_end(p_, id, &bad, 1));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("arg set 900000"), std::string::npos) << r.message;
  bad = {name_id("k"), EPPROF_ARG_SET, {}};
  bad.value.set = full;
  r = take(epprof_event_end(p_, id, &bad, 1));
  EXPECT_NE(r.message.find("must have key 0"), std::string::npos) << r.message;
  epprof_arg over[2] = {{0, EPPROF_ARG_SET, {}}, ok};
  over[0].value.set = full;
  r = take(epprof_event_end(p_, id, over, 2));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("expanded the event has 33 args"), std::string::npos) << r.message;
  EPPROF_EXPECT_OK(epprof_event_end(p_, id, over, 1));  // the failed ends closed nothing
}

TEST_F(ProfilerApi, LongArgValuesAreKeptWhole) {
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  std::string big(100000, 'x');
  big[5000] = '"';
  const uint64_t id = epprof_correlation_id_next();
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_API, name_id("api"), id));
  epprof_arg a{name_id("payload"), EPPROF_ARG_STRING, {}};
  a.value.str = big.c_str();
  EPPROF_ASSERT_OK(epprof_event_end(p_, id, &a, 1));
  auto events = stop_and_read();
  bool found = false;
  for (auto& e : events)
    if (e.name == "api") found = e.arg("payload") == big;
  EXPECT_TRUE(found);
}

TEST_F(ProfilerApi, MismatchedEndIsRejectedAndChangesNothing) {
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  const uint64_t a = epprof_correlation_id_next(), b = epprof_correlation_id_next();
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, name_id("a"), a));
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, name_id("b"), b));
  auto r = take(epprof_event_end(p_, a, nullptr, 0));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("not the innermost open event"), std::string::npos) << r.message;
  EPPROF_EXPECT_OK(epprof_event_end(p_, b, nullptr, 0));
  EPPROF_EXPECT_OK(epprof_event_end(p_, a, nullptr, 0));
  r = take(epprof_event_end(p_, a, nullptr, 0));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("no event is open"), std::string::npos) << r.message;
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  stop_and_read(&stats);
  EXPECT_EQ(stats.host_events, 2u);
}

TEST_F(ProfilerApi, BadEventArgumentsAreRejected) {
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  const uint64_t id = epprof_correlation_id_next();
  const epprof_name_id n = name_id("n");
  auto r = take(epprof_event_begin(p_, epprof_category(7), n, id));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("unknown category 7"), std::string::npos);
  r = take(epprof_event_begin(p_, EPPROF_CATEGORY_MEMORY, n, id));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("epprof_memory_alloc"), std::string::npos) << r.message;
  EXPECT_EQ(take(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, 0, id)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, n, 0)).code, EPPROF_INVALID_ARGUMENT);
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, n, id));
  r = take(epprof_event_end(p_, id, nullptr, 3));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("args is NULL with num_args = 3"), std::string::npos) << r.message;
  epprof_arg bad{name_id("k"), EPPROF_ARG_STRING, {}};
  bad.value.str = nullptr;
  r = take(epprof_event_end(p_, id, &bad, 1));
  EXPECT_NE(r.message.find("value of arg 'k' is NULL"), std::string::npos) << r.message;
  epprof_arg unknown_key{999999, EPPROF_ARG_INT64, {}};
  EXPECT_EQ(take(epprof_event_end(p_, id, &unknown_key, 1)).code, EPPROF_INVALID_ARGUMENT);
  epprof_arg bad_type{name_id("k"), 9, {}};
  EXPECT_EQ(take(epprof_event_end(p_, id, &bad_type, 1)).code, EPPROF_INVALID_ARGUMENT);
  std::vector<epprof_arg> many(33, epprof_arg{name_id("k"), EPPROF_ARG_INT64, {}});
  EXPECT_EQ(take(epprof_event_end(p_, id, many.data(), many.size())).code, EPPROF_INVALID_ARGUMENT);
  // None of the failed ends closed the event.
  EPPROF_EXPECT_OK(epprof_event_end(p_, id, nullptr, 0));
  EXPECT_EQ(take(epprof_event_record(p_, EPPROF_CATEGORY_API, n, id, 0, -1, nullptr, 0)).code,
            EPPROF_INVALID_ARGUMENT);
  // A bad arg of a recorded event is named by the call that passed it.
  r = take(epprof_event_record(p_, EPPROF_CATEGORY_API, n, id, epprof_clock_now_ns(), 10, &bad, 1));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(r.message.rfind("epprof_event_record:", 0), 0u) << r.message;
}

TEST_F(ProfilerApi, NestingDepthIsBounded) {
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  std::vector<uint64_t> ids;
  for (int i = 0; i < 256; ++i) {
    ids.push_back(epprof_correlation_id_next());
    EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_API, name_id("d"), ids.back()));
  }
  auto r = take(epprof_event_begin(p_, EPPROF_CATEGORY_API, name_id("d"), epprof_correlation_id_next()));
  EXPECT_EQ(r.code, EPPROF_RESOURCE_EXHAUSTED);
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) EPPROF_ASSERT_OK(epprof_event_end(p_, *it, nullptr, 0));
}

TEST_F(ProfilerApi, StateErrors) {
  const uint64_t id = epprof_correlation_id_next();
  auto r = take(epprof_event_begin(p_, EPPROF_CATEGORY_API, name_id("x"), id));
  EXPECT_EQ(r.code, EPPROF_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("not started"), std::string::npos) << r.message;
  EXPECT_EQ(take(epprof_profiler_stop(p_, nullptr)).code, EPPROF_FAILED_PRECONDITION);
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  EXPECT_EQ(take(epprof_profiler_start(p_)).code, EPPROF_FAILED_PRECONDITION);
  EPPROF_ASSERT_OK(epprof_profiler_stop(p_, nullptr));
  r = take(epprof_event_begin(p_, EPPROF_CATEGORY_API, name_id("x"), id));
  EXPECT_EQ(r.code, EPPROF_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("already stopped"), std::string::npos) << r.message;
  EXPECT_EQ(take(epprof_profiler_stop(p_, nullptr)).code, EPPROF_FAILED_PRECONDITION);
}

TEST(ProfilerHandles, StaleAndUnknownHandlesAreNotFound) {
  TempDir dir;
  std::string path = dir.file("t.json");
  auto c = config_for(path);
  epprof_profiler_t p;
  EPPROF_ASSERT_OK(epprof_profiler_create(&c, &p));
  EPPROF_ASSERT_OK(epprof_profiler_start(p));
  const uint64_t id = epprof_correlation_id_next();
  EPPROF_ASSERT_OK(epprof_event_begin(p, EPPROF_CATEGORY_API, name_id("x"), id));
  EPPROF_ASSERT_OK(epprof_profiler_destroy(p));
  // This thread's cache still knows the old handle: it must not be used.
  EXPECT_EQ(take(epprof_event_end(p, id, nullptr, 0)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_event_begin(p, EPPROF_CATEGORY_API, name_id("x"), id)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_profiler_start(p)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_profiler_stop(p, nullptr)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_profiler_destroy(p)).code, EPPROF_NOT_FOUND);
  EXPECT_EQ(take(epprof_profiler_set_metadata(p, "k", "v")).code, EPPROF_NOT_FOUND);
  epprof_profiler_t garbage{0xdeadbeef00ull};
  EXPECT_EQ(take(epprof_profiler_start(garbage)).code, EPPROF_NOT_FOUND);
  // Destroying without stopping leaves no trace and no temporary behind.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(ProfilerHandles, ZeroHandleIsTheDisabledProfiler) {
  epprof_profiler_t off{};
  EXPECT_EQ(epprof_event_begin(off, EPPROF_CATEGORY_NODE, 1, 1), nullptr);
  EXPECT_EQ(epprof_event_end(off, 1, nullptr, 0), nullptr);
  EXPECT_EQ(epprof_event_record(off, EPPROF_CATEGORY_NODE, 1, 1, 0, 0, nullptr, 0), nullptr);
}

TEST(ProfilerCreate, ConfigErrorsAreClear) {
  epprof_profiler_t p;
  EXPECT_EQ(take(epprof_profiler_create(nullptr, &p)).code, EPPROF_INVALID_ARGUMENT);
  epprof_profiler_config c{};
  c.size = sizeof c;
  auto r = take(epprof_profiler_create(&c, &p));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("trace_path is required"), std::string::npos);
  c.size = 4;
  r = take(epprof_profiler_create(&c, &p));
  EXPECT_NE(r.message.find("too small"), std::string::npos) << r.message;
  TempDir dir;
  std::string path = dir.file("t.json");
  c = config_for(path);
  c.timestamp_format = 7;
  EXPECT_EQ(take(epprof_profiler_create(&c, &p)).code, EPPROF_INVALID_ARGUMENT);
}

TEST(ProfilerCreate, UnwritableTracePathFailsAtCreate) {
  epprof_profiler_t p;
  std::string path = "/nonexistent-epprof-dir/sub/trace.json";
  auto c = config_for(path);
  auto r = take(epprof_profiler_create(&c, &p));
  EXPECT_EQ(r.code, EPPROF_IO_ERROR);
  EXPECT_NE(r.message.find("/nonexistent-epprof-dir/sub"), std::string::npos) << r.message;
}

TEST(ProfilerCreate, OlderConfigSizeGetsDefaults) {
  // A caller compiled when the config ended at scope_name.
  TempDir dir;
  std::string path = dir.file("t.json");
  epprof_profiler_config c = config_for(path);
  c.size = offsetof(epprof_profiler_config, memory_budget_bytes);
  c.timestamp_format = 99;  // past the caller's size: must be ignored
  epprof_profiler_t p;
  EPPROF_ASSERT_OK(epprof_profiler_create(&c, &p));
  EPPROF_EXPECT_OK(epprof_profiler_destroy(p));
}

TEST(ProfilerTrace, IntegerTimestampsAndMetadata) {
  TempDir dir;
  std::string path = dir.file("t.json");
  auto c = config_for(path);
  c.timestamp_format = EPPROF_TIMESTAMPS_INTEGER_US;
  c.scope_name = "run 3";
  epprof_profiler_t p;
  EPPROF_ASSERT_OK(epprof_profiler_create(&c, &p));
  EPPROF_ASSERT_OK(epprof_profiler_set_metadata(p, "model", "cnn.onnx"));
  EPPROF_ASSERT_OK(epprof_set_thread_name("main \"thread\""));
  EPPROF_ASSERT_OK(epprof_profiler_start(p));
  const int64_t t = epprof_clock_now_ns();
  EPPROF_ASSERT_OK(epprof_event_record(p, EPPROF_CATEGORY_SESSION, name_id("model_loading_uri"),
                                       epprof_correlation_id_next(), t, 2500000, nullptr, 0));
  // Under a microsecond: written 1 us long, the exact length in dur_ns.
  EPPROF_ASSERT_OK(epprof_event_record(p, EPPROF_CATEGORY_KERNEL, name_id("tiny_kernel"),
                                       epprof_correlation_id_next(), t + 4000000, 300, nullptr, 0));
  // An instant stays one.
  EPPROF_ASSERT_OK(epprof_event_record(p, EPPROF_CATEGORY_SESSION, name_id("instant"),
                                       epprof_correlation_id_next(), t + 5000000, 0, nullptr, 0));
  EPPROF_ASSERT_OK(epprof_profiler_stop(p, nullptr));
  EPPROF_ASSERT_OK(epprof_profiler_destroy(p));
  // Integer mode: no decimal point in any ts/dur.
  std::string text;
  {
    FILE* f = fopen(path.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    fclose(f);
  }
  EXPECT_EQ(text.find("\"dur\":2500,"), text.find("\"dur\":2500"));
  EXPECT_NE(text.find("\"dur\":2500"), std::string::npos) << text;
  auto events = read_trace(path);
  bool meta = false, thread = false, tiny = false, instant = false;
  for (auto& e : events) {
    if (e.name == "tiny_kernel") {
      tiny = true;
      EXPECT_EQ(e.dur, 1);
      EXPECT_EQ(e.arg("dur_ns"), "300");
    }
    if (e.name == "instant") {
      instant = true;
      EXPECT_EQ(e.dur, 0);
      EXPECT_FALSE(e.has_arg("dur_ns"));
    }
    if (e.name == "epprof_metadata") {
      meta = true;
      EXPECT_EQ(e.cat, "Metadata");
      EXPECT_EQ(e.arg("scope"), "run 3");
      EXPECT_EQ(e.arg("model"), "cnn.onnx");
      EXPECT_EQ(e.arg("dropped_events"), "0");
      EXPECT_FALSE(e.arg("t0_epoch_ns").empty());
      // T0 epoch is a plausible wall-clock time (after 2020).
      EXPECT_GT(std::stoll(e.arg("t0_epoch_ns")), 1577836800000000000LL);
    }
    if (e.name == "thread_name" && e.arg("name") == "main \"thread\"") thread = true;
  }
  EXPECT_TRUE(meta);
  EXPECT_TRUE(thread);
  EXPECT_TRUE(tiny);
  EXPECT_TRUE(instant);
}

}  // namespace

namespace {

// The reference: what a JSON parser must read back for `s` written as a
// string, with each maximal invalid UTF-8 subpart as U+FFFD. Valid input
// comes back unchanged, which is all this test feeds through it besides
// the one invalid byte below.
TEST(ProfilerTrace, HostileNamesAndArgsYieldValidJson) {
  TempDir dir;
  std::string path = dir.file("hostile.json");
  auto c = config_for(path);
  epprof_profiler_t p;
  EPPROF_ASSERT_OK(epprof_profiler_create(&c, &p));
  EPPROF_ASSERT_OK(epprof_profiler_start(p));
  std::string control;
  for (int ch = 1; ch < 0x20; ++ch) control.push_back(char(ch));
  const std::vector<std::string> names = {
      "quote\"back\\slash", "ctl" + control + "\x7f", "utf8 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
      std::string(1 << 20, 'n'), "bad \xff byte"};
  for (const std::string& n : names) {
    uint64_t id = epprof_correlation_id_next();
    EPPROF_ASSERT_OK(epprof_event_begin(p, EPPROF_CATEGORY_NODE, name_id(n.c_str()), id));
    epprof_arg a{name_id(n.c_str()), EPPROF_ARG_STRING, {}};
    a.value.str = n.c_str();
    EPPROF_ASSERT_OK(epprof_event_end(p, id, &a, 1));
  }
  EPPROF_ASSERT_OK(epprof_profiler_stop(p, nullptr));
  EPPROF_ASSERT_OK(epprof_profiler_destroy(p));
  auto events = read_trace(path);  // fails the test if the JSON is invalid
  std::vector<std::string> seen;
  for (auto& e : events)
    if (e.cat == "Node") {
      seen.push_back(e.name);
      ASSERT_EQ(e.args.size(), 2u);
      EXPECT_EQ(e.args[0].first, e.name);   // the key round-trips too
      EXPECT_EQ(e.args[0].second, e.name);
    }
  ASSERT_EQ(seen.size(), names.size());
  for (size_t i = 0; i + 1 < names.size(); ++i)
    EXPECT_TRUE(std::find(seen.begin(), seen.end(), names[i]) != seen.end()) << "name " << i;
  EXPECT_TRUE(std::find(seen.begin(), seen.end(), "bad \xef\xbf\xbd byte") != seen.end())
      << "invalid UTF-8 must become U+FFFD";
}

// Issue 15, item 8: an ONNX node name may hold NUL bytes; epprof_intern cut
// it at the first one, so "<name>_kernel_time" lost its suffix.
TEST(ProfilerTrace, NamesWithNulKeepTheirLengthAndAreEscaped) {
  TempDir dir;
  std::string path = dir.file("nul.json");
  auto c = config_for(path);
  epprof_profiler_t p;
  EPPROF_ASSERT_OK(epprof_profiler_create(&c, &p));
  EPPROF_ASSERT_OK(epprof_profiler_start(p));
  const std::string name("conv\0one_kernel_time", 20);
  epprof_name_id id = 0, plain = 0;
  EPPROF_ASSERT_OK(epprof_intern_n(name.data(), name.size(), &id));
  EPPROF_ASSERT_OK(epprof_intern("conv", &plain));
  EXPECT_NE(id, plain) << "the name was cut at its NUL";
  epprof_name_id empty = 0;
  EPPROF_EXPECT_OK(epprof_intern_n(nullptr, 0, &empty));
  EXPECT_EQ(take(epprof_intern_n(nullptr, 1, &empty)).code, EPPROF_INVALID_ARGUMENT);
  const uint64_t corr = epprof_correlation_id_next();
  EPPROF_ASSERT_OK(epprof_event_begin(p, EPPROF_CATEGORY_NODE, id, corr));
  EPPROF_ASSERT_OK(epprof_event_end(p, corr, nullptr, 0));
  EPPROF_ASSERT_OK(epprof_profiler_stop(p, nullptr));
  EPPROF_ASSERT_OK(epprof_profiler_destroy(p));
  std::ifstream f(path);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"conv\\u0000one_kernel_time\""), std::string::npos) << text;
  bool found = false;
  for (const auto& e : read_trace(path)) found = found || (e.cat == "Node" && e.name == name);
  EXPECT_TRUE(found) << "no Node event named with all 20 bytes";
}

std::vector<std::string> g_log;
void capture_log(void*, epprof_status_code, const char* message) { g_log.push_back(message); }

// A running profiler that writes `path` and has these budgets.
epprof_profiler_t start_with_budgets(const std::string& path, uint64_t memory_bytes, uint64_t disk_bytes) {
  auto c = config_for(path);
  c.memory_budget_bytes = memory_bytes;
  c.disk_budget_bytes = disk_bytes;
  epprof_profiler_t p{};
  EXPECT_EQ(take(epprof_profiler_create(&c, &p)).code, EPPROF_OK);
  EXPECT_EQ(take(epprof_profiler_start(p)).code, EPPROF_OK);
  return p;
}

TEST(ProfilerTrace, DropsPastTheDiskBudgetAreCountedInTheTraceAndWarnedOnce) {
  TempDir dir;
  std::string path = dir.file("drops.json");
  g_log.clear();
  epprof_set_log_callback(capture_log, nullptr);
  const epprof_profiler_t p = start_with_budgets(path, 1 << 20, 1 << 20);
  const epprof_name_id n = name_id("e");
  constexpr uint64_t kEvents = 200'000;  // 6.4 MB of records
  for (uint64_t i = 0; i < kEvents; ++i) {
    uint64_t id = epprof_correlation_id_next();
    EPPROF_ASSERT_OK(epprof_event_begin(p, EPPROF_CATEGORY_NODE, n, id));
    EPPROF_ASSERT_OK(epprof_event_end(p, id, nullptr, 0));
  }
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  EPPROF_ASSERT_OK(epprof_profiler_stop(p, &stats));
  EPPROF_ASSERT_OK(epprof_profiler_destroy(p));
  epprof_set_log_callback(nullptr, nullptr);
  EXPECT_GT(stats.dropped_events, 0u);
  EXPECT_GT(stats.spilled_bytes, 0u);
  EXPECT_EQ(stats.host_events + stats.dropped_events, kEvents);
  ASSERT_EQ(g_log.size(), 1u) << "one warning, however many chunks were dropped";
  EXPECT_NE(g_log[0].find("dropping host events"), std::string::npos) << g_log[0];
  auto events = read_trace(path);
  uint64_t written = 0;
  std::string dropped;
  for (auto& e : events) {
    if (e.cat == "Node") ++written;
    if (e.name == "epprof_metadata") dropped = e.arg("dropped_events");
  }
  EXPECT_EQ(written, stats.host_events);
  EXPECT_EQ(dropped, std::to_string(stats.dropped_events));
}

// Spilled events come back from disk with their args, and an event that
// stays open while thousands of spilled ones are read back and written
// (each waits in the end-order heap as a copy) keeps its own.
TEST(ProfilerTrace, SpilledEventsKeepTheirArgsAndEndOrder) {
  TempDir dir;
  std::string path = dir.file("spilled.json");
  const epprof_profiler_t p = start_with_budgets(path, 1 << 20, 256 << 20);
  const epprof_name_id outer = name_id("outer"), inner = name_id("inner"), key = name_id("i");
  constexpr int64_t kOuter = 20, kInner = 2'000;  // 40,000 inner events: several MB of records
  for (int64_t o = 0; o < kOuter; ++o) {
    const uint64_t oid = epprof_correlation_id_next();
    EPPROF_ASSERT_OK(epprof_event_begin(p, EPPROF_CATEGORY_SESSION, outer, oid));
    for (int64_t i = 0; i < kInner; ++i) {
      const uint64_t id = epprof_correlation_id_next();
      EPPROF_ASSERT_OK(epprof_event_begin(p, EPPROF_CATEGORY_NODE, inner, id));
      epprof_arg a{key, EPPROF_ARG_INT64, {}};
      a.value.i64 = o * kInner + i;
      EPPROF_ASSERT_OK(epprof_event_end(p, id, &a, 1));
    }
    epprof_arg a{key, EPPROF_ARG_INT64, {}};
    a.value.i64 = -1 - o;
    EPPROF_ASSERT_OK(epprof_event_end(p, oid, &a, 1));
  }
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  EPPROF_ASSERT_OK(epprof_profiler_stop(p, &stats));
  EPPROF_ASSERT_OK(epprof_profiler_destroy(p));
  EXPECT_GT(stats.spilled_bytes, 0u) << "the test must spill to test read-back";
  EXPECT_EQ(stats.dropped_events, 0u);
  int64_t next_inner = 0, next_outer = -1;
  for (const TraceEvent& e : read_trace(path)) {
    if (e.name == "inner") {
      ASSERT_EQ(e.arg("i"), std::to_string(next_inner)) << "inner events in end order, each with its arg";
      ++next_inner;
    } else if (e.name == "outer") {
      ASSERT_EQ(next_inner % kInner, 0) << "an outer event ends after its inner ones";
      ASSERT_EQ(e.arg("i"), std::to_string(next_outer)) << "outer events keep their args";
      --next_outer;
    }
  }
  EXPECT_EQ(next_inner, kOuter * kInner);
  EXPECT_EQ(next_outer, -1 - kOuter);
}

// Events that overlap every way (nested, staggered, disjoint) on several
// threads come out by end time, at equal ends the later start first: the
// end-order queue (a heap with a slot in front) against a plain sort.
TEST(ProfilerTrace, OverlappingEventsOnSeveralThreadsComeOutInEndOrder) {
  TempDir dir;
  const std::string path = dir.file("end_order.json");
  const epprof_profiler_t p = start_with_budgets(path, 64 << 20, 256 << 20);
  const epprof_name_id name = name_id("overlap");
  const int64_t base = epprof_clock_now_ns();
  constexpr int kThreads = 3, kPerThread = 3000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(77 + t);
      int64_t at = 0;
      for (int i = 0; i < kPerThread; ++i) {
        at += int64_t(rng() % 3) * 1000;  // starts shared now and then
        const int64_t dur = rng() % 4 == 0 ? int64_t(rng() % 50) * 1000 : int64_t(rng() % 5) * 1000;
        // A unique start per event; ends are often shared.
        const int64_t ts = base + at + t * kPerThread + i;
        EXPECT_EQ(epprof_event_record(p, EPPROF_CATEGORY_NODE, name, epprof_correlation_id_next(), ts, dur, nullptr, 0),
                  nullptr);
      }
    });
  for (auto& th : threads) th.join();
  EPPROF_ASSERT_OK(epprof_profiler_stop(p, nullptr));
  EPPROF_ASSERT_OK(epprof_profiler_destroy(p));
  std::vector<std::pair<int64_t, int64_t>> ends;  // (end, start) as written, in ns: exact
  for (const TraceEvent& e : read_trace(path))
    if (e.name == "overlap") ends.push_back({std::llround((e.ts + e.dur) * 1000), std::llround(e.ts * 1000)});
  ASSERT_EQ(ends.size(), size_t(kThreads * kPerThread));
  auto want = ends;
  std::sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  for (size_t i = 0; i < ends.size(); ++i)
    ASSERT_EQ(ends[i], want[i]) << "event " << i << " of " << ends.size() << " is out of end order";
}

}  // namespace
