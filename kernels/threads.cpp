// How many threads this process may usefully ask for: the CPUs of its affinity
// set, and the cap every thread-count setting is checked against (far more
// threads than CPUs only slow a run down).
#include <sched.h>

#include <thread>

#include "staticlm/types.hpp"

namespace staticlm {

int available_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : int(n);
}

int max_threads() { return kMaxThreadsPerCpu * available_cpus(); }

}  // namespace staticlm
