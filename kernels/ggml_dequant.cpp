// Scalar dequantizers of ggml's block types (the specification; see
// ggml_blocks.hpp). Each inner loop has a fixed trip count and no cross-lane
// dependence, so the compiler vectorizes it for the baseline target; -ffp-
// contract=off (project-wide) keeps every multiply and add separately rounded,
// which is what makes the results bit-identical to ggml and gguf-py.
#include <cstring>

#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"

namespace staticlm::kernels {
namespace {

constexpr GgmlTypeInfo kTypes[] = {
    {GgmlType::f32, "F32", 1, 4, true},
    {GgmlType::f16, "F16", 1, 2, true},
    {GgmlType::q4_0, "Q4_0", 32, 18, true},
    {GgmlType::q4_1, "Q4_1", 32, 20, true},
    {GgmlType::q5_0, "Q5_0", 32, 22, true},
    {GgmlType::q5_1, "Q5_1", 32, 24, true},
    {GgmlType::q8_0, "Q8_0", 32, 34, true},
    {GgmlType::q8_1, "Q8_1", 32, 40, false},
    {GgmlType::q2_k, "Q2_K", 256, 84, true},
    {GgmlType::q3_k, "Q3_K", 256, 110, true},
    {GgmlType::q4_k, "Q4_K", 256, 144, true},
    {GgmlType::q5_k, "Q5_K", 256, 176, true},
    {GgmlType::q6_k, "Q6_K", 256, 210, true},
    {GgmlType::q8_k, "Q8_K", 256, 292, false},
    {GgmlType::iq2_xxs, "IQ2_XXS", 256, 66, false},
    {GgmlType::iq2_xs, "IQ2_XS", 256, 74, false},
    {GgmlType::iq3_xxs, "IQ3_XXS", 256, 98, false},
    {GgmlType::iq1_s, "IQ1_S", 256, 50, false},
    {GgmlType::iq4_nl, "IQ4_NL", 32, 18, true},
    {GgmlType::iq3_s, "IQ3_S", 256, 110, false},
    {GgmlType::iq2_s, "IQ2_S", 256, 82, false},
    {GgmlType::iq4_xs, "IQ4_XS", 256, 136, true},
    {GgmlType::i8, "I8", 1, 1, false},
    {GgmlType::i16, "I16", 1, 2, false},
    {GgmlType::i32, "I32", 1, 4, false},
    {GgmlType::i64, "I64", 1, 8, false},
    {GgmlType::f64, "F64", 1, 8, false},
    {GgmlType::iq1_m, "IQ1_M", 256, 56, false},
    {GgmlType::bf16, "BF16", 1, 2, true},
    {GgmlType::tq1_0, "TQ1_0", 256, 54, false},
    {GgmlType::tq2_0, "TQ2_0", 256, 66, false},
    {GgmlType::mxfp4, "MXFP4", 32, 17, false},
    {GgmlType::nvfp4, "NVFP4", 64, 36, false},
    {GgmlType::q1_0, "Q1_0", 128, 18, false},
};

inline float half(uint16_t h) { return f16_to_f32(h); }

void deq_f32(const std::byte* src, float* y, int64_t n) { std::memcpy(y, src, size_t(n) * 4); }

void deq_f16(const std::byte* src, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        y[i] = half(h);
    }
}

void deq_bf16(const std::byte* src, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        const uint32_t bits = uint32_t(h) << 16;
        std::memcpy(y + i, &bits, 4);
    }
}

// The quant values of a block are first unpacked into int8 with byte
// operations only (constant shifts and masks, which vectorize), then scaled by
// one of these loops. The arithmetic per element is ggml's.
template <int N>
inline void scale(const int8_t* q, float d, float* y) {
    for (int j = 0; j < N; ++j) y[j] = float(q[j]) * d;
}
template <int N>
inline void scale_add(const int8_t* q, float d, float m, float* y) {
    for (int j = 0; j < N; ++j) y[j] = float(q[j]) * d + m;
}
template <int N>
inline void scale_sub(const int8_t* q, float d, float m, float* y) {
    for (int j = 0; j < N; ++j) y[j] = d * float(q[j]) - m;
}

// kBit4[b][i] = bit i of b, moved to bit 4: the fifth bit of Q5 quants.
struct Bit4Table {
    uint8_t v[256][8];
    constexpr Bit4Table() : v() {
        for (int b = 0; b < 256; ++b)
            for (int i = 0; i < 8; ++i) v[b][i] = uint8_t(((b >> i) & 1) << 4);
    }
};
constexpr Bit4Table kBit4;

// The 32 fifth bits of a Q5_0/Q5_1 block: bit j of qh for element j.
inline void q5_high_bits(const uint8_t* qh, uint8_t* h) {
    for (int k = 0; k < 4; ++k) std::memcpy(h + 8 * k, kBit4.v[qh[k]], 8);
}

void deq_q4_0(const BlockQ4_0* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        int8_t q[kQK];
        for (int j = 0; j < kQK / 2; ++j) {
            q[j] = int8_t((x[i].qs[j] & 0x0F) - 8);
            q[j + kQK / 2] = int8_t((x[i].qs[j] >> 4) - 8);
        }
        scale<kQK>(q, half(x[i].d), y);
    }
}

void deq_q4_1(const BlockQ4_1* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        int8_t q[kQK];
        for (int j = 0; j < kQK / 2; ++j) {
            q[j] = int8_t(x[i].qs[j] & 0x0F);
            q[j + kQK / 2] = int8_t(x[i].qs[j] >> 4);
        }
        scale_add<kQK>(q, half(x[i].d), half(x[i].m), y);
    }
}

void deq_q5_0(const BlockQ5_0* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        uint8_t h[kQK];
        q5_high_bits(x[i].qh, h);
        int8_t q[kQK];
        for (int j = 0; j < kQK / 2; ++j) {
            q[j] = int8_t(((x[i].qs[j] & 0x0F) | h[j]) - 16);
            q[j + kQK / 2] = int8_t(((x[i].qs[j] >> 4) | h[j + kQK / 2]) - 16);
        }
        scale<kQK>(q, half(x[i].d), y);
    }
}

void deq_q5_1(const BlockQ5_1* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        uint8_t h[kQK];
        q5_high_bits(x[i].qh, h);
        int8_t q[kQK];
        for (int j = 0; j < kQK / 2; ++j) {
            q[j] = int8_t((x[i].qs[j] & 0x0F) | h[j]);
            q[j + kQK / 2] = int8_t((x[i].qs[j] >> 4) | h[j + kQK / 2]);
        }
        scale_add<kQK>(q, half(x[i].d), half(x[i].m), y);
    }
}

void deq_q8_0(const BlockQ8_0* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) scale<kQK>(x[i].qs, half(x[i].d), y);
}

// d · value in fp32, one rounding (gguf-py multiplies the same floats).
void deq_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        const float d = half(x[i].d);
        for (int j = 0; j < kQK / 2; ++j) {
            y[j] = d * float(kIq4nlValues[x[i].qs[j] & 15]);
            y[j + kQK / 2] = d * float(kIq4nlValues[x[i].qs[j] >> 4]);
        }
    }
}

// (d · (ls − 32)) · value: d · (ls − 32) is exact in fp32, the product by the
// value is one rounding (ggml and gguf-py multiply the same floats).
void deq_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d);
        for (int b = 0; b < kQK_K / kQK; ++b, y += kQK) {
            const float dl = d * float(iq4xs_scale(x[i], b) - 32);
            const uint8_t* qs = x[i].qs + b * (kQK / 2);
            for (int j = 0; j < kQK / 2; ++j) {
                y[j] = dl * float(kIq4nlValues[qs[j] & 15]);
                y[j + kQK / 2] = dl * float(kIq4nlValues[qs[j] >> 4]);
            }
        }
    }
}

// Q2_K and Q3_K store element 128n + 32s + i (n < 2, s < 4, i < 32) in bits
// 2s..2s+1 of qs[32n + i]; sub-block k of 16 elements is 8n + 2s + (i >= 16).
void deq_q2_k(const BlockQ2_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d), dmin = half(x[i].dmin);
        int8_t q[kQK_K];
        for (int n = 0; n < 2; ++n) {
            const uint8_t* qs = x[i].qs + 32 * n;
            int8_t* o = q + 128 * n;
            for (int l = 0; l < 32; ++l) {
                o[l] = int8_t(qs[l] & 3);
                o[32 + l] = int8_t((qs[l] >> 2) & 3);
                o[64 + l] = int8_t((qs[l] >> 4) & 3);
                o[96 + l] = int8_t((qs[l] >> 6) & 3);
            }
        }
        for (int k = 0; k < 16; ++k, y += 16) {
            const uint8_t sc = x[i].scales[k];
            scale_sub<16>(q + 16 * k, d * float(sc & 0xF), dmin * float(sc >> 4), y);
        }
    }
}

// The 16 signed 6-bit scales of a Q3_K block (ggml's kmask shuffle).
void q3_k_scales(const uint8_t* packed, int8_t* scales) {
    constexpr uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
    uint32_t aux[4];
    std::memcpy(aux, packed, 12);
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    std::memcpy(scales, aux, 16);
}

// Q3_K: as Q2_K, minus 4 unless bit 4n + s of hmask[i] is set.
void deq_q3_k(const BlockQ3_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d);
        int8_t scales[16];
        q3_k_scales(x[i].scales, scales);
        const uint8_t* hm = x[i].hmask;
        int8_t q[kQK_K];
        for (int n = 0; n < 2; ++n) {
            const uint8_t* qs = x[i].qs + 32 * n;
            int8_t* o = q + 128 * n;
            const int h0 = 4 * n;
            for (int l = 0; l < 32; ++l) {
                o[l] = int8_t((qs[l] & 3) - (((hm[l] >> h0) & 1) ? 0 : 4));
                o[32 + l] = int8_t(((qs[l] >> 2) & 3) - (((hm[l] >> (h0 + 1)) & 1) ? 0 : 4));
                o[64 + l] = int8_t(((qs[l] >> 4) & 3) - (((hm[l] >> (h0 + 2)) & 1) ? 0 : 4));
                o[96 + l] = int8_t(((qs[l] >> 6) & 3) - (((hm[l] >> (h0 + 3)) & 1) ? 0 : 4));
            }
        }
        for (int k = 0; k < 16; ++k, y += 16) scale<16>(q + 16 * k, d * float(scales[k] - 32), y);
    }
}

// Q4_K/Q5_K: chunk c < 4 of 64 elements is qs[32c .. 32c + 31], low nibbles
// first (sub-block 2c), then high nibbles (sub-block 2c + 1); Q5_K's fifth
// bits are bits 2c and 2c + 1 of qh[l].
void deq_q4_k(const BlockQ4_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d), dmin = half(x[i].dmin);
        int8_t q[kQK_K];
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) {
                q[64 * c + l] = int8_t(x[i].qs[32 * c + l] & 0xF);
                q[64 * c + 32 + l] = int8_t(x[i].qs[32 * c + l] >> 4);
            }
        for (int j = 0; j < 8; ++j, y += 32) {
            uint8_t sc, mn;
            k4_scale_min(j, x[i].scales, sc, mn);
            scale_sub<32>(q + 32 * j, d * float(sc), dmin * float(mn), y);
        }
    }
}

}  // namespace

void ggml_q41_fields(GgmlType type, const void* src, int64_t n, uint8_t* q, uint16_t* d, uint16_t* m) {
    for (int64_t i = 0; i < n / kQK; ++i, q += kQK) {
        uint8_t h[kQK] = {};
        const uint8_t* qs;
        if (type == GgmlType::q5_1) {
            const auto& b = static_cast<const BlockQ5_1*>(src)[i];
            d[i] = b.d, m[i] = b.m, qs = b.qs;
            q5_high_bits(b.qh, h);  // as deq_q5_1
        } else {
            const auto& b = static_cast<const BlockQ4_1*>(src)[i];
            d[i] = b.d, m[i] = b.m, qs = b.qs;
        }
        for (int j = 0; j < kQK / 2; ++j) {
            q[j] = uint8_t((qs[j] & 0x0F) | h[j]);
            q[j + kQK / 2] = uint8_t((qs[j] >> 4) | h[j + kQK / 2]);
        }
    }
}

namespace {

void deq_q5_k(const BlockQ5_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d), dmin = half(x[i].dmin);
        const uint8_t* qh = x[i].qh;
        int8_t q[kQK_K];
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) {
                const uint8_t b = x[i].qs[32 * c + l];
                q[64 * c + l] = int8_t((b & 0xF) | (((qh[l] >> (2 * c)) & 1) << 4));
                q[64 * c + 32 + l] = int8_t((b >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4));
            }
        for (int j = 0; j < 8; ++j, y += 32) {
            uint8_t sc, mn;
            k4_scale_min(j, x[i].scales, sc, mn);
            scale_sub<32>(q + 32 * j, d * float(sc), dmin * float(mn), y);
        }
    }
}

// Q6_K: element 128n + 32g + l (g < 4) takes the low (g even) or high nibble
// of ql[64n + l + 32 (g odd)] and bits 2g..2g+1 of qh[32n + l]; sub-block k
// of 16 uses scales[k], multiplied as (d · scale) · q.
void deq_q6_k(const BlockQ6_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d);
        int8_t q[kQK_K];
        for (int n = 0; n < 2; ++n) {
            const uint8_t* ql = x[i].ql + 64 * n;
            const uint8_t* qh = x[i].qh + 32 * n;
            int8_t* o = q + 128 * n;
            for (int l = 0; l < 32; ++l) {
                o[l] = int8_t(((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32);
                o[32 + l] = int8_t(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
                o[64 + l] = int8_t(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
                o[96 + l] = int8_t(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
            }
        }
        for (int k = 0; k < 16; ++k, y += 16) scale<16>(q + 16 * k, d * float(x[i].scales[k]), y);
    }
}

}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t id) {
    for (const GgmlTypeInfo& t : kTypes)
        if (uint32_t(t.type) == id) return &t;
    return nullptr;
}

const char* ggml_type_name(GgmlType t) {
    const GgmlTypeInfo* info = ggml_type_info(t);
    return info ? info->name : "?";
}

bool dequantize_ggml(GgmlType type, const void* src, float* dst, int64_t n) {
    const GgmlTypeInfo* info = ggml_type_info(type);
    if (!info || !info->dequantizable) return false;
    const auto* s = static_cast<const std::byte*>(src);
    const int64_t nb = n / info->block_elems;
    switch (type) {
        case GgmlType::f32: deq_f32(s, dst, n); break;
        case GgmlType::f16: deq_f16(s, dst, n); break;
        case GgmlType::bf16: deq_bf16(s, dst, n); break;
        case GgmlType::q4_0: deq_q4_0(reinterpret_cast<const BlockQ4_0*>(s), dst, nb); break;
        case GgmlType::q4_1: deq_q4_1(reinterpret_cast<const BlockQ4_1*>(s), dst, nb); break;
        case GgmlType::q5_0: deq_q5_0(reinterpret_cast<const BlockQ5_0*>(s), dst, nb); break;
        case GgmlType::q5_1: deq_q5_1(reinterpret_cast<const BlockQ5_1*>(s), dst, nb); break;
        case GgmlType::q8_0: deq_q8_0(reinterpret_cast<const BlockQ8_0*>(s), dst, nb); break;
        case GgmlType::q2_k: deq_q2_k(reinterpret_cast<const BlockQ2_K*>(s), dst, nb); break;
        case GgmlType::q3_k: deq_q3_k(reinterpret_cast<const BlockQ3_K*>(s), dst, nb); break;
        case GgmlType::q4_k: deq_q4_k(reinterpret_cast<const BlockQ4_K*>(s), dst, nb); break;
        case GgmlType::q5_k: deq_q5_k(reinterpret_cast<const BlockQ5_K*>(s), dst, nb); break;
        case GgmlType::q6_k: deq_q6_k(reinterpret_cast<const BlockQ6_K*>(s), dst, nb); break;
        case GgmlType::iq4_nl: deq_iq4_nl(reinterpret_cast<const BlockIQ4_NL*>(s), dst, nb); break;
        case GgmlType::iq4_xs: deq_iq4_xs(reinterpret_cast<const BlockIQ4_XS*>(s), dst, nb); break;
        default: return false;
    }
    return true;
}

bool ggml_to_q8_quants(GgmlType type, const void* src, int8_t* q, uint16_t* scales, int64_t n) {
    const int64_t nb = n / kQK;
    const auto* s = static_cast<const std::byte*>(src);
    switch (type) {
        case GgmlType::q4_0: {
            const auto* x = reinterpret_cast<const BlockQ4_0*>(s);
            for (int64_t i = 0; i < nb; ++i, q += kQK) {
                for (int j = 0; j < kQK / 2; ++j) {
                    q[j] = int8_t((x[i].qs[j] & 0x0F) - 8);
                    q[j + kQK / 2] = int8_t((x[i].qs[j] >> 4) - 8);
                }
                std::memcpy(scales + i, &x[i].d, 2);
            }
            return true;
        }
        case GgmlType::q5_0: {
            const auto* x = reinterpret_cast<const BlockQ5_0*>(s);
            for (int64_t i = 0; i < nb; ++i, q += kQK) {
                uint8_t h[kQK];
                q5_high_bits(x[i].qh, h);
                for (int j = 0; j < kQK / 2; ++j) {
                    q[j] = int8_t(((x[i].qs[j] & 0x0F) | h[j]) - 16);
                    q[j + kQK / 2] = int8_t(((x[i].qs[j] >> 4) | h[j + kQK / 2]) - 16);
                }
                std::memcpy(scales + i, &x[i].d, 2);
            }
            return true;
        }
        case GgmlType::q8_0: {
            const auto* x = reinterpret_cast<const BlockQ8_0*>(s);
            for (int64_t i = 0; i < nb; ++i, q += kQK) {
                std::memcpy(q, x[i].qs, kQK);
                std::memcpy(scales + i, &x[i].d, 2);
            }
            return true;
        }
        default: return false;
    }
}

}  // namespace staticlm::kernels
