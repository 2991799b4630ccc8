// Event blocks (epprof_event_block_*): events described once at open and
// recorded by index; what they write, how they mix with other events, and
// every misuse the calls report.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_util.h"

namespace {

using epprof::testing::config_for;
using epprof::testing::name_id;
using epprof::testing::take;
using epprof::testing::TempDir;
using epprof::testing::TraceEvent;

epprof_arg_set_id set_of(const char* op, int64_t index) {
  epprof_arg args[2] = {{name_id("op_name"), EPPROF_ARG_NAME, {}}, {name_id("node_index"), EPPROF_ARG_INT64, {}}};
  args[0].value.name = name_id(op);
  args[1].value.i64 = index;
  epprof_arg_set_id id = 0;
  EXPECT_EQ(take(epprof_arg_set_intern(args, 2, &id)).code, EPPROF_OK);
  return id;
}

// A started profiler and three event descriptions, one without args.
class EventBlock : public epprof::testing::ProfilerTest {
 protected:
  void SetUp() override {
    ProfilerTest::SetUp();
    EPPROF_ASSERT_OK(epprof_profiler_start(p_));
    descs_ = {{name_id("a_kernel_time"), set_of("Conv", 0)},
              {name_id("b_kernel_time"), 0},
              {name_id("c_kernel_time"), set_of("Relu", 2)}};
  }
  static const TraceEvent* find(const std::vector<TraceEvent>& events, const std::string& name) {
    for (const auto& e : events)
      if (e.name == name) return &e;
    return nullptr;
  }

  std::vector<epprof_event_desc> descs_;
};

TEST_F(EventBlock, EventsAreRecordedByIndexWithTheirDescs) {
  const uint64_t run = epprof_correlation_id_next(), first = epprof_correlation_id_block(3);
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_SESSION, name_id("model_run"), run));
  epprof_event_block block{};
  EPPROF_ASSERT_OK(epprof_event_block_open(p_, EPPROF_CATEGORY_NODE, first, 3, descs_.data(), &block));
  for (size_t i = 0; i < 3; ++i) {
    EPPROF_ASSERT_OK(epprof_event_block_begin(&block, i));
    EPPROF_ASSERT_OK(epprof_event_block_end(&block, i));
  }
  EPPROF_ASSERT_OK(epprof_event_block_close(&block));
  EPPROF_ASSERT_OK(epprof_event_end(p_, run, nullptr, 0));
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  const auto events = stop_and_read(&stats);
  EXPECT_EQ(stats.host_events, 4u);
  const TraceEvent* parent = find(events, "model_run");
  const TraceEvent* a = find(events, "a_kernel_time");
  const TraceEvent* b = find(events, "b_kernel_time");
  const TraceEvent* c = find(events, "c_kernel_time");
  ASSERT_TRUE(parent && a && b && c);
  EXPECT_EQ(a->cat, "Node");
  EXPECT_EQ(a->arg("correlation_id"), std::to_string(first));
  EXPECT_EQ(b->arg("correlation_id"), std::to_string(first + 1));
  EXPECT_EQ(c->arg("correlation_id"), std::to_string(first + 2));
  EXPECT_EQ(a->arg("op_name"), "Conv");
  EXPECT_EQ(a->arg("node_index"), "0");
  EXPECT_FALSE(b->has_arg("op_name"));
  EXPECT_EQ(c->arg("op_name"), "Relu");
  EXPECT_EQ(c->arg("node_index"), "2");
  EXPECT_EQ(a->tid, parent->tid);
  EXPECT_LE(a->ts + a->dur, b->ts);
  EXPECT_LE(b->ts + b->dur, c->ts);
  EXPECT_LE(parent->ts, a->ts);
  EXPECT_GE(parent->ts + parent->dur, c->ts + c->dur);
}

// A node's arg set rides in its event's record while its id fits 16 bits,
// and takes a payload slot after that: both read back alike, through a
// block and through epprof_event_end.
TEST_F(EventBlock, SetIdsPastSixteenBitsReadBackAlike) {
  const epprof_arg_set_id small = descs_[0].args;
  ASSERT_LE(small, 0xFFFFu);
  epprof_arg_set_id big = 0;
  for (int64_t i = 1'000'000; big <= 0xFFFFu; ++i) big = set_of("Gemm", i);
  const std::vector<epprof_event_desc> descs = {{name_id("small_kernel_time"), small},
                                                {name_id("big_kernel_time"), big}};
  const uint64_t first = epprof_correlation_id_block(2), lone = epprof_correlation_id_next();
  epprof_event_block block{};
  EPPROF_ASSERT_OK(epprof_event_block_open(p_, EPPROF_CATEGORY_NODE, first, 2, descs.data(), &block));
  for (size_t i = 0; i < 2; ++i) {
    EPPROF_ASSERT_OK(epprof_event_block_begin(&block, i));
    EPPROF_ASSERT_OK(epprof_event_block_end(&block, i));
  }
  EPPROF_ASSERT_OK(epprof_event_block_close(&block));
  epprof_arg set{0, EPPROF_ARG_SET, {}};
  set.value.set = big;
  EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, name_id("lone_kernel_time"), lone));
  EPPROF_ASSERT_OK(epprof_event_end(p_, lone, &set, 1));
  const auto events = stop_and_read(nullptr);
  const TraceEvent* s = find(events, "small_kernel_time");
  const TraceEvent* b = find(events, "big_kernel_time");
  const TraceEvent* l = find(events, "lone_kernel_time");
  ASSERT_TRUE(s && b && l);
  EXPECT_EQ(s->arg("op_name"), "Conv");
  EXPECT_EQ(s->arg("node_index"), "0");
  EXPECT_EQ(b->arg("op_name"), "Gemm");
  EXPECT_EQ(l->arg("op_name"), "Gemm");
  EXPECT_EQ(b->arg("node_index"), l->arg("node_index"));
  EXPECT_GE(std::stoll(b->arg("node_index")), 1'000'000);
}

// Blocks of many events across many chunks, other events of the thread in
// between: every event comes out once, nested in its run, with its args.
TEST_F(EventBlock, BlocksMixWithOtherEventsAcrossManyChunks) {
  constexpr int kRuns = 700, kNodes = 3;  // ~5 slots a node: many chunk ends fall inside blocks
  for (int r = 0; r < kRuns; ++r) {
    const uint64_t run = epprof_correlation_id_next(), first = epprof_correlation_id_block(kNodes);
    EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_SESSION, name_id("run"), run));
    epprof_event_block block{};
    EPPROF_ASSERT_OK(epprof_event_block_open(p_, EPPROF_CATEGORY_NODE, first, kNodes, descs_.data(), &block));
    for (int i = 0; i < kNodes; ++i) {
      EPPROF_ASSERT_OK(epprof_event_block_begin(&block, size_t(i)));
      const uint64_t api = epprof_correlation_id_next();  // an event inside a block's event
      EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_API, name_id("launch"), api));
      EPPROF_ASSERT_OK(epprof_event_end(p_, api, nullptr, 0));
      EPPROF_ASSERT_OK(epprof_event_block_end(&block, size_t(i)));
    }
    EPPROF_ASSERT_OK(epprof_event_block_close(&block));
    EPPROF_ASSERT_OK(epprof_event_end(p_, run, nullptr, 0));
  }
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  const auto events = stop_and_read(&stats);
  EXPECT_EQ(stats.host_events, uint64_t(kRuns) * (1 + 2 * kNodes));
  // Written by end time: each run's events, then the run that holds them.
  int runs = 0, nodes = 0, launches = 0;
  std::vector<const TraceEvent*> children;
  for (const auto& e : events) {
    if (e.ph != "X") continue;  // metadata
    if (e.name == "run") {
      ++runs;
      EXPECT_EQ(children.size(), size_t(2 * kNodes)) << "run " << runs;
      for (const TraceEvent* c : children) {
        EXPECT_LE(e.ts, c->ts);
        EXPECT_GE(e.ts + e.dur, c->ts + c->dur);
      }
      children.clear();
      continue;
    }
    children.push_back(&e);
    if (e.name == "launch") ++launches;
    if (e.name == "a_kernel_time") {
      ++nodes;
      EXPECT_EQ(e.arg("op_name"), "Conv");
    }
    if (e.name == "b_kernel_time" || e.name == "c_kernel_time") ++nodes;
  }
  EXPECT_TRUE(children.empty());
  EXPECT_EQ(runs, kRuns);
  EXPECT_EQ(nodes, kRuns * kNodes);
  EXPECT_EQ(launches, kRuns * kNodes);
}

TEST_F(EventBlock, EndWithArgsRecordsThoseArgsInstead) {
  const uint64_t first = epprof_correlation_id_block(3);
  epprof_event_block block{};
  EPPROF_ASSERT_OK(epprof_event_block_open(p_, EPPROF_CATEGORY_NODE, first, 3, descs_.data(), &block));
  EPPROF_ASSERT_OK(epprof_event_block_begin(&block, 0));
  epprof_arg bad{name_id("error"), 99, {}};
  EXPECT_EQ(take(epprof_event_block_end_with_args(&block, 0, &bad, 1)).code, EPPROF_INVALID_ARGUMENT);
  epprof_arg error{name_id("error"), EPPROF_ARG_STRING, {}};
  error.value.str = "kernel threw";
  EPPROF_ASSERT_OK(epprof_event_block_end_with_args(&block, 0, &error, 1));  // still begun after the bad args
  EPPROF_ASSERT_OK(epprof_event_block_close(&block));
  const auto events = stop_and_read();
  const TraceEvent* a = find(events, "a_kernel_time");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->arg("error"), "kernel threw");
  EXPECT_FALSE(a->has_arg("op_name")) << "the desc's args are replaced";
}

// One arg set in place of the desc's (a node whose shapes left its block's
// epoch) takes the desc's own record, inline or, past 16 bits, in a
// payload slot; a set id never interned is refused and the event stays begun.
TEST_F(EventBlock, EndWithOneArgSetRecordsThatSet) {
  epprof_arg_set_id big = 0;
  for (int64_t i = 2'000'000; big <= 0xFFFFu; ++i) big = set_of("MatMul", i);
  const uint64_t first = epprof_correlation_id_block(3);
  epprof_event_block block{};
  EPPROF_ASSERT_OK(epprof_event_block_open(p_, EPPROF_CATEGORY_NODE, first, 3, descs_.data(), &block));
  epprof_arg set{0, EPPROF_ARG_SET, {}};
  EPPROF_ASSERT_OK(epprof_event_block_begin(&block, 0));
  set.value.set = set_of("Gemm", 7);
  EPPROF_ASSERT_OK(epprof_event_block_end_with_args(&block, 0, &set, 1));
  EPPROF_ASSERT_OK(epprof_event_block_begin(&block, 2));
  set.value.set = big + 1000;  // no such set
  EXPECT_EQ(take(epprof_event_block_end_with_args(&block, 2, &set, 1)).code, EPPROF_INVALID_ARGUMENT);
  set.value.set = big;
  EPPROF_ASSERT_OK(epprof_event_block_end_with_args(&block, 2, &set, 1));
  EPPROF_ASSERT_OK(epprof_event_block_close(&block));
  const auto events = stop_and_read();
  const TraceEvent* a = find(events, "a_kernel_time");
  const TraceEvent* c = find(events, "c_kernel_time");
  ASSERT_TRUE(a && c);
  EXPECT_EQ(a->arg("op_name"), "Gemm");
  EXPECT_EQ(a->arg("node_index"), "7");
  EXPECT_EQ(c->arg("op_name"), "MatMul");
  EXPECT_GE(std::stoll(c->arg("node_index")), 2'000'000);
  EXPECT_EQ(a->arg("correlation_id"), std::to_string(first));
  EXPECT_EQ(c->arg("correlation_id"), std::to_string(first + 2));
}

TEST_F(EventBlock, OpenChecksEverythingAndNamesTheBadDesc) {
  epprof_event_block block{};
  const uint64_t first = epprof_correlation_id_block(3);
  auto open = [&](epprof_category cat, uint64_t id, size_t n, const epprof_event_desc* d, epprof_event_block* b) {
    return take(epprof_event_block_open(p_, cat, id, n, d, b));
  };
  EXPECT_EQ(open(EPPROF_CATEGORY_NODE, first, 3, descs_.data(), nullptr).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(open(EPPROF_CATEGORY_NODE, first, 3, nullptr, &block).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(open(EPPROF_CATEGORY_NODE, first, 0, descs_.data(), &block).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(open(epprof_category(7), first, 3, descs_.data(), &block).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(open(EPPROF_CATEGORY_NODE, 0, 3, descs_.data(), &block).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(open(EPPROF_CATEGORY_NODE, UINT64_MAX - 1, 3, descs_.data(), &block).code, EPPROF_INVALID_ARGUMENT);
  auto descs = descs_;
  descs[2].name = 0x3fffff;  // never interned
  auto r = open(EPPROF_CATEGORY_NODE, first, 3, descs.data(), &block);
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("descs[2]"), std::string::npos) << r.message;
  descs = descs_;
  descs[0].name = 0;  // the id no string has
  r = open(EPPROF_CATEGORY_NODE, first, 3, descs.data(), &block);
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("descs[0]"), std::string::npos) << r.message;
  descs = descs_;
  descs[1].args = 0xfffff;  // not an arg set
  r = open(EPPROF_CATEGORY_NODE, first, 3, descs.data(), &block);
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("descs[1]"), std::string::npos) << r.message;
  // A block that failed to open is not open.
  EXPECT_EQ(take(epprof_event_block_begin(&block, 0)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_event_block_close(&block)).code, EPPROF_INVALID_ARGUMENT);
  // Nothing was recorded; stop is not blocked by any of them.
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  stop_and_read(&stats);
  EXPECT_EQ(stats.host_events, 0u);
}

TEST_F(EventBlock, MisuseIsReportedAndChangesNothing) {
  const uint64_t first = epprof_correlation_id_block(3);
  epprof_event_block block{};
  EXPECT_EQ(take(epprof_event_block_begin(nullptr, 0)).code, EPPROF_INVALID_ARGUMENT);
  EPPROF_ASSERT_OK(epprof_event_block_open(p_, EPPROF_CATEGORY_NODE, first, 3, descs_.data(), &block));
  EXPECT_EQ(take(epprof_event_block_end(&block, 0)).code, EPPROF_INVALID_ARGUMENT) << "not begun";
  auto r = take(epprof_event_block_begin(&block, 3));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("past the block's 3 events"), std::string::npos) << r.message;
  EPPROF_ASSERT_OK(epprof_event_block_begin(&block, 1));
  r = take(epprof_event_block_begin(&block, 2));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT) << "events of a block do not overlap";
  EXPECT_NE(r.message.find("event 1 of the block is begun"), std::string::npos) << r.message;
  EXPECT_EQ(take(epprof_event_block_end(&block, 2)).code, EPPROF_INVALID_ARGUMENT) << "not the begun one";
  EPPROF_ASSERT_OK(epprof_event_block_end(&block, 1));
  EPPROF_ASSERT_OK(epprof_event_block_begin(&block, 2));
  // Closing with an event begun: closed all the same, that event is lost and named.
  r = take(epprof_event_block_close(&block));
  EXPECT_EQ(r.code, EPPROF_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find(std::to_string(first + 2)), std::string::npos) << r.message;
  EXPECT_EQ(take(epprof_event_block_begin(&block, 0)).code, EPPROF_INVALID_ARGUMENT) << "closed";
  EXPECT_EQ(take(epprof_event_block_close(&block)).code, EPPROF_INVALID_ARGUMENT) << "closed twice";
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  const auto events = stop_and_read(&stats);
  EXPECT_EQ(stats.host_events, 1u);
  EXPECT_NE(find(events, "b_kernel_time"), nullptr);
  EXPECT_EQ(find(events, "c_kernel_time"), nullptr);
}

TEST_F(EventBlock, AnOpenBlockHoldsOffStopAndDestroy) {
  epprof_event_block block{};
  EPPROF_ASSERT_OK(
      epprof_event_block_open(p_, EPPROF_CATEGORY_NODE, epprof_correlation_id_block(3), 3, descs_.data(), &block));
  auto r = take(epprof_profiler_stop(p_, nullptr));
  EXPECT_EQ(r.code, EPPROF_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("1 event block is open"), std::string::npos) << r.message;
  EXPECT_EQ(take(epprof_profiler_destroy(p_)).code, EPPROF_FAILED_PRECONDITION);
  auto again = take(
      epprof_event_block_open(p_, EPPROF_CATEGORY_NODE, epprof_correlation_id_block(3), 3, descs_.data(), &block));
  EXPECT_EQ(again.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(again.message.find("open already"), std::string::npos) << again.message;
  EPPROF_ASSERT_OK(epprof_event_block_begin(&block, 0));  // all three left it usable
  EPPROF_ASSERT_OK(epprof_event_block_end(&block, 0));
  EPPROF_ASSERT_OK(epprof_event_block_close(&block));
  epprof_trace_stats stats{};
  stats.size = sizeof stats;
  stop_and_read(&stats);
  EXPECT_EQ(stats.host_events, 1u);
}

TEST_F(EventBlock, TheZeroHandleOpensADisabledBlock) {
  epprof_event_block block{};
  EPPROF_ASSERT_OK(epprof_event_block_open(epprof_profiler_t{}, EPPROF_CATEGORY_NODE, epprof_correlation_id_block(3),
                                           3, descs_.data(), &block));
  EPPROF_ASSERT_OK(epprof_event_block_begin(&block, 0));
  EPPROF_ASSERT_OK(epprof_event_block_end(&block, 0));
  EPPROF_ASSERT_OK(epprof_event_block_close(&block));
  EXPECT_EQ(take(epprof_event_block_begin(&block, 0)).code, EPPROF_INVALID_ARGUMENT) << "closed";
}

TEST(EventBlockPlugins, AProfilerWhoseEpProfilerWantsEventsRefusesBlocks) {
  TempDir dir;
  const std::string path = dir.file("trace.json");  // config_for keeps a pointer into it
  auto c = config_for(path);
  epprof_profiler_t p{};
  epprof_plugin_t plugin{};
  EPPROF_ASSERT_OK(epprof_plugin_load(EPPROF_EXAMPLE_PLUGIN_PATH, &plugin));
  EPPROF_ASSERT_OK(epprof_profiler_create(&c, &p));
  EPPROF_ASSERT_OK(epprof_profiler_add_plugin(p, plugin));
  EPPROF_ASSERT_OK(epprof_profiler_start(p));
  const epprof_event_desc desc{name_id("x_kernel_time"), 0};
  epprof_event_block block{};
  auto r = take(epprof_event_block_open(p, EPPROF_CATEGORY_NODE, epprof_correlation_id_block(1), 1, &desc, &block));
  EXPECT_EQ(r.code, EPPROF_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("start_event"), std::string::npos) << r.message;
  EPPROF_ASSERT_OK(epprof_profiler_stop(p, nullptr));
  EPPROF_ASSERT_OK(epprof_profiler_destroy(p));
  EPPROF_ASSERT_OK(epprof_plugin_unload(plugin));
}

TEST(EventBlockState, AStoppedProfilerRefusesBlocks) {
  TempDir dir;
  const std::string path = dir.file("trace.json");  // config_for keeps a pointer into it
  auto c = config_for(path);
  epprof_profiler_t p{};
  EPPROF_ASSERT_OK(epprof_profiler_create(&c, &p));
  const epprof_event_desc desc{name_id("x_kernel_time"), 0};
  epprof_event_block block{};
  EXPECT_EQ(take(epprof_event_block_open(p, EPPROF_CATEGORY_NODE, 1, 1, &desc, &block)).code,
            EPPROF_FAILED_PRECONDITION);
  EPPROF_ASSERT_OK(epprof_profiler_destroy(p));
  EXPECT_EQ(take(epprof_event_block_open(p, EPPROF_CATEGORY_NODE, 1, 1, &desc, &block)).code, EPPROF_NOT_FOUND);
}

}  // namespace
