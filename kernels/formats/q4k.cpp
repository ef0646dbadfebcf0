// The q4k format's entry: GGUF Q4_K super-blocks in 16-row panels (layout in
// kernels/formats/q4k.hpp), a round-to-nearest quantizer for float sources,
// and the exact repacking of given Q4_K fields.
#include "kernels/formats/q4k.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/formats/format.hpp"
#include "kernels/formats/q8.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels {

namespace {

int supers(int k) { return (k + kQ4kSuper - 1) / kQ4kSuper; }

size_t panel_size(int k) { return size_t(supers(k)) * sizeof(Q4kSuper); }

size_t matrix_size(int n, int k) {
    detail::check_k("q4k", n, k);
    return detail::panels(n) * panel_size(k);
}

size_t scratch_size(int m, int k) { return m <= 0 ? 0 : size_t(m) * q8_act_layout(k).stride; }

void read_row(const PackedMatrix& w, int row, float scale, float* out) {
    detail::check_row(w, row);
    const int p = row / kPanelRows, r = row % kPanelRows;
    const auto* sb = reinterpret_cast<const Q4kSuper*>(w.data + size_t(p) * panel_size(w.k));
    for (int i = 0; i < w.k; ++i) {
        const Q4kSuper& s = sb[i / kQ4kSuper];
        const Q4kGroup& g = s.g[(i % kQ4kSuper) / kQ8Group];
        const int j = i % kQ8Group;
        const uint8_t byte = g.q[j / 8][r][j % 4];
        const int n = (j % 8) < 4 ? byte & 15 : byte >> 4;
        uint16_t d, dmin;
        std::memcpy(&d, &s.d[r], 2);
        std::memcpy(&dmin, &s.dmin[r], 2);
        const float ws = f16_to_f32(d) * float(g.sc[r]), wm = f16_to_f32(dmin) * float(g.m[r]);
        out[i] = (ws * float(n) - wm) * scale;
    }
}

float half_round(float v) { return f16_to_f32(f32_to_f16(std::min(v, 65504.0f))); }

}  // namespace

void quantize_q4k_super(const float* x, uint8_t* n, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin) {
    float scale[kQ4kGroups], min[kQ4kGroups];
    bool finite[kQ4kGroups];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int g = 0; g < kQ4kGroups; ++g) {
        const float* v = x + g * kQ8Group;
        float lo = 0.0f, hi = -INFINITY;
        finite[g] = true;
        for (int i = 0; i < kQ8Group; ++i) {
            finite[g] = finite[g] && std::isfinite(v[i]);
            lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
        }
        scale[g] = finite[g] ? (hi - lo) / 15.0f : 0.0f;
        min[g] = finite[g] ? -lo : 0.0f;
        if (!std::isfinite(scale[g])) scale[g] = 0.0f, min[g] = 0.0f, finite[g] = false;
        max_scale = std::max(max_scale, scale[g]);
        max_min = std::max(max_min, min[g]);
    }
    const float ds = half_round(max_scale / 63.0f), dm = half_round(max_min / 63.0f);
    *d = f32_to_f16(ds);
    *dmin = f32_to_f16(dm);
    for (int g = 0; g < kQ4kGroups; ++g) {
        sc[g] = ds > 0.0f ? uint8_t(std::clamp(std::round(scale[g] / ds), 0.0f, 63.0f)) : 0;
        m[g] = dm > 0.0f ? uint8_t(std::clamp(std::round(min[g] / dm), 0.0f, 63.0f)) : 0;
        const float ws = ds * float(sc[g]), wm = dm * float(m[g]);
        for (int i = 0; i < kQ8Group; ++i) {
            const float v = x[g * kQ8Group + i];
            const float q = ws > 0.0f && finite[g] ? std::round((v + wm) / ws) : 0.0f;
            n[g * kQ8Group + i] = uint8_t(std::clamp(q, 0.0f, 15.0f));
        }
    }
}

const FormatInfo formats::q4k = {
    .traits = {WeightType::q4k, "q4k", WeightMath::int8, false,
               double(sizeof(Q4kSuper)) / (kPanelRows * kQ4kSuper)},
    .k_align = kQ4kSuper,
    .panel_bytes = panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = read_row,
};

namespace detail {

void store_q4k_super(std::byte* super, int r, const uint8_t* n, const uint8_t* sc, const uint8_t* m, uint16_t d,
                     uint16_t dmin) {
    auto& s = *reinterpret_cast<Q4kSuper*>(super);
    for (int g = 0; g < kQ4kGroups; ++g) {
        Q4kGroup& grp = s.g[g];
        for (int t = 0; t < kQ8Group / 8; ++t)
            for (int c = 0; c < 4; ++c)
                grp.q[t][r][c] = uint8_t(n[g * kQ8Group + 8 * t + c] | (n[g * kQ8Group + 8 * t + 4 + c] << 4));
        grp.sc[r] = sc[g];
        grp.m[r] = m[g];
    }
    std::memcpy(&s.d[r], &d, 2);  // the super-block may be unaligned
    std::memcpy(&s.dmin[r], &dmin, 2);
}

}  // namespace detail

void pack_q4k_quants(const uint8_t* q, const uint8_t* sc, const uint8_t* m, const uint16_t* d, const uint16_t* dmin,
                     int n, int k, int n0, int n1, std::byte* dst) {
    detail::check_quant_rows("pack_q4k_quants", WeightType::q4k, n, k, n0, n1);
    if (k % kQ4kSuper != 0)
        throw Error(ErrorKind::input, "pack_q4k_quants: k = " + std::to_string(k) + " is not whole super-blocks of " +
                                          std::to_string(kQ4kSuper));
    const int ns = k / kQ4kSuper, groups = k / kQ8Group;
    for (int p0 = n0; p0 < n1; p0 += kPanelRows) {
        std::byte* panel = dst + size_t(p0 / kPanelRows) * panel_size(k);
        std::memset(panel, 0, panel_size(k));  // padding rows: n = 0, scales 0
        const int rows = std::min(kPanelRows, n1 - p0);
        for (int r = 0; r < rows; ++r) {
            const size_t row = size_t(p0 - n0 + r);
            for (int s = 0; s < ns; ++s) {
                const uint8_t* nq = q + row * size_t(k) + size_t(s) * kQ4kSuper;
                for (int i = 0; i < kQ4kSuper; ++i)
                    if (nq[i] > 15)
                        throw Error(ErrorKind::input, "pack_q4k_quants: value " + std::to_string(nq[i]) + " of row " +
                                                          std::to_string(row) + " is outside [0, 15]");
                const size_t gi = row * size_t(groups) + size_t(s) * kQ4kGroups;
                for (int g = 0; g < kQ4kGroups; ++g)
                    if (sc[gi + size_t(g)] > 63 || m[gi + size_t(g)] > 63)
                        throw Error(ErrorKind::input, "pack_q4k_quants: 6-bit scale or min of row " +
                                                          std::to_string(row) + " is over 63");
                detail::store_q4k_super(panel + size_t(s) * sizeof(Q4kSuper), r, nq, sc + gi, m + gi,
                                        d[row * size_t(ns) + size_t(s)], dmin[row * size_t(ns) + size_t(s)]);
            }
        }
    }
}

}  // namespace staticlm::kernels
