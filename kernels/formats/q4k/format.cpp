// The q4k format's entry: GGUF Q4_K super-blocks in 16-row panels (layout in
// kernels/formats/q4k/layout.hpp; reading, quantizing and repacking shared with q5k
// in kernels/formats/affine_k.hpp).
#include "formats/q4k/layout.hpp"

#include "formats/affine_k.hpp"
#include "formats/hooks.hpp"

namespace staticlm::kernels {

namespace {

using Q4k = detail::AffineK<Q4kGroup, Q4kSuper, 15>;

size_t matrix_size(int n, int k) {
    detail::check_k("q4k", n, k);
    return detail::panels(n) * Q4k::panel_size(k);
}

size_t scratch_size(int m, int k) { return q8_act_scratch_bytes(m, k); }

}  // namespace

void quantize_q4k_super(const float* x, uint8_t* n, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin) {
    Q4k::quantize_super(x, n, sc, m, d, dmin);
}

const FormatInfo formats::q4k = {
    .traits = {WeightType::q4k, "q4k", WeightMath::int8, false,
               double(sizeof(Q4kSuper)) / (kPanelRows * kQ4kSuper)},
    .k_align = kQ4kSuper,
    .panel_bytes = Q4k::panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = Q4k::read_row,
    .ref_row = detail::ref_row_affine<ref::quantize_weight_row_q4k, kQ4kSuper>,
    .vocab_q8 = true,
    .gguf = detail::AffineKIngest<GgmlType::q4_k, ggml_q4k_fields, pack_q4k_quants>::hook(),
};

namespace detail {

void store_q4k_super(std::byte* super, int r, const uint8_t* n, const uint8_t* sc, const uint8_t* m, uint16_t d,
                     uint16_t dmin) {
    Q4k::store_super(super, r, n, sc, m, d, dmin);
}

}  // namespace detail

void pack_q4k_quants(const uint8_t* q, const uint8_t* sc, const uint8_t* m, const uint16_t* d, const uint16_t* dmin,
                     int n, int k, int n0, int n1, std::byte* dst) {
    Q4k::pack_given("pack_q4k_quants", WeightType::q4k, q, sc, m, d, dmin, n, k, n0, n1, dst);
}

void ggml_q4k_fields(const void* src, int64_t n, uint8_t* q, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin) {
    const auto* x = static_cast<const BlockQ4_K*>(src);
    for (int64_t i = 0; i < n / kQK_K; ++i, q += kQK_K, sc += 8, m += 8) {
        d[i] = x[i].d;
        dmin[i] = x[i].dmin;
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) {
                q[64 * c + l] = uint8_t(x[i].qs[32 * c + l] & 0xF);
                q[64 * c + 32 + l] = uint8_t(x[i].qs[32 * c + l] >> 4);
            }
        for (int j = 0; j < 8; ++j) k4_scale_min(j, x[i].scales, sc[j], m[j]);
    }
}

namespace ref {

void quantize_weight_row_q4k(const float* x, int k, uint8_t* wn, float* ws, float* wm) {
    quantize_affine_k_row(quantize_q4k_super, WeightType::q4k, x, k, wn, ws, wm);
}

}  // namespace ref

}  // namespace staticlm::kernels
