// Test helpers: write tiny safetensors files / model directories to a temp
// directory, byte by byte, independently of the reader under test.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "tests/support.hpp"  // TempDir

namespace staticlm::test {

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

struct RawTensor {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    std::string data;
};

inline std::string f32_bytes(const std::vector<float>& v) {
    std::string s(v.size() * 4, '\0');
    if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
    return s;
}
inline std::string f16_bytes(const std::vector<float>& v) {
    std::string s;
    for (float x : v) {
        const uint16_t h = kernels::f32_to_f16(x);
        s.append(reinterpret_cast<const char*>(&h), 2);
    }
    return s;
}
inline std::string bf16_bytes(const std::vector<float>& v) {
    std::string s;
    for (float x : v) {
        const uint16_t h = kernels::f32_to_bf16(x);
        s.append(reinterpret_cast<const char*>(&h), 2);
    }
    return s;
}
inline std::string i64_bytes(const std::vector<int64_t>& v) {
    std::string s(v.size() * 8, '\0');
    if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
    return s;
}

// A header JSON string for tensors laid out back to back (offsets may be
// overridden by passing explicit header text to safetensors_file).
inline std::string header_json(const std::vector<RawTensor>& ts) {
    std::string h = "{\"__metadata__\":{\"format\":\"pt\"}";
    uint64_t off = 0;
    for (const RawTensor& t : ts) {
        // Appended piece by piece (GCC 12 warns falsely on long + chains here).
        h.append(",\"").append(t.name).append("\":{\"dtype\":\"").append(t.dtype).append("\",\"shape\":[");
        for (size_t i = 0; i < t.shape.size(); ++i) h.append(i ? "," : "").append(std::to_string(t.shape[i]));
        h.append("],\"data_offsets\":[").append(std::to_string(off)).append(",");
        h.append(std::to_string(off + t.data.size())).append("]}");
        off += t.data.size();
    }
    return h + "}";
}

inline std::string safetensors_file(const std::string& header, const std::string& data) {
    std::string out(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(out.data(), &n, 8);
    return out + header + data;
}

inline std::string safetensors_file(const std::vector<RawTensor>& ts) {
    std::string data;
    for (const RawTensor& t : ts) data += t.data;
    return safetensors_file(header_json(ts), data);
}

// Deterministic values in [-1, 1) that are exact in bf16/f16 (multiples of 1/64).
inline std::vector<float> test_values(size_t n, uint32_t seed) {
    std::vector<float> v(n);
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        s = s * 1664525u + 1013904223u;
        v[i] = float(int((s >> 16) % 128) - 64) / 64.0f;
    }
    return v;
}

// A tiny Llama checkpoint: tensors (name -> f32 values) written as F32.
struct TinyLlama {
    int hidden = 40, layers = 2, heads = 4, kv_heads = 2, head_dim = 10, ffn = 24, vocab = 20;
    bool lm_head = false;
    std::map<std::string, std::vector<float>> values;
    std::map<std::string, std::vector<int64_t>> shapes;

    std::string config_json() const {
        return "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\",\"hidden_size\":" +
               std::to_string(hidden) + ",\"num_hidden_layers\":" + std::to_string(layers) +
               ",\"num_attention_heads\":" + std::to_string(heads) +
               ",\"num_key_value_heads\":" + std::to_string(kv_heads) +
               ",\"head_dim\":" + std::to_string(head_dim) +
               ",\"intermediate_size\":" + std::to_string(ffn) + ",\"vocab_size\":" + std::to_string(vocab) +
               ",\"rms_norm_eps\":1e-5,\"rope_theta\":10000.0,\"tie_word_embeddings\":" +
               (lm_head ? "false" : "true") + ",\"bos_token_id\":1,\"eos_token_id\":2}";
    }
    void add(const std::string& name, std::vector<int64_t> shape, uint32_t seed) {
        size_t n = 1;
        for (int64_t d : shape) n *= size_t(d);
        values[name] = test_values(n, seed);
        shapes[name] = std::move(shape);
    }
    TinyLlama& build() {
        uint32_t seed = 1;
        add("model.embed_tokens.weight", {vocab, hidden}, seed++);
        add("model.norm.weight", {hidden}, seed++);
        if (lm_head) add("lm_head.weight", {vocab, hidden}, seed++);
        for (int il = 0; il < layers; ++il) {
            const std::string p = "model.layers." + std::to_string(il) + ".";
            add(p + "input_layernorm.weight", {hidden}, seed++);
            add(p + "post_attention_layernorm.weight", {hidden}, seed++);
            add(p + "self_attn.q_proj.weight", {heads * head_dim, hidden}, seed++);
            add(p + "self_attn.k_proj.weight", {kv_heads * head_dim, hidden}, seed++);
            add(p + "self_attn.v_proj.weight", {kv_heads * head_dim, hidden}, seed++);
            add(p + "self_attn.o_proj.weight", {hidden, heads * head_dim}, seed++);
            add(p + "mlp.gate_proj.weight", {ffn, hidden}, seed++);
            add(p + "mlp.up_proj.weight", {ffn, hidden}, seed++);
            add(p + "mlp.down_proj.weight", {hidden, ffn}, seed++);
        }
        return *this;
    }
    std::vector<RawTensor> tensors() const {
        std::vector<RawTensor> ts;
        for (const auto& [name, v] : values) ts.push_back({name, "F32", shapes.at(name), f32_bytes(v)});
        return ts;
    }
    void write(const std::filesystem::path& dir) const {
        std::filesystem::create_directories(dir);
        write_file(dir / "config.json", config_json());
        write_file(dir / "model.safetensors", safetensors_file(tensors()));
    }
};

// Whether the kernel formats are implemented in this build (they may still be
// stubs on a feature branch): packing tests are skipped with a message if not.
inline bool packing_available() { return kernels::packed_bytes(WeightType::f32, 16, 16) > 0; }

}  // namespace staticlm::test
