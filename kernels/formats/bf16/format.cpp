// The bf16 format's entry: bfloat16 pairs along k in [k/2][16][2] panels
// (kernels/formats/float.hpp). Scratch holds x rounded to bf16 pairs, which the
// vdpbf16ps body (AVX512-BF16 CPUs) multiplies with.
#include "kernels/formats/float.hpp"
#include "kernels/formats/format.hpp"

namespace staticlm::kernels {

namespace {

size_t panel_size(int k) { return size_t(bf16_pairs(k)) * sizeof(Bf16PairStep); }

size_t matrix_size(int n, int k) { return align64(detail::panels(n) * panel_size(k)); }

// Rows rounded up to 16: the AMX body reads x in blocks of 16 rows (the rows
// past m are read, not used).
size_t scratch_size(int m, int k) {
    return m <= 0 ? 0 : size_t((m + 15) / 16 * 16) * bf16_act_row_bytes(k);
}

void read_row(const PackedMatrix& w, int row, float scale, float* out) {
    detail::check_row(w, row);
    const auto* steps =
        reinterpret_cast<const Bf16PairStep*>(w.data + size_t(row / kPanelRows) * panel_size(w.k));
    const int r = row % kPanelRows;
    for (int i = 0; i < w.k; ++i) out[i] = bf16_to_f32(steps[i / 2].v[r][i & 1]) * scale;
}

void ref_row(const float* x, int k, float* out) {
    for (int i = 0; i < k; ++i) out[i] = bf16_to_f32(f32_to_bf16(x[i]));
}

constexpr GgmlType kGguf[] = {GgmlType::bf16};

}  // namespace

const FormatInfo formats::bf16 = {
    .traits = {WeightType::bf16, "bf16", WeightMath::bf16, false, 2.0},
    .k_align = 2,
    .panel_bytes = panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = read_row,
    .ref_row = ref_row,
    .vocab_q8 = false,
    .gguf = {.native = kGguf, .takes = {}},
};

}  // namespace staticlm::kernels
