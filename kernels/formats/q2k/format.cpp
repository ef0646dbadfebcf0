// The q2k format's entry (GGUF Q2_K kept as it is; layout in
// kernels/formats/q2k/layout.hpp): geometry, row unpacking, the float
// quantizer, the GGUF ingestion (blocks copied, then repacked exactly) and the
// scalar reference.
#include "formats/q2k/layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "formats/hooks.hpp"
#include "formats/q8/layout.hpp"
#include "kernels/formats/format.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/ref.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels {

namespace {

constexpr int G = kQ8Group;
constexpr int kSubs = kQ2kSuper / kQ2kSub;  // sub-blocks per super-block

int supers(int k) { return (k + kQ2kSuper - 1) / kQ2kSuper; }

size_t panel_size(int k) { return size_t(supers(k)) * sizeof(Q2kSuper); }

size_t matrix_size(int n, int k) {
    detail::check_k("q2k", n, k);
    return detail::panels(n) * panel_size(k);
}

size_t scratch_size(int m, int k) { return q8_act_scratch_bytes(m, k); }

// Row r's n at k = j (0..31) of a group.
int group_n(const Q2kGroup& g, int r, int j) {
    const int quad = j / 4;
    return (g.q[quad / 4][r][j % 4] >> (2 * (quad % 4))) & 3;
}

void read_row(const PackedMatrix& w, int row, float scale, float* out) {
    detail::check_row(w, row);
    const int p = row / kPanelRows, r = row % kPanelRows;
    const auto* sb = reinterpret_cast<const Q2kSuper*>(w.data + size_t(p) * panel_size(w.k));
    for (int i = 0; i < w.k; ++i) {
        const Q2kSuper& s = sb[i / kQ2kSuper];
        const Q2kGroup& g = s.g[(i % kQ2kSuper) / G];
        const int j = i % G;
        uint16_t d, dmin;
        std::memcpy(&d, &s.d[r], 2);
        std::memcpy(&dmin, &s.dmin[r], 2);
        const uint8_t sm = g.sm[j / kQ2kSub][r];
        // (d · sc) · n - dmin · m, gguf-py's order, then the caller's scale.
        const float ws = f16_to_f32(d) * float(sm & 15), wm = f16_to_f32(dmin) * float(sm >> 4);
        out[i] = (ws * float(group_n(g, r, j)) - wm) * scale;
    }
}

float half_round(float v) { return f16_to_f32(f32_to_f16(std::min(v, 65504.0f))); }

// A GGUF Q2_K block's values in k order: element 128h + 32s + i (h < 2, s < 4,
// i < 32) is bits 2s, 2s + 1 of qs[32h + i].
void block_values(const BlockQ2_K& b, uint8_t* n) {
    for (int h = 0; h < 2; ++h)
        for (int s = 0; s < 4; ++s)
            for (int i = 0; i < 32; ++i) n[128 * h + 32 * s + i] = uint8_t((b.qs[32 * h + i] >> (2 * s)) & 3);
}

}  // namespace

void quantize_q2k_super(const float* x, uint8_t* n, uint8_t* sm, uint16_t* d, uint16_t* dmin) {
    float scale[kSubs], min[kSubs];
    bool finite[kSubs];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int s = 0; s < kSubs; ++s) {
        const float* v = x + s * kQ2kSub;
        float lo = 0.0f, hi = -INFINITY;
        finite[s] = true;
        for (int i = 0; i < kQ2kSub; ++i) {
            finite[s] = finite[s] && std::isfinite(v[i]);
            lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
        }
        scale[s] = finite[s] ? (hi - lo) / 3.0f : 0.0f;
        min[s] = finite[s] ? -lo : 0.0f;
        if (!std::isfinite(scale[s])) scale[s] = 0.0f, min[s] = 0.0f, finite[s] = false;
        max_scale = std::max(max_scale, scale[s]);
        max_min = std::max(max_min, min[s]);
    }
    const float ds = half_round(max_scale / 15.0f), dm = half_round(max_min / 15.0f);
    *d = f32_to_f16(ds);
    *dmin = f32_to_f16(dm);
    for (int s = 0; s < kSubs; ++s) {
        const int sc = ds > 0.0f ? int(std::clamp(std::round(scale[s] / ds), 0.0f, 15.0f)) : 0;
        const int m = dm > 0.0f ? int(std::clamp(std::round(min[s] / dm), 0.0f, 15.0f)) : 0;
        sm[s] = uint8_t(sc | (m << 4));
        const float ws = ds * float(sc), wm = dm * float(m);
        for (int i = 0; i < kQ2kSub; ++i) {
            const float v = x[s * kQ2kSub + i];
            const float q = ws > 0.0f && finite[s] ? std::round((v + wm) / ws) : 0.0f;
            n[s * kQ2kSub + i] = uint8_t(std::clamp(q, 0.0f, 3.0f));
        }
    }
}

namespace detail {

void store_q2k_super(std::byte* super, int r, const uint8_t* n, const uint8_t* sm, uint16_t d, uint16_t dmin) {
    auto& s = *reinterpret_cast<Q2kSuper*>(super);
    for (int g = 0; g < kQ2kGroups; ++g) {
        Q2kGroup& grp = s.g[g];
        const uint8_t* v = n + g * G;
        for (int u = 0; u < G / kQ2kSub; ++u) {
            for (int c = 0; c < 4; ++c) {
                uint8_t b = 0;
                for (int w = 0; w < 4; ++w) b = uint8_t(b | ((v[16 * u + 4 * w + c] & 3) << (2 * w)));
                grp.q[u][r][c] = b;
            }
            grp.sm[u][r] = sm[2 * g + u];
        }
    }
    std::memcpy(&s.d[r], &d, 2);  // the super-block may be unaligned
    std::memcpy(&s.dmin[r], &dmin, 2);
}

}  // namespace detail

void pack_q2k_ggml(const void* blocks, int n, int k, int n0, int n1, std::byte* dst) {
    detail::check_quant_rows("pack_q2k_ggml", WeightType::q2k, n, k, n0, n1);
    if (k % kQ2kSuper != 0)
        throw Error(ErrorKind::input, "pack_q2k_ggml: k = " + std::to_string(k) + " is not whole super-blocks of " +
                                          std::to_string(kQ2kSuper));
    const auto* src = static_cast<const BlockQ2_K*>(blocks);
    const int ns = k / kQ2kSuper;
    uint8_t v[kQ2kSuper];
    for (int p0 = n0; p0 < n1; p0 += kPanelRows) {
        std::byte* panel = dst + size_t(p0 / kPanelRows) * panel_size(k);
        std::memset(panel, 0, panel_size(k));  // padding rows: n = 0, scales 0
        const int rows = std::min(kPanelRows, n1 - p0);
        for (int r = 0; r < rows; ++r)
            for (int s = 0; s < ns; ++s) {
                const BlockQ2_K& b = src[size_t(p0 - n0 + r) * size_t(ns) + size_t(s)];
                block_values(b, v);
                detail::store_q2k_super(panel + size_t(s) * sizeof(Q2kSuper), r, v, b.scales, b.d, b.dmin);
            }
    }
}

namespace ref {

void quantize_weight_row_q2k(const float* x, int k, uint8_t* n, float* ws, float* wm) {
    for (int s0 = 0; s0 < supers(k) * kQ2kSuper; s0 += kQ2kSuper) {
        float buf[kQ2kSuper] = {};
        for (int i = 0; i < kQ2kSuper && s0 + i < k; ++i) buf[i] = x[s0 + i];
        uint8_t sm[kSubs];
        uint16_t d, dmin;
        quantize_q2k_super(buf, n + s0, sm, &d, &dmin);
        for (int h = 0; h < kSubs; ++h) {
            ws[s0 / kQ2kSub + h] = f16_to_f32(d) * float(sm[h] & 15);
            wm[s0 / kQ2kSub + h] = f16_to_f32(dmin) * float(sm[h] >> 4);
        }
    }
}

void matmul_q2k(const uint8_t* wn, const float* ws, const float* wm, int rows, int k, const float* x, size_t ldx,
                int m, float* y, size_t ldy, int act_bits) {
    const int k_pad = supers(k) * kQ2kSuper, k_act = q8_groups(k) * G;
    const int n_subs = k_act / kQ2kSub, w_subs = k_pad / kQ2kSub;
    std::vector<int32_t> xq(static_cast<size_t>(k_act));
    std::vector<float> xs(static_cast<size_t>(k_act / G));
    for (int r = 0; r < m; ++r) {
        quantize_row_act(x + size_t(r) * ldx, k, act_bits, xq.data(), xs.data());
        for (int c = 0; c < rows; ++c) {
            const uint8_t* wrow = wn + size_t(c) * size_t(k_pad);
            float acc = 0.0f;
            for (int h = 0; h < n_subs; ++h) {
                int32_t dot = 0, sum = 0;
                for (int i = h * kQ2kSub; i < (h + 1) * kQ2kSub; ++i) {
                    dot += int32_t(wrow[i]) * xq[size_t(i)];
                    sum += xq[size_t(i)];
                }
                const float xsg = xs[size_t(h / 2)];
                const size_t wi = size_t(c) * size_t(w_subs) + size_t(h);
                const float t1 = (xsg * ws[wi]) * float(dot);
                acc += t1;
                const float t2 = wm[wi] * -(xsg * float(sum));
                acc += t2;
            }
            y[size_t(r) * ldy + size_t(c)] = acc;
        }
    }
}

}  // namespace ref

namespace {

// GGUF ingestion: rows of Q2_K blocks copied into the scratch as they are
// (a non-finite half scale reported), then repacked by pack_q2k_ggml.
using Gguf = detail::BlockCopyIngest<GgmlType::q2_k, BlockQ2_K, kQ2kSuper, offsetof(BlockQ2_K, d), 2, pack_q2k_ggml>;

// The scalar reference row: the quantizer's fields, dequantized as unpack_row does.
void reference_row(const float* x, int k, float* out) {
    const size_t k_pad = size_t(supers(k)) * kQ2kSuper;
    std::vector<uint8_t> n(k_pad);
    std::vector<float> ws(k_pad / kQ2kSub), wm(k_pad / kQ2kSub);
    ref::quantize_weight_row_q2k(x, k, n.data(), ws.data(), wm.data());
    for (int i = 0; i < k; ++i) {
        const size_t h = size_t(i / kQ2kSub);
        out[i] = ws[h] * float(n[size_t(i)]) - wm[h];
    }
}

}  // namespace

const FormatInfo formats::q2k = {
    .traits = {WeightType::q2k, "q2k", WeightMath::int8, false,
               double(sizeof(Q2kSuper)) / (kPanelRows * kQ2kSuper)},
    .k_align = kQ2kSuper,
    .panel_bytes = panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = read_row,
    .ref_row = reference_row,
    .vocab_q8 = true,
    .gguf = Gguf::hook(),
};

}  // namespace staticlm::kernels
