// The q4a format's entry: GGUF Q4_1 blocks in 16-row panels (layout in
// kernels/formats/q4a/layout.hpp; reading, quantizing and repacking shared with the
// other affine formats in kernels/formats/affine_k.hpp).
#include "formats/q4a/layout.hpp"

#include "formats/affine_k.hpp"
#include "formats/hooks.hpp"

namespace staticlm::kernels {

namespace {

using Fmt = detail::AffineG<Q4aBlock, 15>;

size_t matrix_size(int n, int k) {
    detail::check_k("q4a", n, k);
    return detail::panels(n) * Fmt::panel_size(k);
}

size_t scratch_size(int m, int k) { return q8_act_scratch_bytes(m, k); }

}  // namespace

void quantize_q4a_group(const float* x, uint8_t* n, uint16_t* d, uint16_t* m) { Fmt::quantize_group(x, n, d, m); }

const FormatInfo formats::q4a = {
    .traits = {WeightType::q4a, "q4a", WeightMath::int8, false,
               double(sizeof(Q4aBlock)) / (kPanelRows * kQ8Group)},
    .k_align = kQ8Group,
    .panel_bytes = Fmt::panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = Fmt::read_row,
    .ref_row = detail::ref_row_affine<ref::quantize_weight_row_q4a, kQ8Group>,
    .vocab_q8 = true,
    .gguf = detail::AffineGIngest<GgmlType::q4_1, pack_q4a_quants>::hook(),
};

namespace detail {

void store_q4a_group(std::byte* block, int r, const uint8_t* n, uint16_t d, uint16_t m) {
    Fmt::store_group(block, r, n, d, m);
}

}  // namespace detail

void pack_q4a_quants(const uint8_t* q, const uint16_t* d, const uint16_t* m, int n, int k, int n0, int n1,
                     std::byte* dst) {
    Fmt::pack_given("pack_q4a_quants", WeightType::q4a, q, d, m, n, k, n0, n1, dst);
}

namespace ref {

void quantize_weight_row_q4a(const float* x, int k, uint8_t* wn, float* ws, float* wm) {
    quantize_affine_g_row(quantize_q4a_group, x, k, wn, ws, wm);
}

}  // namespace ref

}  // namespace staticlm::kernels
