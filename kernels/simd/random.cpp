// Deterministic uniform random rows (the weights of synthetic models),
// compiled per target so the loop vectorizes with the target's 32-bit
// multiplies. Element j of a row is a pure function of (key, j): a Weyl step,
// then murmur3's 32-bit finalizer; integer operations and an exact int→float
// conversion, then one rounding (× amp), so every target gives the same bits.
#include <cstdint>

#include "kernels/simd/simd.hpp"

namespace staticlm::kernels::STATICLM_NS {

void uniform_row(uint64_t key, int n, float amp, float* out) {
    const uint32_t lo = uint32_t(key), hi = uint32_t(key >> 32);
    for (int j = 0; j < n; ++j) {
        uint32_t x = (lo + uint32_t(j) * 0x9e3779b9u) ^ hi;
        x ^= x >> 16;
        x *= 0x85ebca6bu;
        x ^= x >> 13;
        x *= 0xc2b2ae35u;
        x ^= x >> 16;
        const float u = float(int32_t(x >> 8)) * (1.0f / float(1 << 24));  // [0, 1)
        out[j] = (2.0f * u - 1.0f) * amp;
    }
}

}  // namespace staticlm::kernels::STATICLM_NS
