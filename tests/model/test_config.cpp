// config.json parsing: Llama (GQA, head_dim, llama3 RoPE on all three
// branches), Gemma 4 (E2B layer map, KV sharing, double-wide MLP, partial
// rotary), special tokens from the side files, and the error cases.
#include <doctest/doctest.h>


#include <algorithm>
#include <cmath>

#include "model/config.hpp"
#include "model/synthetic.hpp"
#include "staticlm/error.hpp"
#include "tests/model/st_writer.hpp"
#include "tests/support.hpp"

using namespace staticlm;
using namespace staticlm::test;

namespace {

const std::string kLlamaBase = R"("architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8, "intermediate_size": 96,
  "vocab_size": 100)";

ModelConfig llama(const std::string& extra) {
    return parse_model_config("{" + kLlamaBase + (extra.empty() ? "" : ", " + extra) + "}", "config.json");
}

// A Gemma 4 text config in the form transformers 5.24 saves (per_layer_config).
const std::string kGemmaSmall = R"({
  "architectures": ["Gemma4ForCausalLM"], "model_type": "gemma4_text",
  "hidden_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
  "head_dim": 16, "intermediate_size": 48, "vocab_size": 300, "sliding_window": 4,
  "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention"],
  "per_layer_config": {"1": {"head_dim": 32}, "3": {"head_dim": 32}, "5": {"head_dim": 32}},
  "num_kv_shared_layers": 2, "use_double_wide_mlp": true,
  "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 300,
  "final_logit_softcapping": 30.0, "rms_norm_eps": 1e-06, "tie_word_embeddings": true,
  "attention_k_eq_v": false,
  "rope_parameters": {
    "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0, "rope_type": "proportional"},
    "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
  "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0
})";

std::string replace(std::string s, const std::string& from, const std::string& to) {
    const size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("config: rope helpers against hand-computed values") {
    // theta 10000, d 8: inv = 10000^(-i/4) = 1, 0.1, 0.01, 0.001.
    const std::vector<float> inv = rope_inv_freq_default(8, 10000.0);
    REQUIRE(inv.size() == 4);
    CHECK(inv[0] == 1.0f);
    CHECK(inv[1] == doctest::Approx(0.1).epsilon(1e-6));
    CHECK(inv[2] == doctest::Approx(0.01).epsilon(1e-6));
    CHECK(inv[3] == doctest::Approx(0.001).epsilon(1e-6));
    // llama3, factor 8, low 1, high 4, orig 1024: wavelens 2π·{1, 10, 100, 1000}
    // → 6.3, 63 < 256 unchanged; 628 in [256, 1024] smoothed with
    // s = (1024/628.32 - 1)/3 = 0.2099 → 0.0030868; 6283 > 1024 → 0.001/8.
    std::vector<float> l3 = inv;
    rope_apply_llama3(l3, 8.0, 1.0, 4.0, 1024.0);
    CHECK(l3[0] == inv[0]);
    CHECK(l3[1] == inv[1]);
    CHECK(l3[2] == doctest::Approx(0.003086760967011274).epsilon(1e-5));
    CHECK(l3[3] == doctest::Approx(0.000125).epsilon(1e-5));
}

TEST_CASE("config: Llama fields, defaults and rope forms") {
    ModelConfig c = llama(R"("num_key_value_heads": 2, "rms_norm_eps": 1e-5, "tie_word_embeddings": true,
                             "bos_token_id": 128000, "eos_token_id": [128001, 128009], "max_position_embeddings": 4096)");
    CHECK(c.family == "llama");
    CHECK(c.architecture == "LlamaForCausalLM");
    CHECK(c.hidden == 64);
    CHECK(c.n_layers == 2);
    CHECK(c.vocab == 100);
    CHECK(c.rms_eps == doctest::Approx(1e-5));
    CHECK(c.tie_embeddings);
    CHECK(c.bos_id == 128000);
    CHECK(c.eos_ids == std::vector<int>{128001, 128009});
    CHECK(c.max_position == 4096);
    CHECK(c.activation == Activation::silu);
    CHECK(c.embed_scale == 1.0f);
    CHECK(c.final_softcap == 0.0f);
    REQUIRE(c.layers.size() == 2);
    for (int il = 0; il < 2; ++il) {
        const LayerConfig& lc = c.layers[size_t(il)];
        CHECK(lc.attention == AttentionType::full);
        CHECK(lc.n_heads == 8);
        CHECK(lc.n_kv_heads == 2);
        CHECK(lc.head_dim == 8);  // 64 / 8
        CHECK(lc.window == 0);
        CHECK(lc.kv_source == il);
        CHECK(lc.ffn_dim == 96);
        CHECK(lc.attn_scale == doctest::Approx(1.0 / std::sqrt(8.0)));
        CHECK(lc.inv_freq == rope_inv_freq_default(8, 10000.0));
        CHECK(!lc.qk_norm);
        CHECK(!lc.sandwich_norms);
    }
    // Defaults: kv heads = heads, untied, eos 2 only when given.
    c = llama("");
    CHECK(c.layers[0].n_kv_heads == 8);
    CHECK(!c.tie_embeddings);
    // head_dim given and different from H / heads.
    c = llama(R"("head_dim": 12)");
    CHECK(c.layers[1].head_dim == 12);
    CHECK(c.layers[1].inv_freq.size() == 6);
    CHECK(c.layers[1].attn_scale == doctest::Approx(1.0 / std::sqrt(12.0)));
    // Older top-level rope_theta + rope_scaling{type: llama3}.
    const std::vector<float> base = rope_inv_freq_default(8, 10000.0);
    std::vector<float> expect = base;
    rope_apply_llama3(expect, 8.0, 1.0, 4.0, 1024.0);
    c = llama(R"("rope_theta": 10000.0, "rope_scaling": {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
              "high_freq_factor": 4.0, "original_max_position_embeddings": 1024})");
    CHECK(c.layers[0].inv_freq == expect);
    // transformers-5 rope_parameters.
    c = llama(R"("rope_parameters": {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
              "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 1024})");
    CHECK(c.layers[0].inv_freq == expect);
    c = llama(R"("rope_parameters": {"rope_type": "default", "rope_theta": 500000.0})");
    CHECK(c.layers[0].inv_freq == rope_inv_freq_default(8, 500000.0));
    c = llama(R"("rope_scaling": null, "rope_theta": 500000.0)");
    CHECK(c.layers[0].inv_freq == rope_inv_freq_default(8, 500000.0));
}

TEST_CASE("config: Llama errors") {
    expect_error([] { llama(R"("rope_scaling": {"rope_type": "longrope", "factor": 4.0})"); }, ErrorKind::unsupported,
                 {"unsupported rope_scaling type 'longrope' in config.json"});
    expect_error([] { llama(R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0, "mscale": 0.7, "mscale_all_dim": 1})"); },
                 ErrorKind::unsupported, {"config.json", "mscale"});
    expect_error([] { llama(R"("rope_scaling": {"rope_type": "yarn", "factor": 0.5})"); }, ErrorKind::format,
                 {"config.json", "rope_scaling.factor"});
    expect_error([] { llama(R"("rope_parameters": {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0})"); },
                 ErrorKind::unsupported, {"'dynamic'", "config.json"});
    expect_error([] { llama(R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0})"); }, ErrorKind::format,
                 {"config.json", "low_freq_factor"});
    expect_error([] { llama(R"("num_key_value_heads": 3)"); }, ErrorKind::format,
                 {"config.json", "num_attention_heads", "num_key_value_heads"});
    expect_error([] { llama(R"("head_dim": 0)"); }, ErrorKind::format, {"config.json", "head_dim"});
    expect_error([] { llama(R"("head_dim": 7)"); }, ErrorKind::format, {"config.json", "head_dim"});
    expect_error([] { llama(R"("num_key_value_heads": -2)"); }, ErrorKind::format, {"num_key_value_heads"});
    expect_error([] { llama(R"("num_key_value_heads": 0)"); }, ErrorKind::format, {"num_key_value_heads"});
    expect_error([] { llama(R"("head_dim": 99999999999)"); }, ErrorKind::format, {"head_dim"});
    expect_error([] { llama(R"("head_dim": 1048576)"); }, ErrorKind::format, {"head_dim"});  // × 8 heads
    expect_error([] { llama(R"("eos_token_id": "x")"); }, ErrorKind::format, {"eos_token_id"});
    expect_error([] { llama(R"("hidden_act": "relu")"); }, ErrorKind::unsupported, {"hidden_act", "relu"});
    expect_error([] { parse_model_config(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64})", "c.json"); },
                 ErrorKind::format, {"c.json", "num_hidden_layers"});
    expect_error([] { parse_model_config("{\"hidden_size\": 64,", "c.json"); }, ErrorKind::format, {"c.json", "JSON"});
    expect_error([] { parse_model_config(R"({"architectures": ["MambaForCausalLM"], "model_type": "mamba"})", "c.json"); },
                 ErrorKind::unsupported, {"c.json", "MambaForCausalLM", "mamba"});
    expect_error([] { parse_model_config(R"({"model_type": "gpt2"})", "c.json"); }, ErrorKind::unsupported,
                 {"c.json", "gpt2"});
}

namespace {

const std::string kGemma3Base = R"("architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
  "hidden_size": 64, "num_hidden_layers": 7, "num_attention_heads": 4, "num_key_value_heads": 1,
  "head_dim": 16, "intermediate_size": 96, "vocab_size": 300, "sliding_window": 8)";

ModelConfig gemma3(const std::string& extra) {
    return parse_model_config("{" + kGemma3Base + (extra.empty() ? "" : ", " + extra) + "}", "config.json");
}

}  // namespace

TEST_CASE("config: Gemma 3 layer types, RoPE per layer type, scales and defaults") {
    // Released form: sliding_window_pattern (default 6), rope_theta + rope_scaling
    // for full layers, rope_local_base_freq for sliding ones.
    const ModelConfig c = gemma3(R"("rope_scaling": {"rope_type": "linear", "factor": 8.0},
        "query_pre_attn_scalar": 64, "rope_local_base_freq": 10000.0, "rope_theta": 1000000.0)");
    CHECK(c.family == "gemma3");
    CHECK(c.tie_embeddings);
    CHECK(c.norm_weight_offset == 1.0f);
    CHECK(c.activation == Activation::gelu_tanh);
    CHECK(c.embed_scale == 8.0f);
    CHECK(c.final_softcap == 0.0f);
    CHECK(c.bos_id == 2);
    CHECK(c.eos_ids == std::vector<int>{1});
    for (int il = 0; il < 7; ++il) {
        const LayerConfig& l = c.layers[size_t(il)];
        const bool full = il == 5;
        CHECK_MESSAGE((l.attention == AttentionType::full) == full, il);
        CHECK(l.window == (full ? 0 : 8));
        CHECK(l.qk_norm);
        CHECK(l.sandwich_norms);
        CHECK(l.attn_scale == doctest::Approx(0.125));
        CHECK(l.kv_source == il);
        // inv_freq[1] = theta^(-2/16), / 8 on full layers only.
        const double want = full ? std::pow(1e6, -0.125) / 8 : std::pow(1e4, -0.125);
        CHECK(l.inv_freq[1] == doctest::Approx(want).epsilon(1e-6));
    }
    // sliding_window_pattern 2, the older _sliding_window_pattern, and layer_types winning over both.
    CHECK(gemma3(R"("sliding_window_pattern": 2)").layers[1].attention == AttentionType::full);
    CHECK(gemma3(R"("sliding_window_pattern": 2)").layers[2].attention == AttentionType::sliding);
    CHECK(gemma3(R"("_sliding_window_pattern": 3)").layers[2].attention == AttentionType::full);
    const ModelConfig t = gemma3(R"("_sliding_window_pattern": 3, "layer_types": ["full_attention",
        "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
        "full_attention"])");
    CHECK(t.layers[0].attention == AttentionType::full);
    CHECK(t.layers[2].attention == AttentionType::sliding);
    // transformers 5 rope_parameters per layer type; a final softcap.
    const ModelConfig r = gemma3(R"("final_logit_softcapping": 3.0, "rope_parameters": {
        "full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 500000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})");
    CHECK(r.final_softcap == 3.0f);
    CHECK(r.layers[5].inv_freq[1] == doctest::Approx(std::pow(5e5, -0.125) / 4).epsilon(1e-6));
    CHECK(r.layers[0].inv_freq[1] == doctest::Approx(std::pow(1e4, -0.125)).epsilon(1e-6));
    // attn_logit_softcapping is not read by transformers' Gemma 3 either.
    CHECK_NOTHROW(gemma3(R"("attn_logit_softcapping": 50.0)"));
    // The multimodal form: text_config, tie from the top level.
    const ModelConfig m = parse_model_config(R"({"architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3", "tie_word_embeddings": false, "text_config": {)" + kGemma3Base + "}}", "c.json");
    CHECK(m.family == "gemma3");
    CHECK_FALSE(m.tie_embeddings);
    CHECK(m.layers.size() == 7);
}

TEST_CASE("config: Gemma 3 errors") {
    expect_error([] { gemma3(R"("hidden_activation": "gelu")"); }, ErrorKind::unsupported,
                 {"config.json", "hidden_activation", "'gelu'"});
    expect_error([] { gemma3(R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0})"); }, ErrorKind::unsupported,
                 {"config.json", "rope type 'yarn'"});
    expect_error([] { gemma3(R"("rope_scaling": {"rope_type": "linear", "factor": 0.5})"); }, ErrorKind::format,
                 {"config.json", "factor"});
    expect_error([] { gemma3(R"("layer_types": ["full_attention"])"); }, ErrorKind::format,
                 {"config.json", "layer_types"});
    expect_error([] { gemma3(R"("layer_types": ["full_attention", "x", "full_attention", "full_attention",
        "full_attention", "full_attention", "full_attention"])"); }, ErrorKind::unsupported, {"layer_types", "[1]"});
    expect_error([] { gemma3(R"("num_key_value_heads": 3)"); }, ErrorKind::format, {"num_key_value_heads"});
    expect_error([] { gemma3(R"("query_pre_attn_scalar": 0)"); }, ErrorKind::format, {"query_pre_attn_scalar"});
    expect_error([] { gemma3(R"("use_bidirectional_attention": true)"); }, ErrorKind::unsupported,
                 {"use_bidirectional_attention"});
    expect_error([] { parse_model_config(R"({"architectures": ["Gemma3ForConditionalGeneration"]})", "c.json"); },
                 ErrorKind::format, {"c.json", "text_config"});
}

TEST_CASE("config: the built-in Qwen3-0.6B shape") {
    const ModelConfig c = builtin_config("qwen3-0.6b");
    CHECK(c.family == "qwen3");
    CHECK(c.hidden == 1024);
    CHECK(c.n_layers == 28);
    CHECK(c.vocab == 151936);
    CHECK(c.tie_embeddings);
    CHECK_FALSE(c.add_bos);
    REQUIRE(c.layers.size() == 28);
    for (const LayerConfig& lc : c.layers) {
        CHECK(lc.n_heads == 16);
        CHECK(lc.n_kv_heads == 8);
        CHECK(lc.head_dim == 128);
        CHECK(lc.ffn_dim == 3072);
        CHECK(lc.qk_norm);
        CHECK(lc.attention == AttentionType::full);
    }
}

TEST_CASE("config: Gemma-4-E2B layer map") {
    const ModelConfig c = builtin_config("gemma-4-e2b");
    CHECK(c.family == "gemma4");
    CHECK(c.hidden == 1536);
    CHECK(c.n_layers == 35);
    CHECK(c.vocab == 262144);
    CHECK(c.per_layer_dim == 256);
    CHECK(c.per_layer_vocab == 262144);
    CHECK(c.final_softcap == 30.0f);
    CHECK(c.tie_embeddings);
    CHECK(c.activation == Activation::gelu_tanh);
    CHECK(c.embed_scale == doctest::Approx(39.191835884530846).epsilon(1e-7));
    CHECK(c.rms_eps == doctest::Approx(1e-6));
    REQUIRE(c.layers.size() == 35);
    for (int il = 0; il < 35; ++il) {
        const LayerConfig& lc = c.layers[size_t(il)];
        const bool full = il % 5 == 4;
        CAPTURE(il);
        CHECK(lc.attention == (full ? AttentionType::full : AttentionType::sliding));
        CHECK(lc.n_heads == 8);
        CHECK(lc.n_kv_heads == 1);
        CHECK(lc.head_dim == (full ? 512 : 256));
        CHECK(lc.window == (full ? 0 : 512));
        CHECK(lc.kv_source == (il < 15 ? il : (full ? 14 : 13)));
        CHECK(lc.ffn_dim == (il < 15 ? 6144 : 12288));
        CHECK(lc.attn_scale == 1.0f);
        CHECK(lc.qk_norm);
        CHECK(lc.v_norm);
        CHECK(lc.sandwich_norms);
        REQUIRE(lc.inv_freq.size() == size_t(lc.head_dim / 2));
        if (full) {
            // proportional, partial 0.25: 64 rotated pairs with exponent over d = 512.
            CHECK(lc.inv_freq[0] == 1.0f);
            CHECK(lc.inv_freq[1] == doctest::Approx(0.9474635256553754).epsilon(1e-6));
            CHECK(lc.inv_freq[63] == doctest::Approx(0.033376246942920386).epsilon(1e-5));
            for (int i = 64; i < 256; ++i) CHECK(lc.inv_freq[size_t(i)] == 0.0f);
        } else {
            CHECK(lc.inv_freq[1] == doctest::Approx(0.930572040929699).epsilon(1e-6));
            for (float f : lc.inv_freq) CHECK(f > 0.0f);
        }
    }
}

TEST_CASE("config: Gemma 4 as saved by transformers 5.24 (per_layer_config), both namings") {
    const ModelConfig c = parse_model_config(kGemmaSmall, "config.json");
    CHECK(c.architecture == "Gemma4ForCausalLM");
    REQUIRE(c.layers.size() == 6);
    const int hd[] = {16, 32, 16, 32, 16, 32};
    const int src[] = {0, 1, 2, 3, 2, 3};
    for (int il = 0; il < 6; ++il) {
        CAPTURE(il);
        CHECK(c.layers[size_t(il)].head_dim == hd[il]);
        CHECK(c.layers[size_t(il)].n_kv_heads == 2);
        CHECK(c.layers[size_t(il)].kv_source == src[il]);
        CHECK(c.layers[size_t(il)].ffn_dim == (il >= 4 ? 96 : 48));
        CHECK(c.layers[size_t(il)].window == (il % 2 ? 0 : 4));
    }
    // 32 * 0.25 / 2 = 4 rotated pairs of 16.
    for (int i = 0; i < 16; ++i) CHECK((c.layers[1].inv_freq[size_t(i)] != 0.0f) == (i < 4));
    CHECK(c.bos_id == 2);
    CHECK(c.eos_ids == std::vector<int>{1});
    CHECK(c.pad_id == 0);

    // The same text config nested in the multimodal form.
    const std::string nested = R"({"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
        "vision_config": {"model_type": "gemma4_vision"}, "text_config": )" + kGemmaSmall + "}";
    const ModelConfig n = parse_model_config(nested, "config.json");
    CHECK(n.architecture == "Gemma4ForConditionalGeneration");
    REQUIRE(n.layers.size() == 6);
    for (int il = 0; il < 6; ++il) {
        CHECK(n.layers[size_t(il)].kv_source == c.layers[size_t(il)].kv_source);
        CHECK(n.layers[size_t(il)].inv_freq == c.layers[size_t(il)].inv_freq);
    }
}

TEST_CASE("config: Gemma 4 errors") {
    expect_error([] { parse_model_config(replace(kGemmaSmall, "\"num_kv_shared_layers\": 2", "\"num_kv_shared_layers\": 6"), "config.json"); },
                 ErrorKind::format, {"config.json", "num_kv_shared_layers"});
    expect_error([] { parse_model_config(replace(kGemmaSmall, "\"sliding_attention\", \"full_attention\"]", "\"full_attention\"]"), "config.json"); },
                 ErrorKind::format, {"config.json", "layer_types", "5 entries", "6"});
    expect_error([] { parse_model_config(replace(kGemmaSmall, "\"sliding_attention\", \"full_attention\", \"sliding",
                                                 "\"chunked_attention\", \"full_attention\", \"sliding"), "config.json"); },
                 ErrorKind::unsupported, {"config.json", "layer_types", "chunked_attention"});
    // Shared layers of a type with no producer of that type.
    expect_error([] { parse_model_config(replace(replace(kGemmaSmall, "\"num_kv_shared_layers\": 2", "\"num_kv_shared_layers\": 5"),
                                                 "\"per_layer_config\"", "\"x\""), "config.json"); },
                 ErrorKind::format, {"num_kv_shared_layers"});
    {
        // attention_k_eq_v: full layers take V from k_proj; sliding layers keep v_proj.
        const ModelConfig c = parse_model_config(
            replace(kGemmaSmall, "\"attention_k_eq_v\": false", "\"attention_k_eq_v\": true"), "config.json");
        for (const LayerConfig& l : c.layers) CHECK(l.k_eq_v == (l.attention == AttentionType::full));
    }
    expect_error([] { parse_model_config(replace(kGemmaSmall, "\"rope_type\": \"proportional\"", "\"rope_type\": \"yarn\""), "config.json"); },
                 ErrorKind::unsupported, {"config.json", "yarn"});
    expect_error([] { parse_model_config(replace(kGemmaSmall, "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3"), "config.json"); },
                 ErrorKind::format, {"config.json", "num_attention_heads"});
    expect_error([] { parse_model_config(replace(kGemmaSmall, "\"hidden_size\": 64", "\"hidden_size\": -64"), "config.json"); },
                 ErrorKind::format, {"config.json", "hidden_size"});
    expect_error([] { parse_model_config(replace(kGemmaSmall, "\"hidden_size_per_layer_input\": 8", "\"hidden_size_per_layer_input\": 2000000"), "config.json"); },
                 ErrorKind::format, {"config.json", "hidden_size_per_layer_input"});
    expect_error([] { parse_model_config(R"({"architectures": ["Gemma4ForConditionalGeneration"]})", "config.json"); },
                 ErrorKind::format, {"config.json", "text_config"});
    expect_error([] { builtin_config("gpt-5"); }, ErrorKind::config, {"gpt-5", "tiny-llama"});
}

TEST_CASE("config: more bad Gemma 4 configs are clear errors") {
    auto parse = [](const std::string& text) { return parse_model_config(text, "config.json"); };
    auto with = [](const std::string& from, const std::string& to) { return replace(kGemmaSmall, from, to); };
    const std::string shared2 = "\"num_kv_shared_layers\": 2";
    // KV sharing: negative, all layers, every layer but one.
    expect_error([&] { parse(with(shared2, "\"num_kv_shared_layers\": -1")); }, ErrorKind::format,
                 {"config.json", "num_kv_shared_layers", "-1"});
    expect_error([&] { parse(with(shared2, "\"num_kv_shared_layers\": 7")); }, ErrorKind::format,
                 {"num_kv_shared_layers", "= 7", "num_hidden_layers = 6"});
    expect_error([&] { parse(with(shared2, "\"num_kv_shared_layers\": 5")); }, ErrorKind::format,
                 {"num_kv_shared_layers", "full_attention", "layer 1"});
    // layer_types: wrong length either way, not a list, not strings, unknown type.
    expect_error([&] { parse(with("\"sliding_attention\", \"full_attention\"]", "\"sliding_attention\", \"full_attention\", \"full_attention\"]")); },
                 ErrorKind::format, {"layer_types", "7 entries", "num_hidden_layers = 6"});
    expect_error([&] { parse(with("\"num_hidden_layers\": 6", "\"num_hidden_layers\": 4")); }, ErrorKind::format,
                 {"layer_types", "6 entries", "num_hidden_layers = 4"});
    expect_error([&] { parse(with("\"layer_types\": [", "\"layer_types\": \"sliding_attention\", \"x\": [")); },
                 ErrorKind::format, {"layer_types", "must be a list"});
    expect_error([&] { parse(with("[\"sliding_attention\", \"full_attention\", \"sliding", "[1, \"full_attention\", \"sliding")); },
                 ErrorKind::format, {"layer_types", "strings"});
    expect_error([&] { parse(with("\"sliding_attention\", \"full_attention\"]", "\"global\", \"full_attention\"]")); },
                 ErrorKind::unsupported, {"layer_types", "[4]", "global"});
    // RoPE: unknown types on either layer type, bad factors, wrong shapes.
    expect_error([&] { parse(with("\"rope_type\": \"default\"", "\"rope_type\": \"linear\"")); }, ErrorKind::unsupported,
                 {"config.json", "linear", "sliding_attention", "default, proportional"});
    expect_error([&] { parse(with("\"rope_type\": \"proportional\"", "\"rope_type\": \"llama3\"")); }, ErrorKind::unsupported,
                 {"llama3", "full_attention"});
    expect_error([&] { parse(with("\"rope_type\": \"default\"", "\"rope_type\": \"default\", \"partial_rotary_factor\": 0.5")); },
                 ErrorKind::unsupported, {"sliding_attention", "partial_rotary_factor"});
    expect_error([&] { parse(with("\"partial_rotary_factor\": 0.25", "\"partial_rotary_factor\": 1.5")); }, ErrorKind::format,
                 {"rope_parameters.full_attention.partial_rotary_factor", "(0, 1]"});
    expect_error([&] { parse(with("\"partial_rotary_factor\": 0.25", "\"partial_rotary_factor\": 0")); }, ErrorKind::format,
                 {"partial_rotary_factor"});
    expect_error([&] { parse(with("\"rope_theta\": 10000.0", "\"rope_theta\": -1")); }, ErrorKind::format,
                 {"rope_parameters.sliding_attention.rope_theta"});
    expect_error([&] { parse(with("\"rope_parameters\": {", "\"rope_parameters\": 5, \"x\": {")); }, ErrorKind::format,
                 {"rope_parameters", "object"});
    // Window, per-layer overrides, feature switches, scalars.
    expect_error([&] { parse(with("\"sliding_window\": 4", "\"sliding_window\": 0")); }, ErrorKind::format,
                 {"config.json", "sliding_window"});
    expect_error([&] { parse(with("\"per_layer_config\": {\"1\"", "\"per_layer_config\": {\"9\"")); }, ErrorKind::format,
                 {"per_layer_config", "'9'", "layer index"});
    expect_error([&] { parse(with("{\"head_dim\": 32}, \"3\"", "{\"intermediate_size\": 32}, \"3\"")); }, ErrorKind::unsupported,
                 {"per_layer_config.1.intermediate_size"});
    expect_error([&] { parse(with("{\"head_dim\": 32}, \"3\"", "{\"head_dim\": 33}, \"3\"")); }, ErrorKind::format,
                 {"head_dim", "layer 1", "even"});
    // Layer 5 reads layer 3's K/V but would have a different KV head count.
    expect_error([&] { parse(with("\"5\": {\"head_dim\": 32}", "\"5\": {\"head_dim\": 32, \"num_key_value_heads\": 1}")); },
                 ErrorKind::format, {"layer 5", "layer 3", "head shape"});
    expect_error([&] { parse(with("\"use_double_wide_mlp\": true", "\"use_double_wide_mlp\": \"yes\"")); }, ErrorKind::format,
                 {"use_double_wide_mlp", "true or false"});
    expect_error([&] { parse(with("\"attention_k_eq_v\": false", "\"attention_k_eq_v\": false, \"enable_moe_block\": true")); },
                 ErrorKind::unsupported, {"enable_moe_block"});
    expect_error([&] { parse(with("\"attention_k_eq_v\": false", "\"attention_k_eq_v\": false, \"hidden_activation\": \"silu\"")); },
                 ErrorKind::unsupported, {"hidden_activation", "silu"});
    expect_error([&] { parse(with("\"attention_k_eq_v\": false", "\"attention_k_eq_v\": false, \"attention_bias\": true")); },
                 ErrorKind::unsupported, {"attention_bias"});
    expect_error([&] { parse(with("\"final_logit_softcapping\": 30.0", "\"final_logit_softcapping\": -1.0")); }, ErrorKind::format,
                 {"final_logit_softcapping"});
    expect_error([&] { parse(with("\"rms_norm_eps\": 1e-06", "\"rms_norm_eps\": 0")); }, ErrorKind::format,
                 {"rms_norm_eps"});
    // The released form (global_head_dim, num_global_key_value_heads) has its own checks.
    const std::string released = with("\"per_layer_config\": {\"1\": {\"head_dim\": 32}, \"3\": {\"head_dim\": 32}, \"5\": {\"head_dim\": 32}}",
                                      "\"global_head_dim\": 32");
    CHECK(parse(released).layers[5].head_dim == 32);
    expect_error([&] { parse(replace(released, "\"global_head_dim\": 32", "\"global_head_dim\": 31")); }, ErrorKind::format,
                 {"head_dim", "even"});
    expect_error([&] { parse(replace(replace(released, "\"attention_k_eq_v\": false", "\"attention_k_eq_v\": true"),
                                     "\"global_head_dim\": 32", "\"global_head_dim\": 32, \"num_global_key_value_heads\": 3")); },
                 ErrorKind::format, {"num_attention_heads", "3 KV heads"});
    // A sliding last layer is forced to full attention, as transformers does.
    const ModelConfig forced = parse(with("\"sliding_attention\", \"full_attention\"]", "\"sliding_attention\", \"sliding_attention\"]"));
    CHECK(forced.layers[5].attention == AttentionType::full);
    CHECK(forced.layers[5].window == 0);
}

TEST_CASE("config: read_model_config with generation and tokenizer configs") {
    TempDir d;
    expect_error([&] { read_model_config(d.path / "absent"); }, ErrorKind::io, {"absent"});
    expect_error([&] { read_model_config(d.path); }, ErrorKind::io, {"config.json"});
    write_file(d.path / "config.json", "{" + kLlamaBase + R"(, "bos_token_id": 1, "eos_token_id": 2})");
    ModelConfig c = read_model_config(d.path);
    CHECK(c.eos_ids == std::vector<int>{2});
    CHECK(c.add_bos);
    write_file(d.path / "generation_config.json", R"({"bos_token_id": 1, "eos_token_id": [2, 7, 9]})");
    write_file(d.path / "tokenizer_config.json", R"({"add_bos_token": false, "bos_token": "<s>"})");
    c = read_model_config(d.path);
    CHECK(c.eos_ids == std::vector<int>{2, 7, 9});
    CHECK(!c.add_bos);
    write_file(d.path / "generation_config.json", R"({"eos_token_id": 5)");
    expect_error([&] { read_model_config(d.path); }, ErrorKind::format, {"generation_config.json"});
    write_file(d.path / "generation_config.json", R"({"eos_token_id": 5})");
    write_file(d.path / "tokenizer_config.json", R"({"add_bos_token": "yes"})");
    expect_error([&] { read_model_config(d.path); }, ErrorKind::format, {"tokenizer_config.json", "add_bos_token"});
}

TEST_CASE("config: built-in llama configs") {
    const ModelConfig l = builtin_config("llama-3.2-1b");
    CHECK(l.hidden == 2048);
    CHECK(l.n_layers == 16);
    CHECK(l.vocab == 128256);
    CHECK(l.tie_embeddings);
    CHECK(l.layers[0].n_heads == 32);
    CHECK(l.layers[0].n_kv_heads == 8);
    CHECK(l.layers[0].head_dim == 64);
    CHECK(l.layers[0].ffn_dim == 8192);
    CHECK(l.eos_ids == std::vector<int>{128001, 128008, 128009});
    std::vector<float> expect = rope_inv_freq_default(64, 500000.0);
    rope_apply_llama3(expect, 32.0, 1.0, 4.0, 8192.0);
    CHECK(l.layers[0].inv_freq == expect);
    CHECK(l.layers[0].inv_freq[31] == doctest::Approx(rope_inv_freq_default(64, 500000.0)[31] / 32.0f));
    const ModelConfig t = builtin_config("tiny-llama");
    CHECK(t.hidden == 256);
    CHECK(t.n_layers == 4);
    CHECK(t.layers[0].n_heads == 8);
    CHECK(t.layers[0].n_kv_heads == 2);
    CHECK(t.layers[0].ffn_dim == 768);
    CHECK(t.vocab == 1024);
}

namespace {

// A Llama-like config of `arch` / `type` with 4 layers (hidden 64, 4 heads / 2 kv).
ModelConfig llama_like(const std::string& arch, const std::string& type, const std::string& extra) {
    return parse_model_config(R"({"architectures": [")" + arch + R"("], "model_type": ")" + type +
                                  R"(", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 100, "rope_theta": 1000000.0)" +
                                  (extra.empty() ? "" : ", " + extra) + "}",
                              "config.json");
}

std::vector<int> windows(const ModelConfig& c) {
    std::vector<int> w;
    for (const LayerConfig& l : c.layers) w.push_back(l.attention == AttentionType::sliding ? l.window : 0);
    return w;
}

}  // namespace

TEST_CASE("config: Qwen2, Qwen3 and Mistral on Llama's reader") {
    // Qwen2: q/k/v biases, no BOS; the window counts only with use_sliding_window,
    // from max_window_layers on (transformers 5.24 Qwen2Config.layer_types).
    ModelConfig c = llama_like("Qwen2ForCausalLM", "qwen2", R"("sliding_window": 32768, "max_window_layers": 2)");
    CHECK(c.family == "qwen2");
    CHECK(c.layers[0].qkv_bias);
    CHECK(!c.layers[0].qk_norm);
    CHECK(!c.add_bos);
    CHECK(windows(c) == std::vector<int>{0, 0, 0, 0});
    c = llama_like("Qwen2ForCausalLM", "qwen2", R"("use_sliding_window": true, "sliding_window": 8, "max_window_layers": 2)");
    CHECK(windows(c) == std::vector<int>{0, 0, 8, 8});
    c = llama_like("Qwen2ForCausalLM", "qwen2",
                   R"("use_sliding_window": true, "sliding_window": 8, "max_window_layers": 2,
                      "layer_types": ["sliding_attention", "full_attention", "full_attention", "sliding_attention"])");
    CHECK(windows(c) == std::vector<int>{8, 0, 0, 8});
    // Qwen3: per-head q/k norms, explicit head_dim, no biases.
    c = llama_like("Qwen3ForCausalLM", "qwen3", R"("head_dim": 24, "attention_bias": false)");
    CHECK(c.family == "qwen3");
    CHECK(c.layers[0].qk_norm);
    CHECK(!c.layers[0].qkv_bias);
    CHECK(c.layers[0].head_dim == 24);
    CHECK(c.layers[0].attn_scale == float(1.0 / std::sqrt(24.0)));
    // Mistral: the window on every layer, or none.
    c = llama_like("MistralForCausalLM", "mistral", R"("sliding_window": 4096)");
    CHECK(c.family == "mistral");
    CHECK(c.add_bos);
    CHECK(windows(c) == std::vector<int>{4096, 4096, 4096, 4096});
    c = llama_like("MistralForCausalLM", "mistral", R"("sliding_window": null)");
    CHECK(windows(c) == std::vector<int>{0, 0, 0, 0});
}

TEST_CASE("config: YaRN as transformers 5.24 computes it") {
    // head_dim 16, theta 1e6, factor 4, original 16: the correction range is
    // [0, 1] (floor/ceil), so pair 0 keeps its frequency and pairs 1..7 are
    // divided by 4; the f32 values transformers gives
    // (tests/fixtures/qwen3-mqa-tied-yarn/notes.json), and the attention factor
    // 0.1 ln 4 + 1 squared in the attention scale.
    const ModelConfig c = parse_model_config(R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 48,
        "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16,
        "intermediate_size": 96, "vocab_size": 100, "rope_theta": 1000000.0, "max_position_embeddings": 128,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}})",
                                             "config.json");
    const std::vector<float> want = {1.0f,          0.044456985f, 0.0079056947f, 0.0014058533f,
                                     2.5000001e-4f, 4.4456985e-5f, 7.9056936e-6f, 1.4058534e-6f};
    REQUIRE(c.layers[0].inv_freq.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(c.layers[0].inv_freq[i] == doctest::Approx(want[i]).epsilon(1e-6));
    const double af = 0.1 * std::log(4.0) + 1.0;
    CHECK(c.layers[0].attn_scale == doctest::Approx(af * af / 4.0).epsilon(1e-6));
}

TEST_CASE("config: SmolLM3 and Granite on Llama's reader") {
    // SmolLM3: no_rope_layers[i] == 1 means layer i uses RoPE (transformers 5.24
    // SmolLM3Config); a NoPE layer has zero frequencies and 1/sqrt(head_dim).
    ModelConfig c = llama_like("SmolLM3ForCausalLM", "smollm3", R"("no_rope_layers": [1, 0, 1, 1])");
    CHECK(c.family == "smollm3");
    CHECK(c.tie_embeddings);  // SmolLM3Config's default
    auto nope = [](const ModelConfig& m) {
        std::vector<int> v;
        for (const LayerConfig& l : m.layers)
            v.push_back(std::all_of(l.inv_freq.begin(), l.inv_freq.end(), [](float f) { return f == 0.0f; }));
        return v;
    };
    CHECK(nope(c) == std::vector<int>{0, 1, 0, 0});
    CHECK(c.layers[0].inv_freq[1] > 0.0f);
    CHECK(c.layers[1].attn_scale == float(1.0 / std::sqrt(16.0)));
    // Without the list: every no_rope_layer_interval-th layer (default 4).
    c = llama_like("SmolLM3ForCausalLM", "smollm3", "");
    CHECK(nope(c) == std::vector<int>{0, 0, 0, 1});
    c = llama_like("SmolLM3ForCausalLM", "smollm3", R"("no_rope_layer_interval": 2)");
    CHECK(nope(c) == std::vector<int>{0, 1, 0, 1});
    // Sliding: the NoPE layers when use_sliding_window and sliding_window are set;
    // an explicit layer_types decides instead.
    c = llama_like("SmolLM3ForCausalLM", "smollm3", R"("use_sliding_window": true, "sliding_window": 8)");
    CHECK(windows(c) == std::vector<int>{0, 0, 0, 8});
    c = llama_like("SmolLM3ForCausalLM", "smollm3", R"("use_sliding_window": false, "sliding_window": 8)");
    CHECK(windows(c) == std::vector<int>{0, 0, 0, 0});
    c = llama_like("SmolLM3ForCausalLM", "smollm3",
                   R"("use_sliding_window": true, "sliding_window": 8,
                      "layer_types": ["sliding_attention", "full_attention", "full_attention", "full_attention"])");
    CHECK(windows(c) == std::vector<int>{8, 0, 0, 0});
    // rope_theta defaults to 2e6 (SmolLM3Config.default_theta).
    c = parse_model_config(R"({"architectures": ["SmolLM3ForCausalLM"], "hidden_size": 64, "num_hidden_layers": 1,
        "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100, "no_rope_layers": [1]})",
                           "config.json");
    CHECK(c.layers[0].inv_freq[1] == doctest::Approx(std::pow(2e6, -2.0 / 16.0)).epsilon(1e-6));
    expect_error([] { llama_like("SmolLM3ForCausalLM", "smollm3", R"("no_rope_layers": [1, 1, 1])"); },
                 ErrorKind::format, {"config.json", "no_rope_layers", "each of the 4 layers"});
    expect_error([] { llama_like("SmolLM3ForCausalLM", "smollm3", R"("no_rope_layers": [1, 2, 1, 1])"); },
                 ErrorKind::format, {"no_rope_layers", "entry 1 is not 0 or 1"});

    // Granite: the four multipliers (transformers 5.24 modeling_granite.py).
    c = llama_like("GraniteForCausalLM", "granite",
                   R"("embedding_multiplier": 12.0, "attention_multiplier": 0.015625, "residual_multiplier": 0.22,
                      "logits_scaling": 8.0)");
    CHECK(c.family == "granite");
    CHECK(!c.tie_embeddings);
    CHECK(!c.add_bos);
    CHECK(c.embed_scale == 12.0f);
    CHECK(c.residual_scale == 0.22f);
    CHECK(c.logits_divisor == 8.0f);
    CHECK(c.layers[0].attn_scale == 0.015625f);
    CHECK(c.layers[0].inv_freq[1] > 0.0f);
    // Defaults: 1 each; the attention scale is then 1, not 1/sqrt(head_dim).
    c = llama_like("GraniteForCausalLM", "granite", "");
    CHECK(c.embed_scale == 1.0f);
    CHECK(c.residual_scale == 1.0f);
    CHECK(c.logits_divisor == 1.0f);
    CHECK(c.layers[0].attn_scale == 1.0f);
    expect_error([] { llama_like("GraniteForCausalLM", "granite", R"("residual_multiplier": 0)"); },
                 ErrorKind::format, {"config.json", "'residual_multiplier' = 0"});
    expect_error([] { llama_like("GraniteForCausalLM", "granite", R"("logits_scaling": 1e-40)"); },
                 ErrorKind::format, {"logits_scaling"});
    expect_error([] { llama_like("GraniteForCausalLM", "granite", R"("embedding_multiplier": 1e39)"); },
                 ErrorKind::format, {"embedding_multiplier"});
    expect_error([] { llama_like("GraniteForCausalLM", "granite", R"("attention_multiplier": -1)"); },
                 ErrorKind::format, {"attention_multiplier"});
}

namespace {

// A Phi-3 config (hidden 64, 4 heads of 16) with `extra` keys.
ModelConfig phi3(const std::string& extra) {
    return parse_model_config(R"({"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96,
        "vocab_size": 100, "max_position_embeddings": 256, "original_max_position_embeddings": 16,
        "rope_theta": 10000.0)" + (extra.empty() ? "" : ", " + extra) + "}",
                              "config.json");
}

const std::string kLongRope = R"("rope_scaling": {"type": "longrope", "short_factor": [1, 1.25, 1.5, 2],
                                  "long_factor": [1.5, 2.75, 4.5, 7.25]})";

}  // namespace

TEST_CASE("config: Phi-3 (fused projections, partial rotary, LongRoPE, window)") {
    ModelConfig c = phi3(R"("partial_rotary_factor": 0.5, "sliding_window": 6, )" + kLongRope);
    CHECK(c.family == "phi3");
    CHECK(c.fused_qkv);
    CHECK(c.fused_gate_up);
    const LayerConfig& l = c.layers[0];
    CHECK(l.rotary_dims == 8);
    CHECK(l.window == 6);
    CHECK(l.rope_long_after == 16);
    // inv_freq in the kernel's layout: the 4 rotated pairs 1 / (factor · 1e4^(2i/8)), then zeros
    // (the values transformers 5.24 computes, tests/fixtures/phi3-longrope-partial/notes.json).
    const std::vector<float> want_short = {1.0f, 0.08f, 0.0066667f, 0.0005f, 0, 0, 0, 0};
    const std::vector<float> want_long = {0.6666667f, 0.0363636f, 0.0022222f, 0.00013793f, 0, 0, 0, 0};
    REQUIRE(l.inv_freq.size() == 8);
    REQUIRE(l.inv_freq_long.size() == 8);
    for (size_t i = 0; i < 8; ++i) {
        CHECK(l.inv_freq[i] == doctest::Approx(want_short[i]).epsilon(1e-5));
        CHECK(l.inv_freq_long[i] == doctest::Approx(want_long[i]).epsilon(1e-5));
    }
    // sqrt(1 + ln(256/16) / ln 16) = sqrt(2) scales the rotated dims only (partial rotary).
    CHECK(l.rope_scale == doctest::Approx(std::sqrt(2.0)));
    CHECK(l.attn_scale == doctest::Approx(0.25));
    // All dims rotated: the factor is folded into the attention scale.
    c = phi3(R"("rope_scaling": {"type": "longrope", "short_factor": [1, 1, 1, 1, 1, 1, 1, 1],
               "long_factor": [2, 2, 2, 2, 2, 2, 2, 2]})");
    CHECK(c.layers[0].rotary_dims == 0);
    CHECK(c.layers[0].rope_scale == 1.0f);
    CHECK(c.layers[0].attn_scale == doctest::Approx(2.0 * 0.25));
    CHECK(c.layers[0].window == 0);
    // No scaling: one set, no long one.
    c = phi3("");
    CHECK(c.layers[0].inv_freq_long.empty());
    CHECK(c.layers[0].inv_freq == rope_inv_freq_default(16, 10000.0));
}

TEST_CASE("config: Phi-3 errors name the key and the file") {
    expect_error([] { phi3(R"("partial_rotary_factor": 0)"); }, ErrorKind::format,
                 {"config.json", "partial_rotary_factor"});
    expect_error([] { phi3(R"("partial_rotary_factor": 1.5)"); }, ErrorKind::format,
                 {"config.json", "partial_rotary_factor"});
    expect_error([] { phi3(R"("partial_rotary_factor": 0.1875)"); }, ErrorKind::unsupported,
                 {"config.json", "3 rotary dims"});
    expect_error([] { phi3(R"("rope_scaling": {"type": "longrope", "short_factor": [1, 1, 1], "long_factor": [1, 1, 1, 1, 1, 1, 1, 1]})"); },
                 ErrorKind::format, {"config.json", "rope_scaling.short_factor", "list of 8 numbers"});
    expect_error([] { phi3(R"("partial_rotary_factor": 0.5, "rope_scaling": {"type": "longrope", "short_factor": [1, 1, 1, 1], "long_factor": [1, 0, 1, 1]})"); },
                 ErrorKind::format, {"config.json", "rope_scaling.long_factor", "entry 1"});
    expect_error([] { phi3(R"("partial_rotary_factor": 0.5, "rope_scaling": {"type": "longrope", "short_factor": [1, 1, 1, 1]})"); },
                 ErrorKind::format, {"config.json", "long_factor", "missing"});
    expect_error([] { phi3(R"("rope_scaling": {"type": "dynamic", "factor": 2})"); }, ErrorKind::unsupported,
                 {"config.json", "'dynamic'"});
}
