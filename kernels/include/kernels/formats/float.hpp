// Layouts of the float formats (kernels/formats/f32/format.cpp, f16.cpp, bf16.cpp and
// kernels/simd/matmul_float.cpp): panels of kPanelRows rows, k-major, so that
// one vector load gives the same k of 16 consecutive output rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels {

// f32 and f16 (IEEE half) panels: [k][16] elements, one PanelStep per k.
template <class T>
struct PanelStep {
    T v[kPanelRows];
};
static_assert(sizeof(PanelStep<float>) == 64 && sizeof(PanelStep<uint16_t>) == 32);

// bf16 panels: [ceil(k/2)][16][2], one Bf16PairStep per pair of k (k padded
// to even with zeros). The even k is the low half of each 32-bit lane, the
// operand order of vdpbf16ps.
struct Bf16PairStep {
    uint16_t v[kPanelRows][2];
};
static_assert(sizeof(Bf16PairStep) == 64);

constexpr int bf16_pairs(int k) { return (k + 1) / 2; }

// The vdpbf16ps matmul rounds x to bf16 pairs in scratch first: rows of
// 2·bf16_pairs(k) uint16, rounded up to 64 bytes.
constexpr size_t bf16_act_row_bytes(int k) {
    return align64(size_t(bf16_pairs(k)) * 2 * sizeof(uint16_t));
}

}  // namespace staticlm::kernels
