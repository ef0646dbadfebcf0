// One weight format as data: its name and public traits, the geometry of its
// packed layout, and the target-independent operations on it (sizes, reading a
// row back). The per-target parts (packing a panel, the matmul) are in the
// KernelTable, filled from each format's SIMD body.
#pragma once

#include <array>
#include <cstddef>

#include "kernels/formats/list.hpp"
#include "kernels/kernels.hpp"

namespace staticlm::kernels {

struct FormatInfo {
    WeightTypeInfo traits;  // type, name, math, exact, bytes per weight
    // Weights [n][k] are stored as ceil(n / kPanelRows) panels of panel_bytes(k)
    // bytes each, panel p holding rows kPanelRows·p .. kPanelRows·p + kPanelRows-1
    // (missing rows are zero). k is padded with zeros to a multiple of k_align.
    int k_align;
    size_t (*panel_bytes)(int k);
    // Bytes of a whole [n][k] matrix (n_panels · panel_bytes, possibly rounded up).
    size_t (*packed_bytes)(int n, int k);
    // Scratch a matmul of m activation rows needs (its activation format), 64-byte rows.
    size_t (*scratch_bytes)(int m, int k);
    // Row `row` as floats times `scale` (embedding lookups, tests).
    void (*unpack_row)(const PackedMatrix& w, int row, float scale, float* out);
};

// Each format's entry, defined in kernels/formats/<name>.cpp.
namespace formats {
#define STATICLM_DECLARE_FORMAT(name) extern const FormatInfo name;
STATICLM_WEIGHT_FORMATS(STATICLM_DECLARE_FORMAT)
#undef STATICLM_DECLARE_FORMAT
}  // namespace formats

// The entry of a type; throws Error(unsupported) for a value with none.
const FormatInfo& format_info(WeightType type);

// Checks shared by the formats' entries (kernels/formats/table.cpp).
namespace detail {
size_t panels(int n);  // ceil(n / kPanelRows); throws Error(input) for n < 0
void check_row(const PackedMatrix& w, int row);  // throws Error(input) when out of range
// pack_q8_quants/pack_q4_quants: the shape, k whole groups of kQ8Group, rows
// [n0, n1) whole panels (or ending at n); else Error(input) naming `what`.
void check_quant_rows(const char* what, WeightType type, int n, int k, int n0, int n1);
// Error(input) naming the format unless k >= 1 (the low-bit formats).
void check_k(const char* format, int n, int k);

// Packing of given low-bit quants (GGUF Q4_0, Q5_0) into a format of one
// block per group of kQ8Group k × kPanelRows rows: q [n1 - n0][k] in
// [lo, hi] (anything else is Error(input) naming `what`, the value and row),
// scales [n1 - n0][k / 32] as IEEE halves; padding rows get clear()'s q = 0,
// scale 0.
struct GivenQuants {
    const char* what;
    WeightType type;
    int lo, hi;
    size_t block_bytes;
    void (*clear)(std::byte* block);
    void (*store)(std::byte* block, int r, const int8_t* q, float scale);
};
void pack_given_quants(const GivenQuants& f, const int8_t* q, const uint16_t* scales, int n, int k, int n0,
                       int n1, std::byte* dst);
}  // namespace detail

}  // namespace staticlm::kernels
