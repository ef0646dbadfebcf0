// Test helper: writes GGUF files byte by byte, independently of the reader
// under test (model/gguf.cpp), following the GGUF spec: header, key/values,
// tensor infos, padding to the alignment, tensor data. Fields can be
// overridden to build malformed files.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm::test {

class GgufWriter {
public:
    // Value type ids of the GGUF spec.
    enum : uint32_t { U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 };
    // A few ggml tensor type ids.
    enum : uint32_t { T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q8_0 = 8, T_Q4_K = 12, T_Q6_K = 14, T_BF16 = 30 };

    uint32_t magic = 0x46554747;  // "GGUF"
    uint32_t version = 3;
    uint64_t alignment = 32;  // padding used; write general.alignment with set_alignment()
    std::optional<uint64_t> n_kv_override, n_tensors_override;
    std::set<std::string, std::less<>> omit;  // keys and tensor names that kv_raw/tensor skip

    template <class T>
    static std::string pod(T v) {
        std::string s(sizeof(T), '\0');
        std::memcpy(s.data(), &v, sizeof(T));
        return s;
    }
    static std::string str(std::string_view s) { return pod<uint64_t>(s.size()) + std::string(s); }

    // A raw key/value: key string, type id, value bytes as given.
    GgufWriter& kv_raw(std::string_view key, uint32_t type, const std::string& value) {
        if (omit.count(key)) return *this;
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
        if (omit.count(name)) return *this;
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
            const uint64_t at64 = data_start + offsets[i];
            if (at64 > out.size() + (uint64_t{1} << 20)) continue;  // far past the end: info only, no data
            const size_t at = size_t(at64);
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

// A tiny model as GGUF: architecture `arch` (llama or gemma3), F32 weights
// of deterministic values, and a `llama` (SentencePiece-style) vocabulary of
// n_tokens (default: vocab) pieces: <unk> <s> </s> then letters. Hidden 16,
// 2 layers, 4 heads of 4 (2 KV heads), FFN 24 (or `ffn`). Keys and tensors
// named in `omit` are left out (tests add their own versions).
inline GgufWriter tiny_gguf_model(const std::string& arch = "llama", int vocab = 32,
                                  std::set<std::string, std::less<>> omit = {}, int n_tokens = -1, int ffn = 24) {
    const uint64_t H = 16, L = 2, heads = 4, kv = 2, hd = 4, F = uint64_t(ffn);
    GgufWriter w;
    w.omit = std::move(omit);
    if (n_tokens < 0) n_tokens = vocab;
    w.kv_string("general.architecture", arch)
        .kv_string("general.name", "tiny " + arch)
        .kv_u32(arch + ".block_count", uint32_t(L))
        .kv_u32(arch + ".context_length", 64)
        .kv_u32(arch + ".embedding_length", uint32_t(H))
        .kv_u32(arch + ".feed_forward_length", uint32_t(F))
        .kv_u32(arch + ".attention.head_count", uint32_t(heads))
        .kv_u32(arch + ".attention.head_count_kv", uint32_t(kv))
        .kv_f32(arch + ".rope.freq_base", 10000.0f)
        .kv_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<float> scores = {0, 0, 0};
    std::vector<int32_t> types = {2, 3, 3};
    for (int i = 3; i < n_tokens; ++i) {
        tokens.push_back(std::string(1, char('a' + (i - 3) % 26)) + (i - 3 >= 26 ? std::to_string(i) : ""));
        scores.push_back(-float(i));
        types.push_back(1);
    }
    w.kv_string("tokenizer.ggml.model", "llama")
        .kv_strings("tokenizer.ggml.tokens", tokens)
        .kv_f32s("tokenizer.ggml.scores", scores)
        .kv_i32s("tokenizer.ggml.token_type", types)
        .kv_u32("tokenizer.ggml.bos_token_id", 1)
        .kv_u32("tokenizer.ggml.eos_token_id", 2)
        .kv_bool("tokenizer.ggml.add_space_prefix", false);
    uint32_t seed = 1;
    auto t = [&](const std::string& name, std::vector<uint64_t> ne) {
        uint64_t n = 1;
        for (uint64_t d : ne) n *= d;
        std::vector<float> v(n);
        uint32_t s = seed++ * 2654435761u + 1;
        for (float& x : v) {
            s = s * 1664525u + 1013904223u;
            x = float(int((s >> 16) % 128) - 64) / 64.0f;
        }
        w.tensor(name, std::move(ne), GgufWriter::T_F32, GgufWriter::f32_data(v));
    };
    t("token_embd.weight", {H, uint64_t(vocab)});
    t("output_norm.weight", {H});
    for (uint64_t il = 0; il < L; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        t(b + "attn_norm.weight", {H});
        t(b + "attn_q.weight", {H, heads * hd});
        t(b + "attn_k.weight", {H, kv * hd});
        t(b + "attn_v.weight", {H, kv * hd});
        t(b + "attn_output.weight", {heads * hd, H});
        t(b + "ffn_norm.weight", {H});
        t(b + "ffn_gate.weight", {H, F});
        t(b + "ffn_up.weight", {H, F});
        t(b + "ffn_down.weight", {F, H});
        if (arch == "gemma3") {
            t(b + "attn_q_norm.weight", {hd});
            t(b + "attn_k_norm.weight", {hd});
            t(b + "post_attention_norm.weight", {H});
            t(b + "post_ffw_norm.weight", {H});
        }
    }
    w.omit.clear();
    return w;
}

}  // namespace staticlm::test
