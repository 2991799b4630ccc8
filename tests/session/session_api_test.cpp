// epprof/session.h through the shared library: every call and its error
// cases, each filter kind, callbacks that fail, trace files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>

#include "report/reader.h"
#include "report/validate.h"
#include "session_test_util.h"

namespace epprof::testing {
namespace {

TEST(SessionApi, CreateRejectsBadConfigs) {
  Collector c;
  epprof_session_t s{};
  epprof_session_config cfg = collector_config(c);
  EXPECT_EQ(take(epprof_session_create(nullptr, &s)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_session_create(&cfg, nullptr)).code, EPPROF_INVALID_ARGUMENT);

  epprof_session_config small = cfg;
  small.size = 8;
  auto r = take(epprof_session_create(&small, &s));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("size"), std::string::npos) << r.message;

  epprof_session_config bad = cfg;
  bad.replay_mode = 17;
  EXPECT_EQ(take(epprof_session_create(&bad, &s)).code, EPPROF_INVALID_ARGUMENT);
  bad = cfg;
  bad.buffer_policy = 5;
  EXPECT_EQ(take(epprof_session_create(&bad, &s)).code, EPPROF_INVALID_ARGUMENT);
  bad = cfg;
  bad.callback = nullptr;
  r = take(epprof_session_create(&bad, &s));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("callback or a trace_path"), std::string::npos) << r.message;
  bad = cfg;
  bad.buffer_bytes = 64 * sizeof(epprof_record);
  bad.watermark_bytes = 65 * sizeof(epprof_record);
  r = take(epprof_session_create(&bad, &s));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("watermark_bytes"), std::string::npos) << r.message;

  const char* ops[] = {"Conv", nullptr};
  bad = cfg;
  bad.op_types = ops;
  bad.num_op_types = 2;
  r = take(epprof_session_create(&bad, &s));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("op_types[1] is NULL"), std::string::npos) << r.message;

  bad = cfg;
  bad.node_name_regex = "conv(";
  r = take(epprof_session_create(&bad, &s));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("node_name_regex 'conv('"), std::string::npos) << r.message;
  bad = cfg;
  bad.kernel_name_regex = "[a-";
  r = take(epprof_session_create(&bad, &s));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("kernel_name_regex '[a-'"), std::string::npos) << r.message;

  bad = cfg;
  bad.counter_record_callback = [](void*, epprof_session_t, const epprof_dispatch_info*, const epprof_record*,
                                   size_t) -> epprof_status* { return nullptr; };
  EXPECT_EQ(take(epprof_session_create(&bad, &s)).code, EPPROF_INVALID_ARGUMENT);

  bad = cfg;
  bad.trace_path = "/nonexistent-dir-epprof/x.json";
  r = take(epprof_session_create(&bad, &s));
  EXPECT_EQ(r.code, EPPROF_IO_ERROR);
  EXPECT_NE(r.message.find("/nonexistent-dir-epprof"), std::string::npos) << r.message;
  EXPECT_EQ(s.handle, 0u);  // never written on failure
}

TEST(SessionApi, LifecycleAndStaleHandles) {
  Collector c;
  epprof_session_config cfg = collector_config(c);
  epprof_session_t s{};
  EPPROF_ASSERT_OK(epprof_session_create(&cfg, &s));
  epprof_session_state state;
  EPPROF_ASSERT_OK(epprof_session_get_state(s, &state));
  EXPECT_EQ(state, EPPROF_SESSION_CREATED);
  EXPECT_EQ(take(epprof_session_get_state(s, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_session_stop(s)).code, EPPROF_FAILED_PRECONDITION);
  EPPROF_ASSERT_OK(epprof_session_start(s));
  EXPECT_EQ(take(epprof_session_start(s)).code, EPPROF_FAILED_PRECONDITION);
  EPPROF_ASSERT_OK(epprof_session_get_state(s, &state));
  EXPECT_EQ(state, EPPROF_SESSION_ACTIVE);
  EXPECT_TRUE(epprof_session_any_active());
  EXPECT_EQ(*epprof_session_active_word(), 1u);
  EPPROF_ASSERT_OK(epprof_session_flush(s));
  EPPROF_ASSERT_OK(epprof_session_stop(s));
  EPPROF_ASSERT_OK(epprof_session_get_state(s, &state));
  EXPECT_EQ(state, EPPROF_SESSION_STOPPED);
  EPPROF_ASSERT_OK(epprof_session_start(s));  // restart is allowed
  epprof_session_stats st{};
  st.size = 4;
  EXPECT_EQ(take(epprof_session_get_stats(s, &st)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_session_get_stats(s, nullptr)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_session_begin_pass(s, 0)).code, EPPROF_FAILED_PRECONDITION);  // NONE mode
  EPPROF_ASSERT_OK(epprof_session_destroy(s));
  EXPECT_FALSE(epprof_session_any_active());
  EXPECT_EQ(*epprof_session_active_word(), 0u);

  // Every call on the destroyed handle, on the zero handle and on a made-up one.
  for (epprof_session_t bad : {s, epprof_session_t{0}, epprof_session_t{0xdead00ull}}) {
    SCOPED_TRACE(bad.handle);
    EXPECT_EQ(take(epprof_session_start(bad)).code, EPPROF_NOT_FOUND);
    EXPECT_EQ(take(epprof_session_stop(bad)).code, EPPROF_NOT_FOUND);
    EXPECT_EQ(take(epprof_session_flush(bad)).code, EPPROF_NOT_FOUND);
    EXPECT_EQ(take(epprof_session_destroy(bad)).code, EPPROF_NOT_FOUND);
    EXPECT_EQ(take(epprof_session_get_state(bad, &state)).code, EPPROF_NOT_FOUND);
    epprof_session_stats st2{};
    st2.size = sizeof st2;
    EXPECT_EQ(take(epprof_session_get_stats(bad, &st2)).code, EPPROF_NOT_FOUND);
    EXPECT_EQ(take(epprof_session_begin_pass(bad, 0)).code, EPPROF_NOT_FOUND);
    EXPECT_EQ(take(epprof_session_end_pass(bad)).code, EPPROF_NOT_FOUND);
    epprof_dispatch_info info{};
    info.size = sizeof info;
    EXPECT_EQ(take(epprof_session_deliver_counters(bad, &info, nullptr, 0)).code, EPPROF_NOT_FOUND);
  }
}

TEST(SessionApi, HandleOfAReusedSlotIsStillStale) {
  Collector c;
  epprof_session_config cfg = collector_config(c);
  epprof_session_t a{}, b{};
  EPPROF_ASSERT_OK(epprof_session_create(&cfg, &a));
  EPPROF_ASSERT_OK(epprof_session_destroy(a));
  EPPROF_ASSERT_OK(epprof_session_create(&cfg, &b));  // likely the same slot
  EXPECT_NE(a.handle, b.handle);
  EXPECT_EQ(take(epprof_session_start(a)).code, EPPROF_NOT_FOUND);
  EPPROF_ASSERT_OK(epprof_session_destroy(b));
}

TEST(SessionApi, DeliversOnlyWhileActiveOnALibraryThread) {
  Collector c;
  ScopedSession s(collector_config(c), /*start=*/false);
  const epprof_record r = node_record(1, "n", "Relu");
  EPPROF_ASSERT_OK(epprof_session_emit(&r, 1));  // created, not started: not collected
  EPPROF_ASSERT_OK(epprof_session_start(s.get()));
  EPPROF_ASSERT_OK(epprof_session_emit(&r, 1));
  EPPROF_ASSERT_OK(epprof_session_emit(&r, 1));
  EPPROF_ASSERT_OK(epprof_session_stop(s.get()));
  EPPROF_ASSERT_OK(epprof_session_emit(&r, 1));  // stopped: not collected
  EPPROF_ASSERT_OK(epprof_session_flush(s.get()));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.records[0].correlation_id, 1u);
  EXPECT_EQ(c.records[0].op_type, name_id("Relu"));
  EXPECT_NE(c.thread, std::this_thread::get_id());
  const epprof_session_stats st = s.stats();
  EXPECT_EQ(st.records_delivered, 2u);
  EXPECT_EQ(st.bytes_delivered, 2 * sizeof(epprof_record));
  EXPECT_EQ(st.records_dropped, 0u);
  EXPECT_EQ(st.records_buffered, 0u);
  EXPECT_GE(st.callback_calls, 1u);
}

TEST(SessionApi, EmitRejectsBadRecordsWhileActive) {
  Collector c;
  ScopedSession s(collector_config(c));
  epprof_record r = node_record(1, "n", "Relu");
  r.kind = 99;
  auto res = take(epprof_session_emit(&r, 1));
  EXPECT_EQ(res.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(res.message.find("unknown kind 99"), std::string::npos) << res.message;
  EXPECT_EQ(take(epprof_session_emit(nullptr, 3)).code, EPPROF_INVALID_ARGUMENT);
  EPPROF_ASSERT_OK(epprof_session_flush(s.get()));
  EXPECT_EQ(c.size(), 0u);
}

TEST(SessionApi, WatermarkTriggersDeliveryWithoutFlush) {
  Collector c;
  epprof_session_config cfg = collector_config(c);
  cfg.buffer_bytes = 256 * sizeof(epprof_record);
  cfg.watermark_bytes = 10 * sizeof(epprof_record);
  ScopedSession s(cfg);
  std::vector<epprof_record> rs(10, node_record(7, "n", "Add"));
  EPPROF_ASSERT_OK(epprof_session_emit(rs.data(), rs.size()));
  for (int i = 0; i < 2000 && c.size() < 10; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(c.size(), 10u);
}

// ---- filters ----

struct FilterCase {
  const char* name;
  void (*setup)(epprof_session_config&);
  std::vector<uint64_t> expected;  // correlation ids kept, in order
};

std::vector<epprof_record> filter_corpus() {
  return {
      node_record(1, "conv1", "Conv", "CPUExecutionProvider", "cpu:Conv", 0),
      node_record(2, "relu1", "Relu", "CPUExecutionProvider", "cpu:Relu", 1),
      node_record(3, "conv2", "Conv", "OpenCLExecutionProvider", "cl:conv2d_3x3", 2),
      run_record(4),
      counter_record(5, "task-clock", 10, "conv1", "Conv"),
      counter_record(6, "page-faults", 2, "conv1", "Conv"),
  };
}

const FilterCase kFilterCases[] = {
    {"none", [](epprof_session_config&) {}, {1, 2, 3, 4, 5, 6}},
    {"categories", [](epprof_session_config& c) { c.categories = 1u << EPPROF_CATEGORY_SESSION; }, {4}},
    {"record_kinds", [](epprof_session_config& c) { c.record_kinds = 1u << EPPROF_RECORD_COUNTER; }, {5, 6}},
    {"op_types",
     [](epprof_session_config& c) {
       static const char* ops[] = {"Conv"};
       c.op_types = ops;
       c.num_op_types = 1;
     },
     {1, 3, 5, 6}},
    {"node_names_exact",
     [](epprof_session_config& c) {
       static const char* names[] = {"relu1", "conv2"};
       c.node_names = names;
       c.num_node_names = 2;
     },
     {2, 3}},
    {"node_name_regex", [](epprof_session_config& c) { c.node_name_regex = "conv[0-9]"; }, {1, 3, 5, 6}},
    {"node_name_regex_is_whole_name", [](epprof_session_config& c) { c.node_name_regex = "conv"; }, {}},
    {"node_names_exact_or_regex",
     [](epprof_session_config& c) {
       static const char* names[] = {"relu1"};
       c.node_names = names;
       c.num_node_names = 1;
       c.node_name_regex = "conv2";
     },
     {2, 3}},
    {"ep_names",
     [](epprof_session_config& c) {
       static const char* eps[] = {"OpenCLExecutionProvider"};
       c.ep_names = eps;
       c.num_ep_names = 1;
     },
     {3}},
    {"kernel_name_regex", [](epprof_session_config& c) { c.kernel_name_regex = "cl:.*"; }, {3}},
    {"counter_names",
     [](epprof_session_config& c) {
       static const char* names[] = {"page-faults"};
       c.counter_names = names;
       c.num_counter_names = 1;
     },
     {1, 2, 3, 4, 6}},
    {"combined",
     [](epprof_session_config& c) {
       static const char* ops[] = {"Conv"};
       c.op_types = ops;
       c.num_op_types = 1;
       c.categories = 1u << EPPROF_CATEGORY_NODE;
       c.kernel_name_regex = "cpu:.*";
     },
     {1}},
};

class SessionFilter : public ::testing::TestWithParam<FilterCase> {};

TEST_P(SessionFilter, KeepsExactlyWhatMatches) {
  Collector c;
  epprof_session_config cfg = collector_config(c);
  GetParam().setup(cfg);
  ScopedSession s(cfg);
  const auto corpus = filter_corpus();
  EPPROF_ASSERT_OK(epprof_session_emit(corpus.data(), corpus.size()));
  EPPROF_ASSERT_OK(epprof_session_flush(s.get()));
  std::vector<uint64_t> got;
  for (const auto& r : c.records) got.push_back(r.correlation_id);
  EXPECT_EQ(got, GetParam().expected);
  EXPECT_EQ(s.stats().records_filtered, corpus.size() - GetParam().expected.size());
}

INSTANTIATE_TEST_SUITE_P(Kinds, SessionFilter, ::testing::ValuesIn(kFilterCases),
                         [](const ::testing::TestParamInfo<FilterCase>& i) { return std::string(i.param.name); });

TEST(SessionApi, DispatchRangeSkipsThenCollects) {
  Collector c;
  epprof_session_config cfg = collector_config(c);
  cfg.dispatch_skip = 3;
  cfg.dispatch_count = 4;
  ScopedSession s(cfg);
  for (uint64_t d = 0; d < 10; ++d) {
    // One dispatch per batch: its node event and a counter of it.
    const uint64_t id = 100 + d;
    epprof_record batch[2] = {node_record(id, "n", "MatMul", "CPU", nullptr, uint32_t(d)),
                              counter_record(id, "flops", double(d), "n", "MatMul")};
    EPPROF_ASSERT_OK(epprof_session_emit(batch, 2));
    const epprof_record run = run_record(1000 + d);  // not a dispatch: the range does not apply
    EPPROF_ASSERT_OK(epprof_session_emit(&run, 1));
  }
  EPPROF_ASSERT_OK(epprof_session_flush(s.get()));
  std::set<uint64_t> dispatch_ids;
  size_t runs = 0;
  for (const auto& r : c.records) {
    if (r.category == EPPROF_CATEGORY_SESSION)
      ++runs;
    else
      dispatch_ids.insert(r.correlation_id);
  }
  EXPECT_EQ(runs, 10u);
  EXPECT_EQ(dispatch_ids, (std::set<uint64_t>{103, 104, 105, 106}));
  EXPECT_EQ(c.size(), 10u + 4 * 2);
}

// ---- callbacks that fail ----

TEST(SessionApi, CallbackErrorsAndExceptionsAreCountedNotPropagated) {
  struct Flaky {
    std::atomic<int> calls{0};
    static epprof_status* cb(void* u, epprof_session_t, const epprof_record*, size_t, uint64_t) {
      auto* f = static_cast<Flaky*>(u);
      const int n = f->calls++;
      if (n % 2 == 0) return epprof_status_create(EPPROF_INTERNAL, "tool is unhappy");
      throw std::runtime_error("tool threw");
    }
  } flaky;
  struct Log {
    std::mutex mu;
    std::vector<std::string> lines;
  } log;
  epprof_set_log_callback(
      [](void* u, epprof_status_code, const char* m) {
        auto* l = static_cast<Log*>(u);
        std::lock_guard<std::mutex> lock(l->mu);
        l->lines.push_back(m);
      },
      &log);
  epprof_session_config cfg{};
  cfg.size = sizeof cfg;
  cfg.record_size = sizeof(epprof_record);
  cfg.callback = &Flaky::cb;
  cfg.callback_user_data = &flaky;
  ScopedSession s(cfg);
  const epprof_record r = node_record(1, "n", "Relu");
  for (int i = 0; i < 4; ++i) {
    EPPROF_ASSERT_OK(epprof_session_emit(&r, 1));
    EPPROF_ASSERT_OK(epprof_session_flush(s.get()));
  }
  const auto st = s.stats();
  EXPECT_EQ(st.callback_calls, 4u);
  EXPECT_EQ(st.callback_errors, 4u);
  EXPECT_EQ(st.records_delivered, 4u);
  epprof_set_log_callback(nullptr, nullptr);
  std::lock_guard<std::mutex> lock(log.mu);
  ASSERT_EQ(log.lines.size(), 1u);  // once, then counted
  EXPECT_NE(log.lines[0].find("tool is unhappy"), std::string::npos) << log.lines[0];
}

TEST(SessionApi, OwnCallbackCannotFlushStopOrDestroy) {
  struct Reentrant {
    epprof_session_t self{};
    std::atomic<int> flush{-1}, stop{-1}, destroy{-1}, stats{-1};
    static epprof_status* cb(void* u, epprof_session_t s, const epprof_record*, size_t, uint64_t) {
      auto* r = static_cast<Reentrant*>(u);
      r->flush = take(epprof_session_flush(s)).code;
      r->stop = take(epprof_session_stop(s)).code;
      r->destroy = take(epprof_session_destroy(s)).code;
      epprof_session_stats st{};
      st.size = sizeof st;
      r->stats = take(epprof_session_get_stats(s, &st)).code;
      return nullptr;
    }
  } re;
  epprof_session_config cfg{};
  cfg.size = sizeof cfg;
  cfg.record_size = sizeof(epprof_record);
  cfg.callback = &Reentrant::cb;
  cfg.callback_user_data = &re;
  ScopedSession s(cfg);
  const epprof_record r = node_record(1, "n", "Relu");
  EPPROF_ASSERT_OK(epprof_session_emit(&r, 1));
  EPPROF_ASSERT_OK(epprof_session_flush(s.get()));
  EXPECT_EQ(re.flush, EPPROF_FAILED_PRECONDITION);
  EXPECT_EQ(re.stop, EPPROF_FAILED_PRECONDITION);
  EXPECT_EQ(re.destroy, EPPROF_FAILED_PRECONDITION);
  EXPECT_EQ(re.stats, EPPROF_OK);
}

// ---- passes (APPLICATION / USER) ----

TEST(SessionApi, PassesOpenAndCloseOnlyInApplicationAndUserModes) {
  Collector c;
  epprof_session_config cfg = collector_config(c);
  cfg.replay_mode = EPPROF_REPLAY_USER;
  ScopedSession s(cfg);
  EXPECT_EQ(take(epprof_session_end_pass(s.get())).code, EPPROF_FAILED_PRECONDITION);
  EPPROF_ASSERT_OK(epprof_session_begin_pass(s.get(), 1));
  auto r = take(epprof_session_begin_pass(s.get(), 2));
  EXPECT_EQ(r.code, EPPROF_FAILED_PRECONDITION);
  EXPECT_NE(r.message.find("pass 1 is still open"), std::string::npos) << r.message;
  EPPROF_ASSERT_OK(epprof_session_end_pass(s.get()));
  cfg.replay_mode = EPPROF_REPLAY_KERNEL;
  ScopedSession k(cfg);
  EXPECT_EQ(take(epprof_session_begin_pass(k.get(), 0)).code, EPPROF_FAILED_PRECONDITION);
}

// ---- dispatch counting, host side, without a counter backend ----

TEST(SessionApi, QueryDispatchAsksOnlyAcceptingSessionsAndDeliversToRecordCallback) {
  struct Tool {
    std::vector<std::string> asked;  // node names
    std::vector<epprof_record> got;
    static epprof_status* dispatch(void* u, epprof_session_t, const epprof_dispatch_info* info,
                                   epprof_counter_config_t* config) {
      auto* t = static_cast<Tool*>(u);
      t->asked.push_back(info->node_name);
      EXPECT_STREQ(info->op_type, "Conv");
      EXPECT_NE(info->op_type_id, 0u);
      config->handle = 42;  // opaque to the session: the host opens it
      return nullptr;
    }
    static epprof_status* record(void* u, epprof_session_t, const epprof_dispatch_info* info,
                                 const epprof_record* rs, size_t n) {
      auto* t = static_cast<Tool*>(u);
      EXPECT_EQ(info->correlation_id, 77u);
      t->got.insert(t->got.end(), rs, rs + n);
      return nullptr;
    }
  } tool;
  Collector c;
  epprof_session_config cfg = collector_config(c);
  static const char* ops[] = {"Conv"};
  cfg.op_types = ops;
  cfg.num_op_types = 1;
  static const char* counters[] = {"flops"};
  cfg.counter_names = counters;
  cfg.num_counter_names = 1;
  cfg.dispatch_callback = &Tool::dispatch;
  cfg.dispatch_user_data = &tool;
  cfg.counter_record_callback = &Tool::record;
  cfg.counter_record_user_data = &tool;
  ScopedSession s(cfg);

  epprof_dispatch_info info{};
  info.size = sizeof info;
  info.correlation_id = 77;
  info.node_index = 3;
  info.node_name = "relu";
  info.op_type = "Relu";
  info.ep_name = "CPU";
  info.kernel_name = "cpu:Relu";
  epprof_dispatch_request req[4];
  size_t n = 99;
  EPPROF_ASSERT_OK(epprof_session_query_dispatch(&info, req, 4, &n));
  EXPECT_EQ(n, 0u);  // a Relu: the op filter says no
  info.node_name = "conv";
  info.op_type = "Conv";
  EPPROF_ASSERT_OK(epprof_session_query_dispatch(&info, req, 4, &n));
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(req[0].session.handle, s.get().handle);
  EXPECT_EQ(req[0].config.handle, 42u);
  EXPECT_EQ(tool.asked, std::vector<std::string>{"conv"});
  EXPECT_EQ(take(epprof_session_query_dispatch(nullptr, req, 4, &n)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_session_query_dispatch(&info, nullptr, 4, &n)).code, EPPROF_INVALID_ARGUMENT);

  const epprof_record values[2] = {counter_record(77, "flops", 1234, "conv", "Conv"),
                                   counter_record(77, "bytes", 99, "conv", "Conv")};
  EPPROF_ASSERT_OK(epprof_session_deliver_counters(req[0].session, &info, values, 2));
  ASSERT_EQ(tool.got.size(), 1u);  // the counter-name filter kept flops only
  EXPECT_EQ(tool.got[0].value, 1234);
  EPPROF_ASSERT_OK(epprof_session_flush(s.get()));
  EXPECT_EQ(c.size(), 0u);  // went to the record callback, not the buffer
  EXPECT_EQ(s.stats().dispatches_counted, 1u);
}

// ---- trace files ----

// A session's trace as the report library reads it, JSON or SQLite: the
// node event with its args, and the counter sample.
void expect_session_trace(const std::string& path) {
  epprof_session_config cfg{};
  cfg.size = sizeof cfg;
  cfg.record_size = sizeof(epprof_record);
  cfg.trace_path = path.c_str();
  {
    ScopedSession s(cfg);
    const uint64_t id = epprof_correlation_id_next();
    epprof_record batch[3] = {node_record(id, "conv1", "Conv", "CPUExecutionProvider", nullptr, 4),
                              counter_record(id, "flops", 5000, "conv1", "Conv"),
                              run_record(epprof_correlation_id_next())};
    batch[2].ts_ns = batch[0].ts_ns - 1000;  // the run encloses the node
    batch[2].dur_ns = batch[0].dur_ns + 2000;
    EPPROF_ASSERT_OK(epprof_session_emit(batch, 3));
    EPPROF_ASSERT_OK(epprof_session_stop(s.get()));
  }  // destroy writes the trace
  std::string node_cat, op_name, node_index, flops, counter_args, scope;
  int nodes = 0, counters = 0;
  const auto rr = report::read_trace_file(path, [&](const report::Event& e, std::string*) {
    auto arg = [&](const char* k) {
      const report::Arg* a = e.arg(k);
      return a ? std::string(a->value) : std::string();
    };
    if (e.name == "conv1" && e.ph == "X") {
      ++nodes;
      node_cat = std::string(e.cat);
      op_name = arg("op_name");
      node_index = arg("node_index");
      flops = arg("flops");
    } else if (e.name == "flops" && e.ph == "C") {
      ++counters;
      for (const report::Arg& a : e.args) counter_args += std::string(a.value) + ";";
    } else if (e.name == "epprof_metadata") {
      scope = arg("scope");
    }
    return true;
  });
  ASSERT_TRUE(rr.ok) << rr.error;
  EXPECT_EQ(nodes, 1);
  EXPECT_EQ(node_cat, "Node");
  EXPECT_EQ(op_name, "Conv");
  EXPECT_EQ(node_index, "4");
  EXPECT_EQ(flops, "5000");
  EXPECT_EQ(counters, 1);
  EXPECT_NE(counter_args.find("5000"), std::string::npos) << counter_args;
  EXPECT_EQ(scope, "session");
  const auto v = report::validate_trace(path);
  EXPECT_EQ(v.total(), 0u) << path << ": " << (v.violations.empty() ? "" : v.violations[0].message);
}

TEST(SessionApi, WritesAcceptedRecordsToATraceWithCountersOnTheNode) {
  TempDir dir;
  expect_session_trace(dir.file("session.json"));
}

// A database path gets a SQLite trace, as a profiler's AUTO format does,
// which every epprof tool reads.
TEST(SessionApi, WritesADatabaseTraceForADatabasePath) {
  TempDir dir;
  const std::string path = dir.file("session.db");
  expect_session_trace(path);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  char magic[16] = {};
  EXPECT_EQ(std::fread(magic, 1, sizeof magic, f), sizeof magic);
  std::fclose(f);
  EXPECT_EQ(std::string(magic, 15), "SQLite format 3");
}

// Device records go through the way out as a profiler's device events do:
// on a device track named for their EP, attributed by correlation id to the
// node record that declared its node, with a flow from it; one whose id no
// host record has is kept and counted unattributed.
TEST(SessionApi, DeviceRecordsInATraceGetADeviceTrackAttributionAndAFlow) {
  TempDir dir;
  const std::string path = dir.file("device.json");
  epprof_session_config cfg{};
  cfg.size = sizeof cfg;
  cfg.record_size = sizeof(epprof_record);
  cfg.trace_path = path.c_str();
  const uint64_t node_id = epprof_correlation_id_next();
  {
    ScopedSession s(cfg);
    epprof_record batch[4] = {node_record(node_id, "conv1", "Conv", "OpenCLExecutionProvider", nullptr, 7),
                              run_record(epprof_correlation_id_next()), {}, {}};
    batch[0].tid = 11;
    batch[1].tid = 11;
    batch[1].ts_ns = batch[0].ts_ns - 1000;
    batch[1].dur_ns = batch[0].dur_ns + 5000;
    for (int k = 2; k < 4; ++k) {
      epprof_record& d = batch[k];
      d.size = sizeof d;
      d.kind = EPPROF_RECORD_DEVICE_EVENT;
      d.category = EPPROF_CATEGORY_KERNEL;
      d.ts_ns = batch[0].ts_ns + 200 * k;
      d.dur_ns = 100;
      d.ep = name_id("OpenCLExecutionProvider");
      d.node_index = EPPROF_RECORD_NO_NODE;
    }
    batch[2].name = name_id("conv2d_k");
    batch[2].correlation_id = node_id;
    batch[3].name = name_id("stray_k");
    batch[3].correlation_id = epprof_correlation_id_next();  // no host record has it
    EPPROF_ASSERT_OK(epprof_session_emit(batch, 4));
    EPPROF_ASSERT_OK(epprof_session_stop(s.get()));
  }
  int64_t node_tid = -1, kernel_tid = -1, stray_tid = -1;
  std::string op_name, node_index, correlation, unattributed, track;
  int flows = 0;
  const auto rr = report::read_trace_file(path, [&](const report::Event& e, std::string*) {
    auto arg = [&](const char* k) {
      const report::Arg* a = e.arg(k);
      return a ? std::string(a->value) : std::string();
    };
    if (e.name == "conv1" && e.ph == "X") node_tid = e.tid;
    if (e.name == "conv2d_k") {
      kernel_tid = e.tid;
      EXPECT_EQ(e.cat, "Kernel");
      op_name = arg("op_name");
      node_index = arg("node_index");
      correlation = arg("correlation_id");
    }
    if (e.name == "stray_k") {
      stray_tid = e.tid;
      EXPECT_EQ(arg("unattributed"), "true");
    }
    if (e.ph == "s") ++flows;
    if (e.name == "thread_name" && e.tid == kernel_tid) track = arg("name");
    if (e.name == "epprof_metadata") unattributed = arg("unattributed_device_events");
    return true;
  });
  ASSERT_TRUE(rr.ok) << rr.error;
  EXPECT_EQ(node_tid, 11);
  EXPECT_NE(kernel_tid, -1);
  EXPECT_NE(kernel_tid, node_tid);  // a device track, not the host thread
  EXPECT_EQ(stray_tid, kernel_tid);  // one track per EP
  EXPECT_EQ(op_name, "Conv");
  EXPECT_EQ(node_index, "7");
  EXPECT_EQ(correlation, std::to_string(node_id));
  EXPECT_EQ(flows, 1);
  EXPECT_EQ(track, "OpenCLExecutionProvider");
  EXPECT_EQ(unattributed, "1");
  const auto v = report::validate_trace(path);
  EXPECT_EQ(v.total(), 0u) << (v.violations.empty() ? "" : v.violations[0].message);
}

TEST(SessionApi, AnnotateAddsArgsAndCounterTracksToAProfilerTrace) {
  TempDir dir;
  const std::string path = dir.file("p.json");
  epprof_profiler_config pc = config_for(path);
  epprof_profiler_t p{};
  EPPROF_ASSERT_OK(epprof_profiler_create(&pc, &p));
  EPPROF_ASSERT_OK(epprof_profiler_start(p));
  const uint64_t id = epprof_correlation_id_next();
  EPPROF_ASSERT_OK(epprof_event_begin(p, EPPROF_CATEGORY_NODE, name_id("mm_kernel_time"), id));
  EPPROF_ASSERT_OK(epprof_event_end(p, id, nullptr, 0));
  epprof_arg args[2] = {};
  args[0].key = name_id("page-faults");
  args[0].type = EPPROF_ARG_INT64;
  args[0].value.i64 = 3;
  args[1].key = name_id("note");
  args[1].type = EPPROF_ARG_STRING;
  args[1].value.str = "not a number";
  EPPROF_ASSERT_OK(epprof_event_annotate(p, id, args, 2));
  EXPECT_EQ(take(epprof_event_annotate(p, 0, args, 1)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_event_annotate(p, id, nullptr, 1)).code, EPPROF_INVALID_ARGUMENT);
  epprof_arg bad = args[0];
  bad.key = 0;
  EXPECT_EQ(take(epprof_event_annotate(p, id, &bad, 1)).code, EPPROF_INVALID_ARGUMENT);
  EXPECT_EQ(take(epprof_event_annotate(epprof_profiler_t{12345}, id, args, 1)).code, EPPROF_NOT_FOUND);
  EPPROF_ASSERT_OK(epprof_profiler_stop(p, nullptr));
  EPPROF_ASSERT_OK(epprof_profiler_destroy(p));
  const auto events = read_trace(path);
  int counters = 0;
  bool found = false;
  for (const auto& e : events) {
    if (e.name == "mm_kernel_time") {
      found = true;
      EXPECT_EQ(e.arg("page-faults"), "3");
      EXPECT_EQ(e.arg("note"), "not a number");
    }
    if (e.ph == "C") {
      ++counters;
      EXPECT_EQ(e.name, "page-faults");  // only the numeric one
      EXPECT_EQ(e.args_json, "{\"page-faults\":3}");
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(counters, 1);
}

// ---- growable records ---------------------------------------------------------

TEST(SessionRecords, CreateRefusesAConfigWithoutRecordSize) {
  Collector c;
  epprof_session_t s{};
  epprof_session_config old = collector_config(c);
  old.size = offsetof(epprof_session_config, record_size);  // epprof 0.1's header ended here
  auto r = take(epprof_session_create(&old, &s));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("epprof 0.1"), std::string::npos) << r.message;
  epprof_session_config small = collector_config(c);
  small.record_size = 96;
  r = take(epprof_session_create(&small, &s));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("EPPROF_RECORD_MIN_SIZE"), std::string::npos) << r.message;
}

TEST(SessionRecords, EmitRefusesRecordsWithoutAGoodSize) {
  Collector c;
  ScopedSession session(collector_config(c));
  epprof_record rs[3] = {node_record(1, "a", "Add"), node_record(2, "b", "Add"), node_record(3, "c", "Add")};
  rs[0].size = 0;  // a host that never set it
  auto r = take(epprof_session_emit(rs, 3));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("records[0].size is 0"), std::string::npos) << r.message;
  rs[0].size = sizeof(epprof_record);
  rs[2].size = sizeof(epprof_record) + 8;
  r = take(epprof_session_emit(rs, 3));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("records[2].size is 112 but records[0].size is 104"), std::string::npos) << r.message;
  rs[2].size = 1u << 20;
  rs[0].size = 1u << 20;
  r = take(epprof_session_emit(rs, 1));
  EXPECT_EQ(r.code, EPPROF_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("not a record's size"), std::string::npos) << r.message;
  EPPROF_ASSERT_OK(epprof_session_flush(session.get()));
  EXPECT_EQ(c.size(), 0u) << "nothing of a refused batch is offered";
}

// A host built against a later header, whose records are larger: epprof
// reads the fields it knows at that stride.
TEST(SessionRecords, ALargerHostRecordIsReadAtItsStride) {
  Collector c;
  ScopedSession session(collector_config(c));
  struct Later {
    epprof_record known;
    uint64_t added_later[2];
  };
  Later later[2] = {{node_record(11, "x", "Conv"), {~0ull, ~0ull}}, {node_record(12, "y", "Relu"), {~0ull, ~0ull}}};
  for (Later& l : later) l.known.size = sizeof(Later);
  EPPROF_ASSERT_OK(epprof_session_emit(&later[0].known, 2));
  EPPROF_ASSERT_OK(epprof_session_flush(session.get()));
  std::lock_guard<std::mutex> lock(c.mu);
  ASSERT_EQ(c.records.size(), 2u);
  EXPECT_EQ(c.records[0].correlation_id, 11u);
  EXPECT_EQ(c.records[1].correlation_id, 12u);
  EXPECT_EQ(c.records[1].op_type, name_id("Relu"));
  EXPECT_EQ(c.records[1].size, sizeof(epprof_record)) << "a delivered record's size says what epprof filled";
}

// A tool built against a later header asks for a larger stride: each
// record arrives at it, filled as far as this library knows, the rest 0.
struct Strided {
  std::mutex mu;
  size_t stride = 0;
  std::vector<std::vector<unsigned char>> records;
  static epprof_status* callback(void* user, epprof_session_t, const epprof_record* records, size_t n, uint64_t) {
    auto* self = static_cast<Strided*>(user);
    std::lock_guard<std::mutex> lock(self->mu);
    const auto* bytes = reinterpret_cast<const unsigned char*>(records);
    for (size_t i = 0; i < n; ++i)
      self->records.emplace_back(bytes + i * self->stride, bytes + (i + 1) * self->stride);
    return nullptr;
  }
};

TEST(SessionRecords, ALaterToolGetsItsStrideWithTheUnknownTailZero) {
  Strided tool;
  tool.stride = sizeof(epprof_record) + 24;
  epprof_session_config cfg{};
  cfg.size = sizeof cfg;
  cfg.record_size = tool.stride;
  cfg.callback = &Strided::callback;
  cfg.callback_user_data = &tool;
  ScopedSession session(cfg);
  const epprof_record rs[3] = {node_record(21, "a", "Add"), node_record(22, "b", "Mul"), run_record(23)};
  EPPROF_ASSERT_OK(epprof_session_emit(rs, 3));
  EPPROF_ASSERT_OK(epprof_session_flush(session.get()));
  epprof_session_stats st{};
  st.size = sizeof st;
  EPPROF_ASSERT_OK(epprof_session_get_stats(session.get(), &st));
  EXPECT_EQ(st.bytes_delivered, 3 * tool.stride);
  std::lock_guard<std::mutex> lock(tool.mu);
  ASSERT_EQ(tool.records.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    epprof_record got;
    std::memcpy(&got, tool.records[i].data(), sizeof got);
    EXPECT_EQ(got.size, sizeof(epprof_record));
    EXPECT_EQ(got.correlation_id, rs[i].correlation_id);
    EXPECT_EQ(got.name, rs[i].name);
    EXPECT_EQ(got.op_type, rs[i].op_type);
    for (size_t b = sizeof(epprof_record); b < tool.stride; ++b) ASSERT_EQ(tool.records[i][b], 0) << "byte " << b;
  }
}

}  // namespace
}  // namespace epprof::testing
