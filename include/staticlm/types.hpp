// Plain value types shared by the public API and the internals.
#pragma once

#include <cstdint>
#include <functional>

namespace staticlm {

enum class WeightType : uint8_t { f32, f16, bf16, q8 };
enum class KvType : uint8_t { f16, f32 };

const char* weight_type_name(WeightType type);
const char* kv_type_name(KvType type);

struct LoadOptions {
    WeightType weights = WeightType::q8;
    int threads = 0;  // 0: all cores
    bool load_tokenizer = true;
    bool prefer_tokenizer_json = false;
    // Called from the loading thread with (bytes converted, bytes total).
    std::function<void(uint64_t done, uint64_t total)> progress;
};

}  // namespace staticlm
