// The f32 format's entry: weights as they are, in [k][16] panels
// (kernels/formats/float.hpp); the matmul reads x directly (no scratch).
#include "kernels/formats/float.hpp"
#include "kernels/formats/format.hpp"

namespace staticlm::kernels {

namespace {

size_t panel_size(int k) { return size_t(k) * sizeof(PanelStep<float>); }

size_t matrix_size(int n, int k) { return align64(detail::panels(n) * panel_size(k)); }

size_t scratch_size(int, int) { return 0; }

void read_row(const PackedMatrix& w, int row, float scale, float* out) {
    detail::check_row(w, row);
    const auto* steps = reinterpret_cast<const PanelStep<float>*>(
        w.data + size_t(row / kPanelRows) * panel_size(w.k));
    const int r = row % kPanelRows;
    for (int i = 0; i < w.k; ++i) out[i] = steps[i].v[r] * scale;
}

void ref_row(const float* x, int k, float* out) {
    for (int i = 0; i < k; ++i) out[i] = x[i];
}

constexpr GgmlType kGguf[] = {GgmlType::f32};

}  // namespace

const FormatInfo formats::f32 = {
    .traits = {WeightType::f32, "f32", WeightMath::fp32, true, 4.0},
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
