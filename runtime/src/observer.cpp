#include "epprof/rt/observer.h"

namespace epprof::rt {

size_t NodeIo::activation_bytes() const {
  size_t n = 0;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i] && !(i < input_is_initializer.size() && input_is_initializer[i])) n += inputs[i]->byte_size();
  return n;
}

size_t NodeIo::parameter_bytes() const {
  size_t n = 0;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i] && i < input_is_initializer.size() && input_is_initializer[i]) n += inputs[i]->byte_size();
  return n;
}

size_t NodeIo::output_bytes() const {
  size_t n = 0;
  for (const auto& t : outputs) n += t.byte_size();
  return n;
}

}  // namespace epprof::rt
