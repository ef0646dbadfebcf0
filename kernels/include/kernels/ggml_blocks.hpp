// ggml's tensor types (the numbering GGUF files use) and the block layouts of
// the quantized ones, as packed structs whose sizes are checked against
// ggml-common.h. The dequantizers (kernels/ggml_dequant.cpp) are the scalar
// specification; 4-bit matmul kernels can reuse these structs directly.
#pragma once

#include <cstddef>
#include <cstdint>

namespace staticlm::kernels {

// Values are ggml's enum ggml_type, as stored in GGUF tensor infos. Ids that
// ggml has retired (4, 5, 31-33, 36-38) are not listed and read as unknown.
enum class GgmlType : uint32_t {
    f32 = 0,
    f16 = 1,
    q4_0 = 2,
    q4_1 = 3,
    q5_0 = 6,
    q5_1 = 7,
    q8_0 = 8,
    q8_1 = 9,
    q2_k = 10,
    q3_k = 11,
    q4_k = 12,
    q5_k = 13,
    q6_k = 14,
    q8_k = 15,
    iq2_xxs = 16,
    iq2_xs = 17,
    iq3_xxs = 18,
    iq1_s = 19,
    iq4_nl = 20,
    iq3_s = 21,
    iq2_s = 22,
    iq4_xs = 23,
    i8 = 24,
    i16 = 25,
    i32 = 26,
    i64 = 27,
    f64 = 28,
    iq1_m = 29,
    bf16 = 30,
    tq1_0 = 34,
    tq2_0 = 35,
    mxfp4 = 39,
    nvfp4 = 40,
    q1_0 = 41,
};

struct GgmlTypeInfo {
    GgmlType type;
    const char* name;     // as ggml and gguf-py print it: "Q4_K", "BF16"
    int block_elems;      // elements per block (1 for plain types)
    int block_bytes;      // bytes per block
    bool dequantizable;   // dequantize_ggml() supports it
};

// nullptr for ids ggml does not define (or has retired).
const GgmlTypeInfo* ggml_type_info(uint32_t id);
inline const GgmlTypeInfo* ggml_type_info(GgmlType t) { return ggml_type_info(uint32_t(t)); }
const char* ggml_type_name(GgmlType t);  // "?" for unknown ids

// Writes n floats (n a multiple of the type's block_elems) decoded from the
// blocks at src, which need no alignment. Returns false, writing nothing, for
// types without a dequantizer. The arithmetic is ggml's dequantize_row_*
// (and gguf-py's numpy port) operation for operation in fp32, so results are
// bit-identical to both: e.g. Q4_K computes (d·sc)·q − (dmin·m), two roundings
// before the subtraction, never fused.
bool dequantize_ggml(GgmlType type, const void* src, float* dst, int64_t n);

// The symmetric 32-element types (Q4_0, Q5_0, Q8_0) as int8 quants q[n] and
// one IEEE-half scale per 32 elements (scales[n / 32], the block's d), so that
// dequantize_ggml gives exactly float(q[i]) * half(scales[i / 32]): staticlm's
// q8 format holds them without rounding. Returns false, writing nothing, for
// other types.
bool ggml_to_q8_quants(GgmlType type, const void* src, int8_t* q, uint16_t* scales, int64_t n);

// The fields of n elements of Q4_1 or Q5_1 blocks (n a multiple of 32) for
// pack_q4a_quants and pack_q5a_quants, which both read them (the fields of
// one format's blocks are read in its folder: kernels/formats/q4k/, q5k/,
// q6k/): q[n] in [0, 15] / [0, 31], halves d[n / 32] and m[n / 32];
// dequantize_ggml gives exactly float(q) · half(d) + half(m). type must be
// q4_1 or q5_1.
void ggml_q41_fields(GgmlType type, const void* src, int64_t n, uint8_t* q, uint16_t* d, uint16_t* m);

// ----------------------------------------------------------------- blocks
// Every field is little-endian; "half" is an IEEE binary16 bit pattern.
// Packed (alignment 1): GGUF only aligns tensor starts, and a file may choose
// an alignment of 1, so block fields can sit at any address.

constexpr int kQK = 32;     // elements per block of the legacy types
constexpr int kQK_K = 256;  // elements per super-block of the K-quants
constexpr int kKScaleSize = 12;

// Q4_0: x = d · (q − 8), q the 4-bit value; qs[j] holds element j (low
// nibble) and element j + 16 (high nibble).
struct [[gnu::packed]] BlockQ4_0 {
    uint16_t d;
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_1: x = d · q + m.
struct [[gnu::packed]] BlockQ4_1 {
    uint16_t d, m;
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0: x = d · (q − 16), q = nibble | (bit j of qh) << 4.
struct [[gnu::packed]] BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1: x = d · q + m, q as in Q5_0.
struct [[gnu::packed]] BlockQ5_1 {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// IQ4_NL: x = d · kIq4nlValues[i], i the 4-bit index; qs[j] holds element
// j (low nibble) and element j + 16 (high nibble), as Q4_0.
struct [[gnu::packed]] BlockIQ4_NL {
    uint16_t d;
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18);
// ggml's kvalues_iq4nl (gguf-py quants.py IQ4_NL.kvalues), ascending.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// IQ4_XS: super-blocks of 256 with one half d; sub-block b of 32 has a
// 6-bit scale ls (bits 0-3: nibble b % 2 of scales_l[b / 2], bits 4-5: bits
// 2b, 2b + 1 of scales_h); x = (d · (ls − 32)) · kIq4nlValues[i], the 4-bit
// indices of sub-block b in qs[16b .. 16b + 15] as IQ4_NL's (element j low
// nibble, j + 16 high nibble).
struct [[gnu::packed]] BlockIQ4_XS {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[kQK_K / 64];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136);
// Sub-block b's ls (0..63) of an IQ4_XS block.
inline int iq4xs_scale(const BlockIQ4_XS& x, int b) {
    return ((x.scales_l[b / 2] >> (4 * (b % 2))) & 15) | (((x.scales_h >> (2 * b)) & 3) << 4);
}

// Q8_0: x = d · q, q int8.
struct [[gnu::packed]] BlockQ8_0 {
    uint16_t d;
    int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q2_K: 16 sub-blocks of 16; scales[i] = 4-bit scale | 4-bit min << 4;
// x = (d · scale) · q − (dmin · min), q 2 bits.
struct [[gnu::packed]] BlockQ2_K {
    uint8_t scales[kQK_K / 16];
    uint8_t qs[kQK_K / 4];
    uint16_t d, dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

// Q3_K: 16 sub-blocks of 16, 6-bit signed scales (−32 offset) packed in 12
// bytes; q = 2 low bits − 4 unless the hmask bit is set; x = (d · scale) · q.
struct [[gnu::packed]] BlockQ3_K {
    uint8_t hmask[kQK_K / 8];
    uint8_t qs[kQK_K / 4];
    uint8_t scales[kKScaleSize];
    uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

// Q4_K: 8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes;
// x = (d · scale) · q − (dmin · min), q 4 bits.
struct [[gnu::packed]] BlockQ4_K {
    uint16_t d, dmin;
    uint8_t scales[kKScaleSize];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q5_K: as Q4_K with a fifth bit per element in qh.
struct [[gnu::packed]] BlockQ5_K {
    uint16_t d, dmin;
    uint8_t scales[kKScaleSize];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// Q6_K: 16 sub-blocks of 16 with int8 scales; q = 4 low bits (ql) | 2 high
// bits (qh) << 4, minus 32; x = (d · scale) · q.
struct [[gnu::packed]] BlockQ6_K {
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block
// (ggml's get_scale_min_k4).
inline void k4_scale_min(int j, const uint8_t* q, uint8_t& scale, uint8_t& min) {
    if (j < 4) {
        scale = q[j] & 63;
        min = q[j + 4] & 63;
    } else {
        scale = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        min = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

}  // namespace staticlm::kernels
