// One weight format as data: its name and public traits, the geometry of its
// packed layout, and the target-independent operations on it (sizes, reading a
// row back). The per-target parts (packing a panel, the matmul) are in the
// KernelTable, filled from each format's SIMD body.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"

namespace staticlm::kernels {

// How a format takes GGUF tensors (model/gguf_loader.cpp). A matrix whose
// GGML type is in `takes` is read block by block into the loader's per-thread
// scratch and packed from there without rounding; any other type is
// dequantized to f32 rows and packed with pack_weight_rows.
struct GgufIngest {
    // The GGML types for which --weights native picks this format.
    std::span<const GgmlType> native;
    // The GGML types this format holds exactly (read and pack below).
    std::span<const GgmlType> takes;
    // Scratch bytes for `cap` rows of k elements (k whole blocks of the type).
    size_t (*scratch_bytes)(int cap, int k) = nullptr;
    // Reads `count` rows of blocks of type t at src (k elements a row) into
    // rows [row, row + count) of a scratch of `cap` rows. Returns the element
    // index (from src) of the first block with a non-finite half scale, or -1.
    int64_t (*read)(GgmlType t, const std::byte* src, int k, int row, int count, int cap,
                    std::byte* scratch) = nullptr;
    // Packs scratch rows [0, n1 - n0) as rows [n0, n1) of an [n][k] matrix at
    // dst (n0 a multiple of kPanelRows; n1 too or n).
    void (*pack)(std::byte* scratch, int cap, int n, int k, int n0, int n1, std::byte* dst) = nullptr;
};

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
    // The scalar reference (tests): the k values packing the row x[k] stores,
    // as unpack_row gives them back, computed without the SIMD bodies.
    void (*ref_row)(const float* x, int k, float* out);
    // True for the low-bit formats: the vocabulary matrices (token embedding,
    // output head) are stored as q8 instead (vocab_weight_type).
    bool vocab_q8 = false;
    GgufIngest gguf{};
};

// Each format's entry, defined in kernels/formats/<name>.cpp.
namespace formats {
#define STATICLM_DECLARE_FORMAT(number, name, ...) extern const FormatInfo name;
STATICLM_WEIGHT_FORMAT_LIST(STATICLM_DECLARE_FORMAT)
#undef STATICLM_DECLARE_FORMAT
}  // namespace formats

// The entry of a type; throws Error(unsupported) for a value with none.
const FormatInfo& format_info(WeightType type);

// The format the embedding and output head get when the others are `type`.
WeightType vocab_weight_type(WeightType type);
// --weights native: the format a GGML type loads into (the one naming it in
// GgufIngest::native; q8 for a type no format names).
WeightType gguf_native_type(GgmlType t);
// The ingestion hook when `type` holds GGML type t exactly, else nullptr.
const GgufIngest* gguf_ingest(WeightType type, GgmlType t);

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
