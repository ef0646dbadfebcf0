// The q5 format's entry: 5-bit weights in 16-row panels of Q5Blocks (layout in
// kernels/formats/q5/layout.hpp), its round-to-nearest quantizer, and the exact
// repacking of already-quantized rows (GGUF Q5_0).
#include "formats/q5/layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "formats/hooks.hpp"
#include "kernels/formats/format.hpp"
#include "formats/q8/layout.hpp"

namespace staticlm::kernels {

namespace {

size_t panel_size(int k) { return size_t(q8_groups(k)) * sizeof(Q5Block); }

size_t matrix_size(int n, int k) {
    detail::check_k("q5", n, k);
    return detail::panels(n) * panel_size(k);
}

size_t scratch_size(int m, int k) { return q8_act_scratch_bytes(m, k); }

// Row r, k = j (0..31) of a block, as the signed value.
int block_q(const Q5Block& b, int r, int j) {
    const int t = j / 8, quad = (j % 8) / 4, c = j % 4;
    const uint8_t byte = b.lo[t][r][c];
    const int lo = quad == 0 ? byte & 15 : byte >> 4;
    const int hi = (b.hi[j / 4][(4 * r + c) / 8] >> ((4 * r + c) % 8)) & 1;
    return lo + 16 * hi - 16;
}

void set_block_q(Q5Block& b, int r, int j, int q) {
    const int t = j / 8, quad = (j % 8) / 4, c = j % 4;
    const auto n = unsigned(q + 16);
    uint8_t& byte = b.lo[t][r][c];
    byte = quad == 0 ? uint8_t((byte & 0xF0) | (n & 15)) : uint8_t((byte & 0x0F) | ((n & 15) << 4));
    uint8_t& bits = b.hi[j / 4][(4 * r + c) / 8];
    const auto bit = uint8_t(1u << ((4 * r + c) % 8));
    bits = n & 16 ? uint8_t(bits | bit) : uint8_t(bits & ~bit);
}

void read_row(const PackedMatrix& w, int row, float scale, float* out) {
    detail::check_row(w, row);
    const int p = row / kPanelRows, r = row % kPanelRows;
    const auto* blocks = reinterpret_cast<const Q5Block*>(w.data + size_t(p) * panel_size(w.k));
    for (int i = 0; i < w.k; ++i) {
        const Q5Block& b = blocks[i / kQ8Group];
        uint16_t s16;
        std::memcpy(&s16, &b.scale[r], 2);
        out[i] = float(block_q(b, r, i % kQ8Group)) * f16_to_f32(s16) * scale;
    }
}

void clear_block(std::byte* block) {  // every row q = 0 (n = 16), scale 0
    auto& b = *reinterpret_cast<Q5Block*>(block);
    std::memset(b.lo, 0, sizeof b.lo);
    std::memset(b.hi, 0xFF, sizeof b.hi);
    std::memset(b.scale, 0, sizeof b.scale);
}

}  // namespace

float quantize_q5_group(const float* x, int8_t* q) {
    std::memset(q, 0, kQ8Group);
    float amax = 0.0f, mx = 0.0f;
    for (int i = 0; i < kQ8Group; ++i) {
        if (!std::isfinite(x[i])) return 0.0f;
        if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), mx = x[i];
    }
    const float s = f16_to_f32(f32_to_f16(std::clamp(mx / -16.0f, -65504.0f, 65504.0f)));
    if (s == 0.0f) return 0.0f;
    for (int i = 0; i < kQ8Group; ++i)  // std::round: half away from zero
        q[i] = int8_t(std::clamp(std::round(x[i] / s), -16.0f, 15.0f));
    return s;
}

namespace {
constexpr GgmlType kGguf[] = {GgmlType::q5_0};
}

const FormatInfo formats::q5 = {
    .traits = {WeightType::q5, "q5", WeightMath::int8, false,
               double(sizeof(Q5Block)) / (kPanelRows * kQ8Group)},
    .k_align = kQ8Group,
    .panel_bytes = panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = read_row,
    .ref_row = detail::ref_row_symmetric<ref::quantize_weight_row_q5>,
    .vocab_q8 = true,
    .gguf = detail::GivenQuantsIngest<pack_q5_quants>::hook(kGguf, kGguf),
};

void pack_q5_quants(const int8_t* q, const uint16_t* scales, int n, int k, int n0, int n1, std::byte* dst) {
    const detail::GivenQuants given{"pack_q5_quants", WeightType::q5, -16, 15, sizeof(Q5Block), clear_block,
                                    detail::store_q5_group};
    detail::pack_given_quants(given, q, scales, n, k, n0, n1, dst);
}

namespace detail {

void store_q5_group(std::byte* block, int r, const int8_t* q, float scale) {
    auto& b = *reinterpret_cast<Q5Block*>(block);
    for (int j = 0; j < kQ8Group; ++j) set_block_q(b, r, j, q[j]);
    const uint16_t h = f32_to_f16(scale);  // exact: a half already
    std::memcpy(&b.scale[r], &h, 2);
}

}  // namespace detail

namespace ref {

void quantize_weight_row_q5(const float* x, int k, int8_t* q, float* scale) {
    quantize_symmetric_row(quantize_q5_group, x, k, q, scale);
}

}  // namespace ref

}  // namespace staticlm::kernels
