// The q5a format's entry: GGUF Q5_1 blocks in 16-row panels (layout in
// kernels/formats/q4a/layout.hpp; reading, quantizing and repacking shared with the
// other affine formats in kernels/formats/affine_k.hpp).
#include "formats/q5a/layout.hpp"

#include "formats/affine_k.hpp"
#include "formats/hooks.hpp"

namespace staticlm::kernels {

namespace {

using Fmt = detail::AffineG<Q5aBlock, 31>;

size_t matrix_size(int n, int k) {
    detail::check_k("q5a", n, k);
    return detail::panels(n) * Fmt::panel_size(k);
}

size_t scratch_size(int m, int k) { return q8_act_scratch_bytes(m, k); }

}  // namespace

void quantize_q5a_group(const float* x, uint8_t* n, uint16_t* d, uint16_t* m) { Fmt::quantize_group(x, n, d, m); }

const FormatInfo formats::q5a = {
    .traits = {WeightType::q5a, "q5a", WeightMath::int8, false,
               double(sizeof(Q5aBlock)) / (kPanelRows * kQ8Group)},
    .k_align = kQ8Group,
    .panel_bytes = Fmt::panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = Fmt::read_row,
    .ref_row = detail::ref_row_affine<ref::quantize_weight_row_q5a, kQ8Group>,
    .vocab_q8 = true,
    .gguf = detail::AffineGIngest<GgmlType::q5_1, pack_q5a_quants>::hook(),
};

namespace detail {

void store_q5a_group(std::byte* block, int r, const uint8_t* n, uint16_t d, uint16_t m) {
    Fmt::store_group(block, r, n, d, m);
}

}  // namespace detail

void pack_q5a_quants(const uint8_t* q, const uint16_t* d, const uint16_t* m, int n, int k, int n0, int n1,
                     std::byte* dst) {
    Fmt::pack_given("pack_q5a_quants", WeightType::q5a, q, d, m, n, k, n0, n1, dst);
}

namespace ref {

void quantize_weight_row_q5a(const float* x, int k, uint8_t* wn, float* ws, float* wm) {
    quantize_affine_g_row(quantize_q5a_group, x, k, wn, ws, wm);
}

}  // namespace ref

}  // namespace staticlm::kernels
