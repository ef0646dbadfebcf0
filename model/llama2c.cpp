// llama2.c legacy .bin checkpoints (7 int32 header, then fp32 tensors). Its
// RoPE rotates interleaved pairs (2i, 2i+1); q/k rows are permuted per head at
// load to the rotate-half layout the graph uses, so the rest of the engine
// sees an ordinary Llama.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "base/file.hpp"
#include "model/family.hpp"
#include "model/weight_plan.hpp"
#include "staticlm/error.hpp"

namespace staticlm::detail {

namespace {

// [n_heads][d/2][2][H] -> [n_heads][2][d/2][H]: new row h·d + half·d/2 + i is
// old row h·d + 2i + half.
std::vector<float> permute_rotate_half(const float* w, int n_heads, int head_dim, int cols) {
    std::vector<float> out(size_t(n_heads) * size_t(head_dim) * size_t(cols));
    for (int h = 0; h < n_heads; ++h)
        for (int half = 0; half < 2; ++half)
            for (int i = 0; i < head_dim / 2; ++i) {
                const size_t dst = size_t(h * head_dim + half * head_dim / 2 + i) * size_t(cols);
                const size_t src = size_t(h * head_dim + 2 * i + half) * size_t(cols);
                std::memcpy(out.data() + dst, w + src, size_t(cols) * sizeof(float));
            }
    return out;
}

// The 7 int32 of a llama2.c header, each checked against its limit.
struct Llama2cHeader {
    int32_t v[7];
};

Llama2cHeader read_header(const File& in, const std::string& name) {
    const uint64_t size = in.size();
    if (size < 28)
        throw Error(ErrorKind::format,
                    name + ": truncated llama2.c header (" + std::to_string(size) + " bytes)");
    Llama2cHeader h;
    in.read_at(0, h.v, sizeof(h.v));
    const char* names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
    const int64_t limits[] = {1 << 20, 1 << 20, 4096, 4096, 4096, 1 << 24, 1 << 24};
    for (int i = 0; i < 7; ++i) {
        const int64_t v = i == 5 ? std::abs(int64_t(h.v[i])) : int64_t(h.v[i]);
        if (v <= 0 || v > limits[i])
            throw Error(ErrorKind::format, name + ": llama2.c header " + names[i] + " = " + std::to_string(h.v[i]) +
                                               " is out of range");
    }
    return h;
}

// llama2.c ships tok<vocab>.model next to the .bin; tokenizer.model (or
// tokenizer.json) in the same directory is preferred.
std::unique_ptr<Tokenizer> tokenizer_next_to(const std::filesystem::path& file, int64_t vocab, bool prefer_json) {
    const auto dir = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
    const auto tok = dir / ("tok" + std::to_string(vocab) + ".model");
    if (!std::filesystem::exists(dir / "tokenizer.model") && std::filesystem::exists(tok))
        return load_sentencepiece(tok, dir / "tokenizer_config.json");
    return load_tokenizer(dir, prefer_json);
}

}  // namespace

std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const std::filesystem::path& file, bool prefer_json) {
    const File in(file);
    return tokenizer_next_to(file, std::abs(int64_t(read_header(in, file.string()).v[5])), prefer_json);
}

std::shared_ptr<const Model> load_llama2c(const std::filesystem::path& file, const LoadOptions& options) {
    const auto t_start = std::chrono::steady_clock::now();
    const std::string name = file.string();
    const File in(file);  // a regular file (not a FIFO or device), read with pread
    const Llama2cHeader header = read_header(in, name);
    const uint64_t size = in.size();
    const int32_t* hdr = header.v;
    const int dim = hdr[0], hidden = hdr[1], n_layers = hdr[2], n_heads = hdr[3], n_kv = hdr[4];
    const bool shared = hdr[5] > 0;
    const int64_t vocab = std::abs(int64_t(hdr[5]));
    const int seq_len = hdr[6];
    if (dim % n_heads || n_heads % n_kv || (dim / n_heads) % 2)
        throw Error(ErrorKind::format, name + ": llama2.c header dims are inconsistent (dim " + std::to_string(dim) +
                                           ", n_heads " + std::to_string(n_heads) + ", n_kv_heads " +
                                           std::to_string(n_kv) + ")");
    const int hd = dim / n_heads, kv_dim = n_kv * hd;

    // Tensor order and shapes of the file (all fp32).
    struct Part {
        std::string name;
        std::vector<int64_t> shape;
    };
    std::vector<Part> parts = {{"tok_embeddings", {vocab, dim}},
                               {"rms_att", {n_layers, dim}},
                               {"wq", {n_layers, dim, dim}},
                               {"wk", {n_layers, kv_dim, dim}},
                               {"wv", {n_layers, kv_dim, dim}},
                               {"wo", {n_layers, dim, dim}},
                               {"rms_ffn", {n_layers, dim}},
                               {"w1", {n_layers, hidden, dim}},
                               {"w2", {n_layers, dim, hidden}},
                               {"w3", {n_layers, hidden, dim}},
                               {"rms_final", {dim}},
                               {"freq_cis", {2, seq_len, hd / 2}}};
    if (!shared) parts.push_back({"wcls", {vocab, dim}});
    uint64_t floats = 0;
    std::vector<uint64_t> offset(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
        offset[i] = floats;
        uint64_t n = 1;
        for (int64_t d : parts[i].shape) n *= uint64_t(d);  // each factor < 2^24: no overflow for 3 dims
        floats += n;
    }
    if (size != 28 + 4 * floats)
        throw Error(ErrorKind::format, name + ": llama2.c file is " + std::to_string(size) + " bytes, the header implies " +
                                           std::to_string(28 + 4 * floats));
    std::vector<float> data(floats);
    in.read_at(28, data.data(), size_t(4 * floats));
    auto part = [&](const char* p) {
        for (size_t i = 0; i < parts.size(); ++i)
            if (parts[i].name == p) return data.data() + offset[i];
        return data.data();
    };

    auto model = std::make_shared<Model>();
    ModelConfig& c = model->config_;
    c.architecture = "llama2.c";
    c.family = std::string(llama2c_family().name);
    c.hidden = dim;
    c.vocab = int(vocab);
    c.n_layers = n_layers;
    c.rms_eps = 1e-5f;
    c.activation = Activation::silu;
    c.tie_embeddings = shared;
    c.max_position = seq_len;
    c.bos_id = 1;
    c.eos_ids = {2};
    c.add_bos = true;
    LayerConfig lc;
    lc.n_heads = n_heads;
    lc.n_kv_heads = n_kv;
    lc.head_dim = hd;
    lc.ffn_dim = hidden;
    lc.attn_scale = float(1.0 / std::sqrt(double(hd)));
    lc.inv_freq = rope_inv_freq_default(hd, 10000.0);
    c.layers.assign(size_t(n_layers), lc);
    for (int il = 0; il < n_layers; ++il) c.layers[size_t(il)].kv_source = il;

    std::vector<WeightEntry> plan = plan_weights(c, model->weights_, TensorNaming{});
    // Views of the file's tensors under their Hugging Face names; q/k permuted copies.
    std::vector<std::vector<float>> permuted;
    std::vector<TensorView> views;
    views.reserve(plan.size());
    for (const WeightEntry& e : plan) {
        const size_t il = size_t(std::max(e.layer, 0));
        const size_t dd = size_t(dim) * size_t(dim), kd = size_t(kv_dim) * size_t(dim), hdim = size_t(hidden) * size_t(dim);
        const float* p = nullptr;
        switch (e.role) {
            case WeightRole::embed: p = part("tok_embeddings"); break;
            case WeightRole::final_norm: p = part("rms_final"); break;
            case WeightRole::lm_head: p = part("wcls"); break;
            case WeightRole::attn_norm: p = part("rms_att") + il * size_t(dim); break;
            case WeightRole::ffn_norm: p = part("rms_ffn") + il * size_t(dim); break;
            case WeightRole::q:
                permuted.push_back(permute_rotate_half(part("wq") + il * dd, n_heads, hd, dim));
                p = permuted.back().data();
                break;
            case WeightRole::k:
                permuted.push_back(permute_rotate_half(part("wk") + il * kd, n_kv, hd, dim));
                p = permuted.back().data();
                break;
            case WeightRole::v: p = part("wv") + il * kd; break;
            case WeightRole::o: p = part("wo") + il * dd; break;
            case WeightRole::gate: p = part("w1") + il * hdim; break;
            case WeightRole::down: p = part("w2") + il * hdim; break;
            case WeightRole::up: p = part("w3") + il * hdim; break;
            default: throw Error(ErrorKind::model, name + ": no llama2.c tensor for '" + e.name + "'");
        }
        const std::string& n = e.name;
        TensorView v;
        v.name = n;
        v.dtype = DType::f32;
        v.shape = e.kind == WeightEntry::Kind::matrix ? std::vector<int64_t>{e.n, e.k} : std::vector<int64_t>{e.n};
        v.numel = uint64_t(e.n) * uint64_t(e.kind == WeightEntry::Kind::matrix ? e.k : 1);
        v.bytes = size_t(v.numel) * 4;
        v.data = reinterpret_cast<const std::byte*>(p);
        v.file = &file;
        views.push_back(std::move(v));
    }
    std::vector<const TensorView*> src;
    for (const TensorView& v : views) src.push_back(&v);
    convert_weights(*model, plan, src, options);
    finish_weights(*model, std::move(plan), options.act_bits);
    if (options.load_tokenizer) model->tokenizer_ = tokenizer_next_to(file, vocab, options.prefer_tokenizer_json);
    model->load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    return model;
}

}  // namespace staticlm::detail
