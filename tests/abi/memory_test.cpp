// Memory events through the public C API: their statuses, their
// attribution to the innermost open event (an event block's too), and what
// the trace makes of them: ONNX Runtime's mem_* args on node events, the
// device's memory-in-use counter track, and the metadata's per-device
// figures with the leak line.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "support/test_util.h"

namespace {

using epprof::testing::name_id;
using epprof::testing::take;
using epprof::testing::TraceEvent;

using MemoryApi = epprof::testing::ProfilerTest;

TEST_F(MemoryApi, BadArgumentsAreRefusedByName) {
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  const epprof_name_id cpu = name_id("cpu");
  auto r = take(epprof_memory_alloc(p_, 1, 0, cpu, EPPROF_MEMORY_OUTPUT));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("bytes is 0"), std::string::npos) << r.message;
  r = take(epprof_memory_alloc(p_, 1, 64, cpu, epprof_memory_tag(99)));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("unknown tag 99"), std::string::npos) << r.message;
  r = take(epprof_memory_free(p_, 1, 0));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("not an interned name"), std::string::npos) << r.message;
  // The disabled handle is a no-op, a stale one is NOT_FOUND.
  EXPECT_EQ(epprof_memory_alloc(epprof_profiler_t{}, 1, 64, cpu, EPPROF_MEMORY_OUTPUT), nullptr);
  EXPECT_EQ(take(epprof_memory_alloc(epprof_profiler_t{0xdead00}, 1, 64, cpu, EPPROF_MEMORY_OUTPUT)).code,
            EPPROF_NOT_FOUND);
}

TEST_F(MemoryApi, NotRunningIsAPreconditionFailure) {
  EXPECT_EQ(take(epprof_memory_alloc(p_, 1, 64, name_id("cpu"), EPPROF_MEMORY_OUTPUT)).code,
            EPPROF_FAILED_PRECONDITION);
}

// Two runs of two nodes. Node a allocates its 1000-byte output and a
// 300-byte temporary it frees; node b allocates 500 bytes and frees a's
// output. An arena chunk is held throughout; run 2 leaks b's output.
TEST_F(MemoryApi, NodesGetOnnxRuntimeMemArgsAndTheDeviceATrack) {
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  const epprof_name_id cpu = name_id("cpu"), run = name_id("model_run");
  const epprof_name_id a = name_id("a_kernel_time"), b = name_id("b_kernel_time");
  EPPROF_ASSERT_OK(epprof_memory_alloc(p_, 7, 4096, cpu, EPPROF_MEMORY_ARENA_CHUNK));
  EPPROF_ASSERT_OK(epprof_memory_alloc(p_, 8, 2000, cpu, EPPROF_MEMORY_INITIALIZER));
  uint64_t id = 100;
  for (int r = 0; r < 2; ++r) {
    const uint64_t rid = epprof_correlation_id_next();
    EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_SESSION, run, rid));
    const uint64_t na = epprof_correlation_id_next();
    EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, a, na));
    EPPROF_ASSERT_OK(epprof_memory_alloc(p_, id, 1000, cpu, EPPROF_MEMORY_OUTPUT));
    EPPROF_ASSERT_OK(epprof_memory_alloc(p_, id + 1, 300, cpu, EPPROF_MEMORY_TEMPORARY));
    EPPROF_ASSERT_OK(epprof_memory_free(p_, id + 1, cpu));
    EPPROF_ASSERT_OK(epprof_event_end(p_, na, nullptr, 0));
    const uint64_t nb = epprof_correlation_id_next();
    EPPROF_ASSERT_OK(epprof_event_begin(p_, EPPROF_CATEGORY_NODE, b, nb));
    EPPROF_ASSERT_OK(epprof_memory_alloc(p_, id + 2, 500, cpu, EPPROF_MEMORY_OUTPUT));
    EPPROF_ASSERT_OK(epprof_memory_free(p_, id, cpu));
    EPPROF_ASSERT_OK(epprof_event_end(p_, nb, nullptr, 0));
    if (r == 0) EPPROF_ASSERT_OK(epprof_memory_free(p_, id + 2, cpu));  // run 2's stays: a leak
    EPPROF_ASSERT_OK(epprof_event_end(p_, rid, nullptr, 0));
    id += 10;
  }
  EPPROF_ASSERT_OK(epprof_memory_free(p_, 999, cpu));  // never allocated
  const auto events = stop_and_read();

  // In use before a node of run 1: the initializer (2000; the chunk is held).
  std::vector<const TraceEvent*> nodes;
  std::vector<double> track, held;
  const TraceEvent* meta = nullptr;
  for (const auto& e : events) {
    if (e.cat == "Node") nodes.push_back(&e);
    if (e.ph == "C" && e.name == "mem_in_use cpu") track.push_back(nlohmann::json::parse(e.args_json)["mem_in_use cpu"]);
    if (e.ph == "C" && e.name == "mem_arena_held cpu") held.push_back(nlohmann::json::parse(e.args_json)["mem_arena_held cpu"]);
    if (e.name == "epprof_metadata") meta = &e;
  }
  ASSERT_EQ(nodes.size(), 4u);
  struct Want {
    int64_t in_use, peak, delta, allocated, freed;
  };
  // a: +1000 +300 -300; b: +500 -1000 (a's output, freed by b).
  const Want want[4] = {{3000, 3300, 1000, 1300, 300}, {2500, 3500, -500, 500, 1000},
                        {3000, 3500, 1000, 1300, 300}, {2500, 3500, -500, 500, 1000}};
  for (size_t i = 0; i < 4; ++i) {
    const TraceEvent& n = *nodes[i];
    SCOPED_TRACE(n.name + " #" + std::to_string(i));
    EXPECT_EQ(n.arg("mem_bytes_in_use"), std::to_string(want[i].in_use));
    EXPECT_EQ(n.arg("mem_in_use_peak"), std::to_string(want[i].peak));
    EXPECT_EQ(n.arg("mem_arena_held"), "4096");
    EXPECT_EQ(n.arg("mem_in_use_delta"), std::to_string(want[i].delta));
    EXPECT_EQ(n.arg("mem_allocated_bytes"), std::to_string(want[i].allocated));
    EXPECT_EQ(n.arg("mem_freed_bytes"), std::to_string(want[i].freed));
  }
  // One sample per memory event, on its curve: the arena chunk's on the
  // held track, every other on the in-use track (which it never touches).
  const std::vector<double> curve = {2000, 3000, 3300, 3000, 3500, 2500, 2000,
                                     3000, 3300, 3000, 3500, 2500, 2500};
  EXPECT_EQ(track, curve);
  EXPECT_EQ(held, std::vector<double>{4096});
  ASSERT_NE(meta, nullptr);
  const nlohmann::json m = nlohmann::json::parse(meta->args_json)["memory"]["cpu"];
  EXPECT_EQ(m["peak_in_use_bytes"], "3500");
  EXPECT_EQ(m["in_use_at_end_bytes"], "2500");
  EXPECT_EQ(m["arena_held_at_end_bytes"], "4096");
  EXPECT_EQ(m["allocations"], "8");
  EXPECT_EQ(m["frees"], "6");
  EXPECT_EQ(m["unmatched_frees"], "1");
  // The leak line: run 2's 500 bytes; not the initializer, not the chunk.
  EXPECT_EQ(m["leaked_bytes"], "500");
  EXPECT_EQ(m["leaked_allocations"], "1");
}

TEST_F(MemoryApi, AnEventBlocksBegunEventOwnsItsAllocations) {
  EPPROF_ASSERT_OK(epprof_profiler_start(p_));
  const epprof_name_id cpu = name_id("cpu");
  epprof_event_desc descs[2] = {{name_id("x_kernel_time"), 0}, {name_id("y_kernel_time"), 0}};
  const uint64_t first = epprof_correlation_id_block(2);
  epprof_event_block block{};
  EPPROF_ASSERT_OK(epprof_event_block_open(p_, EPPROF_CATEGORY_NODE, first, 2, descs, &block));
  EPPROF_ASSERT_OK(epprof_event_block_begin(&block, 0));
  EPPROF_ASSERT_OK(epprof_memory_alloc(p_, 1, 256, cpu, EPPROF_MEMORY_OUTPUT));
  EPPROF_ASSERT_OK(epprof_event_block_end(&block, 0));
  EPPROF_ASSERT_OK(epprof_event_block_begin(&block, 1));
  EPPROF_ASSERT_OK(epprof_memory_alloc(p_, 2, 128, cpu, EPPROF_MEMORY_OUTPUT));
  EPPROF_ASSERT_OK(epprof_event_block_end(&block, 1));
  EPPROF_ASSERT_OK(epprof_event_block_close(&block));
  const auto events = stop_and_read();
  std::map<std::string, std::string> allocated;
  for (const auto& e : events)
    if (e.cat == "Node") allocated[e.name] = e.arg("mem_allocated_bytes");
  EXPECT_EQ(allocated["x_kernel_time"], "256");
  EXPECT_EQ(allocated["y_kernel_time"], "128");
}

}  // namespace
