// The table of weight formats and the front doors over it: names, sizes,
// packing, row unpacking. Every per-format difference is a field of a
// FormatInfo (kernels/formats/<name>.cpp) or a FormatKernels of the table.
#include <algorithm>
#include <string>

#include "kernels/formats/format.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels {

namespace {

#define STATICLM_FORMAT_ENTRY(number, name, ...) &formats::name,
constexpr const FormatInfo* kFormats[] = {STATICLM_WEIGHT_FORMAT_LIST(STATICLM_FORMAT_ENTRY)};
#undef STATICLM_FORMAT_ENTRY
static_assert(std::size(kFormats) == kNumWeightTypes);

#define STATICLM_FORMAT_TYPE(number, name, ...) WeightType::name,
constexpr WeightType kTypes[] = {STATICLM_WEIGHT_FORMAT_LIST(STATICLM_FORMAT_TYPE)};
#undef STATICLM_FORMAT_TYPE
// The list is in the order of the WeightType numbers, so a type indexes both tables.
constexpr bool in_number_order() {
    for (size_t i = 0; i < std::size(kTypes); ++i)
        if (size_t(kTypes[i]) != i) return false;
    return true;
}
static_assert(in_number_order(),
              "staticlm/weight_formats.h must list the numbers in order, from 0");

const FormatInfo* find(WeightType type) {
    const size_t i = size_t(type);
    return i < std::size(kFormats) ? kFormats[i] : nullptr;
}

void check_shape(const FormatInfo& f, int n, int k) {
    if (n < 0 || k < 0)
        throw Error(ErrorKind::input, std::string(f.traits.name) + " matrix: negative shape n=" +
                                          std::to_string(n) + " k=" + std::to_string(k));
}

}  // namespace

const FormatInfo& format_info(WeightType type) {
    if (const FormatInfo* f = find(type)) return *f;
    throw Error(ErrorKind::unsupported, "unknown weight type number " + std::to_string(int(type)));
}

WeightType vocab_weight_type(WeightType type) {
    return format_info(type).vocab_q8 ? WeightType::q8 : type;
}

WeightType gguf_native_type(GgmlType t) {
    for (const FormatInfo* f : kFormats)
        if (std::ranges::find(f->gguf.native, t) != f->gguf.native.end()) return f->traits.type;
    return WeightType::q8;
}

const GgufIngest* gguf_ingest(WeightType type, GgmlType t) {
    const GgufIngest& g = format_info(type).gguf;
    return std::ranges::find(g.takes, t) != g.takes.end() ? &g : nullptr;
}

namespace detail {

size_t panels(int n) {
    if (n < 0) throw Error(ErrorKind::input, "negative matrix rows n=" + std::to_string(n));
    return (size_t(n) + kPanelRows - 1) / kPanelRows;
}

void check_quant_rows(const char* what, WeightType type, int n, int k, int n0, int n1) {
    packed_bytes(type, n, k);  // checks the shape
    if (k % kQ8Group != 0 || n0 < 0 || n1 < n0 || n1 > n || n0 % kPanelRows != 0 ||
        (n1 % kPanelRows != 0 && n1 != n))
        throw Error(ErrorKind::input, std::string(what) + ": k = " + std::to_string(k) + " or row range [" +
                                          std::to_string(n0) + ", " + std::to_string(n1) + ") of " +
                                          std::to_string(n) + " rows is not whole groups and panels");
}

void check_k(const char* format, int n, int k) {
    if (k < 1)
        throw Error(ErrorKind::input, std::string(format) + " matrix needs k >= 1, got n=" + std::to_string(n) +
                                          " k=" + std::to_string(k));
}

void pack_given_quants(const GivenQuants& f, const int8_t* q, const uint16_t* scales, int n, int k, int n0,
                       int n1, std::byte* dst) {
    check_quant_rows(f.what, f.type, n, k, n0, n1);
    const int groups = k / kQ8Group;
    const size_t panel = size_t(groups) * f.block_bytes;
    for (int p0 = n0; p0 < n1; p0 += kPanelRows) {
        std::byte* blocks = dst + size_t(p0 / kPanelRows) * panel;
        const int rows = std::min(kPanelRows, n1 - p0);
        for (int g = 0; g < groups; ++g) {
            std::byte* block = blocks + size_t(g) * f.block_bytes;
            f.clear(block);
            for (int r = 0; r < rows; ++r) {
                const int8_t* src = q + size_t(p0 - n0 + r) * size_t(k) + size_t(g) * kQ8Group;
                for (int j = 0; j < kQ8Group; ++j)
                    if (src[j] < f.lo || src[j] > f.hi)
                        throw Error(ErrorKind::input, std::string(f.what) + ": value " + std::to_string(src[j]) +
                                                          " of row " + std::to_string(p0 - n0 + r) +
                                                          " is outside [" + std::to_string(f.lo) + ", " +
                                                          std::to_string(f.hi) + "]");
                f.store(block, r, src, f16_to_f32(scales[size_t(p0 - n0 + r) * size_t(groups) + size_t(g)]));
            }
        }
    }
}

void check_row(const PackedMatrix& w, int row) {
    if (row < 0 || row >= w.n)
        throw Error(ErrorKind::input,
                    std::string("unpack_row: ") + format_info(w.type).traits.name + " row " +
                        std::to_string(row) + " out of range [0, " + std::to_string(w.n) + ")");
}

}  // namespace detail

size_t packed_bytes(WeightType type, int n, int k) {
    const FormatInfo& f = format_info(type);
    check_shape(f, n, k);
    return f.packed_bytes(n, k);
}

int padded_k(WeightType type, int k) {
    const int a = format_info(type).k_align;
    return (k + a - 1) / a * a;
}

size_t matmul_scratch_bytes(WeightType type, int m, int k) {
    return format_info(type).scratch_bytes(m, k);
}

void unpack_row(const PackedMatrix& w, int row, float scale, float* out) {
    format_info(w.type).unpack_row(w, row, scale, out);
}

namespace {

// Packs rows [n0, n1) of W [n][k] from src, which holds rows from src_row0 on.
void pack_rows(WeightType type, SrcType src_type, const void* src, int src_row0, int n, int k, int n0,
               int n1, std::byte* dst, const char* who) {
    const FormatInfo& f = format_info(type);
    packed_bytes(type, n, k);  // checks the shape
    if (n0 < 0 || n1 < n0 || n1 > n || n0 % kPanelRows != 0 || (n1 % kPanelRows != 0 && n1 != n))
        throw Error(ErrorKind::input, std::string(who) + ": " + f.traits.name + " row range [" +
                                          std::to_string(n0) + ", " + std::to_string(n1) + ") of " +
                                          std::to_string(n) + " rows is not panel-aligned (16 rows)");
    if (k == 0) return;
    const size_t panel = f.panel_bytes(k);
    const size_t row_bytes = size_t(k) * (src_type == SrcType::f32 ? 4 : 2);
    const FormatPackFn pack = table().format(type).pack_panel;
    const int p1 = int(detail::panels(n1));
    for (int p = n0 / kPanelRows; p < p1; ++p) {
        const int row0 = p * kPanelRows;
        pack(src_type, static_cast<const std::byte*>(src) + size_t(row0 - src_row0) * row_bytes, size_t(k),
             std::min(kPanelRows, n - row0), k, dst + size_t(p) * panel);
    }
}

}  // namespace

void pack_weights(WeightType type, SrcType src_type, const void* src, int n, int k, int n0, int n1,
                  std::byte* dst) {
    pack_rows(type, src_type, src, 0, n, k, n0, n1, dst, "pack_weights");
}

void pack_weight_rows(WeightType type, SrcType src_type, const void* rows, int n, int k, int n0, int n1,
                      std::byte* dst) {
    pack_rows(type, src_type, rows, n0, n, k, n0, n1, dst, "pack_weight_rows");
}

void matmul(const KernelTable& kt, const PackedMatrix& w, const float* x, size_t ldx, int m,
            float* y, size_t ldy, std::byte* scratch, int n_threads) {
    kt.format(w.type).matmul(w, x, ldx, m, y, ldy, scratch, n_threads);
}

void matmul_many(const KernelTable& kt, const MatmulOut* outs, int n_outs, const float* x,
                 size_t ldx, int m, std::byte* scratch, int n_threads) {
    if (n_outs < 1 || n_outs > kMaxMatmulOuts)
        throw Error(ErrorKind::input, "matmul_many: " + std::to_string(n_outs) +
                                          " products, expected 1.." +
                                          std::to_string(kMaxMatmulOuts));
    const PackedMatrix& w0 = *outs[0].w;
    for (int i = 1; i < n_outs; ++i)
        if (outs[i].w->type != w0.type || outs[i].w->k != w0.k || outs[i].w->act_bits != w0.act_bits)
            throw Error(ErrorKind::input, "matmul_many: product " + std::to_string(i) + " is " +
                                              format_info(outs[i].w->type).traits.name +
                                              " with k=" + std::to_string(outs[i].w->k) + " act_bits=" +
                                              std::to_string(outs[i].w->act_bits) + ", product 0 is " +
                                              format_info(w0.type).traits.name + " with k=" +
                                              std::to_string(w0.k) + " act_bits=" + std::to_string(w0.act_bits));
    kt.format(w0.type).matmul_many(outs, n_outs, x, ldx, m, scratch, n_threads);
}

}  // namespace staticlm::kernels

// The public names of the formats (include/staticlm/types.hpp).
namespace staticlm {

std::span<const WeightType> weight_types() { return kernels::kTypes; }

const WeightTypeInfo& weight_type_info(WeightType type) {
    return kernels::format_info(type).traits;
}

const char* weight_type_name(WeightType type) {
    const kernels::FormatInfo* f = kernels::find(type);
    return f ? f->traits.name : "?";
}

std::optional<WeightType> parse_weight_type(std::string_view name) {
    for (const kernels::FormatInfo* f : kernels::kFormats)
        if (name == f->traits.name) return f->traits.type;
    return std::nullopt;
}

std::optional<WeightType> weight_type_from_id(int id) {
    if (id < 0 || size_t(id) >= std::size(kernels::kTypes)) return std::nullopt;
    return kernels::kTypes[size_t(id)];
}

std::string weight_type_choices() {
    std::string s;
    const size_t n = std::size(kernels::kFormats);
    for (size_t i = 0; i < n; ++i) {
        if (i > 0) s += i + 1 == n ? " or " : ", ";
        s += kernels::kFormats[i]->traits.name;
    }
    return s;
}

}  // namespace staticlm
