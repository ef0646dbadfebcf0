// safetensors reader: mmap + header validation (length, JSON, dtype, shape ×
// dtype size == byte range, ranges inside the data section, no overlaps) and
// the sharded index. All size arithmetic is checked for overflow.
#include "model/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "staticlm/error.hpp"

namespace staticlm {

namespace {

using json = nlohmann::json;

struct DTypeInfo {
    const char* name;
    DType dtype;
    size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {"F64", DType::f64, 8},  {"F32", DType::f32, 4},   {"F16", DType::f16, 2},
    {"BF16", DType::bf16, 2}, {"I64", DType::i64, 8},  {"I32", DType::i32, 4},
    {"I16", DType::i16, 2},  {"I8", DType::i8, 1},     {"U64", DType::u64, 8},
    {"U32", DType::u32, 4},  {"U16", DType::u16, 2},   {"U8", DType::u8, 1},
    {"BOOL", DType::boolean, 1}, {"F8_E4M3", DType::f8_e4m3, 1}, {"F8_E5M2", DType::f8_e5m2, 1},
};

const DTypeInfo* dtype_info(const std::string& name) {
    for (const auto& d : kDTypes)
        if (name == d.name) return &d;
    return nullptr;
}

[[noreturn]] void fail(ErrorKind kind, const std::filesystem::path& file, const std::string& what) {
    throw Error(kind, file.string() + ": " + what);
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) {
    return __builtin_mul_overflow(a, b, out);
}

}  // namespace

const char* dtype_name(DType dtype) {
    for (const auto& d : kDTypes)
        if (d.dtype == dtype) return d.name;
    return "?";
}

size_t dtype_size(DType dtype) {
    for (const auto& d : kDTypes)
        if (d.dtype == dtype) return d.size;
    return 0;
}

std::string TensorView::shape_string() const {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::string TensorView::where() const {
    return "tensor '" + name + "' in " + (file ? file->string() : std::string("?"));
}

SrcType weight_src_type(const TensorView& t) {
    switch (t.dtype) {
        case DType::f32: return SrcType::f32;
        case DType::f16: return SrcType::f16;
        case DType::bf16: return SrcType::bf16;
        default:
            throw Error(ErrorKind::unsupported, "unsupported dtype " + std::string(dtype_name(t.dtype)) +
                                                    " of " + t.where() + " (F32, F16, BF16 accepted)");
    }
}

std::vector<float> read_f32(const TensorView& t) {
    const SrcType st = weight_src_type(t);
    std::vector<float> out(t.numel);
    if (st == SrcType::f32) {
        if (t.bytes) std::memcpy(out.data(), t.data, t.bytes);
        return out;
    }
    for (uint64_t i = 0; i < t.numel; ++i) {
        uint16_t h;
        std::memcpy(&h, t.data + 2 * i, 2);
        out[i] = st == SrcType::f16 ? kernels::f16_to_f32(h) : kernels::bf16_to_f32(h);
    }
    return out;
}

std::vector<int64_t> read_i64(const TensorView& t) {
    std::vector<int64_t> out(t.numel);
    if (t.dtype == DType::i64) {
        if (t.bytes) std::memcpy(out.data(), t.data, t.bytes);
    } else if (t.dtype == DType::i32) {
        for (uint64_t i = 0; i < t.numel; ++i) {
            int32_t v;
            std::memcpy(&v, t.data + 4 * i, 4);
            out[i] = v;
        }
    } else {
        throw Error(ErrorKind::unsupported, "expected I64 or I32 for " + t.where() + ", got " +
                                                dtype_name(t.dtype));
    }
    return out;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path) : path_(path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(ErrorKind::io, path, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(ErrorKind::io, path, "not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ < 8) {
        ::close(fd);
        fail(ErrorKind::format, path, "truncated: " + std::to_string(size_) +
                                          " bytes, shorter than the 8-byte header length");
    }
    void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) fail(ErrorKind::io, path, std::string("cannot mmap: ") + std::strerror(errno));
    map_ = p;
    try {
        const auto* base = static_cast<const std::byte*>(map_);
        uint64_t header_len = 0;
        std::memcpy(&header_len, base, 8);  // little-endian, as every host we build for
        if (header_len > size_ - 8)
            fail(ErrorKind::format, path, "header length " + std::to_string(header_len) +
                                              " runs past the end of the file (" +
                                              std::to_string(size_) + " bytes)");
        const char* htext = reinterpret_cast<const char*>(base + 8);
        json header = json::parse(htext, htext + header_len, nullptr, false);
        if (header.is_discarded()) fail(ErrorKind::format, path, "header is not valid JSON");
        if (!header.is_object()) fail(ErrorKind::format, path, "header is not a JSON object");
        const uint64_t data_start = 8 + header_len;
        const uint64_t data_size = size_ - data_start;

        struct Range {
            uint64_t begin, end;
            const std::string* name;
        };
        std::vector<Range> ranges;
        for (auto it = header.begin(); it != header.end(); ++it) {
            const std::string& name = it.key();
            if (name == "__metadata__") continue;
            const std::string where = "tensor '" + name + "'";
            const json& e = it.value();
            if (!e.is_object()) fail(ErrorKind::format, path, where + ": entry is not an object");
            if (!e.contains("dtype") || !e["dtype"].is_string())
                fail(ErrorKind::format, path, where + ": missing dtype");
            const DTypeInfo* di = dtype_info(e["dtype"].get<std::string>());
            if (!di)
                fail(ErrorKind::format, path,
                     where + ": unknown dtype '" + e["dtype"].get<std::string>() + "'");
            if (!e.contains("shape") || !e["shape"].is_array())
                fail(ErrorKind::format, path, where + ": missing shape");
            TensorView t;
            t.name = name;
            t.dtype = di->dtype;
            uint64_t numel = 1;
            for (const json& d : e["shape"]) {
                if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(INT64_MAX))
                    fail(ErrorKind::format, path, where + ": shape has a non-integer or negative dim");
                const uint64_t dim = d.get<uint64_t>();
                if (mul_overflows(numel, dim, &numel))
                    fail(ErrorKind::format, path, where + ": shape element count overflows");
                t.shape.push_back(static_cast<int64_t>(dim));
            }
            uint64_t nbytes = 0;
            if (mul_overflows(numel, di->size, &nbytes))
                fail(ErrorKind::format, path, where + ": byte size overflows");
            const json& off = e.contains("data_offsets") ? e["data_offsets"] : json();
            if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
                !off[1].is_number_unsigned())
                fail(ErrorKind::format, path, where + ": data_offsets must be [begin, end]");
            const uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
            if (b > en || en > data_size)
                fail(ErrorKind::format, path,
                     where + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(en) +
                         "] outside the data section (" + std::to_string(data_size) + " bytes)");
            if (en - b != nbytes)
                fail(ErrorKind::format, path,
                     where + ": shape " + t.shape_string() + " x " + di->name + " is " +
                         std::to_string(nbytes) + " bytes but data_offsets cover " +
                         std::to_string(en - b));
            t.numel = numel;
            t.bytes = static_cast<size_t>(nbytes);
            t.data = base + data_start + b;
            t.file = &path_;
            auto [pos, inserted] = tensors_.emplace(name, std::move(t));
            ranges.push_back({b, en, &pos->first});
        }
        std::sort(ranges.begin(), ranges.end(),
                  [](const Range& a, const Range& b) { return a.begin < b.begin || (a.begin == b.begin && a.end < b.end); });
        for (size_t i = 1; i < ranges.size(); ++i)
            if (ranges[i].begin < ranges[i - 1].end)
                fail(ErrorKind::format, path,
                     "tensors '" + *ranges[i - 1].name + "' and '" + *ranges[i].name +
                         "' have overlapping data_offsets");
    } catch (...) {
        munmap(map_, size_);
        map_ = nullptr;
        throw;
    }
}

SafetensorsFile::~SafetensorsFile() {
    if (map_) munmap(map_, size_);
}

const TensorView* SafetensorsFile::find(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
}

const TensorView& SafetensorsFile::at(const std::string& name) const {
    const TensorView* t = find(name);
    if (!t) fail(ErrorKind::model, path_, "missing tensor '" + name + "'");
    return *t;
}

SafetensorsSet::SafetensorsSet(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    const fs::path single = dir / "model.safetensors";
    const fs::path index = dir / "model.safetensors.index.json";
    if (fs::exists(single)) {
        files_.push_back(std::make_unique<SafetensorsFile>(single));
        for (const auto& [name, t] : files_.back()->tensors()) index_[name] = &t;
        description_ = single.string();
        return;
    }
    if (!fs::exists(index))
        throw Error(ErrorKind::io, dir.string() + ": neither model.safetensors nor "
                                                  "model.safetensors.index.json found");
    std::ifstream in(index);
    if (!in) fail(ErrorKind::io, index, "cannot open");
    std::stringstream ss;
    ss << in.rdbuf();
    json j = json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) fail(ErrorKind::format, index, "not a JSON object");
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
        fail(ErrorKind::format, index, "missing weight_map");
    std::map<std::string, SafetensorsFile*> shards;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
        if (!it.value().is_string())
            fail(ErrorKind::format, index, "weight_map['" + it.key() + "'] is not a file name");
        const std::string shard = it.value().get<std::string>();
        // Shards must be plain names inside the directory.
        if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
            fail(ErrorKind::format, index, "weight_map['" + it.key() + "'] = '" + shard +
                                               "' is not a file name in the directory");
        auto s = shards.find(shard);
        if (s == shards.end()) {
            files_.push_back(std::make_unique<SafetensorsFile>(dir / shard));
            s = shards.emplace(shard, files_.back().get()).first;
        }
        const TensorView* t = s->second->find(it.key());
        if (!t)
            fail(ErrorKind::format, index, "tensor '" + it.key() + "' is listed in shard " +
                                               shard + " but that shard does not contain it");
        index_[it.key()] = t;
    }
    description_ = index.string() + " (" + std::to_string(files_.size()) + " shards)";
}

const TensorView* SafetensorsSet::find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : it->second;
}

std::string SafetensorsSet::describe() const { return description_; }

}  // namespace staticlm
