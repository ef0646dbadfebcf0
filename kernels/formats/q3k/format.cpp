// The q3k format's entry (GGUF Q3_K kept as it is; layout in
// kernels/formats/q3k/layout.hpp): geometry, row unpacking, the float
// quantizer, the GGUF ingestion (blocks copied, then repacked exactly) and the
// scalar reference.
#include "formats/q3k/layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "formats/hooks.hpp"
#include "formats/q6k/layout.hpp"  // ref::matmul_q6k
#include "formats/q8/layout.hpp"
#include "kernels/formats/format.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/ref.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels {

namespace {

constexpr int kSubs = kQ3kSuper / kQ3kSub;  // scales per super-block

int supers(int k) { return (k + kQ3kSuper - 1) / kQ3kSuper; }

size_t panel_size(int k) { return size_t(supers(k)) * sizeof(Q3kSuper); }

size_t matrix_size(int n, int k) {
    detail::check_k("q3k", n, k);
    return detail::panels(n) * panel_size(k);
}

size_t scratch_size(int m, int k) { return q8_act_scratch_bytes(m, k); }

// Row r's n at k = j (0..31) of a group.
int group_n(const Q3kGroup& g, int r, int j) {
    const int quad = j / 4, c = j % 4;
    const int lo = (g.lo[quad / 4][r][c] >> (2 * (quad % 4))) & 3;
    const int bit = 4 * r + c;
    const int hi = (g.hi[quad][bit / 8] >> (bit % 8)) & 1;
    return lo | (hi << 2);
}

// Row r's sc (0..63) of sub-block h (0..15) of a super-block.
int super_sc(const Q3kSuper& s, int r, int h) {
    const int lo = (s.sc_lo[h / 2][r] >> (4 * (h % 2))) & 15;
    const int hi = (s.sc_hi[h / 4][r] >> (2 * (h % 4))) & 3;
    return lo | (hi << 4);
}

void read_row(const PackedMatrix& w, int row, float scale, float* out) {
    detail::check_row(w, row);
    const int p = row / kPanelRows, r = row % kPanelRows;
    const auto* sb = reinterpret_cast<const Q3kSuper*>(w.data + size_t(p) * panel_size(w.k));
    for (int i = 0; i < w.k; ++i) {
        const Q3kSuper& s = sb[i / kQ3kSuper];
        const int j = i % kQ3kSuper;
        uint16_t d;
        std::memcpy(&d, &s.d[r], 2);
        // d · (sc - 32) first (ggml's and gguf-py's order), then the value.
        const float ws = f16_to_f32(d) * float(super_sc(s, r, j / kQ3kSub) - 32);
        out[i] = ws * float(group_n(s.g[j / kQ8Group], r, j % kQ8Group) - 4) * scale;
    }
}

// One GGUF Q3_K block as n[256] (0..7), sc[16] (0..63) and d. Element
// 128h + 32t + l (h < 2, t < 4, l < 32) has its low bits at bits 2t of
// qs[32h + l] and its high bit at bit 4h + t of hmask[l] (q = low bits - 4
// where that bit is clear); scale i has its low 4 bits in the low (i < 8) or
// high (i >= 8) nibble of scales[i % 8] and bits 4-5 at bits 2(i / 4) of
// scales[8 + i % 4] (ggml's kmask packing).
void read_block(const BlockQ3_K& b, uint8_t* n, uint8_t* sc, uint16_t* d) {
    for (int h = 0; h < 2; ++h)
        for (int t = 0; t < 4; ++t)
            for (int l = 0; l < 32; ++l) {
                const int lo = (b.qs[32 * h + l] >> (2 * t)) & 3, hi = (b.hmask[l] >> (4 * h + t)) & 1;
                n[128 * h + 32 * t + l] = uint8_t(lo | (hi << 2));
            }
    for (int i = 0; i < kSubs; ++i) {
        const int lo = (b.scales[i % 8] >> (i < 8 ? 0 : 4)) & 15, hi = (b.scales[8 + i % 4] >> (2 * (i / 4))) & 3;
        sc[i] = uint8_t(lo | (hi << 4));
    }
    *d = b.d;
}

}  // namespace

void quantize_q3k_super(const float* x, uint8_t* n, uint8_t* sc, uint16_t* d) {
    float scale[kSubs];
    float max_scale = 0.0f;  // the scale of largest magnitude, signed
    for (int s = 0; s < kSubs; ++s) {
        const float* v = x + s * kQ3kSub;
        float amax = 0.0f, mx = 0.0f;
        bool finite = true;
        for (int i = 0; i < kQ3kSub; ++i) {
            finite = finite && std::isfinite(v[i]);
            if (std::fabs(v[i]) > amax) amax = std::fabs(v[i]), mx = v[i];
        }
        scale[s] = finite ? mx / -4.0f : 0.0f;
        if (std::fabs(scale[s]) > std::fabs(max_scale)) max_scale = scale[s];
    }
    const float dd = f16_to_f32(f32_to_f16(std::clamp(max_scale / -32.0f, -65504.0f, 65504.0f)));
    *d = f32_to_f16(dd);
    for (int s = 0; s < kSubs; ++s) {
        const int l = dd != 0.0f ? int(std::clamp(std::round(scale[s] / dd), -32.0f, 31.0f)) : 0;
        sc[s] = uint8_t(l + 32);
        const float ws = dd * float(l);
        for (int i = 0; i < kQ3kSub; ++i) {
            const float v = x[s * kQ3kSub + i];
            const float q = ws != 0.0f && std::isfinite(v) ? std::clamp(std::round(v / ws), -4.0f, 3.0f) : 0.0f;
            n[s * kQ3kSub + i] = uint8_t(int(q) + 4);
        }
    }
}

namespace detail {

void store_q3k_super(std::byte* super, int r, const uint8_t* n, const uint8_t* sc, uint16_t d) {
    auto& s = *reinterpret_cast<Q3kSuper*>(super);
    for (int g = 0; g < kQ3kGroups; ++g) {
        Q3kGroup& grp = s.g[g];
        const uint8_t* v = n + g * kQ8Group;
        for (int u = 0; u < kQ8Group / 16; ++u)
            for (int c = 0; c < 4; ++c) {
                uint8_t b = 0;
                for (int w = 0; w < 4; ++w) b = uint8_t(b | ((v[4 * (4 * u + w) + c] & 3) << (2 * w)));
                grp.lo[u][r][c] = b;
            }
        for (int j = 0; j < kQ8Group / 4; ++j)
            for (int c = 0; c < 4; ++c) {
                const int bit = 4 * r + c;
                uint8_t& b = grp.hi[j][bit / 8];
                b = uint8_t((b & ~(1 << (bit % 8))) | (((v[4 * j + c] >> 2) & 1) << (bit % 8)));
            }
    }
    for (int h = 0; h < kSubs; h += 2) s.sc_lo[h / 2][r] = uint8_t((sc[h] & 15) | ((sc[h + 1] & 15) << 4));
    for (int u = 0; u < kSubs / 4; ++u) {
        uint8_t b = 0;
        for (int i = 0; i < 4; ++i) b = uint8_t(b | ((sc[4 * u + i] >> 4) << (2 * i)));
        s.sc_hi[u][r] = b;
    }
    std::memcpy(&s.d[r], &d, 2);  // the super-block may be unaligned
}

}  // namespace detail

void pack_q3k_ggml(const void* blocks, int n, int k, int n0, int n1, std::byte* dst) {
    detail::check_quant_rows("pack_q3k_ggml", WeightType::q3k, n, k, n0, n1);
    if (k % kQ3kSuper != 0)
        throw Error(ErrorKind::input, "pack_q3k_ggml: k = " + std::to_string(k) + " is not whole super-blocks of " +
                                          std::to_string(kQ3kSuper));
    const auto* src = static_cast<const BlockQ3_K*>(blocks);
    const int ns = k / kQ3kSuper;
    uint8_t nv[kQ3kSuper], sc[kSubs];
    for (int p0 = n0; p0 < n1; p0 += kPanelRows) {
        std::byte* panel = dst + size_t(p0 / kPanelRows) * panel_size(k);
        std::memset(panel, 0, panel_size(k));  // padding rows: d = 0
        const int rows = std::min(kPanelRows, n1 - p0);
        for (int r = 0; r < rows; ++r)
            for (int s = 0; s < ns; ++s) {
                uint16_t d;
                read_block(src[size_t(p0 - n0 + r) * size_t(ns) + size_t(s)], nv, sc, &d);
                detail::store_q3k_super(panel + size_t(s) * sizeof(Q3kSuper), r, nv, sc, d);
            }
    }
}

namespace ref {

void quantize_weight_row_q3k(const float* x, int k, int8_t* q, float* ws) {
    const int k_pad = supers(k) * kQ3kSuper;
    for (int s0 = 0; s0 < k_pad; s0 += kQ3kSuper) {
        float buf[kQ3kSuper] = {};
        for (int i = 0; i < kQ3kSuper && s0 + i < k; ++i) buf[i] = x[s0 + i];
        uint8_t nv[kQ3kSuper], sc[kSubs];
        uint16_t d;
        quantize_q3k_super(buf, nv, sc, &d);
        for (int i = 0; i < kQ3kSuper; ++i) q[s0 + i] = int8_t(nv[i] - 4);
        for (int h = 0; h < kSubs; ++h) ws[s0 / kQ3kSub + h] = f16_to_f32(d) * float(sc[h] - 32);
    }
}

void matmul_q3k(const int8_t* wq, const float* ws, int n, int k, const float* x, size_t ldx, int m, float* y,
                size_t ldy, int act_bits) {
    // q6k's reference is the same arithmetic: values and one scale per 16, k padded to 256.
    matmul_q6k(wq, ws, n, k, x, ldx, m, y, ldy, act_bits);
}

}  // namespace ref

namespace {

// GGUF ingestion: rows of Q3_K blocks copied into the scratch as they are
// (a non-finite half scale reported), then repacked by pack_q3k_ggml.
using Gguf = detail::BlockCopyIngest<GgmlType::q3_k, BlockQ3_K, kQ3kSuper, offsetof(BlockQ3_K, d), 1, pack_q3k_ggml>;

// The scalar reference row: the quantizer's values and scales, dequantized
// as unpack_row does.
void reference_row(const float* x, int k, float* out) {
    const size_t k_pad = size_t(supers(k)) * kQ3kSuper;
    std::vector<int8_t> q(k_pad);
    std::vector<float> ws(k_pad / kQ3kSub);
    ref::quantize_weight_row_q3k(x, k, q.data(), ws.data());
    for (int i = 0; i < k; ++i) out[i] = ws[size_t(i / kQ3kSub)] * float(q[size_t(i)]);
}

}  // namespace

const FormatInfo formats::q3k = {
    .traits = {WeightType::q3k, "q3k", WeightMath::int8, false,
               double(sizeof(Q3kSuper)) / (kPanelRows * kQ3kSuper)},
    .k_align = kQ3kSuper,
    .panel_bytes = panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = read_row,
    .ref_row = reference_row,
    .vocab_q8 = true,
    .gguf = Gguf::hook(),
};

}  // namespace staticlm::kernels
