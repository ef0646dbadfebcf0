// Plain value types shared by the public API and the internals.
#pragma once

#include <cstdint>
#include <functional>

namespace staticlm {

enum class WeightType : uint8_t { f32, f16, bf16, q8 };
enum class KvType : uint8_t { f16, f32 };

const char* weight_type_name(WeightType type);
const char* kv_type_name(KvType type);

// CPUs this process may run on (its sched_getaffinity set; at least 1).
int available_cpus();
// The largest thread count any setting accepts (LoadOptions, SessionOptions,
// the C API, --threads): kMaxThreadsPerCpu x available_cpus(). More threads
// than CPUs only slow a run down; absurd counts crash the OpenMP runtime.
constexpr int kMaxThreadsPerCpu = 4;
int max_threads();

struct LoadOptions {
    WeightType weights = WeightType::q8;
    int threads = 0;  // 0: all cores; at most max_threads()
    bool load_tokenizer = true;
    bool prefer_tokenizer_json = false;
    // Called from the loading thread with (bytes converted, bytes total).
    std::function<void(uint64_t done, uint64_t total)> progress;
};

}  // namespace staticlm
