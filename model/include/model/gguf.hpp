// Read-only, validated access to GGUF files (versions 2 and 3, little-endian):
// metadata key/values, tensor infos, and tensor data dequantized to f32 rows.
// The file is memory-mapped; views stay valid while the GgufFile lives.
// Validation is as strict as for safetensors: every count and length is
// bounded by the bytes left in the file before anything is allocated.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernels/ggml_blocks.hpp"
#include "staticlm/config.hpp"
#include "tokenizer/tokenizer_gguf.hpp"

namespace staticlm {

enum class GgufType : uint32_t {
    u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
    string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
const char* gguf_type_name(GgufType t);  // "UINT32", "ARRAY", ...

// Nested arrays deeper than this are refused (a top-level array is depth 1).
constexpr int kGgufMaxArrayDepth = 8;

struct GgufValue {
    GgufType type = GgufType::u8;
    // Scalars, decoded: integers in i (signed types) or u (unsigned, bool),
    // floats in f.
    int64_t i = 0;
    uint64_t u = 0;
    double f = 0.0;
    std::string_view str;  // string: into the mapping
    // Arrays: element type, count, and the raw bytes of the elements.
    GgufType elem_type = GgufType::u8;
    uint64_t count = 0;
    const std::byte* elems = nullptr;
    size_t elems_bytes = 0;
};

struct GgufKv {
    std::string key;
    GgufValue value;
};

struct GgufTensor {
    std::string name;
    kernels::GgmlType type = kernels::GgmlType::f32;
    int n_dims = 0;
    std::array<int64_t, 4> ne{1, 1, 1, 1};  // ggml order: ne[0] is the row length
    uint64_t numel = 0;
    uint64_t offset = 0;  // from the start of the data section
    const std::byte* data = nullptr;
    size_t bytes = 0;
    const std::filesystem::path* file = nullptr;

    int64_t rows = 0;     // ne[1] · ne[2] · ne[3]

    int64_t row_length() const { return ne[0]; }
    int64_t n_rows() const { return rows; }
    size_t row_bytes() const;
    std::string shape_string() const;  // ggml order: "[640, 262144]"
    std::string where() const;         // "tensor 'x' in /path/model.gguf"
};

class GgufFile {
public:
    // Maps and validates the header, metadata and tensor infos; throws
    // Error(io) when the file cannot be read, Error(format) naming the file and
    // the key or tensor when it is malformed, Error(unsupported) for GGUF
    // version 1 or big-endian files.
    explicit GgufFile(const std::filesystem::path& path);
    ~GgufFile();
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    const std::filesystem::path& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }  // start of tensor data
    size_t file_size() const { return size_; }

    const std::vector<GgufKv>& kvs() const { return kvs_; }  // file order
    const GgufValue* find(std::string_view key) const;
    // Typed getters: Error(model) naming the key when it is absent,
    // Error(format) when its type does not fit (any integer type is accepted
    // for integers whose value is in range; f32/f64 for floats).
    std::string_view get_string(std::string_view key) const;
    uint64_t get_uint(std::string_view key, uint64_t max = UINT64_MAX) const;
    int64_t get_int(std::string_view key) const;
    double get_float(std::string_view key) const;
    bool get_bool(std::string_view key) const;
    // Arrays. Strings are views into the mapping.
    std::vector<std::string_view> get_string_array(std::string_view key) const;
    std::vector<float> get_f32_array(std::string_view key) const;    // f32 elements
    std::vector<int64_t> get_int_array(std::string_view key) const;  // any integer elements
    uint64_t get_array_count(std::string_view key) const;

    const std::vector<GgufTensor>& tensors() const { return tensors_; }  // file order
    const GgufTensor* find_tensor(std::string_view name) const;
    const GgufTensor& tensor(std::string_view name) const;  // Error(model) when absent

    // "FILE: key 'K'" style prefixes for messages built by callers.
    std::string key_where(std::string_view key) const;

private:
    std::filesystem::path path_;
    void* map_ = nullptr;
    size_t size_ = 0;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<GgufKv> kvs_;
    std::unordered_map<std::string_view, size_t> kv_index_;
    std::vector<GgufTensor> tensors_;
    std::unordered_map<std::string_view, size_t> tensor_index_;

    const GgufValue& require(std::string_view key) const;
    [[noreturn]] void type_error(std::string_view key, const GgufValue& v, const char* expected) const;
};

// Rows [row0, row1) of a tensor as f32 (out holds (row1 - row0) · row_length()
// floats). Throws Error(unsupported) "unsupported tensor type X (tensor 'NAME'
// in FILE)" for types without a dequantizer.
void gguf_dequantize_rows(const GgufTensor& t, int64_t row0, int64_t row1, float* out);
std::vector<float> gguf_read_f32(const GgufTensor& t);

// The tokenizer.ggml.* keys (model/gguf_vocab.cpp); the views point into the
// file's mapping. Error(model) when tokenizer.ggml.model or .tokens is
// missing, Error(format) naming the key when a value has the wrong type.
GgufVocab read_gguf_vocab(const GgufFile& file);
std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& file);

// The model a GGUF file describes (model/gguf_model.cpp), checked before any
// weight is read: the <arch>.* keys shared by architectures with uniform
// layers, token_embd's rows against tokenizer.ggml.tokens and <arch>.vocab_size,
// and output.weight's shape. Error(model) naming the key or tensor that is
// missing or misshaped, Error(format) for out-of-range values. Whether the
// architecture loads at all is decided by the families (find_gguf_family);
// the layer tensors are checked against the weight plan at load.
struct GgufModelInfo {
    std::string architecture;
    int n_layers = 0, hidden = 0, ffn = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, vocab = 0;
    int64_t context = 0;        // <arch>.context_length, 0 when absent
    double rope_theta = 10000.0;
    double rms_eps = 0.0;
    bool tied = true;           // no output.weight: the output projection is token_embd
};
GgufModelInfo read_gguf_model_info(const GgufFile& file);

// The ModelConfig fields every GGUF architecture fills the same way (the
// families' parse_gguf start from it): sizes from `info`, every layer full
// attention with its own K/V and the default RoPE of <arch>.rope.freq_base,
// attention scale 1/sqrt(head_dim); special tokens from tokenizer.ggml.*
// (bos, eos plus eot when present, padding, add_bos_token).
ModelConfig gguf_base_config(const GgufFile& file, const GgufModelInfo& info);

// llama.cpp's converter stores Llama's q and k projection rows permuted from
// rotate-half to interleaved pairs: GGUF row h·d + 2i + j holds Hugging Face
// row h·d + j·d/2 + i (i < d/2, j ∈ {0, 1}, d = head_dim). Returns the GGUF
// row that holds Hugging Face row `hf_row`.
int64_t gguf_llama_qk_row(int64_t hf_row, int head_dim);

// A human-readable summary for `staticlm info`: file, version, architecture,
// every key (arrays abbreviated), and a tensor-type histogram (tensors,
// elements and bytes per type).
std::string gguf_summary(const GgufFile& file);

}  // namespace staticlm
