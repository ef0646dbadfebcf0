// The iq4xs format's entry (GGUF IQ4_XS kept as it is; layout in
// kernels/formats/iq4xs/layout.hpp): geometry, row unpacking, the float quantizer,
// the GGUF ingestion (blocks copied, then repacked exactly) and the scalar
// reference.
#include "formats/iq4xs/layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "formats/hooks.hpp"
#include "formats/iq4nl/layout.hpp"
#include "formats/q8/layout.hpp"
#include "kernels/formats/format.hpp"
#include "kernels/ref.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels {

namespace {

constexpr int G = kQ8Group;

int supers(int k) { return (k + kIq4xsSuper - 1) / kIq4xsSuper; }

size_t panel_size(int k) { return size_t(supers(k)) * sizeof(Iq4xsSuper); }

size_t matrix_size(int n, int k) {
    detail::check_k("iq4xs", n, k);
    return detail::panels(n) * panel_size(k);
}

size_t scratch_size(int m, int k) { return q8_act_scratch_bytes(m, k); }

bool high_nibble(int j) { return (j % 8) >= 4; }

int group_index(const Iq4xsGroup& g, int r, int j) {
    const uint8_t byte = g.q[j / 8][r][j % 4];
    return high_nibble(j) ? byte >> 4 : byte & 15;
}

void read_row(const PackedMatrix& w, int row, float scale, float* out) {
    detail::check_row(w, row);
    const int p = row / kPanelRows, r = row % kPanelRows;
    const auto* sb = reinterpret_cast<const Iq4xsSuper*>(w.data + size_t(p) * panel_size(w.k));
    for (int i = 0; i < w.k; ++i) {
        const Iq4xsSuper& s = sb[i / kIq4xsSuper];
        const Iq4xsGroup& g = s.g[(i % kIq4xsSuper) / G];
        uint16_t d;
        std::memcpy(&d, &s.d[r], 2);
        // (d · sc) · value (gguf-py's dequantization), then the caller's scale.
        const float dl = f16_to_f32(d) * float(g.sc[r]);
        out[i] = dl * float(kIq4nlValues[group_index(g, r, i % G)]) * scale;
    }
}

// The index of the table value nearest t (ties to the lower one): the count
// of midpoints below t. NaN-free t only.
int nearest_index(float t) {
    static constexpr float kMid[15] = {-115.5f, -93.5f, -74.0f, -57.0f, -42.0f, -28.5f, -16.0f, -4.5f,
                                       7.0f,    19.0f,  31.5f,  45.5f,  61.0f,  79.0f,  101.0f};
    int i = 0;
    for (float m : kMid) i += int(t > m);
    return i;
}

// Indices of x[0, len) / s into idx (8 where s == 0); returns Σ (x - s·value)².
double pick_indices(const float* x, int len, float s, uint8_t* idx) {
    double err = 0.0;
    const float inv = s != 0.0f ? 1.0f / s : 0.0f;
    for (int i = 0; i < len; ++i) {
        idx[i] = s != 0.0f ? uint8_t(nearest_index(x[i] * inv)) : uint8_t(8);
        const double e = double(x[i]) - double(s) * kIq4nlValues[idx[i]];
        err += e * e;
    }
    return err;
}

}  // namespace

void quantize_iq4xs_super(const float* x, int len, uint8_t* idx, int8_t* sc, uint16_t* d) {
    std::memset(idx, 8, kIq4xsSuper);
    std::memset(sc, 0, kIq4xsGroups);
    *d = 0;
    len = std::clamp(len, 0, kIq4xsSuper);
    for (int i = 0; i < len; ++i)
        if (!std::isfinite(x[i])) return;
    float s[kIq4xsGroups] = {};
    float smax = 0.0f;
    uint8_t tmp[G];
    for (int g = 0; g < kIq4xsGroups; ++g) {
        const int n = std::clamp(len - g * G, 0, G);
        if (n == 0) continue;
        s[g] = quantize_iq4nl_group(x + g * G, n, tmp);
        if (std::fabs(s[g]) > std::fabs(smax)) smax = s[g];
    }
    // smax = d · -32: the largest scale gets the end of [-32, 31] whose magnitude is 32.
    const float dd = f16_to_f32(f32_to_f16(std::clamp(smax / -32.0f, -65504.0f, 65504.0f)));
    if (dd == 0.0f) return;
    *d = f32_to_f16(dd);
    uint8_t cand[G];
    for (int g = 0; g < kIq4xsGroups; ++g) {
        const int n = std::clamp(len - g * G, 0, G);
        if (n == 0) continue;
        const float* xg = x + g * G;
        const int l0 = int(std::clamp(std::round(s[g] / dd), -32.0f, 31.0f));
        double best = -1.0;
        for (int l = std::max(-32, l0 - 1); l <= std::min(31, l0 + 1); ++l) {
            const double err = pick_indices(xg, n, dd * float(l), cand);
            if (best < 0.0 || err < best) {
                best = err, sc[g] = int8_t(l);
                std::memcpy(idx + g * G, cand, size_t(n));
            }
        }
    }
}

void pack_iq4xs_ggml(const void* blocks, int n, int k, int n0, int n1, std::byte* dst) {
    detail::check_quant_rows("pack_iq4xs_ggml", WeightType::iq4xs, n, k, n0, n1);
    if (k % kIq4xsSuper != 0)
        throw Error(ErrorKind::input, "pack_iq4xs_ggml: k = " + std::to_string(k) +
                                          " is not whole super-blocks of " + std::to_string(kIq4xsSuper));
    const auto* src = static_cast<const BlockIQ4_XS*>(blocks);
    const int ns = k / kIq4xsSuper;
    uint8_t idx[kIq4xsSuper];
    int8_t sc[kIq4xsGroups];
    for (int p0 = n0; p0 < n1; p0 += kPanelRows) {
        std::byte* panel = dst + size_t(p0 / kPanelRows) * panel_size(k);
        std::memset(panel, 0, panel_size(k));  // padding rows: d = 0
        const int rows = std::min(kPanelRows, n1 - p0);
        for (int r = 0; r < rows; ++r)
            for (int s = 0; s < ns; ++s) {
                const BlockIQ4_XS& in = src[size_t(p0 - n0 + r) * size_t(ns) + size_t(s)];
                for (int b = 0; b < kIq4xsGroups; ++b) {
                    sc[b] = int8_t(iq4xs_scale(in, b) - 32);
                    for (int j = 0; j < G / 2; ++j) {
                        idx[b * G + j] = in.qs[b * (G / 2) + j] & 15;
                        idx[b * G + j + G / 2] = in.qs[b * (G / 2) + j] >> 4;
                    }
                }
                const uint16_t d = in.d;
                detail::store_iq4xs_super(panel + size_t(s) * sizeof(Iq4xsSuper), r, idx, sc, d);
            }
    }
}

namespace detail {

void store_iq4xs_super(std::byte* super, int r, const uint8_t* idx, const int8_t* sc, uint16_t d) {
    auto& s = *reinterpret_cast<Iq4xsSuper*>(super);
    for (int g = 0; g < kIq4xsGroups; ++g) {
        Iq4xsGroup& grp = s.g[g];
        const uint8_t* v = idx + g * G;
        for (int t = 0; t < G / 8; ++t)
            for (int c = 0; c < 4; ++c) grp.q[t][r][c] = uint8_t((v[8 * t + c] & 15) | ((v[8 * t + 4 + c] & 15) << 4));
        grp.sc[r] = sc[g];
    }
    std::memcpy(&s.d[r], &d, 2);  // the super-block may be unaligned
}

}  // namespace detail

namespace ref {

void quantize_weight_row_iq4xs(const float* x, int k, uint8_t* idx, int8_t* sc, uint16_t* d) {
    float buf[kIq4xsSuper];
    for (int s0 = 0; s0 < k; s0 += kIq4xsSuper) {
        const int len = std::min(kIq4xsSuper, k - s0);
        std::fill(buf, buf + kIq4xsSuper, 0.0f);
        std::memcpy(buf, x + s0, sizeof(float) * size_t(len));
        quantize_iq4xs_super(buf, len, idx + s0, sc + s0 / G, d + s0 / kIq4xsSuper);
    }
}

void matmul_iq4xs(const uint8_t* idx, const int8_t* sc, const uint16_t* d, int n, int k, const float* x,
                  size_t ldx, int m, float* y, size_t ldy, int act_bits) {
    const size_t k_pad = size_t(supers(k)) * kIq4xsSuper, q8_pad = size_t(q8_groups(k)) * G;
    std::vector<int8_t> wq(size_t(n) * q8_pad);
    std::vector<float> ws(size_t(n) * q8_pad / G);
    for (size_t r = 0; r < size_t(n); ++r) {
        for (size_t i = 0; i < q8_pad; ++i) wq[r * q8_pad + i] = kIq4nlValues[idx[r * k_pad + i]];
        for (size_t g = 0; g < q8_pad / G; ++g)
            ws[r * (q8_pad / G) + g] =
                f16_to_f32(d[r * (k_pad / kIq4xsSuper) + g * G / kIq4xsSuper]) * float(sc[r * (k_pad / G) + g]);
    }
    matmul_q8(wq.data(), ws.data(), n, k, x, ldx, m, y, ldy, act_bits);
}

}  // namespace ref

namespace {

// GGUF ingestion: rows of IQ4_XS blocks copied into the scratch as they are
// (a non-finite half scale reported), then repacked by pack_iq4xs_ggml.
using Gguf = detail::BlockCopyIngest<GgmlType::iq4_xs, BlockIQ4_XS, kIq4xsSuper, 0, 1, pack_iq4xs_ggml>;

// The scalar reference row: the quantizer's indices and scales, dequantized
// as unpack_row does.
void reference_row(const float* x, int k, float* out) {
    const size_t k_pad = size_t(supers(k)) * kIq4xsSuper;
    std::vector<uint8_t> idx(k_pad);
    std::vector<int8_t> sc(k_pad / G);
    std::vector<uint16_t> d(k_pad / kIq4xsSuper);
    ref::quantize_weight_row_iq4xs(x, k, idx.data(), sc.data(), d.data());
    for (int i = 0; i < k; ++i) {
        const float dl = f16_to_f32(d[size_t(i / kIq4xsSuper)]) * float(sc[size_t(i / G)]);
        out[i] = dl * float(kIq4nlValues[idx[size_t(i)]]);
    }
}

}  // namespace

const FormatInfo formats::iq4xs = {
    .traits = {WeightType::iq4xs, "iq4xs", WeightMath::int8, false,
               double(sizeof(Iq4xsSuper)) / (kPanelRows * kIq4xsSuper)},
    .k_align = kIq4xsSuper,
    .panel_bytes = panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = read_row,
    .ref_row = reference_row,
    .vocab_q8 = true,
    .gguf = Gguf::hook(),
};

}  // namespace staticlm::kernels
