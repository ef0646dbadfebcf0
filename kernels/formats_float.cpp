// Packing of f32 / f16 / bf16 weights into the 16-row panel layouts of
// kernels.hpp (one table().pack_panel call per panel), and reading one row
// back (embedding lookups, tests). Conversions to f16/bf16 round to nearest
// even (as f32_to_f16 / f32_to_bf16).
#include <algorithm>
#include <string>

#include "kernels/formats_internal.hpp"
#include "kernels/memory.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels::detail {

namespace {

size_t panel_bytes(WeightType type, int k) {
    switch (type) {
        case WeightType::f32:
            return size_t(k) * kPanelRows * sizeof(float);
        case WeightType::f16:
            return size_t(k) * kPanelRows * sizeof(uint16_t);
        case WeightType::bf16:
            return size_t(padded_k(type, k)) * kPanelRows * sizeof(uint16_t);
        case WeightType::q8:
            break;
    }
    throw Error(ErrorKind::unsupported, "float_pack: weight type q8 is not a float format");
}

}  // namespace

size_t float_packed_bytes(WeightType type, int n, int k) {
    if (n < 0 || k < 0)
        throw Error(ErrorKind::input, "float_packed_bytes: negative shape n=" + std::to_string(n) +
                                          " k=" + std::to_string(k));
    const size_t n_panels = size_t((n + kPanelRows - 1) / kPanelRows);
    return align64(n_panels * panel_bytes(type, k));
}

void float_pack(WeightType type, SrcType src_type, const void* src, int src_row0, int n, int k, int n0, int n1,
                std::byte* dst) {
    if (n0 < 0 || n1 > n || n0 > n1 || n0 % kPanelRows != 0 || (n1 % kPanelRows != 0 && n1 != n))
        throw Error(ErrorKind::input, "float_pack: row range [" + std::to_string(n0) + ", " +
                                          std::to_string(n1) + ") of n=" + std::to_string(n) +
                                          " is not panel-aligned (16 rows)");
    if (type == WeightType::q8)
        throw Error(ErrorKind::unsupported, "float_pack: weight type q8 is not a float format");
    const int p0 = n0 / kPanelRows;
    const int p1 = (n1 + kPanelRows - 1) / kPanelRows;
    const size_t per_panel = panel_bytes(type, k);
    const size_t row_bytes = size_t(k) * src_elem_bytes(src_type);
    const PackPanelFn pack = table().pack_panel;
    for (int p = p0; p < p1; ++p) {
        const int row0 = p * kPanelRows;
        pack(type, src_type, static_cast<const std::byte*>(src) + size_t(row0 - src_row0) * row_bytes,
             size_t(k), std::min(kPanelRows, n - row0), k, dst + size_t(p) * per_panel);
    }
}

void float_unpack_row(const PackedMatrix& w, int row, float scale, float* out) {
    if (row < 0 || row >= w.n)
        throw Error(ErrorKind::input, "unpack_row: row " + std::to_string(row) +
                                          " out of range [0, " + std::to_string(w.n) + ")");
    const int p = row / kPanelRows;
    const int r = row % kPanelRows;
    const std::byte* panel = w.data + size_t(p) * panel_bytes(w.type, w.k);
    const int k = w.k;
    switch (w.type) {
        case WeightType::f32: {
            const float* v = reinterpret_cast<const float*>(panel);
            for (int kk = 0; kk < k; ++kk) out[kk] = v[size_t(kk) * kPanelRows + r] * scale;
            return;
        }
        case WeightType::f16: {
            const uint16_t* v = reinterpret_cast<const uint16_t*>(panel);
            for (int kk = 0; kk < k; ++kk)
                out[kk] = f16_to_f32(v[size_t(kk) * kPanelRows + r]) * scale;
            return;
        }
        case WeightType::bf16: {
            const uint16_t* v = reinterpret_cast<const uint16_t*>(panel);
            for (int kk = 0; kk < k; ++kk)
                out[kk] =
                    bf16_to_f32(v[size_t(kk / 2) * 2 * kPanelRows + r * 2 + (kk & 1)]) * scale;
            return;
        }
        case WeightType::q8:
            break;
    }
    throw Error(ErrorKind::unsupported, "float_unpack_row: weight type q8 is not a float format");
}

}  // namespace staticlm::kernels::detail

namespace staticlm::kernels::detail {

size_t bf16_act_row_bytes(int k) {
    return align64(size_t(padded_k(WeightType::bf16, k)) * sizeof(uint16_t));
}

}  // namespace staticlm::kernels::detail
