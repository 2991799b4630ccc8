// The "fake-pmu" device: a simulated PMU with 4 programmable counters and
// fixed cycles/instructions counters, so that pass planning, replay and
// multiplex scaling are exercised where no PMU exists. It makes no
// syscall: each start/stop interval adds a fixed amount per event, and
// while k groups are enabled together each runs 1/k of the time (the
// round-robin a kernel does when multiplexing), so scaled estimates are
// exact.
#include <cerrno>
#include <string>

#include "counters/backend.h"

namespace epprof::counters {
namespace {

constexpr uint32_t kProgrammable = 4;
constexpr uint64_t kIntervalNs = 720720;  // divisible by 1..16: exact shares
constexpr uint64_t kUnit = 5040;          // divisible by 1..10

class FakeGroups final : public GroupSet {
 public:
  explicit FakeGroups(const Plan& plan) : groups_(plan.num_passes) {
    for (uint32_t p = 0; p < plan.num_passes; ++p)
      for (size_t idx : plan.members[p])
        groups_[p].increments.push_back(plan.counters[idx]->fake_increment);
    for (Group& g : groups_) g.values.assign(g.increments.size(), 0);
  }
  int select(uint32_t pass) noexcept override {
    enabled_count_ = 0;
    for (size_t p = 0; p < groups_.size(); ++p) {
      groups_[p].enabled = pass == EPPROF_COUNTER_PASS_MULTIPLEX || pass == p;
      if (groups_[p].enabled) ++enabled_count_;
    }
    return 0;
  }
  int read(uint32_t pass, uint64_t* buf, size_t words) noexcept override {
    Group& g = groups_[pass];
    if (words < 3 + g.values.size()) return EOVERFLOW;
    // Reads come in start/stop pairs: the second of a pair ends an interval.
    if (g.enabled && (++g.reads % 2) == 0) {
      const uint64_t share = enabled_count_ ? enabled_count_ : 1;
      g.time_enabled += kIntervalNs;
      g.time_running += kIntervalNs / share;
      for (size_t k = 0; k < g.values.size(); ++k) g.values[k] += g.increments[k] / share;
    }
    buf[0] = g.values.size();
    buf[1] = g.time_enabled;
    buf[2] = g.time_running;
    for (size_t k = 0; k < g.values.size(); ++k) buf[3 + k] = g.values[k];
    return 0;
  }

 private:
  struct Group {
    std::vector<uint64_t> increments;
    std::vector<uint64_t> values;
    uint64_t time_enabled = 0;
    uint64_t time_running = 0;
    uint64_t reads = 0;
    bool enabled = false;
  };
  std::vector<Group> groups_;
  uint32_t enabled_count_ = 0;
};

class FakePmuBackend final : public Backend {
 public:
  uint32_t num_programmable() const override { return kProgrammable; }

  std::vector<CounterDef> list() override {
    std::vector<CounterDef> out;
    auto add = [&](const char* name, Slot slot, uint64_t increment, const char* what) {
      CounterDef c = CounterDef::named(name, "count", "fake-pmu", "fake-pmu", EPPROF_COUNTER_HARDWARE,
                                       std::string("Simulated ") + what +
                                           (slot == Slot::Fixed ? " (fixed counter)" : "") + ": adds " +
                                           std::to_string(increment) + " per start/stop interval.");
      c.slot = slot;
      c.fake_increment = increment;
      out.push_back(std::move(c));
    };
    add("cycles", Slot::Fixed, 10 * kUnit, "core cycles");
    add("instructions", Slot::Fixed, 20 * kUnit, "instructions retired");
    const char* const kProgrammableEvents[] = {
        "cache-references", "cache-misses",    "branch-instructions", "branch-misses",
        "l1d-loads",        "l1d-load-misses", "llc-loads",           "llc-load-misses",
        "dtlb-load-misses", "stalled-cycles-frontend"};
    uint64_t k = 1;
    for (const char* name : kProgrammableEvents) add(name, Slot::Programmable, k++ * kUnit, name);
    return out;
  }

  epprof_status* open(const Plan& plan, std::unique_ptr<GroupSet>* out) override {
    *out = std::make_unique<FakeGroups>(plan);
    return nullptr;
  }
};

}  // namespace

std::unique_ptr<Backend> make_fake_pmu_backend() { return std::make_unique<FakePmuBackend>(); }

}  // namespace epprof::counters
