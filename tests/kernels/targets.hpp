// Kernel tests run every case on each compiled target this CPU supports.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "kernels/kernels.hpp"

namespace staticlm::kernels {

// Calls f(table) for every runnable target, naming the target in failures.
template <class F>
void for_each_target(F f) {
    for (Target t : compiled_targets()) {
        if (!target_supported(t)) continue;
        INFO("target ", std::string(target_name(t)));
        f(table_for(t));
    }
}

}  // namespace staticlm::kernels
