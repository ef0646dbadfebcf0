// Source-row conversions of the packers, compiled per target: f32 / f16 /
// bf16 rows to f32, and f32 rows to f16 / bf16. They round exactly as the
// scalar conversions (f32_to_f16 / f32_to_bf16, NaN included); f16 → f32 is
// exact (NaN lanes are redone with the scalar conversion, which keeps
// signalling NaNs that the vector conversion quiets).
#include <cstdint>
#include <cstring>

#include "kernels/simd/simd.hpp"
#include "kernels/simd/vec.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

constexpr int kL = vec::kLanes;

void bf16_to_f32_row(const uint16_t* x, int n, float* y) {
    for (int i = 0; i < n; ++i) {  // vectorizes: a widening shift
        const uint32_t b = uint32_t(x[i]) << 16;
        std::memcpy(y + i, &b, 4);
    }
}

void f16_to_f32_row(const uint16_t* x, int n, float* y) {
    int i = 0;
    for (; i + kL <= n; i += kL) {
        const vec::F v = vec::load(x + i);
        vec::store(y + i, v);
        if (vec::any_nan(v))
            for (int j = i; j < i + kL; ++j) y[j] = f16_to_f32(x[j]);
    }
    for (; i < n; ++i) y[i] = f16_to_f32(x[i]);
}

// Checkpoint tensors may start at any byte (safetensors offsets are not
// aligned): the element loads need element alignment, so a misaligned row is
// first copied to an aligned buffer.
bool misaligned(const void* p, size_t elem) { return reinterpret_cast<uintptr_t>(p) % elem != 0; }

}  // namespace

void src_to_f32_row(SrcType st, const void* src, int n, float* y) {
    alignas(64) uint16_t staged[kPackTile];
    if (st != SrcType::f32 && misaligned(src, 2)) {
        std::memcpy(staged, src, size_t(n) * 2);
        src = staged;
    }
    if (st == SrcType::f32)
        std::memcpy(y, src, size_t(n) * 4);
    else if (st == SrcType::f16)
        f16_to_f32_row(static_cast<const uint16_t*>(src), n, y);
    else
        bf16_to_f32_row(static_cast<const uint16_t*>(src), n, y);
}

const float* aligned_f32_row(const void* src, int n, float* buf) {
    if (!misaligned(src, 4)) return static_cast<const float*>(src);
    std::memcpy(buf, src, size_t(n) * 4);
    return buf;
}

// vcvtps2ph gives NaNs their truncated payload, f32_to_f16 a canonical quiet
// NaN: NaN lanes are redone with the scalar conversion.
void f32_to_f16_row(const float* x, int n, uint16_t* y) {
    int i = 0;
    for (; i + kL <= n; i += kL) {
        const vec::F v = vec::load(x + i);
        vec::store_f16(y + i, v);
        if (vec::any_nan(v))
            for (int j = i; j < i + kL; ++j) y[j] = f32_to_f16(x[j]);
    }
    for (; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

// Same integer rounding as f32_to_bf16, written branch-free so it vectorizes.
void f32_to_bf16_row(const float* x, int n, uint16_t* y) {
    for (int i = 0; i < n; ++i) {
        uint32_t b;
        std::memcpy(&b, x + i, 4);
        const uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
        const uint32_t nan = (b >> 16) | 0x40u;
        y[i] = uint16_t((b & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
    }
}

}  // namespace staticlm::kernels::STATICLM_NS
