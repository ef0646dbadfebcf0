// What q4k and q5k share (kernels/formats/q4k/format.cpp, q5k.cpp): GGUF Q4_K / Q5_K
// super-blocks of 256 k with a half d and dmin per row, per group of 32 a
// 6-bit scale and min, values n in [0, kLevels]:
//   w = (d · sc) · n - (dmin · m)
// Reading a row back, the round-to-nearest quantizer for float sources, and
// the exact repacking of given fields, for a group type Grp (Q4kGroup or
// Q5kGroup: nibbles q as Q4Block::q, q5k also a bit plane hi as Q5Block::hi)
// and its super-block Sup. Internal to the two format files.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/formats/format.hpp"
#include "formats/q8/layout.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels::detail {

template <class Grp, class Sup, int kLevels>
struct AffineK {
    static_assert(kLevels == 15 || kLevels == 31);
    static constexpr int kSuper = 256, kGroups = kSuper / kQ8Group;

    static int supers(int k) { return (k + kSuper - 1) / kSuper; }
    static size_t panel_size(int k) { return size_t(supers(k)) * sizeof(Sup); }

    // Row r's n at k = j (0..31) of a group.
    static int n_at(const Grp& g, int r, int j) {
        const uint8_t byte = g.q[j / 8][r][j % 4];
        int n = (j % 8) < 4 ? byte & 15 : byte >> 4;
        if constexpr (kLevels == 31) {
            const int bit = 4 * r + j % 4;
            n += 16 * ((g.hi[j / 4][bit / 8] >> (bit % 8)) & 1);
        }
        return n;
    }

    static void read_row(const PackedMatrix& w, int row, float scale, float* out) {
        check_row(w, row);
        const int p = row / kPanelRows, r = row % kPanelRows;
        const auto* sb = reinterpret_cast<const Sup*>(w.data + size_t(p) * panel_size(w.k));
        for (int i = 0; i < w.k; ++i) {
            const Sup& s = sb[i / kSuper];
            const Grp& g = s.g[(i % kSuper) / kQ8Group];
            uint16_t d, dmin;
            std::memcpy(&d, &s.d[r], 2);
            std::memcpy(&dmin, &s.dmin[r], 2);
            const float ws = f16_to_f32(d) * float(g.sc[r]), wm = f16_to_f32(dmin) * float(g.m[r]);
            out[i] = (ws * float(n_at(g, r, i % kQ8Group)) - wm) * scale;
        }
    }

    static float half_round(float v) { return f16_to_f32(f32_to_f16(std::min(v, 65504.0f))); }

    static void quantize_super(const float* x, uint8_t* n, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin) {
        float scale[kGroups], min[kGroups];
        bool finite[kGroups];
        float max_scale = 0.0f, max_min = 0.0f;
        for (int g = 0; g < kGroups; ++g) {
            const float* v = x + g * kQ8Group;
            float lo = 0.0f, hi = -INFINITY;
            finite[g] = true;
            for (int i = 0; i < kQ8Group; ++i) {
                finite[g] = finite[g] && std::isfinite(v[i]);
                lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
            }
            scale[g] = finite[g] ? (hi - lo) / float(kLevels) : 0.0f;
            min[g] = finite[g] ? -lo : 0.0f;
            if (!std::isfinite(scale[g])) scale[g] = 0.0f, min[g] = 0.0f, finite[g] = false;
            max_scale = std::max(max_scale, scale[g]);
            max_min = std::max(max_min, min[g]);
        }
        const float ds = half_round(max_scale / 63.0f), dm = half_round(max_min / 63.0f);
        *d = f32_to_f16(ds);
        *dmin = f32_to_f16(dm);
        for (int g = 0; g < kGroups; ++g) {
            sc[g] = ds > 0.0f ? uint8_t(std::clamp(std::round(scale[g] / ds), 0.0f, 63.0f)) : 0;
            m[g] = dm > 0.0f ? uint8_t(std::clamp(std::round(min[g] / dm), 0.0f, 63.0f)) : 0;
            const float ws = ds * float(sc[g]), wm = dm * float(m[g]);
            for (int i = 0; i < kQ8Group; ++i) {
                const float v = x[g * kQ8Group + i];
                const float q = ws > 0.0f && finite[g] ? std::round((v + wm) / ws) : 0.0f;
                n[g * kQ8Group + i] = uint8_t(std::clamp(q, 0.0f, float(kLevels)));
            }
        }
    }

    static void store_super(std::byte* super, int r, const uint8_t* n, const uint8_t* sc, const uint8_t* m,
                            uint16_t d, uint16_t dmin) {
        auto& s = *reinterpret_cast<Sup*>(super);
        for (int g = 0; g < kGroups; ++g) {
            Grp& grp = s.g[g];
            const uint8_t* v = n + g * kQ8Group;
            for (int t = 0; t < kQ8Group / 8; ++t)
                for (int c = 0; c < 4; ++c)
                    grp.q[t][r][c] = uint8_t((v[8 * t + c] & 15) | ((v[8 * t + 4 + c] & 15) << 4));
            if constexpr (kLevels == 31)
                for (int j = 0; j < kQ8Group; ++j) {
                    const int bit = 4 * r + j % 4;
                    uint8_t& b = grp.hi[j / 4][bit / 8];
                    b = uint8_t(v[j] & 16 ? b | (1u << (bit % 8)) : b & ~(1u << (bit % 8)));
                }
            grp.sc[r] = sc[g];
            grp.m[r] = m[g];
        }
        std::memcpy(&s.d[r], &d, 2);  // the super-block may be unaligned
        std::memcpy(&s.dmin[r], &dmin, 2);
    }

    static void pack_given(const char* what, WeightType type, const uint8_t* q, const uint8_t* sc, const uint8_t* m,
                           const uint16_t* d, const uint16_t* dmin, int n, int k, int n0, int n1, std::byte* dst) {
        check_quant_rows(what, type, n, k, n0, n1);
        if (k % kSuper != 0)
            throw Error(ErrorKind::input, std::string(what) + ": k = " + std::to_string(k) +
                                              " is not whole super-blocks of " + std::to_string(kSuper));
        const int ns = k / kSuper, groups = k / kQ8Group;
        for (int p0 = n0; p0 < n1; p0 += kPanelRows) {
            std::byte* panel = dst + size_t(p0 / kPanelRows) * panel_size(k);
            std::memset(panel, 0, panel_size(k));  // padding rows: n = 0, scales 0
            const int rows = std::min(kPanelRows, n1 - p0);
            for (int r = 0; r < rows; ++r) {
                const size_t row = size_t(p0 - n0 + r);
                for (int s = 0; s < ns; ++s) {
                    const uint8_t* nq = q + row * size_t(k) + size_t(s) * kSuper;
                    for (int i = 0; i < kSuper; ++i)
                        if (nq[i] > kLevels)
                            throw Error(ErrorKind::input, std::string(what) + ": value " + std::to_string(nq[i]) +
                                                              " of row " + std::to_string(row) + " is outside [0, " +
                                                              std::to_string(kLevels) + "]");
                    const size_t gi = row * size_t(groups) + size_t(s) * kGroups;
                    for (int g = 0; g < kGroups; ++g)
                        if (sc[gi + size_t(g)] > 63 || m[gi + size_t(g)] > 63)
                            throw Error(ErrorKind::input, std::string(what) + ": 6-bit scale or min of row " +
                                                              std::to_string(row) + " is over 63");
                    store_super(panel + size_t(s) * sizeof(Sup), r, nq, sc + gi, m + gi,
                                d[row * size_t(ns) + size_t(s)], dmin[row * size_t(ns) + size_t(s)]);
                }
            }
        }
    }
};

}  // namespace staticlm::kernels::detail

namespace staticlm::kernels::detail {

// GGUF Q4_1 / Q5_1 kept as they are (q4a, q5a: kernels/formats/q4a/layout.hpp): one
// block Blk per group of 32 k with per-row half d and m, w = d · n + m.
template <class Blk, int kLevels>
struct AffineG {
    static_assert(kLevels == 15 || kLevels == 31);

    static size_t panel_size(int k) { return size_t(q8_groups(k)) * sizeof(Blk); }

    static int n_at(const Blk& b, int r, int j) {
        const uint8_t byte = b.q[j / 8][r][j % 4];
        int n = (j % 8) < 4 ? byte & 15 : byte >> 4;
        if constexpr (kLevels == 31) {
            const int bit = 4 * r + j % 4;
            n += 16 * ((b.hi[j / 4][bit / 8] >> (bit % 8)) & 1);
        }
        return n;
    }

    static void read_row(const PackedMatrix& w, int row, float scale, float* out) {
        check_row(w, row);
        const int p = row / kPanelRows, r = row % kPanelRows;
        const auto* blocks = reinterpret_cast<const Blk*>(w.data + size_t(p) * panel_size(w.k));
        for (int i = 0; i < w.k; ++i) {
            const Blk& b = blocks[i / kQ8Group];
            uint16_t d, m;
            std::memcpy(&d, &b.d[r], 2);
            std::memcpy(&m, &b.m[r], 2);
            out[i] = (float(n_at(b, r, i % kQ8Group)) * f16_to_f32(d) + f16_to_f32(m)) * scale;
        }
    }

    static void quantize_group(const float* x, uint8_t* n, uint16_t* d, uint16_t* m) {
        float lo = INFINITY, hi = -INFINITY;
        bool finite = true;
        for (int i = 0; i < kQ8Group; ++i) {
            finite = finite && std::isfinite(x[i]);
            lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
        }
        const float step = (hi - lo) / float(kLevels);
        if (!finite || !std::isfinite(step)) {
            *d = *m = 0;
            std::memset(n, 0, kQ8Group);
            return;
        }
        const float ds = f16_to_f32(f32_to_f16(std::min(step, 65504.0f)));
        const float ms = f16_to_f32(f32_to_f16(std::clamp(lo, -65504.0f, 65504.0f)));
        *d = f32_to_f16(ds);
        *m = f32_to_f16(ms);
        for (int i = 0; i < kQ8Group; ++i) {
            const float q = ds > 0.0f ? std::round((x[i] - ms) / ds) : 0.0f;
            n[i] = uint8_t(std::clamp(q, 0.0f, float(kLevels)));
        }
    }

    static void store_group(std::byte* block, int r, const uint8_t* n, uint16_t d, uint16_t m) {
        auto& b = *reinterpret_cast<Blk*>(block);
        for (int t = 0; t < kQ8Group / 8; ++t)
            for (int c = 0; c < 4; ++c)
                b.q[t][r][c] = uint8_t((n[8 * t + c] & 15) | ((n[8 * t + 4 + c] & 15) << 4));
        if constexpr (kLevels == 31)
            for (int j = 0; j < kQ8Group; ++j) {
                const int bit = 4 * r + j % 4;
                uint8_t& h = b.hi[j / 4][bit / 8];
                h = uint8_t(n[j] & 16 ? h | (1u << (bit % 8)) : h & ~(1u << (bit % 8)));
            }
        std::memcpy(&b.d[r], &d, 2);  // the block may be unaligned
        std::memcpy(&b.m[r], &m, 2);
    }

    static void pack_given(const char* what, WeightType type, const uint8_t* q, const uint16_t* d, const uint16_t* m,
                           int n, int k, int n0, int n1, std::byte* dst) {
        check_quant_rows(what, type, n, k, n0, n1);
        const int groups = k / kQ8Group;
        for (int p0 = n0; p0 < n1; p0 += kPanelRows) {
            std::byte* panel = dst + size_t(p0 / kPanelRows) * panel_size(k);
            std::memset(panel, 0, panel_size(k));  // padding rows: n = 0, d = m = 0
            const int rows = std::min(kPanelRows, n1 - p0);
            for (int r = 0; r < rows; ++r) {
                const size_t row = size_t(p0 - n0 + r);
                for (int g = 0; g < groups; ++g) {
                    const uint8_t* nq = q + row * size_t(k) + size_t(g) * kQ8Group;
                    for (int i = 0; i < kQ8Group; ++i)
                        if (nq[i] > kLevels)
                            throw Error(ErrorKind::input, std::string(what) + ": value " + std::to_string(nq[i]) +
                                                              " of row " + std::to_string(row) + " is outside [0, " +
                                                              std::to_string(kLevels) + "]");
                    const size_t gi = row * size_t(groups) + size_t(g);
                    store_group(panel + size_t(g) * sizeof(Blk), r, nq, d[gi], m[gi]);
                }
            }
        }
    }
};

}  // namespace staticlm::kernels::detail
