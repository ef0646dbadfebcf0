// The q5k format's entry: GGUF Q5_K super-blocks in 16-row panels (layout in
// kernels/formats/q5k/layout.hpp; reading, quantizing and repacking shared with q4k
// in kernels/formats/affine_k.hpp).
#include "formats/q5k/layout.hpp"

#include "formats/affine_k.hpp"
#include "formats/hooks.hpp"

namespace staticlm::kernels {

namespace {

using Q5k = detail::AffineK<Q5kGroup, Q5kSuper, 31>;

size_t matrix_size(int n, int k) {
    detail::check_k("q5k", n, k);
    return detail::panels(n) * Q5k::panel_size(k);
}

size_t scratch_size(int m, int k) { return q8_act_scratch_bytes(m, k); }

}  // namespace

void quantize_q5k_super(const float* x, uint8_t* n, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin) {
    Q5k::quantize_super(x, n, sc, m, d, dmin);
}

const FormatInfo formats::q5k = {
    .traits = {WeightType::q5k, "q5k", WeightMath::int8, false,
               double(sizeof(Q5kSuper)) / (kPanelRows * kQ4kSuper)},
    .k_align = kQ4kSuper,
    .panel_bytes = Q5k::panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = Q5k::read_row,
    .ref_row = detail::ref_row_affine<ref::quantize_weight_row_q5k, kQ4kSuper>,
    .vocab_q8 = true,
    .gguf = detail::AffineKIngest<GgmlType::q5_k, ggml_q5k_fields, pack_q5k_quants>::hook(),
};

namespace detail {

void store_q5k_super(std::byte* super, int r, const uint8_t* n, const uint8_t* sc, const uint8_t* m, uint16_t d,
                     uint16_t dmin) {
    Q5k::store_super(super, r, n, sc, m, d, dmin);
}

}  // namespace detail

void pack_q5k_quants(const uint8_t* q, const uint8_t* sc, const uint8_t* m, const uint16_t* d, const uint16_t* dmin,
                     int n, int k, int n0, int n1, std::byte* dst) {
    Q5k::pack_given("pack_q5k_quants", WeightType::q5k, q, sc, m, d, dmin, n, k, n0, n1, dst);
}

}  // namespace staticlm::kernels
