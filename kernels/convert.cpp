// Scalar IEEE half and bfloat16 conversions (round to nearest even): the
// specification the vector conversions of every target are tested against.
#include "kernels/kernels.hpp"

namespace staticlm::kernels {

// IEEE half <-> float, round to nearest even, with subnormals, inf and NaN.
float f16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else {  // subnormal: normalize
        exp = 113;
        while (!(mant & 0x400)) {
            mant <<= 1;
            --exp;
        }
        bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
    float f;
    __builtin_memcpy(&f, &bits, 4);
    return f;
}

uint16_t f32_to_f16(float f) {
    uint32_t x;
    __builtin_memcpy(&x, &f, 4);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000);
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u)  // inf or NaN (keep NaN quiet)
        return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);
    if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65536: inf
    if (abs < 0x38800000u) {                        // below the smallest normal half
        if (abs < 0x33000000u) return sign;         // < 2^-25 rounds to 0
        const uint32_t e = abs >> 23;
        const uint32_t mant = (abs & 0x7fffff) | 0x800000;
        const uint32_t shift = 126 - e;  // 14 + (113 - e) - ... maps to subnormal units
        uint32_t v = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (v & 1))) ++v;
        return sign | uint16_t(v);
    }
    uint32_t v = ((abs >> 13) - (112u << 10));
    const uint32_t rem = abs & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (v & 1))) ++v;
    return sign | uint16_t(v);
}

float bf16_to_f32(uint16_t h) {
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    __builtin_memcpy(&f, &bits, 4);
    return f;
}

uint16_t f32_to_bf16(float f) {
    uint32_t x;
    __builtin_memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet NaN
    x += 0x7fff + ((x >> 16) & 1);
    return uint16_t(x >> 16);
}

}  // namespace staticlm::kernels
