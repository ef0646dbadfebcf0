// Read-only, validated access to safetensors files (single or sharded by a
// model.safetensors.index.json). Tensor bytes are read with pread, not mapped:
// a file truncated while a model loads is an error naming it, not a SIGBUS.
// TensorViews stay valid while their SafetensorsFile/Set lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/file.hpp"
#include "kernels/kernels.hpp"

namespace staticlm {

class SafetensorsFile;

// Every dtype of the safetensors format; only f32/f16/bf16 are accepted as
// weights and i64 for reference data, the rest are rejected where used.
enum class DType { f64, f32, f16, bf16, i64, i32, i16, i8, u64, u32, u16, u8, boolean, f8_e4m3, f8_e5m2 };

const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);

struct TensorView {
    std::string name;
    DType dtype = DType::f32;
    std::vector<int64_t> shape;
    uint64_t numel = 0;
    // Where the bytes are: in memory (llama2.c files, read whole) or in a
    // safetensors file at `offset` (read with read_tensor_bytes).
    const std::byte* data = nullptr;  // not aligned in general
    const SafetensorsFile* source = nullptr;
    uint64_t offset = 0;  // of the first byte in `source`
    size_t bytes = 0;
    const std::filesystem::path* file = nullptr;  // owned by the SafetensorsFile

    std::string shape_string() const;  // "[2, 3]"
    std::string where() const;         // "tensor 'x' in /dir/model.safetensors"
};

// The weight source type of a tensor; throws Error(unsupported) naming it for
// anything but F32/F16/BF16.
SrcType weight_src_type(const TensorView& t);
// Whole tensor as float (from F32/F16/BF16) or int64 (from I64/I32); throws
// Error(unsupported) naming the tensor on other dtypes.
std::vector<float> read_f32(const TensorView& t);
std::vector<int64_t> read_i64(const TensorView& t);
// Bytes [begin, begin + n) of the tensor's data into dst. A file that has
// become shorter since it was opened is Error(io) naming the file and tensor.
void read_tensor_bytes(const TensorView& t, uint64_t begin, size_t n, void* dst);
// The format's limit on the JSON header (as the reference implementation).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

class SafetensorsFile {
public:
    // Reads and validates the whole header; throws Error(io) when the file
    // cannot be read, Error(format) naming the file/tensor when it is
    // malformed. As in the reference implementation, the tensors' byte ranges
    // must tile the data section exactly (no gaps, no overlaps, nothing after
    // the last one); their order in the header does not matter.
    explicit SafetensorsFile(const std::filesystem::path& path);
    ~SafetensorsFile();
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::filesystem::path& path() const { return path_; }
    const TensorView* find(const std::string& name) const;
    const TensorView& at(const std::string& name) const;  // Error(model) when absent
    const std::map<std::string, TensorView>& tensors() const { return tensors_; }

    // Bytes [begin, begin + n) of tensor t (of this file) into dst.
    void read(const TensorView& t, uint64_t begin, size_t n, void* dst) const;

private:
    std::filesystem::path path_;
    File file_;
    std::map<std::string, TensorView> tensors_;
};

// A checkpoint's tensors: <dir>/model.safetensors, or the shards listed by
// <dir>/model.safetensors.index.json (weight_map). Every file must resolve
// inside <dir> (model_file); a tensor present in two shards is an error.
class SafetensorsSet {
public:
    explicit SafetensorsSet(const std::filesystem::path& dir);
    const TensorView* find(const std::string& name) const;
    // Where a tensor would be (for error messages about a missing tensor).
    std::string describe() const;
    size_t n_tensors() const { return index_.size(); }
    // Every tensor of every file, by name.
    const std::map<std::string, const TensorView*>& tensors() const { return index_; }

private:
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, const TensorView*> index_;
    std::string description_;
};

}  // namespace staticlm
