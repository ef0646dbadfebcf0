// safetensors reader: header validation (length, JSON with a depth limit,
// dtype, shape x dtype size == byte range, ranges tiling the data section) and
// the sharded index. Tensor bytes are read with pread. All size arithmetic is
// checked for overflow; names from the file are quoted with printable().
#include "model/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "base/json.hpp"
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
    return "tensor '" + printable(name) + "' in " + (file ? file->string() : std::string("?"));
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

void read_tensor_bytes(const TensorView& t, uint64_t begin, size_t n, void* dst) {
    if (n == 0) return;
    if (begin > t.bytes || n > t.bytes - begin)
        throw Error(ErrorKind::input, "read of bytes [" + std::to_string(begin) + ", +" +
                                          std::to_string(n) + ") outside " + t.where() + " (" +
                                          std::to_string(t.bytes) + " bytes)");
    if (t.data) {
        std::memcpy(dst, t.data + begin, n);
        return;
    }
    if (!t.source) throw Error(ErrorKind::input, t.where() + " has no data");
    t.source->read(t, begin, n, dst);
}

std::vector<float> read_f32(const TensorView& t) {
    const SrcType st = weight_src_type(t);
    std::vector<float> out(t.numel);
    if (st == SrcType::f32) {
        read_tensor_bytes(t, 0, t.bytes, out.data());
        return out;
    }
    std::vector<uint16_t> h(t.numel);
    read_tensor_bytes(t, 0, t.bytes, h.data());
    for (uint64_t i = 0; i < t.numel; ++i)
        out[i] = st == SrcType::f16 ? kernels::f16_to_f32(h[i]) : kernels::bf16_to_f32(h[i]);
    return out;
}

std::vector<int64_t> read_i64(const TensorView& t) {
    std::vector<int64_t> out(t.numel);
    if (t.dtype == DType::i64) {
        read_tensor_bytes(t, 0, t.bytes, out.data());
    } else if (t.dtype == DType::i32) {
        std::vector<int32_t> v(t.numel);
        read_tensor_bytes(t, 0, t.bytes, v.data());
        for (uint64_t i = 0; i < t.numel; ++i) out[i] = v[i];
    } else {
        throw Error(ErrorKind::unsupported, "expected I64 or I32 for " + t.where() + ", got " +
                                                dtype_name(t.dtype));
    }
    return out;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path) : path_(path), file_(path) {
    const uint64_t size = file_.size();
    if (size < 8)
        fail(
            ErrorKind::format, path,
            "truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
    uint64_t header_len = 0;
    file_.read_at(0, &header_len, 8);  // little-endian, as every host we build for
    if (header_len > size - 8)
        fail(ErrorKind::format, path,
             "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                 std::to_string(size) + " bytes)");
    if (header_len > kMaxSafetensorsHeaderBytes)
        fail(ErrorKind::format, path,
             "header length " + std::to_string(header_len) + " is more than the " +
                 std::to_string(kMaxSafetensorsHeaderBytes) +
                 "-byte limit of the safetensors format");
    std::string htext(size_t(header_len), '\0');
    file_.read_at(8, htext.data(), htext.size());
    // JSON objects keep one of two equal keys; a header naming a tensor twice
    // is malformed (which entry is meant?), so top-level keys are checked here.
    std::unordered_map<std::string, int> keys;
    std::string duplicate;
    const json::parser_callback_t on_key = [&](int depth, json::parse_event_t event, json& parsed) {
        if (depth == 1 && event == json::parse_event_t::key && duplicate.empty() &&
            parsed.is_string()) {
            const std::string& k = parsed.get_ref<const std::string&>();
            if (!keys.emplace(k, 0).second) duplicate = k;
        }
        return true;
    };
    json header;
    std::string error;
    if (!try_parse_json(htext, header, error, on_key))
        fail(ErrorKind::format, path, "header is not valid JSON (" + error + ")");
    htext = std::string();
    if (!duplicate.empty())
        fail(ErrorKind::format, path,
             "duplicate tensor name '" + printable(duplicate) + "' in the header");
    if (!header.is_object()) fail(ErrorKind::format, path, "header is not a JSON object");
    const uint64_t data_start = 8 + header_len;
    const uint64_t data_size = size - data_start;

    struct Range {
        uint64_t begin, end;
        const std::string* name;
    };
    std::vector<Range> ranges;
    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        if (name == "__metadata__") continue;
        const std::string where = "tensor '" + printable(name) + "'";
        const json& e = it.value();
        if (!e.is_object()) fail(ErrorKind::format, path, where + ": entry is not an object");
        const auto dt = e.find("dtype");
        if (dt == e.end() || !dt->is_string())
            fail(ErrorKind::format, path, where + ": missing dtype");
        const DTypeInfo* di = dtype_info(dt->get_ref<const std::string&>());
        if (!di)
            fail(ErrorKind::format, path,
                 where + ": unknown dtype '" + printable(dt->get_ref<const std::string&>()) + "'");
        const auto shape = e.find("shape");
        if (shape == e.end() || !shape->is_array())
            fail(ErrorKind::format, path, where + ": missing shape");
        TensorView t;
        t.name = name;
        t.dtype = di->dtype;
        uint64_t numel = 1;
        for (const json& d : *shape) {
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
        const auto off = e.find("data_offsets");
        if (off == e.end() || !off->is_array() || off->size() != 2 ||
            !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
            fail(ErrorKind::format, path, where + ": data_offsets must be [begin, end]");
        const uint64_t b = (*off)[0].get<uint64_t>(), en = (*off)[1].get<uint64_t>();
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
        t.source = this;
        t.offset = data_start + b;
        t.file = &path_;
        auto [pos, inserted] = tensors_.emplace(name, std::move(t));
        ranges.push_back({b, en, &pos->first});
    }
    // The byte ranges must tile [0, data_size): sorted by offset, each begins
    // where the previous ended (the reference implementation's rule; a gap is
    // unreadable bytes that no tensor owns, most likely a damaged file).
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
        return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
    });
    for (size_t i = 1; i < ranges.size(); ++i)
        if (ranges[i].begin < ranges[i - 1].end)
            fail(ErrorKind::format, path,
                 "tensors '" + printable(*ranges[i - 1].name) + "' and '" +
                     printable(*ranges[i].name) + "' have overlapping data_offsets");
    uint64_t at = 0;
    const std::string* previous = nullptr;
    for (const Range& r : ranges) {
        const std::string q = "'" + printable(*r.name) + "'";
        if (r.begin > at)
            fail(ErrorKind::format, path,
                 "tensor " + q + ": data_offsets [" + std::to_string(r.begin) + ", " +
                     std::to_string(r.end) + "] leave a gap of " + std::to_string(r.begin - at) +
                     " bytes " +
                     (previous ? "after tensor '" + printable(*previous) + "' (which ends at " +
                                     std::to_string(at) + ")"
                               : std::string("at the start of the data section")) +
                     "; tensors must be contiguous");
        at = r.end;
        previous = r.name;
    }
    if (at != data_size)
        fail(ErrorKind::format, path,
             std::to_string(data_size - at) + " bytes after the last tensor" +
                 (previous ? " '" + printable(*previous) + "'" : std::string()) +
                 " (data section of " + std::to_string(data_size) + " bytes, tensors end at " +
                 std::to_string(at) + "); tensors must cover it exactly");
}

SafetensorsFile::~SafetensorsFile() = default;

void SafetensorsFile::read(const TensorView& t, uint64_t begin, size_t n, void* dst) const {
    try {
        file_.read_at(t.offset + begin, dst, n);
    } catch (const Error& e) {
        throw Error(e.kind(),
                    std::string(e.what()) + ", reading tensor '" + printable(t.name) + "'");
    }
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
    if (const std::optional<fs::path> single = model_file(dir, "model.safetensors")) {
        files_.push_back(std::make_unique<SafetensorsFile>(*single));
        for (const auto& [name, t] : files_.back()->tensors()) index_[name] = &t;
        description_ = single->string();
        return;
    }
    const std::optional<fs::path> found = model_file(dir, "model.safetensors.index.json");
    if (!found)
        throw Error(ErrorKind::io, dir.string() + ": neither model.safetensors nor "
                                                  "model.safetensors.index.json found");
    const fs::path& index = *found;
    json j;
    std::string error;
    if (!try_parse_json(File(index).read_all(kMaxConfigFileBytes, "a safetensors index"), j, error))
        fail(ErrorKind::format, index, "invalid JSON (" + error + ")");
    if (!j.is_object()) fail(ErrorKind::format, index, "not a JSON object");
    const auto wm = j.find("weight_map");
    if (wm == j.end() || !wm->is_object()) fail(ErrorKind::format, index, "missing weight_map");
    std::map<std::string, SafetensorsFile*> shards;
    for (auto it = wm->begin(); it != wm->end(); ++it) {
        const std::string key = "weight_map['" + printable(it.key()) + "']";
        if (!it.value().is_string()) fail(ErrorKind::format, index, key + " is not a file name");
        const std::string& shard = it.value().get_ref<const std::string&>();
        // Shards must be plain names inside the directory.
        if (shard.empty() || shard.find('/') != std::string::npos ||
            shard.find('\0') != std::string::npos || shard == "." || shard == "..")
            fail(ErrorKind::format, index,
                 key + " = '" + printable(shard) + "' is not a file name in the directory");
        auto s = shards.find(shard);
        if (s == shards.end()) {
            const std::optional<fs::path> p = model_file(dir, shard);
            if (!p)
                throw Error(ErrorKind::io,
                            (dir / shard).string() + ": cannot open: No such file or directory");
            files_.push_back(std::make_unique<SafetensorsFile>(*p));
            s = shards.emplace(shard, files_.back().get()).first;
        }
        const TensorView* t = s->second->find(it.key());
        if (!t)
            fail(ErrorKind::format, index,
                 "tensor '" + printable(it.key()) + "' is listed in shard " + printable(shard) +
                     " but that shard does not contain it");
        index_[it.key()] = t;
    }
    // A tensor in two shards: which one is the model? (The index picks one, a
    // loader reading shards in another order would pick the other.)
    std::unordered_map<std::string_view, const SafetensorsFile*> owner;
    for (const auto& f : files_)
        for (const auto& [name, t] : f->tensors()) {
            const auto [it, fresh] = owner.emplace(name, f.get());
            if (!fresh)
                fail(ErrorKind::format, index,
                     "tensor '" + printable(name) + "' is in two shards, " +
                         it->second->path().filename().string() + " and " +
                         f->path().filename().string());
        }
    description_ = index.string() + " (" + std::to_string(files_.size()) + " shards)";
}

const TensorView* SafetensorsSet::find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : it->second;
}

std::string SafetensorsSet::describe() const { return description_; }

}  // namespace staticlm
