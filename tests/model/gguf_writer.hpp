// Test helper: writes GGUF files byte by byte, independently of the reader
// under test (model/gguf.cpp), following the GGUF spec: header, key/values,
// tensor infos, padding to the alignment, tensor data. Fields can be
// overridden to build malformed files.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm::test {

class GgufWriter {
public:
    // Value type ids of the GGUF spec.
    enum : uint32_t { U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 };
    // A few ggml tensor type ids.
    enum : uint32_t { T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q8_0 = 8, T_Q4_K = 12, T_BF16 = 30 };

    uint32_t magic = 0x46554747;  // "GGUF"
    uint32_t version = 3;
    uint64_t alignment = 32;  // padding used; write general.alignment with set_alignment()
    std::optional<uint64_t> n_kv_override, n_tensors_override;

    template <class T>
    static std::string pod(T v) {
        std::string s(sizeof(T), '\0');
        std::memcpy(s.data(), &v, sizeof(T));
        return s;
    }
    static std::string str(std::string_view s) { return pod<uint64_t>(s.size()) + std::string(s); }

    // A raw key/value: key string, type id, value bytes as given.
    GgufWriter& kv_raw(std::string_view key, uint32_t type, const std::string& value) {
        kvs_ += str(key) + pod(type) + value;
        ++n_kv_;
        return *this;
    }
    GgufWriter& kv_u32(std::string_view key, uint32_t v) { return kv_raw(key, U32, pod(v)); }
    GgufWriter& kv_i32(std::string_view key, int32_t v) { return kv_raw(key, I32, pod(v)); }
    GgufWriter& kv_u64(std::string_view key, uint64_t v) { return kv_raw(key, U64, pod(v)); }
    GgufWriter& kv_f32(std::string_view key, float v) { return kv_raw(key, F32, pod(v)); }
    GgufWriter& kv_bool(std::string_view key, bool v) { return kv_raw(key, BOOL, pod<uint8_t>(v ? 1 : 0)); }
    GgufWriter& kv_string(std::string_view key, std::string_view v) { return kv_raw(key, STRING, str(v)); }
    // An array value: element type, count, element bytes.
    static std::string array(uint32_t elem_type, uint64_t count, const std::string& elems) {
        return pod(elem_type) + pod(count) + elems;
    }
    GgufWriter& kv_strings(std::string_view key, const std::vector<std::string>& v) {
        std::string e;
        for (const std::string& s : v) e += str(s);
        return kv_raw(key, ARRAY, array(STRING, v.size(), e));
    }
    GgufWriter& kv_f32s(std::string_view key, const std::vector<float>& v) {
        std::string e;
        for (float x : v) e += pod(x);
        return kv_raw(key, ARRAY, array(F32, v.size(), e));
    }
    GgufWriter& kv_i32s(std::string_view key, const std::vector<int32_t>& v) {
        std::string e;
        for (int32_t x : v) e += pod(x);
        return kv_raw(key, ARRAY, array(I32, v.size(), e));
    }
    GgufWriter& set_alignment(uint32_t a) {
        alignment = a;
        return kv_u32("general.alignment", a);
    }

    // A tensor: ne in ggml order (ne[0] = row length), raw data bytes. The
    // offset is assigned (aligned, back to back) unless given.
    GgufWriter& tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, std::string data,
                       std::optional<uint64_t> offset = std::nullopt) {
        tensors_.push_back({std::string(name), std::move(ne), type, std::move(data), offset});
        return *this;
    }
    static std::string f32_data(const std::vector<float>& v) {
        std::string s(v.size() * 4, '\0');
        if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
        return s;
    }

    std::string bytes() const {
        std::string out = pod(magic) + pod(version) + pod<uint64_t>(n_tensors_override.value_or(tensors_.size())) +
                          pod<uint64_t>(n_kv_override.value_or(n_kv_)) + kvs_;
        std::vector<uint64_t> offsets;
        uint64_t next = 0;
        for (const Tensor& t : tensors_) {
            const uint64_t off = t.offset.value_or(next);
            offsets.push_back(off);
            if (!t.offset) next = pad(off + t.data.size());
        }
        for (size_t i = 0; i < tensors_.size(); ++i) {
            const Tensor& t = tensors_[i];
            out += str(t.name) + pod<uint32_t>(uint32_t(t.ne.size()));
            for (uint64_t d : t.ne) out += pod(d);
            out += pod(t.type) + pod(offsets[i]);
        }
        out.resize(size_t(pad(out.size())), '\0');
        const size_t data_start = out.size();
        for (size_t i = 0; i < tensors_.size(); ++i) {
            const size_t at = data_start + size_t(offsets[i]);
            if (at > out.size()) out.resize(at, '\0');
            if (at + tensors_[i].data.size() > out.size()) out.resize(at + tensors_[i].data.size(), '\0');
            std::memcpy(out.data() + at, tensors_[i].data.data(), tensors_[i].data.size());
        }
        return out;
    }

private:
    struct Tensor {
        std::string name;
        std::vector<uint64_t> ne;
        uint32_t type;
        std::string data;
        std::optional<uint64_t> offset;
    };
    uint64_t pad(uint64_t x) const { return (x + alignment - 1) / alignment * alignment; }
    std::string kvs_;
    uint64_t n_kv_ = 0;
    std::vector<Tensor> tensors_;
};

}  // namespace staticlm::test
