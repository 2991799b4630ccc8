// `epprof counters`: what counters this machine offers, per device, with
// descriptions, units and, for those it cannot count, why; `--check` plans
// a counter set into passes. Uses only the public C API (epprof/counters.h).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli.h"
#include "epprof/epprof.h"

namespace epprof::cli {
namespace {

constexpr const char* kCommand = "counters";

void print_help() {
  std::printf(
      "usage: epprof counters [--device NAME] [--json] [--check a,b,c] [--fake-pmu]\n"
      "\n"
      "Lists the counters each device offers on this machine: name, kind\n"
      "(software, hardware, derived), unit, description, and for a counter\n"
      "that cannot be counted here the reason. PMU-native event names that\n"
      "libpfm4 knows (e.g. INST_RETIRED:ANY_P) are accepted by --check too.\n"
      "\n"
      "options:\n"
      "  --device NAME  only this device (default: every device)\n"
      "  --json         print JSON instead of a table\n"
      "  --check LIST   validate a comma-separated counter set on the device\n"
      "                 (default cpu) and print its pass plan\n"
      "  --fake-pmu     also register the simulated 4-counter PMU 'fake-pmu'\n"
      "  -h, --help     show this help\n"
      "\n"
      "Exit status: 0 on success (a set needing several passes included),\n"
      "1 if a counter is unknown or unsupported, 2 for a bad command line.\n");
}

std::string json_string(const char* s) {
  std::string out = "\"";
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p; ++p) {
    switch (*p) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (*p < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", *p);
          out += buf;
        } else {
          out += char(*p);
        }
    }
  }
  return out + "\"";
}

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case EPPROF_COUNTER_SOFTWARE: return "software";
    case EPPROF_COUNTER_HARDWARE: return "hardware";
    case EPPROF_COUNTER_DERIVED: return "derived";
    default: return "unknown";
  }
}

// Prints and releases an error status; returns kExitError.
int fail(epprof_status* st) {
  std::fprintf(stderr, "epprof %s: %s: %s\n", kCommand,
               epprof_status_code_name(epprof_status_get_code(st)), epprof_status_get_message(st));
  epprof_status_release(st);
  return kExitError;
}

bool list_devices(const std::string& only, std::vector<std::string>* out, int* rc) {
  size_t n = 0;
  if (epprof_status* st = epprof_counter_device_count(&n)) {
    *rc = fail(st);
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    if (epprof_status* st = epprof_counter_device_name(i, &name)) {
      *rc = fail(st);
      return false;
    }
    if (only.empty() || only == name) out->push_back(name);
  }
  if (!only.empty() && out->empty()) {
    size_t dummy = 0;
    *rc = fail(epprof_counter_count(only.c_str(), &dummy));  // NOT_FOUND naming the known devices
    return false;
  }
  return true;
}

int list(const std::vector<std::string>& devices, bool json) {
  if (json) std::printf("{\"devices\":[");
  bool first_device = true;
  for (const std::string& d : devices) {
    size_t n = 0;
    if (epprof_status* st = epprof_counter_count(d.c_str(), &n)) return fail(st);
    if (json) {
      std::printf("%s{\"name\":%s,\"counters\":[", first_device ? "" : ",", json_string(d.c_str()).c_str());
    } else {
      std::printf("%sdevice %s\n", first_device ? "" : "\n", d.c_str());
      std::printf("  %-22s %-9s %-19s %s\n", "NAME", "KIND", "UNIT", "DESCRIPTION");
    }
    first_device = false;
    for (size_t i = 0; i < n; ++i) {
      epprof_counter_info info;
      std::memset(&info, 0, sizeof info);
      info.size = sizeof info;
      if (epprof_status* st = epprof_counter_get_info(d.c_str(), i, &info)) return fail(st);
      if (json) {
        std::printf("%s{\"name\":%s,\"kind\":\"%s\",\"unit\":%s,\"backend\":%s,\"description\":%s,"
                    "\"supported\":%s,\"unsupported_reason\":%s}",
                    i ? "," : "", json_string(info.name).c_str(), kind_name(info.kind),
                    json_string(info.unit).c_str(), json_string(info.backend).c_str(),
                    json_string(info.description).c_str(), info.supported ? "true" : "false",
                    json_string(info.unsupported_reason).c_str());
      } else {
        std::printf("  %-22s %-9s %-19s %s\n", info.name, kind_name(info.kind), info.unit, info.description);
        if (!info.supported) std::printf("  %-22s   -> not available: %s\n", "", info.unsupported_reason);
      }
    }
    if (json) std::printf("]}");
  }
  if (json) std::printf("]}\n");
  return kExitOk;
}

int check(const std::string& device, const std::string& list_text, bool json) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= list_text.size()) {
    const size_t comma = list_text.find(',', start);
    const std::string item = list_text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) names.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (names.empty()) return usage_error(kCommand, "--check needs at least one counter name");
  std::vector<const char*> ptrs;
  for (const std::string& n : names) ptrs.push_back(n.c_str());
  epprof_counter_config_t config{0};
  epprof_status* st = epprof_counter_config_create(device.c_str(), ptrs.data(), ptrs.size(), &config);
  if (st && epprof_status_get_code(st) != EPPROF_MULTIPASS) return fail(st);
  epprof_status_release(st);

  uint32_t passes = 0;
  size_t total = 0;
  int rc = kExitOk;
  if ((st = epprof_counter_config_pass_count(config, &passes)) ||
      (st = epprof_counter_config_counter_count(config, &total))) {
    rc = fail(st);
  } else {
    if (json)
      std::printf("{\"device\":%s,\"passes\":%u,\"plan\":[", json_string(device.c_str()).c_str(), passes);
    else
      std::printf("counter set on device %s: %zu counters, %u pass%s\n", device.c_str(), total, passes,
                  passes == 1 ? "" : "es");
    for (uint32_t p = 0; p < passes && rc == kExitOk; ++p) {
      size_t count = 0;
      if ((st = epprof_counter_config_get_pass(config, p, nullptr, 0, &count))) {
        rc = fail(st);
        break;
      }
      std::vector<size_t> idx(count);
      if ((st = epprof_counter_config_get_pass(config, p, idx.data(), idx.size(), &count))) {
        rc = fail(st);
        break;
      }
      if (json) std::printf("%s[", p ? "," : "");
      else std::printf("  pass %u:", p);
      for (size_t k = 0; k < idx.size(); ++k) {
        epprof_counter_info info;
        std::memset(&info, 0, sizeof info);
        info.size = sizeof info;
        if ((st = epprof_counter_config_get_counter(config, idx[k], &info, nullptr))) {
          rc = fail(st);
          break;
        }
        if (json) std::printf("%s%s", k ? "," : "", json_string(info.name).c_str());
        else std::printf("%s %s (%s)", k ? "," : "", info.name, kind_name(info.kind));
      }
      std::printf(json ? "]" : "\n");
    }
    if (json && rc == kExitOk) std::printf("]}\n");
    if (!json && passes > 1 && rc == kExitOk)
      std::printf("needs %u passes: use --replay kernel or application to collect every pass, or\n"
                  "--replay none to multiplex (scaled estimates)\n",
                  passes);
  }
  epprof_status_release(epprof_counter_config_destroy(config));
  return rc;
}

}  // namespace

int run_counters(int argc, char** argv) {
  bool json = false;
  bool fake = false;
  std::string device;
  std::string check_list;
  bool have_check = false;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (std::strcmp(a, "-h") == 0 || std::strcmp(a, "--help") == 0) {
      print_help();
      return kExitOk;
    } else if (std::strcmp(a, "--json") == 0) {
      json = true;
    } else if (std::strcmp(a, "--fake-pmu") == 0) {
      fake = true;
    } else if (std::strcmp(a, "--device") == 0 || std::strcmp(a, "--check") == 0) {
      if (i + 1 >= argc) return usage_error(kCommand, std::string(a) + " needs a value");
      (std::strcmp(a, "--device") == 0 ? device : check_list) = argv[++i];
      if (std::strcmp(a, "--check") == 0) have_check = true;
    } else {
      return usage_error(kCommand, std::string("unknown option '") + a + "'");
    }
  }
  if (fake) {
    if (epprof_status* st = epprof_counter_register_fake_device()) return fail(st);
  }
  if (have_check) return check(device.empty() ? "cpu" : device, check_list, json);
  std::vector<std::string> devices;
  int rc = kExitOk;
  if (!list_devices(device, &devices, &rc)) return rc;
  return list(devices, json);
}

}  // namespace epprof::cli
