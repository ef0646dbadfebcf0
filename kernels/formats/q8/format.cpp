// The q8 format's entry: int8 weights in 16-row panels of Q8Blocks (layout in
// kernels/formats/q8/layout.hpp), int8 activation rows as matmul scratch.
#include "formats/q8/layout.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "formats/hooks.hpp"
#include "kernels/formats/format.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels {

namespace {

size_t panel_size(int k) { return size_t(q8_groups(k)) * sizeof(Q8Block); }

size_t matrix_size(int n, int k) {
    if (k < 1)
        throw Error(ErrorKind::input, "q8 matrix needs k >= 1, got n=" + std::to_string(n) +
                                          " k=" + std::to_string(k));
    return detail::panels(n) * panel_size(k);
}

size_t scratch_size(int m, int k) { return q8_act_scratch_bytes(m, k); }

void read_row(const PackedMatrix& w, int row, float scale, float* out) {
    detail::check_row(w, row);
    const int p = row / kPanelRows, r = row % kPanelRows;
    const auto* blocks = reinterpret_cast<const Q8Block*>(w.data + size_t(p) * panel_size(w.k));
    for (int i = 0; i < w.k; ++i) {
        const Q8Block& b = blocks[i / kQ8Group];
        const int j = i % kQ8Group;
        uint16_t s16;
        std::memcpy(&s16, &b.scale[r], 2);  // blocks are 2-byte aligned only in odd panels
        const int q = int(b.q[j / 4][r][j % 4]) - 128;
        out[i] = float(q) * f16_to_f32(s16) * scale;
    }
}

// GGUF Q8_0 is q8's own; Q5_0 and Q4_0 quants fit its int8 as they are.
constexpr GgmlType kNative[] = {GgmlType::q8_0};
constexpr GgmlType kTakes[] = {GgmlType::q8_0, GgmlType::q5_0, GgmlType::q4_0};

}  // namespace

const FormatInfo formats::q8 = {
    .traits = {WeightType::q8, "q8", WeightMath::int8, false,
               double(sizeof(Q8Block)) / (kPanelRows * kQ8Group)},
    .k_align = kQ8Group,
    .panel_bytes = panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = read_row,
    .ref_row = detail::ref_row_symmetric<ref::quantize_weight_row_q8>,
    .vocab_q8 = false,
    .gguf = detail::GivenQuantsIngest<pack_q8_quants>::hook(kNative, kTakes),
};

size_t q8_act_row_bytes(int k, int act_bits) { return q8_act_layout(k, act_planes(act_bits)).stride; }

void pack_q8_quants(const int8_t* q, const uint16_t* scales, int n, int k, int n0, int n1, std::byte* dst) {
    detail::check_quant_rows("pack_q8_quants", WeightType::q8, n, k, n0, n1);
    const int groups = k / kQ8Group;
    for (int p0 = n0; p0 < n1; p0 += kPanelRows) {
        auto* blocks = reinterpret_cast<Q8Block*>(dst + size_t(p0 / kPanelRows) * panel_size(k));
        const int rows = std::min(kPanelRows, n1 - p0);
        for (int g = 0; g < groups; ++g) {
            Q8Block& b = blocks[g];
            std::memset(b.q, 128, sizeof b.q);  // rows past n: weight 0, scale 0
            std::memset(b.scale, 0, sizeof b.scale);
            for (int r = 0; r < rows; ++r) {
                const int8_t* src = q + size_t(p0 - n0 + r) * size_t(k) + size_t(g) * kQ8Group;
                for (int j = 0; j < kQ8Group; ++j) {
                    // Stored as w + 128 (the sign bit flipped); -128 becomes -127, the format's range.
                    const uint8_t u = uint8_t(uint8_t(src[j]) ^ 0x80u);
                    b.q[j / 4][r][j % 4] = uint8_t(u | uint8_t(u == 0));
                }
                std::memcpy(&b.scale[r], scales + size_t(p0 - n0 + r) * size_t(groups) + size_t(g), 2);
            }
        }
    }
}

}  // namespace staticlm::kernels
