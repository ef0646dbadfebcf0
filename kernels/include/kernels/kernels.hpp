// The kernel API: number formats, packed weight layouts, and the per-target
// function table chosen once at start-up. Everything above kernels/ calls these
// wrappers; hot loops never dispatch (one indirect call per matmul/attention).
// Scalar references with the same signatures live in kernels/ref.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "staticlm/weight_formats.h"
#include "staticlm/types.hpp"

namespace staticlm {
enum class SrcType : uint8_t { f32, f16, bf16 };  // element type of a source tensor
}  // namespace staticlm

namespace staticlm::kernels {

// ---------------------------------------------------------------------------
// Targets and dispatch
// ---------------------------------------------------------------------------

// Ordered from least to most capable.
// avx512_amx is the avx512 table with the bf16 matmul on AMX-BF16 tiles
// (kernels/simd/matmul_float.cpp) and the matmuls of the integer formats
// with one scale per group of 32 (q8, q4, q5, q4a, q5a, q4k, q5k, iq4nl,
// iq4xs) on AMX-INT8 tiles for blocks of 16 rows (kernels/simd/matmul_int.hpp).
enum class Target : uint8_t { generic, avx2, avx2_vnni, avx512, avx512_amx };

struct CpuFeatures {
    bool avx2_fma_f16c = false;
    bool avx_vnni = false;
    bool avx512 = false;  // F, BW, VL, DQ, VNNI (+ FMA, F16C)
    bool avx512_bf16 = false;
    bool avx512_vbmi = false;  // vpermb (with avx512): table lookups of iq4nl, iq4xs
    // AMX-TILE and AMX-INT8 (+ avx512), enabled by the OS in XCR0, and the
    // process granted the tile state (Linux arch_prctl(ARCH_REQ_XCOMP_PERM)).
    bool amx_int8 = false;
    bool amx_bf16 = false;  // AMX-BF16 too (with amx_int8)
};

CpuFeatures cpu_features();
const char* target_name(Target target);
bool target_supported(Target target);     // compiled in and runnable on this CPU
std::span<const Target> compiled_targets();
// The one the default table uses: the most capable supported target, or the
// one named by the environment variable STATICLM_KERNELS (a target_name, to
// compare targets on one machine; Error(usage) when it is unknown or not
// supported here).
Target best_target();

// ---------------------------------------------------------------------------
// Formats
// ---------------------------------------------------------------------------

// The weight formats are data: one FormatInfo each (kernels/formats/format.hpp,
// listed in staticlm/weight_formats.h), with its layout documented and
// static_asserted in kernels/formats/<name>/layout.hpp. Everything below indexes that
// table; nothing switches on the weight type.

// q8 groups: one scale per kQ8Group consecutive elements along k of a row
// (layouts in kernels/formats/q8/layout.hpp).
constexpr int kQ8Group = 32;

// Every format packs weights [n][k] at load into panels of kPanelRows output
// rows (one vector load then serves 16 rows); n is padded with zero rows to a
// multiple of kPanelRows. The layouts are the same for every target, so a
// model packed once runs on any target (and tests compare targets on
// identical data).
constexpr int kPanelRows = 16;

// A packed weight matrix y = x · Wᵀ with W [n][k]. Memory is owned by the
// caller (an arena), 64-byte aligned, packed_bytes() long.
struct PackedMatrix {
    WeightType type = WeightType::f32;
    int n = 0;  // output rows
    int k = 0;  // input columns (logical, unpadded)
    std::byte* data = nullptr;
    size_t bytes = 0;
    // The integer formats' activation precision: 8 (one int8 per input, a
    // scale per 32) or 16 (two int8 planes, x ≈ s/256 · (256·q1 + q2): one
    // more dot step per weight, 2^8 times finer; kernels/formats/q8/layout.hpp).
    // The float formats ignore it. Set by the loader (LoadOptions).
    int act_bits = 8;
};

size_t packed_bytes(WeightType type, int n, int k);
int padded_k(WeightType type, int k);

// Packs rows [n0, n1) of a row-major source [n][k] (element type src_type)
// into dst, which has packed_bytes(type, n, k) bytes. Disjoint row ranges that
// are multiples of kPanelRows may be packed concurrently. Padding rows/columns
// are written as zeros by the call that owns their panel.
void pack_weights(WeightType type, SrcType src_type, const void* src, int n, int k,
                  int n0, int n1, std::byte* dst);
// The same for a source that holds only rows [n0, n1) (row n0 first, k
// elements apart): for loaders that produce a matrix a chunk of rows at a
// time (GGUF tensors dequantized into scratch).
void pack_weight_rows(WeightType type, SrcType src_type, const void* rows, int n, int k, int n0, int n1,
                      std::byte* dst);

// Reads row `row` of a packed matrix back as floats (dequantized) — used for
// embedding lookups and tests. out has k floats; `scale` multiplies every value.
void unpack_row(const PackedMatrix& w, int row, float scale, float* out);

// Row stride of q8 activations (kernels/formats/q8/layout.hpp), a multiple of 64.
size_t q8_act_row_bytes(int k, int act_bits = 8);

// Bytes of scratch a matmul of m rows needs (the format's activation rows:
// none for f32/f16, int8 rows for q8 — sized for 16-bit activations, either
// act_bits fits —, bf16 rows for bf16's vdpbf16ps body).
size_t matmul_scratch_bytes(WeightType type, int m, int k);

// ---------------------------------------------------------------------------
// Function table
// ---------------------------------------------------------------------------

// y[m][n] = x[m][k] · Wᵀ. x rows are ldx floats apart, y rows ldy floats apart.
// scratch: matmul_scratch_bytes(w.type, m, w.k) bytes, 64-byte aligned.
using MatmulFn = void (*)(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y,
                          size_t ldy, std::byte* scratch, int n_threads);

// One product of a fused matmul: y[m][w.n] = x · wᵀ, y rows ldy floats apart.
struct MatmulOut {
    const PackedMatrix* w = nullptr;
    float* y = nullptr;
    size_t ldy = 0;
};
// Most products one fused call takes (q, k, v).
constexpr int kMaxMatmulOuts = 4;

// Several products of one format and one k that read the same x (q/k/v,
// gate/up), in one parallel region: x is converted to the format's activation
// rows once (scratch as for one matmul of m rows), then the panels of all the
// matrices are handed out to the threads dynamically. Each output is computed
// exactly as a separate call would compute it (bit for bit).
using MatmulManyFn = void (*)(const MatmulOut* outs, int n_outs, const float* x, size_t ldx,
                              int m, std::byte* scratch, int n_threads);

// Load-time packing of one panel of one format: rows [0, rows) (rows <=
// kPanelRows) of a source with row stride ld elements of src_type, k columns,
// into the panel at dst (the format's panel_bytes(k), unaligned is fine). Rows
// past `rows` are written as zero padding.
using FormatPackFn = void (*)(SrcType src_type, const void* src, size_t ld, int rows, int k,
                              std::byte* dst);

// The per-target entry points of one weight format.
struct FormatKernels {
    MatmulFn matmul = nullptr;
    MatmulManyFn matmul_many = nullptr;
    FormatPackFn pack_panel = nullptr;
};

#define STATICLM_COUNT_FORMAT(...) +1
constexpr size_t kNumWeightTypes = 0 STATICLM_WEIGHT_FORMAT_LIST(STATICLM_COUNT_FORMAT);
#undef STATICLM_COUNT_FORMAT

// Register-only loops that measure a machine's peaks (staticlm/probe.hpp),
// compiled per target; null where a target has none (generic).
struct PeakLoops {
    // Sums `bytes` (a multiple of 512, 64-byte aligned) as 64-bit lanes.
    uint64_t (*read)(const std::byte* p, size_t bytes) = nullptr;
    int64_t (*int8)(int64_t iters) = nullptr;  // int8_ops per iteration
    float (*fp32)(int64_t iters) = nullptr;    // fp32_ops per iteration
    float (*bf16)(int64_t iters) = nullptr;    // bf16_ops per iteration (AVX512-BF16 only)
    // AMX-INT8 tile dot products (avx512-amx only), amx_int8_ops per iteration.
    int64_t (*amx_int8)(int64_t iters) = nullptr;
    // The same tiles with K = 32 bytes per product, amx_int8_k32_ops per iteration.
    int64_t (*amx_int8_k32)(int64_t iters) = nullptr;
    int64_t (*amx_bf16)(int64_t iters) = nullptr;  // AMX-BF16, amx_bf16_ops per iteration
    double int8_ops = 0, fp32_ops = 0, bf16_ops = 0, amx_int8_ops = 0, amx_int8_k32_ops = 0,
           amx_bf16_ops = 0;
    const char* isa = "none";
};

// Quantizes rows of x [m][k] into the q8 activation layout at act_bits 8 or
// 16 (dst: m rows of q8_act_row_bytes(k, act_bits)).
using QuantizeActFn = void (*)(const float* x, size_t ldx, int m, int k, int act_bits, std::byte* dst);

// y[r] = x[r] / sqrt(mean(x[r]²) + eps) * w  (w may be null: no weight).
// Rows of n floats; x and y may alias.
using RmsNormFn = void (*)(const float* x, size_t ldx, int m, int n, const float* w, float eps,
                           float* y, size_t ldy);

// RoPE, rotate-half layout, in place on x [t][n_heads][head_dim] with row
// stride ldx floats between tokens; token i is at position pos0 + i.
// inv_freq has head_dim/2 entries (zeros pass dims through unchanged).
// angle = float(pos) * inv_freq[j] in fp32, as transformers computes it.
using RopeFn = void (*)(float* x, size_t ldx, int t, int n_heads, int head_dim, int pos0,
                        const float* inv_freq);

// One cached row (a kv head's head_dim values of one position) of a KV type:
// head_dim f16 or f32 values, or for q8 head_dim int8 values followed by one
// fp32 scale per block of kKvQ8Block values (the last block may be shorter):
//   [head_dim] int8, [kv_q8_blocks(head_dim)] float (unaligned)
// A q8 value stands for q · scale of its block. The scales are fp32 rather
// than f16 (ggml's q8_0): the kernels read them without a conversion (the
// generic target has no F16C) and they keep amax/127 exact, for 2 more bytes
// per 32 values (a q8 row of head_dim 64 is 72 bytes, 56% of f16's 128).
constexpr int kKvQ8Block = 32;
constexpr int kv_q8_blocks(int head_dim) { return (head_dim + kKvQ8Block - 1) / kKvQ8Block; }
constexpr size_t kv_row_bytes(KvType type, int head_dim) {
    return type == KvType::q8    ? size_t(head_dim) + size_t(kv_q8_blocks(head_dim)) * sizeof(float)
           : type == KvType::f16 ? size_t(head_dim) * 2
                                 : size_t(head_dim) * 4;
}
// Quantizes n fp32 values into a q8 row (kv_row_bytes(KvType::q8, n) bytes):
// per block, scale = max|x| / 127 (in fp32; 0 for an all-zero block) and
// q = round(x / scale) to nearest, ties away from zero, clamped to ±127; a NaN
// or infinite value makes its block's scale NaN (attention then gives NaN, as
// an f16 cache holding inf would). Not dispatched: the same bits on
// every target, so a saved state and a copied prefix are target-independent.
void quantize_kv_row_q8(const float* x, int n, std::byte* row);
// The q8 row back as fp32 (q · scale, exact: 7-bit q times an fp32 scale).
void dequantize_kv_row_q8(const std::byte* row, int n, float* y);

// Attention of a block of t query rows at positions pos0 .. pos0+t-1 against
// a static cache. Layouts:
//   q   [t][n_heads][head_dim], row stride ldq floats
//   k,v [n_kv_heads][n_slots] rows of kv_row_bytes(kv_type, head_dim) bytes;
//       position p lives in slot p % n_slots (full storage: n_slots = max_seq,
//       so slot = p)
//   out [t][n_heads][head_dim], row stride ldo floats
// Query head h reads kv head h / (n_heads / n_kv_heads). Row i sees positions
// max(0, p - window + 1) .. p with p = pos0 + i (window <= 0: 0 .. p).
// Softmax is computed online (running max and sum) in fp32; scratch holds
// attention_scratch_bytes(...) bytes.
struct AttentionArgs {
    const float* q = nullptr;
    size_t ldq = 0;
    const void* k = nullptr;
    const void* v = nullptr;
    KvType kv_type = KvType::f16;
    int n_slots = 0;
    float* out = nullptr;
    size_t ldo = 0;
    int t = 0;
    int pos0 = 0;
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    int window = 0;
    float scale = 1.0f;
};
size_t attention_scratch_bytes(int t, int n_heads, int head_dim, int n_threads);
// True when attention() on n_threads computes each of a block's t rows with
// the operations it uses for that row in any other block (the key range of a
// work item is not split over threads): a row's output then does not depend
// on which step of a plan computed it. False only for few lanes on many
// threads (t · n_heads small against n_threads), whose split keys are merged.
bool attention_rows_exact(int t, int n_heads, int n_kv_heads, int n_threads);
using AttentionFn = void (*)(const AttentionArgs& args, std::byte* scratch, int n_threads);

// out[i] = act(gate[i]) * up[i]; out may alias gate or up.
using GatedActFn = void (*)(const float* gate, const float* up, size_t n, float* out);
// x[i] = cap * tanh(x[i] / cap)
using SoftcapFn = void (*)(float* x, size_t n, float cap);
// y[i] += x[i]
using AddFn = void (*)(float* y, const float* x, size_t n);
// y[i] *= s
using ScaleFn = void (*)(float* y, size_t n, float s);
// index of the largest value (the first one on ties); n >= 1
using ArgmaxFn = int (*)(const float* x, int n);
// Row conversions for the KV cache (round to nearest even).
using ToF16Fn = void (*)(const float* x, size_t n, uint16_t* y);
using FromF16Fn = void (*)(const uint16_t* x, size_t n, float* y);
// FormatPackFn with the format as an argument (indexes the table's formats).
// q8 is bit-identical to ref::quantize_weight_row_q8; f16/bf16 round as
// f32_to_f16/f32_to_bf16.
using PackPanelFn = void (*)(WeightType type, SrcType src_type, const void* src, size_t ld, int rows,
                             int k, std::byte* dst);

// out[j] = amp · (2u_j - 1) with u_j in [0, 1) a hash of (key, j): the
// deterministic weights of synthetic models, the same bits on every target.
using UniformRowFn = void (*)(uint64_t key, int n, float amp, float* out);

struct KernelTable {
    Target target = Target::generic;
    // Indexed by WeightType: every format's pack and matmul bodies.
    std::array<FormatKernels, kNumWeightTypes> formats{};
    const FormatKernels& format(WeightType type) const { return formats[size_t(type)]; }
    // The built-in formats' matmuls under their own names (the same pointers
    // as formats[]; kept for the kernel tests, which address them by name).
    MatmulFn matmul_q8 = nullptr;
    MatmulFn matmul_f16 = nullptr;
    MatmulFn matmul_bf16 = nullptr;
    MatmulFn matmul_f32 = nullptr;
    QuantizeActFn quantize_act = nullptr;  // x -> q8 activation rows
    RmsNormFn rmsnorm = nullptr;
    RopeFn rope = nullptr;
    AttentionFn attention = nullptr;
    GatedActFn silu_mul = nullptr;
    GatedActFn gelu_tanh_mul = nullptr;
    SoftcapFn softcap = nullptr;
    AddFn add = nullptr;
    ScaleFn scale = nullptr;
    ArgmaxFn argmax = nullptr;
    ToF16Fn to_f16 = nullptr;
    FromF16Fn from_f16 = nullptr;
    PackPanelFn pack_panel = nullptr;
    UniformRowFn uniform_row = nullptr;
    PeakLoops peaks;
};

// The table of a target (must be supported), and the default one (best_target).
const KernelTable& table_for(Target target);
const KernelTable& table();

// Convenience: picks the matmul of w.type from a table.
void matmul(const KernelTable& kt, const PackedMatrix& w, const float* x, size_t ldx, int m,
            float* y, size_t ldy, std::byte* scratch, int n_threads);

// The fused matmul (MatmulManyFn) of outs[0].w->type. 1 <= n_outs <=
// kMaxMatmulOuts; every matrix must have that type and the same k (else
// Error(input)); scratch as matmul_scratch_bytes(type, m, k).
void matmul_many(const KernelTable& kt, const MatmulOut* outs, int n_outs, const float* x,
                 size_t ldx, int m, std::byte* scratch, int n_threads);

// top-k of a logits row, sorted by value descending (ties: lower index
// first). k <= n. Not dispatched: O(n log k) with a small heap on the stack
// of the caller's buffers.
void top_k(const float* x, int n, int k, int* idx, float* val);

// Half/bfloat16 scalar conversions (round to nearest even).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);

}  // namespace staticlm::kernels
