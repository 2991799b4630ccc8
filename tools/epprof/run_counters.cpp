#include "run_counters.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "cli.h"
#include "epprof/rt/error.h"

namespace epprof::cli {
namespace {

constexpr const char* kCommand = "run";

std::string take_message(epprof_status* st) {
  std::string m = epprof_status_get_message(st);
  epprof_status_release(st);
  return m;
}

const char* mode_name(epprof_replay_mode m) {
  switch (m) {
    case EPPROF_REPLAY_KERNEL: return "kernel";
    case EPPROF_REPLAY_APPLICATION: return "application";
    case EPPROF_REPLAY_USER: return "user";
    default: return "none";
  }
}

}  // namespace

const char* counter_options_help() {
  return "  --counters LIST      count LIST (comma-separated, e.g. task-clock,page-faults,flops)\n"
         "                       around every node on the cpu device; print them per op and\n"
         "                       write them onto the trace's node events and as counter tracks\n"
         "                       (`epprof counters` lists what this machine offers)\n"
         "  --replay MODE        how a set needing several passes is collected: kernel (default:\n"
         "                       re-run each node's kernel per extra pass), application (run the\n"
         "                       whole workload once per pass and join per node), none (multiplex:\n"
         "                       scaled estimates, marked ~)\n";
}

int parse_counter_option(int argc, char** argv, int& i, CounterOptions& o) {
  const std::string a = argv[i];
  if (a != "--counters" && a != "--replay") return 0;
  if (i + 1 >= argc) {
    usage_error(kCommand, a + " needs a value");
    return -1;
  }
  const std::string v = argv[++i];
  if (a == "--counters") {
    o.names = split_list(v);
    for (const auto& n : o.names) {
      if (n.empty()) {
        usage_error(kCommand, "--counters: empty name in '" + v + "'");
        return -1;
      }
    }
    return 1;
  }
  o.replay_given = true;
  if (v == "kernel") o.replay = EPPROF_REPLAY_KERNEL;
  else if (v == "application") o.replay = EPPROF_REPLAY_APPLICATION;
  else if (v == "none") o.replay = EPPROF_REPLAY_NONE;
  else {
    usage_error(kCommand, "--replay: unknown mode '" + v + "' (kernel, application or none)");
    return -1;
  }
  return 1;
}

int check_counter_options(const CounterOptions& o) {
  if (o.replay_given && o.names.empty()) {
    usage_error(kCommand, "--replay needs --counters");
    return -1;
  }
  return 0;
}

struct RunCounters::Impl {
  CounterOptions options;
  epprof_counter_config_t config{0};
  uint32_t passes = 1;
  std::vector<std::string> counter_names;  // the configuration's order (ratio inputs included)
  epprof_session_t session{0};
  mutable std::mutex mu;
  std::vector<epprof_record> records;  // every COUNTER record delivered
  std::map<uint32_t, std::pair<std::string, std::string>> nodes;  // index → (name, op type)

  static epprof_status* dispatch(void* u, epprof_session_t, const epprof_dispatch_info*,
                                 epprof_counter_config_t* config) {
    *config = static_cast<Impl*>(u)->config;
    return nullptr;
  }
  static epprof_status* record(void* u, epprof_session_t, const epprof_dispatch_info* info,
                               const epprof_record* rs, size_t n) {
    auto* self = static_cast<Impl*>(u);
    std::lock_guard<std::mutex> lock(self->mu);
    self->records.insert(self->records.end(), rs, rs + n);
    if (!self->nodes.count(info->node_index)) self->nodes[info->node_index] = {info->node_name, info->op_type};
    return nullptr;
  }
  static epprof_status* drop(void*, epprof_session_t, const epprof_record*, size_t, uint64_t) { return nullptr; }
};

RunCounters::RunCounters(const CounterOptions& o)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = o;
  std::vector<const char*> names;
  for (const auto& n : o.names) names.push_back(n.c_str());
  epprof_status* st = epprof_counter_config_create("cpu", names.data(), names.size(), &m.config);
  if (st && epprof_status_get_code(st) != EPPROF_MULTIPASS)
    throw rt::Error(rt::ErrorKind::BadInput, "--counters: " + take_message(st));
  epprof_status_release(st);
  epprof_status_release(epprof_counter_config_pass_count(m.config, &m.passes));
  size_t count = 0;
  epprof_status_release(epprof_counter_config_counter_count(m.config, &count));
  for (size_t i = 0; i < count; ++i) {
    epprof_counter_info info{};
    info.size = sizeof info;
    epprof_status_release(epprof_counter_config_get_counter(m.config, i, &info, nullptr));
    m.counter_names.push_back(info.name ? info.name : "?");
  }
  epprof_session_config cfg{};
  cfg.size = sizeof cfg;
  cfg.record_size = sizeof(epprof_record);
  cfg.replay_mode = o.replay;
  cfg.callback = &Impl::drop;  // values come through the record callback
  cfg.record_kinds = 1u << EPPROF_RECORD_COUNTER;
  cfg.dispatch_callback = &Impl::dispatch;
  cfg.dispatch_user_data = &m;
  cfg.counter_record_callback = &Impl::record;
  cfg.counter_record_user_data = &m;
  if ((st = epprof_session_create(&cfg, &m.session)))
    throw rt::Error(rt::ErrorKind::Io, "--counters: " + take_message(st));
  if (o.replay != EPPROF_REPLAY_APPLICATION && (st = epprof_session_start(m.session)))
    throw rt::Error(rt::ErrorKind::Io, "--counters: " + take_message(st));
}

RunCounters::~RunCounters() {
  if (impl_->session.handle) epprof_status_release(epprof_session_destroy(impl_->session));
  epprof_status_release(epprof_counter_config_destroy(impl_->config));
}

int RunCounters::workload_passes() const {
  return impl_->options.replay == EPPROF_REPLAY_APPLICATION ? int(impl_->passes) : 1;
}

void RunCounters::begin_pass(int pass) {
  if (impl_->options.replay != EPPROF_REPLAY_APPLICATION) return;
  epprof_status_release(epprof_session_start(impl_->session));
  if (epprof_status* st = epprof_session_begin_pass(impl_->session, uint32_t(pass)))
    throw rt::Error(rt::ErrorKind::Io, "--counters: " + take_message(st));
}

void RunCounters::end_pass() {
  if (impl_->options.replay != EPPROF_REPLAY_APPLICATION) return;
  epprof_status_release(epprof_session_end_pass(impl_->session));
  epprof_status_release(epprof_session_stop(impl_->session));
}

void RunCounters::finish() {
  epprof_session_state state;
  if (!epprof_session_get_state(impl_->session, &state) && state == EPPROF_SESSION_ACTIVE)
    epprof_status_release(epprof_session_stop(impl_->session));
}

void RunCounters::print(FILE* out, int warmup, int runs_per_pass) const {
  const Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  // Join the passes: one value per (node, run ordinal within a pass, counter),
  // from whichever pass counted it.
  struct Cell {
    double value = 0;
    bool valid = false, scaled = false;
  };
  std::map<std::tuple<uint32_t, uint64_t, uint32_t>, Cell> joined;
  for (const auto& r : m.records) {
    const uint64_t ordinal = runs_per_pass > 0 ? (r.run_id - 1) % uint64_t(runs_per_pass) + 1 : r.run_id;
    if (ordinal <= uint64_t(warmup)) continue;
    Cell& c = joined[{r.node_index, ordinal, r.name}];
    if (!(r.counter_flags & EPPROF_COUNTER_VALUE_VALID) || c.valid) continue;
    c.value = r.value;
    c.valid = true;
    c.scaled = r.counter_flags & EPPROF_COUNTER_VALUE_SCALED;
  }
  std::vector<epprof_name_id> ids;
  for (const auto& n : m.counter_names) {
    epprof_name_id id = 0;
    epprof_status_release(epprof_intern(n.c_str(), &id));
    ids.push_back(id);
  }
  struct Row {
    std::set<std::pair<uint32_t, uint64_t>> dispatches;
    std::vector<double> sum;
    std::vector<uint64_t> valid;
    std::vector<bool> scaled;
  };
  std::map<std::string, Row> rows;
  for (const auto& [key, cell] : joined) {
    const auto node = m.nodes.find(std::get<0>(key));
    const std::string op = node == m.nodes.end() ? "?" : node->second.second;
    Row& row = rows[op];
    if (row.sum.empty()) {
      row.sum.assign(ids.size(), 0);
      row.valid.assign(ids.size(), 0);
      row.scaled.assign(ids.size(), false);
    }
    row.dispatches.insert({std::get<0>(key), std::get<1>(key)});
    for (size_t k = 0; k < ids.size(); ++k) {
      if (ids[k] != std::get<2>(key) || !cell.valid) continue;
      row.sum[k] += cell.value;
      ++row.valid[k];
      row.scaled[k] = row.scaled[k] || cell.scaled;
    }
  }
  std::fprintf(out, "counters (replay %s, %u pass%s, per op: total over the measured runs):\n",
               mode_name(m.options.replay), m.passes, m.passes == 1 ? "" : "es");
  std::fprintf(out, "%-20s %8s", "op", "count");
  for (const auto& n : m.counter_names) std::fprintf(out, " %16s", n.c_str());
  std::fprintf(out, "\n");
  for (const auto& [op, row] : rows) {
    std::fprintf(out, "%-20s %8zu", op.c_str(), row.dispatches.size());
    for (size_t k = 0; k < ids.size(); ++k) {
      char buf[32];
      if (!row.valid[k])
        std::snprintf(buf, sizeof buf, "n/a");
      else if (std::fabs(row.sum[k]) < 1e15 && row.sum[k] == std::floor(row.sum[k]))
        std::snprintf(buf, sizeof buf, "%s%.0f", row.scaled[k] ? "~" : "", row.sum[k]);
      else
        std::snprintf(buf, sizeof buf, "%s%.4g", row.scaled[k] ? "~" : "", row.sum[k]);
      std::fprintf(out, " %16s", buf);
    }
    std::fprintf(out, "\n");
  }
  if (rows.empty()) std::fprintf(out, "(no counter values were delivered)\n");
}

}  // namespace epprof::cli
