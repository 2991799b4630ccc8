// Pass planning: pack the PMU events of a configuration into as few passes
// as the device's programmable counters allow. Greedy first fit in the
// caller's order, after the ratios whose inputs must share a pass.
#include <algorithm>
#include <string>

#include "counters/backend.h"

namespace epprof::counters {
namespace {

bool on_pmu(const CounterDef* c) { return c->source == Source::Backend && c->slot != Slot::None; }

}  // namespace

std::string plan_passes(uint32_t num_programmable, Plan* plan) {
  const size_t n = plan->counters.size();
  constexpr uint32_t kUnplaced = UINT32_MAX;
  plan->pass_of.assign(n, kUnplaced);
  std::vector<uint32_t> used;  // programmable counters taken, per pass

  auto need_of = [&](const std::vector<size_t>& unit) {
    uint32_t need = 0;
    for (size_t i : unit)
      if (plan->pass_of[i] == kUnplaced && plan->counters[i]->slot == Slot::Programmable) ++need;
    return need;
  };
  auto assign = [&](const std::vector<size_t>& unit, uint32_t pass) {
    if (pass == used.size()) used.push_back(0);
    for (size_t i : unit) {
      if (plan->pass_of[i] != kUnplaced) continue;
      plan->pass_of[i] = pass;
      if (plan->counters[i]->slot == Slot::Programmable) ++used[pass];
    }
  };
  // First pass with room for the unit; a new pass when none has.
  auto place = [&](const std::vector<size_t>& unit) -> bool {
    const uint32_t need = need_of(unit);
    if (need > num_programmable) return false;
    uint32_t p = 0;
    while (p < used.size() && used[p] + need > num_programmable) ++p;
    assign(unit, p);
    return true;
  };

  // 1. A ratio of PMU events (ipc) needs both in one pass.
  for (size_t i = 0; i < n; ++i) {
    if (plan->counters[i]->source != Source::Ratio) continue;
    std::vector<size_t> unit;
    for (int in : {plan->numerator_index[i], plan->denominator_index[i]})
      if (in >= 0 && on_pmu(plan->counters[size_t(in)])) unit.push_back(size_t(in));
    if (unit.empty()) continue;
    uint32_t fixed_pass = kUnplaced;
    for (size_t u : unit)
      if (plan->pass_of[u] != kUnplaced) fixed_pass = plan->pass_of[u];
    if (fixed_pass != kUnplaced) {
      if (used[fixed_pass] + need_of(unit) > num_programmable)
        return "'" + plan->counters[i]->name + "' needs its inputs in one pass, and pass " +
               std::to_string(fixed_pass) + " has no room left";
      assign(unit, fixed_pass);
    } else if (!place(unit)) {
      return "'" + plan->counters[i]->name + "' needs " + std::to_string(need_of(unit)) +
             " programmable counters at once; the device has " + std::to_string(num_programmable);
    }
  }
  // 2. The other PMU events, in order.
  for (size_t i = 0; i < n; ++i) {
    if (plan->pass_of[i] != kUnplaced || !on_pmu(plan->counters[i])) continue;
    if (!place({i}))
      return "'" + plan->counters[i]->name + "' needs a programmable counter; the device has none";
  }
  // 3. Software events ride in pass 0; host measures and their ratios are
  // produced in every pass (listed in 0); a PMU ratio follows its inputs.
  for (size_t i = 0; i < n; ++i) {
    if (plan->pass_of[i] != kUnplaced) continue;
    uint32_t p = 0;
    if (plan->counters[i]->source == Source::Ratio && plan->numerator_index[i] >= 0 &&
        on_pmu(plan->counters[size_t(plan->numerator_index[i])]))
      p = plan->pass_of[size_t(plan->numerator_index[i])];
    plan->pass_of[i] = p;
  }
  plan->num_passes = std::max<uint32_t>(1, uint32_t(used.size()));

  // Group members per pass: PMU events first (a hardware event leads the
  // group), then software events; stable within each kind.
  plan->members.assign(plan->num_passes, {});
  for (int want_pmu = 1; want_pmu >= 0; --want_pmu)
    for (size_t i = 0; i < n; ++i) {
      const CounterDef* c = plan->counters[i];
      if (c->source != Source::Backend || on_pmu(c) != bool(want_pmu)) continue;
      plan->members[plan->pass_of[i]].push_back(i);
    }
  return "";
}

}  // namespace epprof::counters
