// What a GGUF file says about its model, checked for consistency before any
// weight is touched: the architecture's hyperparameter keys (bounded like
// config.json values), the vocabulary size against token_embd and the output
// head's shape; and the ModelConfig fields the GGUF forms of families with
// uniform layers share (gguf_base_config). Which architectures load is the
// families' business (FamilyDescriptor::gguf_architectures), and every layer
// tensor is checked by name and shape against the weight plan at load
// (model/gguf_loader.cpp).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>

#include "model/config.hpp"

#include "model/gguf.hpp"
#include "staticlm/error.hpp"

namespace staticlm {
namespace {

constexpr uint64_t kMaxDim = uint64_t{1} << 20;  // as model/config.cpp
constexpr uint64_t kMaxVocab = uint64_t{1} << 24;
constexpr uint64_t kMaxLayers = 4096;
constexpr uint64_t kMaxHeads = 4096;

std::string shape(std::initializer_list<int64_t> ne) {
    std::string s = "[";
    size_t i = 0;
    for (int64_t d : ne) s += (i++ ? ", " : "") + std::to_string(d);
    return s + "]";
}

// Checks that `name` exists with exactly the dims `ne` (ggml order).
void expect_tensor(const GgufFile& f, const std::string& name, std::initializer_list<int64_t> ne,
                   bool optional = false) {
    const GgufTensor* t = f.find_tensor(name);
    if (!t) {
        if (optional) return;
        throw Error(ErrorKind::model, f.path().string() + ": missing tensor '" + name + "' (expected " +
                                          shape(ne) + ")");
    }
    bool ok = t->n_dims == int(ne.size());
    size_t i = 0;
    for (int64_t d : ne) ok = ok && t->ne[i++] == d;
    if (!ok)
        throw Error(ErrorKind::model, "wrong shape of " + t->where() + ": expected " + shape(ne) + ", got " +
                                          t->shape_string());
}

}  // namespace

GgufModelInfo read_gguf_model_info(const GgufFile& f) {
    GgufModelInfo m;
    m.architecture = std::string(f.get_string("general.architecture"));
    const std::string p = m.architecture + ".";
    auto bounded = [&](const std::string& key, uint64_t lo, uint64_t hi) {
        const uint64_t v = f.get_uint(key, hi);
        if (v < lo)
            throw Error(ErrorKind::format, f.key_where(key) + " = " + std::to_string(v) + " is below " +
                                               std::to_string(lo));
        return int(v);
    };
    m.n_layers = bounded(p + "block_count", 1, kMaxLayers);
    m.hidden = bounded(p + "embedding_length", 1, kMaxDim);
    m.ffn = bounded(p + "feed_forward_length", 1, kMaxDim);
    m.n_heads = bounded(p + "attention.head_count", 1, kMaxHeads);
    m.n_kv_heads = f.find(p + "attention.head_count_kv") ? bounded(p + "attention.head_count_kv", 1, kMaxHeads)
                                                          : m.n_heads;
    if (m.n_heads % m.n_kv_heads != 0)
        throw Error(ErrorKind::format, f.key_where(p + "attention.head_count_kv") + " = " +
                                           std::to_string(m.n_kv_heads) + " does not divide " + p +
                                           "attention.head_count = " + std::to_string(m.n_heads));
    if (f.find(p + "attention.key_length")) {
        m.head_dim = bounded(p + "attention.key_length", 1, kMaxDim);
    } else {
        if (m.hidden % m.n_heads != 0)
            throw Error(ErrorKind::format, f.path().string() + ": " + p + "embedding_length " +
                                               std::to_string(m.hidden) + " is not a multiple of " + p +
                                               "attention.head_count " + std::to_string(m.n_heads) +
                                               " and " + p + "attention.key_length is absent");
        m.head_dim = m.hidden / m.n_heads;
    }
    if (f.find(p + "attention.value_length") &&
        f.get_uint(p + "attention.value_length", kMaxDim) != uint64_t(m.head_dim))
        throw Error(ErrorKind::unsupported, f.key_where(p + "attention.value_length") +
                                                ": a value length different from the key length (" +
                                                std::to_string(m.head_dim) + ") is not supported");
    if (uint64_t(m.n_heads) * uint64_t(m.head_dim) > kMaxDim)
        throw Error(ErrorKind::format, f.path().string() + ": attention width " + std::to_string(m.n_heads) +
                                           " heads x " + std::to_string(m.head_dim) + " is too large");
    if (f.find(p + "context_length")) m.context = int64_t(f.get_uint(p + "context_length", uint64_t{1} << 31));
    if (f.find(p + "rope.freq_base")) m.rope_theta = f.get_float(p + "rope.freq_base");
    m.rms_eps = f.get_float(p + "attention.layer_norm_rms_epsilon");
    if (!(m.rms_eps > 0 && m.rms_eps < 1) || !(m.rope_theta > 0 && m.rope_theta <= double(FLT_MAX)))
        throw Error(ErrorKind::format, f.path().string() + ": " + p + "attention.layer_norm_rms_epsilon " +
                                           std::to_string(m.rms_eps) + " or " + p + "rope.freq_base " +
                                           std::to_string(m.rope_theta) + " is out of range");

    // The vocabulary: token_embd's rows must equal the tokenizer's size (and
    // <arch>.vocab_size when the converter wrote it).
    const GgufTensor* emb = f.find_tensor("token_embd.weight");
    if (!emb) throw Error(ErrorKind::model, f.path().string() + ": missing tensor 'token_embd.weight'");
    if (emb->n_dims != 2 || emb->ne[0] != m.hidden)
        throw Error(ErrorKind::model, "wrong shape of " + emb->where() + ": expected [" + std::to_string(m.hidden) +
                                          ", vocab], got " + emb->shape_string());
    if (uint64_t(emb->ne[1]) > kMaxVocab || emb->ne[1] < 1)
        throw Error(ErrorKind::model, emb->where() + ": " + std::to_string(emb->ne[1]) +
                                          " rows is not a vocabulary size");
    m.vocab = int(emb->ne[1]);
    if (f.find("tokenizer.ggml.tokens")) {
        const uint64_t n = f.get_array_count("tokenizer.ggml.tokens");
        if (n != uint64_t(m.vocab))
            throw Error(ErrorKind::model, emb->where() + " has " + std::to_string(m.vocab) +
                                              " rows but tokenizer.ggml.tokens has " + std::to_string(n) +
                                              " entries");
    }
    if (f.find(p + "vocab_size") && f.get_uint(p + "vocab_size", kMaxVocab) != uint64_t(m.vocab))
        throw Error(ErrorKind::model, f.key_where(p + "vocab_size") + " = " +
                                          std::to_string(f.get_uint(p + "vocab_size")) + " but " + emb->where() +
                                          " has " + std::to_string(m.vocab) + " rows");

    const int64_t H = m.hidden, V = m.vocab;
    expect_tensor(f, "output_norm.weight", {H});
    m.tied = !f.find_tensor("output.weight");
    expect_tensor(f, "output.weight", {H, V}, true);
    expect_tensor(f, "rope_freqs.weight", {m.head_dim / 2}, true);
    return m;
}

ModelConfig gguf_base_config(const GgufFile& f, const GgufModelInfo& m) {
    ModelConfig c;
    c.hidden = m.hidden;
    c.vocab = m.vocab;
    c.n_layers = m.n_layers;
    c.rms_eps = float(m.rms_eps);
    c.max_position = m.context >= 2 ? int(std::min<int64_t>(m.context, INT32_MAX)) : 2048;
    auto id = [&](const char* key) {
        if (!f.find(key)) return -1;
        const uint64_t v = f.get_uint(key, uint64_t(INT32_MAX));
        if (v >= uint64_t(m.vocab))
            throw Error(ErrorKind::format, f.key_where(key) + " = " + std::to_string(v) +
                                               " is outside the vocabulary (" + std::to_string(m.vocab) + ")");
        return int(v);
    };
    c.bos_id = id("tokenizer.ggml.bos_token_id");
    c.pad_id = id("tokenizer.ggml.padding_token_id");
    for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"}) {
        const int e = id(key);
        if (e >= 0 && std::find(c.eos_ids.begin(), c.eos_ids.end(), e) == c.eos_ids.end()) c.eos_ids.push_back(e);
    }
    c.add_bos = f.find("tokenizer.ggml.add_bos_token") ? f.get_bool("tokenizer.ggml.add_bos_token") : true;

    LayerConfig lc;
    lc.attention = AttentionType::full;
    lc.n_heads = m.n_heads;
    lc.n_kv_heads = m.n_kv_heads;
    lc.head_dim = m.head_dim;
    lc.ffn_dim = m.ffn;
    lc.attn_scale = float(1.0 / std::sqrt(double(m.head_dim)));
    lc.inv_freq = rope_inv_freq_default(m.head_dim, m.rope_theta);
    c.layers.assign(size_t(m.n_layers), lc);
    for (int il = 0; il < m.n_layers; ++il) c.layers[size_t(il)].kv_source = il;
    return c;
}

int64_t gguf_llama_qk_row(int64_t hf_row, int head_dim) {
    const int64_t d = head_dim, half = d / 2;
    const int64_t h = hf_row / d, r = hf_row % d;
    return h * d + 2 * (r % half) + r / half;
}

}  // namespace staticlm
