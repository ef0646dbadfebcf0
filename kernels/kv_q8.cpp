// The q8 KV cache row format (kernels.hpp: kv_row_bytes): the quantizer the
// cache's store() runs and its inverse, plus the KV type names. Scalar on
// purpose: one row per (token, layer, kv head) is a few hundred operations
// next to the token's matmuls, and one definition keeps every target's cache
// bytes identical.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/kernels.hpp"

namespace staticlm {

const char* kv_type_name(KvType type) {
    switch (type) {
        case KvType::f16: return "f16";
        case KvType::f32: return "f32";
        case KvType::q8: return "q8";
    }
    return "?";
}

std::optional<KvType> parse_kv_type(std::string_view name) {
    for (KvType t : {KvType::f16, KvType::f32, KvType::q8})
        if (name == kv_type_name(t)) return t;
    return std::nullopt;
}

}  // namespace staticlm

namespace staticlm::kernels {

void quantize_kv_row_q8(const float* x, int n, std::byte* row) {
    auto* q = reinterpret_cast<int8_t*>(row);
    std::byte* scales = row + n;
    for (int b = 0; b * kKvQ8Block < n; ++b) {
        const int e0 = b * kKvQ8Block, e1 = std::min(n, e0 + kKvQ8Block);
        float amax = 0.0f;
        bool finite = true;
        for (int e = e0; e < e1; ++e) {
            finite &= std::isfinite(x[e]);
            amax = std::max(amax, std::fabs(x[e]));
        }
        // A NaN/inf poisons the block's scale (the values are then meaningless).
        const float scale = finite ? amax / 127.0f : std::numeric_limits<float>::quiet_NaN();
        for (int e = e0; e < e1; ++e) {
            float v = finite && scale > 0.0f ? std::round(x[e] / scale) : 0.0f;
            v = std::min(127.0f, std::max(-127.0f, v));  // x / (amax/127) may round past 127
            q[e] = int8_t(v);
        }
        std::memcpy(scales + size_t(b) * sizeof(float), &scale, sizeof(float));
    }
}

void dequantize_kv_row_q8(const std::byte* row, int n, float* y) {
    const auto* q = reinterpret_cast<const int8_t*>(row);
    for (int e = 0; e < n; ++e) {
        float scale;
        std::memcpy(&scale, row + n + size_t(e / kKvQ8Block) * sizeof(float), sizeof(float));
        y[e] = float(q[e]) * scale;
    }
}

}  // namespace staticlm::kernels
