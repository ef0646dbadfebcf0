// q8 weight packing: quantizes f32/f16/bf16 rows per group of 32 into the
// 16-row panel layout documented in kernels.hpp (one table().pack_panel call
// per panel, bit-identical to ref::quantize_weight_row_q8), and reads rows back.
#include <algorithm>
#include <cstring>
#include <string>

#include "staticlm/error.hpp"
#include "kernels/formats_internal.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels::detail {

namespace {

constexpr size_t kQ8BlockBytes = 544;  // 512 bytes of w + 128, then 16 f16 scales
constexpr size_t kQ8ScaleOffset = 512;

int q8_groups(int k) { return padded_k(WeightType::q8, k) / kQ8Group; }

void check_shape(int n, int k, const char* what) {
    if (n < 0 || k < 1)
        throw Error(ErrorKind::input, std::string(what) + ": bad q8 matrix shape n=" +
                                          std::to_string(n) + " k=" + std::to_string(k));
}

}  // namespace

size_t q8_packed_bytes(int n, int k) {
    check_shape(n, k, "q8_packed_bytes");
    const size_t n_panels = size_t(n + kPanelRows - 1) / kPanelRows;
    return n_panels * size_t(q8_groups(k)) * kQ8BlockBytes;
}

void q8_pack(SrcType src_type, const void* src, int src_row0, int n, int k, int n0, int n1, std::byte* dst) {
    check_shape(n, k, "q8_pack");
    if (n0 < 0 || n1 < n0 || n1 > n || n0 % kPanelRows != 0 ||
        (n1 % kPanelRows != 0 && n1 != n))
        throw Error(ErrorKind::input, "q8_pack: row range [" + std::to_string(n0) + ", " +
                                          std::to_string(n1) + ") of " + std::to_string(n) +
                                          " rows is not panel-aligned (16 rows)");
    const int p0 = n0 / kPanelRows;
    const int p1 = (n1 == n) ? (n + kPanelRows - 1) / kPanelRows : n1 / kPanelRows;
    const size_t panel_bytes = size_t(q8_groups(k)) * kQ8BlockBytes;
    const size_t row_bytes = size_t(k) * src_elem_bytes(src_type);
    const PackPanelFn pack = table().pack_panel;
    for (int p = p0; p < p1; ++p) {
        const int row0 = p * kPanelRows;
        pack(WeightType::q8, src_type, static_cast<const std::byte*>(src) + size_t(row0 - src_row0) * row_bytes,
             size_t(k), std::min(kPanelRows, n - row0), k, dst + size_t(p) * panel_bytes);
    }
}

}  // namespace staticlm::kernels::detail

namespace staticlm::kernels {

void pack_q8_quants(const int8_t* q, const uint16_t* scales, int n, int k, int n0, int n1, std::byte* dst) {
    detail::check_shape(n, k, "pack_q8_quants");
    if (k % kQ8Group != 0 || n0 < 0 || n1 < n0 || n1 > n || n0 % kPanelRows != 0 || (n1 % kPanelRows != 0 && n1 != n))
        throw Error(ErrorKind::input, "pack_q8_quants: k = " + std::to_string(k) + " or row range [" +
                                          std::to_string(n0) + ", " + std::to_string(n1) + ") of " +
                                          std::to_string(n) + " rows is not whole groups and panels");
    const int groups = k / kQ8Group;
    const size_t panel_bytes = size_t(groups) * detail::kQ8BlockBytes;
    for (int p0 = n0; p0 < n1; p0 += kPanelRows) {
        std::byte* panel = dst + size_t(p0 / kPanelRows) * panel_bytes;
        const int rows = std::min(kPanelRows, n1 - p0);
        for (int g = 0; g < groups; ++g) {
            auto* block = reinterpret_cast<uint8_t*>(panel + size_t(g) * detail::kQ8BlockBytes);
            std::memset(block, 128, detail::kQ8ScaleOffset);
            std::memset(block + detail::kQ8ScaleOffset, 0, 2 * kPanelRows);
            for (int r = 0; r < rows; ++r) {
                const int8_t* src = q + size_t(p0 - n0 + r) * size_t(k) + size_t(g) * kQ8Group;
                // w + 128 is the sign bit flipped; -128 (0 after the flip) becomes -127.
                uint8_t u[kQ8Group];
                for (int j = 0; j < kQ8Group; ++j) {
                    const uint8_t b = uint8_t(uint8_t(src[j]) ^ 0x80u);
                    u[j] = uint8_t(b | uint8_t(b == 0));
                }
                for (int c = 0; c < kQ8Group / 4; ++c) std::memcpy(block + c * 64 + r * 4, u + 4 * c, 4);
                std::memcpy(block + detail::kQ8ScaleOffset + 2 * r,
                            scales + size_t(p0 - n0 + r) * size_t(groups) + size_t(g), 2);
            }
        }
    }
}

}  // namespace staticlm::kernels

namespace staticlm::kernels::detail {

void q8_unpack_row(const PackedMatrix& w, int row, float scale, float* out) {
    if (row < 0 || row >= w.n)
        throw Error(ErrorKind::input, "q8_unpack_row: row " + std::to_string(row) +
                                          " out of range [0, " + std::to_string(w.n) + ")");
    const int n_groups = q8_groups(w.k);
    const int p = row / kPanelRows, r = row % kPanelRows;
    const std::byte* panel = w.data + size_t(p) * size_t(n_groups) * kQ8BlockBytes;
    for (int i = 0; i < w.k; ++i) {
        const int g = i / kQ8Group, j = i % kQ8Group;
        const auto* block = reinterpret_cast<const uint8_t*>(panel + size_t(g) * kQ8BlockBytes);
        uint16_t s16;
        std::memcpy(&s16, block + kQ8ScaleOffset + 2 * r, 2);
        const int q = int(block[(j / 4) * 64 + r * 4 + (j % 4)]) - 128;
        out[i] = float(q) * f16_to_f32(s16) * scale;
    }
}

size_t q8_scratch_bytes(int m, int k) {
    return m <= 0 ? 0 : size_t(m) * q8_act_row_bytes(k);
}

}  // namespace staticlm::kernels::detail

namespace staticlm::kernels {

// Per row: int8 q[k_pad], float scale[G], int32 corr[G], padded to 64 bytes.
size_t q8_act_row_bytes(int k) {
    const size_t n_groups = size_t(padded_k(WeightType::q8, k)) / kQ8Group;
    return align64(n_groups * (kQ8Group + sizeof(float) + sizeof(int32_t)));
}

}  // namespace staticlm::kernels
