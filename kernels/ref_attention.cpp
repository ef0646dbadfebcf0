// STUB: to be written (see the kernel issue). Compiles so the tree builds.
#include "kernels/formats_internal.hpp"
#include "kernels/ref.hpp"

namespace staticlm::kernels {}
