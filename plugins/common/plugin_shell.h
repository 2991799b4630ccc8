// The C side of a device EP plugin, written once for every device: the
// epprof_ep_plugin handle and its slots, each of which catches every
// exception and turns it into a status whose message starts with the EP's
// prefix, and the entry point's checks. No exception reaches the host.
//
// A device EP writes only what is its own, as a class:
//
//   class MyEp {
//    public:
//     static constexpr EpIdentity kIdentity{"my", "MyExecutionProvider"};
//     // The EP on its device, allocating at most `alloc_limit` bytes a
//     // buffer (0: no cap), or nullptr with *why said: the EP is then
//     // refused (UNSUPPORTED) and the host runs its nodes on the next EP.
//     static std::unique_ptr<MyEp> open(const epprof_host_api* host, uint64_t alloc_limit, std::string* why);
//     OpSet ops() const;                                     // what parse_node may accept
//     // A node parse_node accepted: false, with *error, to fail the claim
//     // (a kernel that cannot be built now would fail every run later).
//     bool prepare(const OpKernel& kernel, std::string* error);
//     ComputeResult compute(const OpKernel& kernel, const epprof_ep_tensor* inputs, size_t num_inputs,
//                           epprof_ep_outputs* outputs);
//     epprof_ep_profiler* create_profiler();
//   };
//
//   extern "C" __attribute__((visibility("default"))) epprof_status* epprof_ep_plugin_entry(
//       const epprof_host_api* host, uint32_t host_abi_version, epprof_ep_plugin** out) {
//     return epprof::ep_common::plugin_entry<MyEp>(host, host_abi_version, out);
//   }
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

#include "ep_ops.h"
#include "epprof/ep_plugin.h"

namespace epprof::ep_common {

// What names a device EP to the shell: a short name, from which the shell
// derives the EP's status prefix and allocation-cap variable by one rule
// for every EP, and its provider name.
struct EpIdentity {
  const char* short_name;  // lower case, as in the plugin's file name: "my"
  const char* name;        // node events' provider: "MyExecutionProvider"
};

// The prefix of every status message of the EP: "my EP: ".
inline std::string status_prefix(const EpIdentity& id) { return std::string(id.short_name) + " EP: "; }

// The variable that caps one device buffer of the EP (alloc_limit_from_env):
// EPPROF_MY_MAX_ALLOC_BYTES.
inline std::string alloc_limit_variable(const EpIdentity& id) {
  std::string var = "EPPROF_";
  for (const char* c = id.short_name; *c; ++c) var += *c >= 'a' && *c <= 'z' ? char(*c - 'a' + 'A') : *c;
  return var + "_MAX_ALLOC_BYTES";
}

// The cap on one device buffer that environment variable `var` sets (a
// test knob: a bigger allocation fails as device out-of-memory), or 0, no
// cap, when it is unset. False, with *why naming the variable and its
// value, when it is set to anything but a decimal byte count: a mistyped
// cap must not quietly become no cap.
inline bool alloc_limit_from_env(const char* var, uint64_t* limit, std::string* why) {
  *limit = 0;
  const char* text = std::getenv(var);
  if (text == nullptr) return true;
  const char* end = text + std::strlen(text);
  const auto [stop, err] = std::from_chars(text, end, *limit);
  if (err == std::errc() && stop == end && stop != text) return true;
  *limit = 0;
  *why = std::string(var) + "='" + text + "' is not a byte count (a decimal integer)";
  return false;
}

template <class Ep>
class PluginShell {
 public:
  static epprof_status* entry(const epprof_host_api* host, uint32_t host_abi_version, epprof_ep_plugin** out) {
    if (out) *out = nullptr;
    if (host == nullptr) return nullptr;  // no way to make a status; *out stays null, which no host takes for an EP
    if (out == nullptr) return fail(host, EPPROF_INVALID_ARGUMENT, "entry: out is NULL");
    if (host_abi_version < 1) return fail(host, EPPROF_VERSION_MISMATCH, "needs a host speaking EP plugin ABI 1 or later");
    try {
      std::string why;
      uint64_t alloc_limit;
      std::unique_ptr<Ep> ep;
      if (alloc_limit_from_env(alloc_limit_variable(Ep::kIdentity).c_str(), &alloc_limit, &why))
        ep = Ep::open(host, alloc_limit, &why);
      if (!ep)
        return fail(host, EPPROF_UNSUPPORTED, why + "; the EP is refused at load: its nodes run on the next EP (the CPU EP)");
      auto shell = std::make_unique<PluginShell>(host, std::move(ep));
      *out = &shell.release()->c_;
      return nullptr;
    } catch (const std::exception& e) {
      return fail(host, EPPROF_PLUGIN_ERROR, std::string("entry: ") + e.what());
    }
  }

  PluginShell(const epprof_host_api* host, std::unique_ptr<Ep> ep) : host_(host), ep_(ep.release()) {
    c_.abi_version = EPPROF_EP_PLUGIN_ABI_VERSION;
    c_.name = Ep::kIdentity.name;
    c_.claims = claims;
    c_.create_kernel = create_kernel;
    c_.compute = compute;
    c_.release_kernel = release_kernel;
    c_.create_profiler = create_profiler;
    c_.release = release;
  }
  ~PluginShell() { delete ep_; }
  PluginShell(const PluginShell&) = delete;
  PluginShell& operator=(const PluginShell&) = delete;

 private:
  // The host's pointer is &c_, the first member of a standard-layout class.
  static PluginShell& self(epprof_ep_plugin* p);

  static const std::string& prefix() {
    static const std::string p = status_prefix(Ep::kIdentity);
    return p;
  }

  static epprof_status* fail(const epprof_host_api* host, epprof_status_code code, const std::string& msg) {
    return host->status_create(code, (prefix() + msg).c_str());
  }

  static epprof_status* claims(epprof_ep_plugin* p, const epprof_ep_node* node, int* out_claimed) {
    PluginShell& s = self(p);
    try {
      *out_claimed = 0;
      OpKernel k;
      std::string why_not;
      if (!parse_node(*node, s.ep_->ops(), &k, &why_not)) return nullptr;
      std::string error;
      if (!s.ep_->prepare(k, &error)) return fail(s.host_, EPPROF_PLUGIN_ERROR, error);
      *out_claimed = 1;
      return nullptr;
    } catch (const std::exception& e) {
      return fail(s.host_, EPPROF_PLUGIN_ERROR, std::string("claims: ") + e.what());
    }
  }

  static epprof_status* create_kernel(epprof_ep_plugin* p, const epprof_ep_node* node, void** out_kernel) {
    PluginShell& s = self(p);
    return ep_common::create_kernel(s.host_, prefix().c_str(), s.ep_->ops(), *node, out_kernel);
  }

  static epprof_status* compute(epprof_ep_plugin* p, void* kernel, const epprof_ep_tensor* inputs,
                                size_t num_inputs, epprof_ep_outputs* outputs) {
    PluginShell& s = self(p);
    try {
      return to_status(s.host_, prefix().c_str(),
                       s.ep_->compute(*static_cast<const OpKernel*>(kernel), inputs, num_inputs, outputs));
    } catch (const std::bad_alloc&) {
      return fail(s.host_, EPPROF_OUT_OF_MEMORY, "compute: out of host memory");
    } catch (const std::exception& e) {
      return fail(s.host_, EPPROF_PLUGIN_ERROR, std::string("compute: ") + e.what());
    }
  }

  static void release_kernel(epprof_ep_plugin*, void* kernel) { ep_common::release_kernel(kernel); }

  static epprof_status* create_profiler(epprof_ep_plugin* p, epprof_ep_profiler** out) {
    PluginShell& s = self(p);
    if (out == nullptr) return fail(s.host_, EPPROF_INVALID_ARGUMENT, "create_profiler: out is NULL");
    *out = nullptr;
    try {
      *out = s.ep_->create_profiler();
      return nullptr;
    } catch (const std::bad_alloc&) {
      return fail(s.host_, EPPROF_OUT_OF_MEMORY, "create_profiler: out of host memory");
    } catch (const std::exception& e) {
      return fail(s.host_, EPPROF_PLUGIN_ERROR, std::string("create_profiler: ") + e.what());
    }
  }

  static void release(epprof_ep_plugin* p) { delete &self(p); }

  epprof_ep_plugin c_{};  // first: the host's handle
  const epprof_host_api* host_;
  Ep* ep_;  // owned; a raw pointer keeps the class standard-layout
};

template <class Ep>
PluginShell<Ep>& PluginShell<Ep>::self(epprof_ep_plugin* p) {
  static_assert(std::is_standard_layout_v<PluginShell<Ep>>, "the host's handle must be the first member");
  return *reinterpret_cast<PluginShell*>(p);
}

template <class Ep>
epprof_status* plugin_entry(const epprof_host_api* host, uint32_t host_abi_version, epprof_ep_plugin** out) {
  return PluginShell<Ep>::entry(host, host_abi_version, out);
}

}  // namespace epprof::ep_common
