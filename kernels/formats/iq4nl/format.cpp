// The iq4nl format's entry (GGUF IQ4_NL kept as it is; layout in
// kernels/formats/iq4nl/layout.hpp): geometry, row unpacking, the float quantizer,
// the GGUF ingestion (blocks copied, then repacked exactly) and the scalar
// reference.
#include "formats/iq4nl/layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "formats/hooks.hpp"
#include "formats/q8/layout.hpp"
#include "kernels/formats/format.hpp"
#include "kernels/ref.hpp"

namespace staticlm::kernels {

namespace {

constexpr int G = kQ8Group;

size_t panel_size(int k) { return size_t(q8_groups(k)) * sizeof(Iq4nlBlock); }

size_t matrix_size(int n, int k) {
    detail::check_k("iq4nl", n, k);
    return detail::panels(n) * panel_size(k);
}

size_t scratch_size(int m, int k) { return q8_act_scratch_bytes(m, k); }

// The index byte of row r, k = j (0..31) in a block, and which nibble.
uint8_t& index_byte(Iq4nlBlock& b, int r, int j) { return b.q[j / 8][r][j % 4]; }
bool high_nibble(int j) { return (j % 8) >= 4; }

int block_index(const Iq4nlBlock& b, int r, int j) {
    const uint8_t byte = b.q[j / 8][r][j % 4];
    return high_nibble(j) ? byte >> 4 : byte & 15;
}

void set_block_index(Iq4nlBlock& b, int r, int j, int i) {
    uint8_t& byte = index_byte(b, r, j);
    byte = high_nibble(j) ? uint8_t((byte & 0x0F) | (i << 4)) : uint8_t((byte & 0xF0) | i);
}

void read_row(const PackedMatrix& w, int row, float scale, float* out) {
    detail::check_row(w, row);
    const int p = row / kPanelRows, r = row % kPanelRows;
    const auto* blocks = reinterpret_cast<const Iq4nlBlock*>(w.data + size_t(p) * panel_size(w.k));
    for (int i = 0; i < w.k; ++i) {
        const Iq4nlBlock& b = blocks[i / G];
        uint16_t d;
        std::memcpy(&d, &b.scale[r], 2);
        // d · value first (gguf-py's dequantization), then the caller's scale.
        out[i] = f16_to_f32(d) * float(kIq4nlValues[block_index(b, r, i % G)]) * scale;
    }
}

// Every row index 8 (the value 1), scale 0.
void clear_block(Iq4nlBlock& b) {
    std::memset(b.q, 0x88, sizeof b.q);
    std::memset(b.scale, 0, sizeof b.scale);
}

// The value a half holds nearest to s (finite: capped at ±65504).
float half_of(float s) { return f16_to_f32(f32_to_f16(std::clamp(s, -65504.0f, 65504.0f))); }

// The index of the table value nearest t (ties to the lower one): the count
// of midpoints below t. NaN-free t only.
int nearest_index(float t) {
    static constexpr float kMid[15] = {-115.5f, -93.5f, -74.0f, -57.0f, -42.0f, -28.5f, -16.0f, -4.5f,
                                       7.0f,    19.0f,  31.5f,  45.5f,  61.0f,  79.0f,  101.0f};
    int i = 0;
    for (float m : kMid) i += int(t > m);
    return i;
}

// Indices of x[0, len) / s into idx; returns Σ (x - s·value)² (s != 0).
double pick_indices(const float* x, int len, float s, uint8_t* idx) {
    const float inv = 1.0f / s;
    double err = 0.0;
    for (int i = 0; i < len; ++i) {
        idx[i] = uint8_t(nearest_index(x[i] * inv));
        const double e = double(x[i]) - double(s) * kIq4nlValues[idx[i]];
        err += e * e;
    }
    return err;
}

}  // namespace

float quantize_iq4nl_group(const float* x, int len, uint8_t* idx) {
    std::memset(idx, 8, G);
    len = std::clamp(len, 0, G);
    float amax = 0.0f, mx = 0.0f;
    for (int i = 0; i < len; ++i) {
        if (!std::isfinite(x[i])) return 0.0f;
        if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), mx = x[i];
    }
    const float s0 = half_of(mx / float(kIq4nlValues[0]));
    if (s0 == 0.0f) return 0.0f;
    double best_err = pick_indices(x, len, s0, idx);
    float best = s0;
    double sxv = 0.0, svv = 0.0;
    for (int i = 0; i < len; ++i) {
        const double v = kIq4nlValues[idx[i]];
        sxv += double(x[i]) * v, svv += v * v;
    }
    const float s1 = half_of(float(sxv / svv));
    if (s1 != 0.0f && s1 != s0) {
        uint8_t cand[G];
        std::memset(cand, 8, G);
        const double err = pick_indices(x, len, s1, cand);
        if (err < best_err) best = s1, std::memcpy(idx, cand, G);
    }
    return best;
}

void pack_iq4nl_ggml(const void* blocks, int n, int k, int n0, int n1, std::byte* dst) {
    detail::check_quant_rows("pack_iq4nl_ggml", WeightType::iq4nl, n, k, n0, n1);
    const auto* src = static_cast<const BlockIQ4_NL*>(blocks);
    const int groups = k / G;
    for (int p0 = n0; p0 < n1; p0 += kPanelRows) {
        auto* panel = reinterpret_cast<Iq4nlBlock*>(dst + size_t(p0 / kPanelRows) * panel_size(k));
        const int rows = std::min(kPanelRows, n1 - p0);
        for (int g = 0; g < groups; ++g) {
            Iq4nlBlock& out = panel[g];
            clear_block(out);
            for (int r = 0; r < rows; ++r) {
                const BlockIQ4_NL& in = src[size_t(p0 - n0 + r) * size_t(groups) + size_t(g)];
                for (int j = 0; j < G / 2; ++j) {
                    set_block_index(out, r, j, in.qs[j] & 15);
                    set_block_index(out, r, j + G / 2, in.qs[j] >> 4);
                }
                const uint16_t d = in.d;
                std::memcpy(&out.scale[r], &d, 2);
            }
        }
    }
}

namespace detail {

void store_iq4nl_group(std::byte* block, int r, const uint8_t* idx, float scale) {
    auto& b = *reinterpret_cast<Iq4nlBlock*>(block);
    for (int j = 0; j < G; ++j) set_block_index(b, r, j, idx[j]);
    const uint16_t h = f32_to_f16(scale);  // exact: a half already
    std::memcpy(&b.scale[r], &h, 2);
}

}  // namespace detail

namespace ref {

void quantize_weight_row_iq4nl(const float* x, int k, uint8_t* idx, uint16_t* d) {
    float buf[G];
    for (int g0 = 0; g0 < k; g0 += G) {
        const int len = std::min(G, k - g0);
        std::fill(buf, buf + G, 0.0f);
        std::memcpy(buf, x + g0, sizeof(float) * size_t(len));
        d[g0 / G] = f32_to_f16(quantize_iq4nl_group(buf, len, idx + g0));
    }
}

void matmul_iq4nl(const uint8_t* idx, const uint16_t* d, int n, int k, const float* x, size_t ldx, int m,
                  float* y, size_t ldy, int act_bits) {
    const size_t k_pad = size_t(q8_groups(k)) * G;
    std::vector<int8_t> wq(size_t(n) * k_pad);
    std::vector<float> ws(size_t(n) * k_pad / G);
    for (size_t i = 0; i < wq.size(); ++i) wq[i] = kIq4nlValues[idx[i]];
    for (size_t i = 0; i < ws.size(); ++i) ws[i] = f16_to_f32(d[i]);
    matmul_q8(wq.data(), ws.data(), n, k, x, ldx, m, y, ldy, act_bits);
}

}  // namespace ref

namespace {

// GGUF ingestion: rows of IQ4_NL blocks copied into the scratch as they are
// (a non-finite half scale reported), then repacked by pack_iq4nl_ggml.
using Gguf = detail::BlockCopyIngest<GgmlType::iq4_nl, BlockIQ4_NL, G, 0, 1, pack_iq4nl_ggml>;

// The scalar reference row: the quantizer's indices and scales, dequantized
// as unpack_row does.
void reference_row(const float* x, int k, float* out) {
    const size_t k_pad = size_t(q8_groups(k)) * G;
    std::vector<uint8_t> idx(k_pad);
    std::vector<uint16_t> d(k_pad / G);
    ref::quantize_weight_row_iq4nl(x, k, idx.data(), d.data());
    for (int i = 0; i < k; ++i) out[i] = f16_to_f32(d[size_t(i / G)]) * float(kIq4nlValues[idx[size_t(i)]]);
}

}  // namespace

const FormatInfo formats::iq4nl = {
    .traits = {WeightType::iq4nl, "iq4nl", WeightMath::int8, false,
               double(sizeof(Iq4nlBlock)) / (kPanelRows * kQ8Group)},
    .k_align = kQ8Group,
    .panel_bytes = panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = read_row,
    .ref_row = reference_row,
    .vocab_q8 = true,
    .gguf = Gguf::hook(),
};

}  // namespace staticlm::kernels
