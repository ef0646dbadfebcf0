// The q6k format's entry: GGUF Q6_K super-blocks in 16-row panels (layout in
// kernels/formats/q6k/layout.hpp), a round-to-nearest quantizer for float sources,
// and the exact repacking of given Q6_K fields.
#include "formats/q6k/layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "formats/hooks.hpp"
#include "kernels/formats/format.hpp"
#include "formats/q8/layout.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels {

namespace {

int supers(int k) { return (k + kQ6kSuper - 1) / kQ6kSuper; }

size_t panel_size(int k) { return size_t(supers(k)) * sizeof(Q6kSuper); }

size_t matrix_size(int n, int k) {
    detail::check_k("q6k", n, k);
    return detail::panels(n) * panel_size(k);
}

size_t scratch_size(int m, int k) { return q8_act_scratch_bytes(m, k); }

// Row r's n at k = j (0..31) of a group.
int group_n(const Q6kGroup& g, int r, int j) {
    const int quad = j / 4, c = j % 4;
    const uint8_t byte = g.lo[j / 8][r][c];
    const int lo = (j % 8) < 4 ? byte & 15 : byte >> 4;
    const int hi = (g.hi[quad / 4][r][c] >> (2 * (quad % 4))) & 3;
    return lo | (hi << 4);
}

void read_row(const PackedMatrix& w, int row, float scale, float* out) {
    detail::check_row(w, row);
    const int p = row / kPanelRows, r = row % kPanelRows;
    const auto* sb = reinterpret_cast<const Q6kSuper*>(w.data + size_t(p) * panel_size(w.k));
    for (int i = 0; i < w.k; ++i) {
        const Q6kSuper& s = sb[i / kQ6kSuper];
        const Q6kGroup& g = s.g[(i % kQ6kSuper) / kQ8Group];
        const int j = i % kQ8Group;
        uint16_t d;
        std::memcpy(&d, &s.d[r], 2);
        const float ws = f16_to_f32(d) * float(g.sc[j / kQ6kSub][r]);
        out[i] = ws * float(group_n(g, r, j) - 32) * scale;
    }
}

// GGUF Q6_K in the loader's scratch: values [cap][k] in [0, 63], 8-bit
// scales [cap][k/16], halves d [cap][k/256].
struct Q6kFields {
    uint8_t* q;
    int8_t* sc;
    uint16_t* d;
    Q6kFields(detail::Carve& c, int cap, int k)
        : q(c.next<uint8_t>(size_t(cap) * size_t(k))),
          sc(c.next<int8_t>(size_t(cap) * size_t(k / kQ6kSub))),
          d(c.next<uint16_t>(size_t(cap) * size_t(k / kQ6kSuper))) {}
};

size_t gguf_scratch(int cap, int k) {
    detail::Carve c(nullptr);
    Q6kFields(c, cap, k);
    return c.used();
}

int64_t gguf_read(GgmlType, const std::byte* src, int k, int row, int count, int cap, std::byte* s) {
    detail::Carve c(s);
    const Q6kFields f(c, cap, k);
    const size_t at = size_t(row) * size_t(k / kQ6kSuper);
    ggml_q6k_fields(src, int64_t(count) * k, f.q + size_t(row) * size_t(k), f.sc + size_t(row) * size_t(k / kQ6kSub),
                    f.d + at);
    return detail::first_bad_half(f.d + at, nullptr, size_t(count) * size_t(k / kQ6kSuper), kQ6kSuper);
}

void gguf_pack(std::byte* s, int cap, int n, int k, int n0, int n1, std::byte* dst) {
    detail::Carve c(s);
    const Q6kFields f(c, cap, k);
    pack_q6k_quants(f.q, f.sc, f.d, n, k, n0, n1, dst);
}

constexpr GgmlType kGguf[] = {GgmlType::q6_k};

// ref::quantize_weight_row_q6k's values: ws · q per half-group of 16.
void ref_row(const float* x, int k, float* out) {
    const int k_pad = (k + kQ6kSuper - 1) / kQ6kSuper * kQ6kSuper;
    std::vector<int8_t> q(static_cast<size_t>(k_pad));
    std::vector<float> ws(size_t(k_pad / kQ6kSub));
    ref::quantize_weight_row_q6k(x, k, q.data(), ws.data());
    for (int i = 0; i < k; ++i) out[i] = ws[size_t(i / kQ6kSub)] * float(q[size_t(i)]);
}

}  // namespace

void quantize_q6k_super(const float* x, uint8_t* n, int8_t* sc, uint16_t* d) {
    constexpr int kSubs = kQ6kSuper / kQ6kSub;
    float scale[kSubs];
    float max_scale = 0.0f;
    for (int s = 0; s < kSubs; ++s) {
        const float* v = x + s * kQ6kSub;
        float amax = 0.0f, mx = 0.0f;
        bool finite = true;
        for (int i = 0; i < kQ6kSub; ++i) {
            finite = finite && std::isfinite(v[i]);
            if (std::fabs(v[i]) > amax) amax = std::fabs(v[i]), mx = v[i];
        }
        scale[s] = finite ? mx / -32.0f : 0.0f;
        max_scale = std::max(max_scale, std::fabs(scale[s]));
    }
    const float dd = f16_to_f32(f32_to_f16(std::min(max_scale / 127.0f, 65504.0f)));
    *d = f32_to_f16(dd);
    for (int s = 0; s < kSubs; ++s) {
        sc[s] = dd > 0.0f ? int8_t(std::clamp(std::round(scale[s] / dd), -127.0f, 127.0f)) : 0;
        const float ws = dd * float(sc[s]);
        for (int i = 0; i < kQ6kSub; ++i) {
            const float v = x[s * kQ6kSub + i];
            const float q = ws != 0.0f && std::isfinite(v) ? std::clamp(std::round(v / ws), -32.0f, 31.0f) : 0.0f;
            n[s * kQ6kSub + i] = uint8_t(int(q) + 32);
        }
    }
}

const FormatInfo formats::q6k = {
    .traits = {WeightType::q6k, "q6k", WeightMath::int8, false,
               double(sizeof(Q6kSuper)) / (kPanelRows * kQ6kSuper)},
    .k_align = kQ6kSuper,
    .panel_bytes = panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = read_row,
    .ref_row = ref_row,
    .vocab_q8 = true,
    .gguf = {kGguf, kGguf, gguf_scratch, gguf_read, gguf_pack},
};

namespace detail {

void store_q6k_super(std::byte* super, int r, const uint8_t* n, const int8_t* sc, uint16_t d) {
    auto& s = *reinterpret_cast<Q6kSuper*>(super);
    for (int g = 0; g < kQ6kGroups; ++g) {
        Q6kGroup& grp = s.g[g];
        const uint8_t* v = n + g * kQ8Group;
        for (int t = 0; t < kQ8Group / 8; ++t)
            for (int c = 0; c < 4; ++c)
                grp.lo[t][r][c] = uint8_t((v[8 * t + c] & 15) | ((v[8 * t + 4 + c] & 15) << 4));
        for (int u = 0; u < kQ8Group / 16; ++u)
            for (int c = 0; c < 4; ++c) {
                uint8_t b = 0;
                for (int w = 0; w < 4; ++w) b = uint8_t(b | ((v[4 * (4 * u + w) + c] >> 4) << (2 * w)));
                grp.hi[u][r][c] = b;
            }
        grp.sc[0][r] = sc[2 * g];
        grp.sc[1][r] = sc[2 * g + 1];
    }
    std::memcpy(&s.d[r], &d, 2);  // the super-block may be unaligned
}

}  // namespace detail

void pack_q6k_quants(const uint8_t* q, const int8_t* sc, const uint16_t* d, int n, int k, int n0, int n1,
                     std::byte* dst) {
    detail::check_quant_rows("pack_q6k_quants", WeightType::q6k, n, k, n0, n1);
    if (k % kQ6kSuper != 0)
        throw Error(ErrorKind::input, "pack_q6k_quants: k = " + std::to_string(k) + " is not whole super-blocks of " +
                                          std::to_string(kQ6kSuper));
    const int ns = k / kQ6kSuper, subs = k / kQ6kSub;
    for (int p0 = n0; p0 < n1; p0 += kPanelRows) {
        std::byte* panel = dst + size_t(p0 / kPanelRows) * panel_size(k);
        std::memset(panel, 0, panel_size(k));  // padding rows: scales 0
        const int rows = std::min(kPanelRows, n1 - p0);
        for (int r = 0; r < rows; ++r) {
            const size_t row = size_t(p0 - n0 + r);
            for (int s = 0; s < ns; ++s) {
                const uint8_t* nq = q + row * size_t(k) + size_t(s) * kQ6kSuper;
                for (int i = 0; i < kQ6kSuper; ++i)
                    if (nq[i] > 63)
                        throw Error(ErrorKind::input, "pack_q6k_quants: value " + std::to_string(nq[i]) + " of row " +
                                                          std::to_string(row) + " is outside [0, 63]");
                detail::store_q6k_super(panel + size_t(s) * sizeof(Q6kSuper), r, nq,
                                        sc + row * size_t(subs) + size_t(s) * (kQ6kSuper / kQ6kSub),
                                        d[row * size_t(ns) + size_t(s)]);
            }
        }
    }
}

void ggml_q6k_fields(const void* src, int64_t n, uint8_t* q, int8_t* sc, uint16_t* d) {
    const auto* x = static_cast<const BlockQ6_K*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i, q += kQK_K, sc += 16) {
        d[i] = x[i].d;
        for (int h = 0; h < 2; ++h) {  // as deq_q6_k
            const uint8_t* ql = x[i].ql + 64 * h;
            const uint8_t* qh = x[i].qh + 32 * h;
            uint8_t* o = q + 128 * h;
            for (int l = 0; l < 32; ++l) {
                o[l] = uint8_t((ql[l] & 0xF) | ((qh[l] & 3) << 4));
                o[32 + l] = uint8_t((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
                o[64 + l] = uint8_t((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
                o[96 + l] = uint8_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
            }
        }
        std::memcpy(sc, x[i].scales, 16);
    }
}

namespace ref {

void quantize_weight_row_q6k(const float* x, int k, int8_t* q, float* ws) {
    const int k_pad = padded_k(WeightType::q6k, k);
    for (int s0 = 0; s0 < k_pad; s0 += kQ6kSuper) {
        float buf[kQ6kSuper] = {};
        for (int i = 0; i < kQ6kSuper && s0 + i < k; ++i) buf[i] = x[s0 + i];
        uint8_t n[kQ6kSuper];
        int8_t sc[kQ6kSuper / kQ6kSub];
        uint16_t d;
        quantize_q6k_super(buf, n, sc, &d);
        for (int i = 0; i < kQ6kSuper; ++i) q[s0 + i] = int8_t(n[i] - 32);
        for (int h = 0; h < kQ6kSuper / kQ6kSub; ++h) ws[s0 / kQ6kSub + h] = f16_to_f32(d) * float(sc[h]);
    }
}

void matmul_q6k(const int8_t* wq, const float* ws, int n, int k, const float* x, size_t ldx, int m, float* y,
                size_t ldy, int act_bits) {
    const int k_pad = padded_k(WeightType::q6k, k), k_act = padded_k(WeightType::q8, k);
    const int n_halves = k_act / kQ6kSub, w_halves = k_pad / kQ6kSub;
    std::vector<int32_t> xq(static_cast<size_t>(k_act));
    std::vector<float> xs(static_cast<size_t>(k_act / kQ8Group));
    for (int r = 0; r < m; ++r) {
        quantize_row_act(x + size_t(r) * ldx, k, act_bits, xq.data(), xs.data());
        for (int c = 0; c < n; ++c) {
            const int8_t* wrow = wq + size_t(c) * size_t(k_pad);
            float acc = 0.0f;
            for (int h = 0; h < n_halves; ++h) {
                int32_t dot = 0;
                for (int i = h * kQ6kSub; i < (h + 1) * kQ6kSub; ++i) dot += int32_t(wrow[i]) * int32_t(xq[size_t(i)]);
                const float term = (xs[size_t(h / 2)] * ws[size_t(c) * size_t(w_halves) + size_t(h)]) * float(dot);
                acc += term;
            }
            y[size_t(r) * ldy + size_t(c)] = acc;
        }
    }
}

}  // namespace ref

}  // namespace staticlm::kernels
