// The f16 format's entry: IEEE halves (round to nearest even at load) in
// [k][16] panels (kernels/formats/float.hpp); no scratch.
#include "kernels/formats/float.hpp"
#include "kernels/formats/format.hpp"

namespace staticlm::kernels {

namespace {

size_t panel_size(int k) { return size_t(k) * sizeof(PanelStep<uint16_t>); }

size_t matrix_size(int n, int k) { return align64(detail::panels(n) * panel_size(k)); }

size_t scratch_size(int, int) { return 0; }

void read_row(const PackedMatrix& w, int row, float scale, float* out) {
    detail::check_row(w, row);
    const auto* steps = reinterpret_cast<const PanelStep<uint16_t>*>(
        w.data + size_t(row / kPanelRows) * panel_size(w.k));
    const int r = row % kPanelRows;
    for (int i = 0; i < w.k; ++i) out[i] = f16_to_f32(steps[i].v[r]) * scale;
}

void ref_row(const float* x, int k, float* out) {
    for (int i = 0; i < k; ++i) out[i] = f16_to_f32(f32_to_f16(x[i]));
}

constexpr GgmlType kGguf[] = {GgmlType::f16};

}  // namespace

const FormatInfo formats::f16 = {
    .traits = {WeightType::f16, "f16", WeightMath::fp32, false, 2.0},
    .k_align = 1,
    .panel_bytes = panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = read_row,
    .ref_row = ref_row,
    .vocab_q8 = false,
    .gguf = {.native = kGguf, .takes = {}},
};

}  // namespace staticlm::kernels
