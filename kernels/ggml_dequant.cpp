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
    {GgmlType::iq4_nl, "IQ4_NL", 32, 18, false},
    {GgmlType::iq3_s, "IQ3_S", 256, 110, false},
    {GgmlType::iq2_s, "IQ2_S", 256, 82, false},
    {GgmlType::iq4_xs, "IQ4_XS", 256, 136, false},
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

void deq_q4_0(const BlockQ4_0* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        const float d = half(x[i].d);
        for (int j = 0; j < kQK / 2; ++j) {
            y[j] = float((x[i].qs[j] & 0x0F) - 8) * d;
            y[j + kQK / 2] = float((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void deq_q4_1(const BlockQ4_1* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        const float d = half(x[i].d), m = half(x[i].m);
        for (int j = 0; j < kQK / 2; ++j) {
            y[j] = float(x[i].qs[j] & 0x0F) * d + m;
            y[j + kQK / 2] = float(x[i].qs[j] >> 4) * d + m;
        }
    }
}

void deq_q5_0(const BlockQ5_0* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        const float d = half(x[i].d);
        uint32_t qh;
        std::memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < kQK / 2; ++j) {
            const int h0 = int((qh >> j) << 4) & 0x10;
            const int h1 = int(qh >> (j + 12)) & 0x10;
            y[j] = float(((x[i].qs[j] & 0x0F) | h0) - 16) * d;
            y[j + kQK / 2] = float(((x[i].qs[j] >> 4) | h1) - 16) * d;
        }
    }
}

void deq_q5_1(const BlockQ5_1* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        const float d = half(x[i].d), m = half(x[i].m);
        uint32_t qh;
        std::memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < kQK / 2; ++j) {
            const int h0 = int((qh >> j) << 4) & 0x10;
            const int h1 = int(qh >> (j + 12)) & 0x10;
            y[j] = float((x[i].qs[j] & 0x0F) | h0) * d + m;
            y[j + kQK / 2] = float((x[i].qs[j] >> 4) | h1) * d + m;
        }
    }
}

void deq_q8_0(const BlockQ8_0* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK) {
        const float d = half(x[i].d);
        for (int j = 0; j < kQK; ++j) y[j] = float(x[i].qs[j]) * d;
    }
}

void deq_q2_k(const BlockQ2_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d), dmin = half(x[i].dmin);
        const uint8_t* q = x[i].qs;
        int is = 0;
        for (int n = 0; n < kQK_K; n += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half16 = 0; half16 < 2; ++half16, y += 16) {
                    const uint8_t sc = x[i].scales[is++];
                    const float dl = d * float(sc & 0xF), ml = dmin * float(sc >> 4);
                    for (int l = 0; l < 16; ++l)
                        y[l] = dl * float((q[l + 16 * half16] >> shift) & 3) - ml;
                }
            }
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

void deq_q3_k(const BlockQ3_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d);
        int8_t scales[16];
        q3_k_scales(x[i].scales, scales);
        const uint8_t* q = x[i].qs;
        const uint8_t* hm = x[i].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int n = 0; n < kQK_K; n += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m = uint8_t(m << 1)) {
                for (int half16 = 0; half16 < 2; ++half16, y += 16) {
                    const float dl = d * float(scales[is++] - 32);
                    const int o = 16 * half16;
                    for (int l = 0; l < 16; ++l)
                        y[l] = dl * float(((q[l + o] >> shift) & 3) - ((hm[l + o] & m) ? 0 : 4));
                }
            }
        }
    }
}

void deq_q4_k(const BlockQ4_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d), dmin = half(x[i].dmin);
        const uint8_t* q = x[i].qs;
        for (int is = 0; is < 8; is += 2, q += 32, y += 64) {
            uint8_t sc, mn;
            k4_scale_min(is, x[i].scales, sc, mn);
            const float d1 = d * float(sc), m1 = dmin * float(mn);
            k4_scale_min(is + 1, x[i].scales, sc, mn);
            const float d2 = d * float(sc), m2 = dmin * float(mn);
            for (int l = 0; l < 32; ++l) y[l] = d1 * float(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l) y[l + 32] = d2 * float(q[l] >> 4) - m2;
        }
    }
}

void deq_q5_k(const BlockQ5_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d), dmin = half(x[i].dmin);
        const uint8_t* ql = x[i].qs;
        const uint8_t* qh = x[i].qh;
        int u1 = 1, u2 = 2;
        for (int is = 0; is < 8; is += 2, ql += 32, y += 64, u1 <<= 2, u2 <<= 2) {
            uint8_t sc, mn;
            k4_scale_min(is, x[i].scales, sc, mn);
            const float d1 = d * float(sc), m1 = dmin * float(mn);
            k4_scale_min(is + 1, x[i].scales, sc, mn);
            const float d2 = d * float(sc), m2 = dmin * float(mn);
            for (int l = 0; l < 32; ++l) y[l] = d1 * float((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
            for (int l = 0; l < 32; ++l) y[l + 32] = d2 * float((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
        }
    }
}

void deq_q6_k(const BlockQ6_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = half(x[i].d);
        const uint8_t* ql = x[i].ql;
        const uint8_t* qh = x[i].qh;
        const int8_t* sc = x[i].scales;
        for (int n = 0; n < kQK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
            // (d · scale) first, as ggml's `d * sc[is] * q` parses.
            float ds[8];
            for (int k = 0; k < 8; ++k) ds[k] = d * float(sc[k]);
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = ds[is] * float(q1);
                y[l + 32] = ds[is + 2] * float(q2);
                y[l + 64] = ds[is + 4] * float(q3);
                y[l + 96] = ds[is + 6] * float(q4);
            }
        }
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
        default: return false;
    }
    return true;
}

}  // namespace staticlm::kernels
