// Model::load and Model::synthetic: tiny checkpoints written here (Llama,
// Gemma 4, sharded), every bad-input case, and the real stories260K-hf.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "formats/q4/layout.hpp"
#include "model/config.hpp"
#include "model/model.hpp"
#include "model/safetensors.hpp"
#include "model/synthetic.hpp"
#include "model/weight_plan.hpp"
#include "kernels/ref.hpp"
#include "staticlm/error.hpp"
#include "tests/model/st_writer.hpp"
#include "tests/support.hpp"

using namespace staticlm;
using namespace staticlm::test;

namespace {

LoadOptions f32_options() {
    LoadOptions o;
    o.weights = WeightType::f32;
    o.threads = 2;
    o.load_tokenizer = false;
    return o;
}

// Every row of a packed matrix unpacks to the source values (exact for f32
// targets and for sources that are exact in the target type).
void check_unpacks(const PackedMatrix& m, const std::vector<float>& values, const std::string& name) {
    INFO(name);
    REQUIRE(values.size() == size_t(m.n) * size_t(m.k));
    std::vector<float> row(size_t(m.k));
    for (int r = 0; r < m.n; ++r) {
        kernels::unpack_row(m, r, 1.0f, row.data());
        for (int j = 0; j < m.k; ++j)
            if (row[size_t(j)] != values[size_t(r) * size_t(m.k) + size_t(j)]) {
                FAIL_CHECK("row " << r << " col " << j << ": " << row[size_t(j)] << " != "
                                  << values[size_t(r) * size_t(m.k) + size_t(j)]);
                return;
            }
    }
}

void check_vector(const float* v, const std::vector<float>& values) {
    REQUIRE(v != nullptr);
    CHECK(std::memcmp(v, values.data(), values.size() * sizeof(float)) == 0);
    CHECK(reinterpret_cast<uintptr_t>(v) % 64 == 0);
}

// Rewrites one tensor of a TinyLlama and writes the directory.
void write_with(const std::filesystem::path& dir, TinyLlama t, const std::string& name, const RawTensor& replacement) {
    std::vector<RawTensor> ts = t.tensors();
    for (RawTensor& r : ts)
        if (r.name == name) r = replacement;
    std::filesystem::create_directories(dir);
    write_file(dir / "config.json", t.config_json());
    write_file(dir / "model.safetensors", safetensors_file(ts));
}

}  // namespace

TEST_CASE("loader: tiny Llama, tied, f32") {
    TempDir d;
    TinyLlama t;
    t.build().write(d.path);
    std::vector<std::pair<uint64_t, uint64_t>> calls;
    LoadOptions o = f32_options();
    o.progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
    const auto m = Model::load(d.path, o);
    const ModelConfig& c = m->config();
    CHECK(c.hidden == 40);
    CHECK(c.tie_embeddings);
    CHECK(m->weight_type() == WeightType::f32);
    CHECK(m->tokenizer() == nullptr);
    const ModelWeights& w = m->weights();
    CHECK(w.embed.n == 20);
    CHECK(w.embed.k == 40);
    CHECK(w.embed.type == WeightType::f32);
    CHECK(w.lm_head.data == w.embed.data);  // tied
    REQUIRE(w.layers.size() == 2);
    CHECK(w.layers[0].q.n == 40);
    CHECK(w.layers[0].q.k == 40);
    CHECK(w.layers[0].k.n == 20);
    CHECK(w.layers[0].o.n == 40);
    CHECK(w.layers[0].o.k == 40);
    CHECK(w.layers[1].gate.n == 24);
    CHECK(w.layers[1].down.n == 40);
    CHECK(w.layers[1].down.k == 24);
    CHECK(w.layers[0].q_norm == nullptr);
    CHECK(w.layers[0].post_attn_norm == nullptr);
    CHECK(w.layers[0].layer_scalar == 1.0f);
    check_vector(w.final_norm, t.values.at("model.norm.weight"));
    check_vector(w.layers[1].attn_norm, t.values.at("model.layers.1.input_layernorm.weight"));
    check_vector(w.layers[1].ffn_norm, t.values.at("model.layers.1.post_attention_layernorm.weight"));
    uint64_t total_src = 0;
    for (const auto& [name, v] : t.values) total_src += v.size() * 4;
    REQUIRE(!calls.empty());
    CHECK(calls.back().first == total_src);
    CHECK(calls.back().second == total_src);
    for (size_t i = 1; i < calls.size(); ++i) CHECK(calls[i].first >= calls[i - 1].first);
    // Every matrix and vector lies in the one arena, 64-byte aligned.
    const std::byte* lo = m->arena_.data();
    const std::byte* hi = lo + m->weight_bytes();
    for (const PackedMatrix* pm : {&w.embed, &w.layers[0].q, &w.layers[1].down}) {
        CHECK(reinterpret_cast<uintptr_t>(pm->data) % 64 == 0);
        CHECK((pm->bytes == 0 || (pm->data >= lo && pm->data + pm->bytes <= hi)));
    }
    if (!packing_available()) {
        MESSAGE("kernel packing is a stub in this build: unpack checks skipped");
        return;
    }
    check_unpacks(w.embed, t.values.at("model.embed_tokens.weight"), "embed");
    check_unpacks(w.layers[1].q, t.values.at("model.layers.1.self_attn.q_proj.weight"), "q1");
    check_unpacks(w.layers[0].down, t.values.at("model.layers.0.mlp.down_proj.weight"), "down0");
}

TEST_CASE("loader: untied lm_head, F16/BF16 sources, all weight types, sharded") {
    TempDir d;
    TinyLlama t;
    t.lm_head = true;
    t.build();
    std::vector<RawTensor> ts = t.tensors();
    for (RawTensor& r : ts) {
        if (r.name == "lm_head.weight") r = {r.name, "BF16", r.shape, bf16_bytes(t.values.at(r.name))};
        if (r.name == "model.layers.0.mlp.up_proj.weight") r = {r.name, "F16", r.shape, f16_bytes(t.values.at(r.name))};
        if (r.name == "model.norm.weight") r = {r.name, "BF16", r.shape, bf16_bytes(t.values.at(r.name))};
    }
    // Shard in two files through the index.
    std::vector<RawTensor> s1(ts.begin(), ts.begin() + long(ts.size() / 2)), s2(ts.begin() + long(ts.size() / 2), ts.end());
    write_file(d.path / "config.json", t.config_json());
    write_file(d.path / "a.safetensors", safetensors_file(s1));
    write_file(d.path / "b.safetensors", safetensors_file(s2));
    std::string index = "{\"weight_map\": {";
    for (size_t i = 0; i < ts.size(); ++i)
        index += (i ? ", \"" : "\"") + ts[i].name + "\": \"" + (i < s1.size() ? "a" : "b") + ".safetensors\"";
    write_file(d.path / "model.safetensors.index.json", index + "}}");
    for (WeightType wt : {WeightType::f32, WeightType::f16, WeightType::bf16, WeightType::q8}) {
        CAPTURE(weight_type_name(wt));
        LoadOptions o = f32_options();
        o.weights = wt;
        const auto m = Model::load(d.path, o);
        const ModelWeights& w = m->weights();
        CHECK(!m->config().tie_embeddings);
        CHECK(w.lm_head.data != w.embed.data);
        CHECK(w.lm_head.n == 20);
        CHECK(w.lm_head.type == wt);
        check_vector(w.final_norm, t.values.at("model.norm.weight"));
        if (packing_available() && wt != WeightType::q8) {  // values are exact in f16 and bf16
            check_unpacks(w.lm_head, t.values.at("lm_head.weight"), "lm_head");
            check_unpacks(w.layers[0].up, t.values.at("model.layers.0.mlp.up_proj.weight"), "up0");
        }
    }
    {
        // native: each matrix in its stored format, values unchanged.
        LoadOptions no = f32_options();
        no.native_weights = true;
        const auto nm = Model::load(d.path, no);
        const ModelWeights& nw = nm->weights();
        CHECK(nm->native_weights());
        CHECK(nw.lm_head.type == WeightType::bf16);
        CHECK(nw.layers[0].up.type == WeightType::f16);
        CHECK(nw.layers[0].gate.type == WeightType::f32);
        CHECK(nw.layers[1].up.type == WeightType::f32);
        CHECK(nw.embed.type == WeightType::f32);
        CHECK(nm->matrix_types() == std::vector<WeightType>{WeightType::f16, WeightType::bf16, WeightType::f32});
        CHECK(nm->weight_type() == WeightType::f32);  // most bytes
        if (packing_available()) {
            check_unpacks(nw.lm_head, t.values.at("lm_head.weight"), "lm_head");
            check_unpacks(nw.layers[0].up, t.values.at("model.layers.0.mlp.up_proj.weight"), "up0");
            check_unpacks(nw.layers[0].gate, t.values.at("model.layers.0.mlp.gate_proj.weight"), "gate0");
        }
    }
    // q4: the vocabulary matrices stay q8, every other matrix is q4 with the
    // values of the reference quantizer applied to the source rows.
    LoadOptions o = f32_options();
    o.weights = WeightType::q4;
    const auto m = Model::load(d.path, o);
    const ModelWeights& w = m->weights();
    CHECK(m->weight_type() == WeightType::q4);
    CHECK(w.embed.type == WeightType::q8);
    CHECK(w.lm_head.type == WeightType::q8);
    CHECK(detail::matrix_type(WeightRole::embed, WeightType::q4) == WeightType::q8);
    CHECK(detail::matrix_type(WeightRole::embed, WeightType::f16) == WeightType::f16);
    CHECK(detail::matrix_type(WeightRole::gate, WeightType::q4) == WeightType::q4);
    for (const PackedMatrix* pm : {&w.layers[0].q, &w.layers[1].down, &w.layers[0].up}) {
        CHECK(pm->type == WeightType::q4);
        CHECK(pm->bytes == kernels::packed_bytes(WeightType::q4, pm->n, pm->k));
    }
    if (packing_available()) {
        const std::vector<float>& src = t.values.at("model.layers.0.self_attn.q_proj.weight");
        const PackedMatrix& q = w.layers[0].q;
        const int kp = kernels::padded_k(WeightType::q4, q.k);
        std::vector<int8_t> qv(static_cast<size_t>(kp));
        std::vector<float> sc(static_cast<size_t>(kp / kernels::kQ8Group)), row(static_cast<size_t>(q.k));
        for (int r = 0; r < q.n; ++r) {
            kernels::ref::quantize_weight_row_q4(src.data() + size_t(r) * size_t(q.k), q.k, qv.data(), sc.data());
            kernels::unpack_row(q, r, 1.0f, row.data());
            for (int i = 0; i < q.k; ++i)
                REQUIRE(row[size_t(i)] == float(qv[size_t(i)]) * sc[size_t(i / kernels::kQ8Group)]);
        }
    }
}

TEST_CASE("loader: bad directories, files and tensors") {
    TempDir d;
    TinyLlama t;
    t.build();
    const LoadOptions o = f32_options();
    expect_error([&] { Model::load(d.path / "nope", o); }, ErrorKind::io, {"nope"});
    expect_error([&] { Model::load(d.path, o); }, ErrorKind::io, {"config.json"});
    write_file(d.path / "config.json", t.config_json());
    expect_error([&] { Model::load(d.path, o); }, ErrorKind::io, {d.path.string(), "model.safetensors"});
    write_file(d.path / "config.json", "{\"architectures\": [\"MambaForCausalLM\"], \"model_type\": \"mamba\"}");
    expect_error([&] { Model::load(d.path, o); }, ErrorKind::unsupported, {"config.json", "MambaForCausalLM"});
    write_file(d.path / "config.json", "{\"architectures\": [");
    expect_error([&] { Model::load(d.path, o); }, ErrorKind::format, {"config.json", "JSON"});

    const std::string q = "model.layers.1.self_attn.q_proj.weight";
    const auto st = (d.path / "m" / "model.safetensors").string();
    // Missing tensor: named with its expected shape and the file.
    {
        TinyLlama t2 = t;
        t2.values.erase(q);
        t2.shapes.erase(q);
        t2.write(d.path / "m");
        expect_error([&] { Model::load(d.path / "m", o); }, ErrorKind::model, {q, "[40, 40]", st});
    }
    // Wrong shape.
    write_with(d.path / "m", t, q, {q, "F32", {40, 39}, f32_bytes(test_values(40 * 39, 3))});
    expect_error([&] { Model::load(d.path / "m", o); }, ErrorKind::model, {q, st, "expected [40, 40]", "got [40, 39]"});
    write_with(d.path / "m", t, "model.norm.weight", {"model.norm.weight", "F32", {1, 40}, f32_bytes(test_values(40, 3))});
    expect_error([&] { Model::load(d.path / "m", o); }, ErrorKind::model, {"model.norm.weight", "expected [40]", "got [1, 40]"});
    // Unsupported dtype.
    write_with(d.path / "m", t, q, {q, "I32", {40, 40}, std::string(40 * 40 * 4, '\0')});
    expect_error([&] { Model::load(d.path / "m", o); }, ErrorKind::unsupported, {q, st, "I32"});
    // Truncated safetensors.
    {
        t.write(d.path / "m");
        std::ifstream in(st, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        write_file(st, bytes.substr(0, bytes.size() - 100));
        expect_error([&] { Model::load(d.path / "m", o); }, ErrorKind::format, {st, "outside"});
    }
}

TEST_CASE("loader: non-finite weights are an error naming the tensor and index") {
    TempDir d;
    TinyLlama t;
    t.build();
    const LoadOptions o = f32_options();
    const std::string down = "model.layers.1.mlp.down_proj.weight";
    std::vector<float> v = t.values.at(down);
    v[777] = std::nanf("");
    v[900] = INFINITY;
    write_with(d.path, t, down, {down, "F32", {40, 24}, f32_bytes(v)});
    expect_error([&] { Model::load(d.path, o); }, ErrorKind::model, {down, "index 777", "model.safetensors"});
    v = t.values.at(down);
    v[0] = -INFINITY;
    write_with(d.path, t, down, {down, "BF16", {40, 24}, bf16_bytes(v)});
    expect_error([&] { Model::load(d.path, o); }, ErrorKind::model, {down, "index 0"});
    v = t.values.at(down);
    v[959] = 1e6f;  // overflows f16: a source f16 inf
    write_with(d.path, t, down, {down, "F16", {40, 24}, f16_bytes(v)});
    expect_error([&] { Model::load(d.path, o); }, ErrorKind::model, {down, "index 959"});
    const std::string norm = "model.layers.0.input_layernorm.weight";
    v = t.values.at(norm);
    v[39] = std::nanf("");
    write_with(d.path, t, norm, {norm, "F32", {40}, f32_bytes(v)});
    expect_error([&] { Model::load(d.path, o); }, ErrorKind::model, {norm, "index 39"});
}

TEST_CASE("loader: tiny Gemma 4 (multimodal naming, skipped towers and shared K/V)") {
    TempDir d;
    // H 32, 4 layers [s, f, s, f], layers 2-3 share K/V, PLE D 8.
    const std::string config = R"({"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
      "text_config": {"model_type": "gemma4_text", "hidden_size": 32, "num_hidden_layers": 4,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 16,
        "vocab_size": 50, "sliding_window": 4, "num_kv_shared_layers": 2, "use_double_wide_mlp": true,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        "per_layer_config": {"1": {"head_dim": 16}, "3": {"head_dim": 16}},
        "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 50,
        "final_logit_softcapping": 30.0, "tie_word_embeddings": true}})";
    std::vector<RawTensor> ts;
    std::map<std::string, std::vector<float>> vals;
    uint32_t seed = 100;
    auto add = [&](const std::string& name, std::vector<int64_t> shape) {
        size_t n = 1;
        for (int64_t x : shape) n *= size_t(x);
        vals[name] = test_values(n, seed++);
        ts.push_back({name, "BF16", shape, bf16_bytes(vals[name])});
    };
    const std::string p = "model.language_model.";
    add(p + "embed_tokens.weight", {50, 32});
    add(p + "norm.weight", {32});
    add(p + "embed_tokens_per_layer.weight", {50, 32});
    add(p + "per_layer_model_projection.weight", {32, 32});
    add(p + "per_layer_projection_norm.weight", {8});
    const int hd[] = {8, 16, 8, 16};
    for (int il = 0; il < 4; ++il) {
        const std::string lp = p + "layers." + std::to_string(il) + ".";
        for (const char* n : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                              "post_feedforward_layernorm", "post_per_layer_input_norm"})
            add(lp + n + ".weight", {32});
        add(lp + "self_attn.q_proj.weight", {2 * hd[il], 32});
        add(lp + "self_attn.q_norm.weight", {hd[il]});
        add(lp + "self_attn.o_proj.weight", {32, 2 * hd[il]});
        if (il < 2) {
            add(lp + "self_attn.k_proj.weight", {hd[il], 32});
            add(lp + "self_attn.v_proj.weight", {hd[il], 32});
            add(lp + "self_attn.k_norm.weight", {hd[il]});
        } else {
            // Leftover K/V of a sharing layer with a bogus shape and dtype: must be skipped.
            ts.push_back({lp + "self_attn.k_proj.weight", "I8", {3}, "abc"});
        }
        const int ffn = il < 2 ? 16 : 32;
        add(lp + "mlp.gate_proj.weight", {ffn, 32});
        add(lp + "mlp.up_proj.weight", {ffn, 32});
        add(lp + "mlp.down_proj.weight", {32, ffn});
        add(lp + "per_layer_input_gate.weight", {8, 32});
        add(lp + "per_layer_projection.weight", {32, 8});
        ts.push_back({lp + "layer_scalar", "BF16", {1}, bf16_bytes({0.25f * float(il + 1)})});
    }
    ts.push_back({"model.vision_tower.encoder.weight", "U8", {4}, "wxyz"});
    ts.push_back({"model.embed_vision.weight", "F64", {1}, std::string(8, '\0')});
    write_file(d.path / "config.json", config);
    write_file(d.path / "model.safetensors", safetensors_file(ts));
    const auto m = Model::load(d.path, f32_options());
    const ModelConfig& c = m->config();
    CHECK(c.family == "gemma4");
    CHECK(c.layers[2].kv_source == 0);
    CHECK(c.layers[3].kv_source == 1);
    const ModelWeights& w = m->weights();
    CHECK(w.lm_head.data == w.embed.data);
    CHECK(w.embed_per_layer.n == 50);
    CHECK(w.embed_per_layer.k == 32);
    CHECK(w.per_layer_model_proj.n == 32);
    check_vector(w.per_layer_proj_norm, vals.at(p + "per_layer_projection_norm.weight"));
    for (int il = 0; il < 4; ++il) {
        CAPTURE(il);
        const LayerWeights& lw = w.layers[size_t(il)];
        const std::string lp = p + "layers." + std::to_string(il) + ".";
        CHECK(lw.layer_scalar == 0.25f * float(il + 1));
        CHECK(lw.q.n == 2 * hd[il]);
        CHECK((lw.k.data != nullptr || lw.k.bytes == 0));
        CHECK(lw.k.n == (il < 2 ? hd[il] : 0));  // sharing layers own no K/V
        CHECK(lw.v.n == (il < 2 ? hd[il] : 0));
        CHECK((lw.k_norm != nullptr) == (il < 2));
        CHECK(lw.gate.n == (il < 2 ? 16 : 32));
        CHECK(lw.ple_gate.n == 8);
        CHECK(lw.ple_proj.k == 8);
        check_vector(lw.attn_norm, vals.at(lp + "input_layernorm.weight"));
        check_vector(lw.post_attn_norm, vals.at(lp + "post_attention_layernorm.weight"));
        check_vector(lw.ffn_norm, vals.at(lp + "pre_feedforward_layernorm.weight"));
        check_vector(lw.post_ffn_norm, vals.at(lp + "post_feedforward_layernorm.weight"));
        check_vector(lw.ple_post_norm, vals.at(lp + "post_per_layer_input_norm.weight"));
        check_vector(lw.q_norm, vals.at(lp + "self_attn.q_norm.weight"));
        if (packing_available()) check_unpacks(lw.q, vals.at(lp + "self_attn.q_proj.weight"), "q");
    }
    if (packing_available()) check_unpacks(w.embed_per_layer, vals.at(p + "embed_tokens_per_layer.weight"), "ple");
}

TEST_CASE("loader: real stories260K-hf") {
    const std::filesystem::path dir = STATICLM_SOURCE_DIR "/../shared/data/stories260K-hf";
    if (!std::filesystem::exists(dir / "model.safetensors")) {
        MESSAGE("skipped: " << dir.string() << " not found");
        return;
    }
    const auto m = Model::load(dir, f32_options());
    const ModelConfig& c = m->config();
    CHECK(c.hidden == 64);
    CHECK(c.n_layers == 5);
    CHECK(c.vocab == 512);
    CHECK(c.tie_embeddings);
    CHECK(c.bos_id == 1);
    CHECK(c.eos_ids == std::vector<int>{2});
    CHECK(c.layers[0].n_heads == 8);
    CHECK(c.layers[0].n_kv_heads == 4);
    CHECK(c.layers[0].head_dim == 8);
    CHECK(c.layers[0].ffn_dim == 172);
    const ModelWeights& w = m->weights();
    CHECK(w.lm_head.data == w.embed.data);
    // Compare against the file read by the same reader's typed access (the
    // reader itself is tested above on hand-written files).
    SafetensorsFile f(dir / "model.safetensors");
    check_vector(w.final_norm, read_f32(f.at("model.norm.weight")));
    check_vector(w.layers[4].ffn_norm, read_f32(f.at("model.layers.4.post_attention_layernorm.weight")));
    if (!packing_available()) {
        MESSAGE("kernel packing is a stub in this build: unpack checks skipped");
        return;
    }
    check_unpacks(w.embed, read_f32(f.at("model.embed_tokens.weight")), "embed");
    for (int il = 0; il < 5; ++il) {
        const std::string lp = "model.layers." + std::to_string(il) + ".";
        const LayerWeights& lw = w.layers[size_t(il)];
        check_unpacks(lw.q, read_f32(f.at(lp + "self_attn.q_proj.weight")), lp + "q");
        check_unpacks(lw.k, read_f32(f.at(lp + "self_attn.k_proj.weight")), lp + "k");
        check_unpacks(lw.v, read_f32(f.at(lp + "self_attn.v_proj.weight")), lp + "v");
        check_unpacks(lw.o, read_f32(f.at(lp + "self_attn.o_proj.weight")), lp + "o");
        check_unpacks(lw.gate, read_f32(f.at(lp + "mlp.gate_proj.weight")), lp + "gate");
        check_unpacks(lw.up, read_f32(f.at(lp + "mlp.up_proj.weight")), lp + "up");
        check_unpacks(lw.down, read_f32(f.at(lp + "mlp.down_proj.weight")), lp + "down");
    }
}

TEST_CASE("synthetic: deterministic, same layout as load, norms 1") {
    const ModelConfig c = builtin_config("tiny-llama");
    const auto a = Model::synthetic(c, WeightType::f32, 42, 2);
    const auto b = Model::synthetic(c, WeightType::f32, 42, 1);
    const auto other = Model::synthetic(c, WeightType::f32, 43, 2);
    REQUIRE(a->weight_bytes() == b->weight_bytes());
    CHECK(a->weight_bytes() > 0);
    CHECK(std::memcmp(a->arena_.data(), b->arena_.data(), a->weight_bytes()) == 0);  // thread-count independent
    const ModelWeights& w = a->weights();
    CHECK(w.lm_head.data != w.embed.data);  // tiny-llama is untied
    CHECK(w.layers.size() == 4);
    for (int i = 0; i < 256; ++i) CHECK(w.layers[3].ffn_norm[i] == 1.0f);
    CHECK(a->tokenizer() == nullptr);
    // Same arena size as a checkpoint of this config would get.
    size_t expect = 0;
    auto mat = [&](int n, int k) { expect = align64(expect + kernels::packed_bytes(WeightType::f32, n, k)); };
    auto vec = [&](int n) { expect = align64(expect + size_t(n) * 4); };
    mat(1024, 256);
    vec(256);
    mat(1024, 256);
    for (int il = 0; il < 4; ++il) {
        vec(256);
        mat(256, 256);
        mat(64, 256);
        mat(64, 256);
        mat(256, 256);
        mat(768, 256);
        mat(768, 256);
        mat(256, 768);
        vec(256);
    }
    CHECK(a->weight_bytes() == expect);
    if (!packing_available()) {
        MESSAGE("kernel packing is a stub in this build: value checks skipped");
        return;
    }
    CHECK(std::memcmp(a->arena_.data(), other->arena_.data(), a->weight_bytes()) != 0);
    // Values bounded by sqrt(3 / fan_in), mean near 0, std near 1/sqrt(fan_in).
    std::vector<float> row(768);
    double sum = 0, sum2 = 0;
    float max_abs = 0;
    for (int r = 0; r < 256; ++r) {
        kernels::unpack_row(w.layers[0].down, r, 1.0f, row.data());
        for (float x : row) {
            sum += x;
            sum2 += double(x) * x;
            max_abs = std::max(max_abs, std::fabs(x));
        }
    }
    const double n = 256.0 * 768.0;
    CHECK(max_abs <= std::sqrt(3.0f / 768.0f));
    CHECK(std::fabs(sum / n) < 0.002);
    CHECK(std::sqrt(sum2 / n) == doctest::Approx(1.0 / std::sqrt(768.0)).epsilon(0.02));
    // Sub-matrix packing gives the same rows as the checkpoint path: q8 and f32 agree within q8 error.
    const auto q = Model::synthetic(c, WeightType::q8, 42, 2);
    std::vector<float> rq(256), rf(256);
    for (int r : {0, 15, 16, 255}) {
        kernels::unpack_row(q->weights().layers[2].q, r, 1.0f, rq.data());
        kernels::unpack_row(w.layers[2].q, r, 1.0f, rf.data());
        for (int j = 0; j < 256; ++j) CHECK(std::fabs(rq[size_t(j)] - rf[size_t(j)]) <= 0.0005f);
    }
}

TEST_CASE("loader: llama2.c .bin equals its Hugging Face conversion") {
    const std::filesystem::path data = STATICLM_SOURCE_DIR "/../shared/data";
    const auto bin = data / "stories260K" / "stories260K.bin";
    if (!std::filesystem::exists(bin) || !std::filesystem::exists(data / "stories260K-hf" / "model.safetensors")) {
        MESSAGE("skipped: " << data.string() << " has no stories260K");
        return;
    }
    const auto a = Model::load(bin, f32_options());
    const auto b = Model::load(data / "stories260K-hf", f32_options());
    const ModelConfig &ca = a->config(), &cb = b->config();
    CHECK(ca.architecture == "llama2.c");
    CHECK(ca.hidden == cb.hidden);
    CHECK(ca.vocab == cb.vocab);
    CHECK(ca.n_layers == cb.n_layers);
    CHECK(ca.tie_embeddings == cb.tie_embeddings);
    CHECK(ca.bos_id == cb.bos_id);
    CHECK(ca.eos_ids == cb.eos_ids);
    CHECK(ca.rms_eps == cb.rms_eps);
    for (size_t il = 0; il < ca.layers.size(); ++il) {
        CHECK(ca.layers[il].n_heads == cb.layers[il].n_heads);
        CHECK(ca.layers[il].n_kv_heads == cb.layers[il].n_kv_heads);
        CHECK(ca.layers[il].head_dim == cb.layers[il].head_dim);
        CHECK(ca.layers[il].ffn_dim == cb.layers[il].ffn_dim);
        CHECK(ca.layers[il].inv_freq == cb.layers[il].inv_freq);
        CHECK(ca.layers[il].attn_scale == cb.layers[il].attn_scale);
    }
    // Same arena layout; the HF file is the same weights with q/k permuted
    // to rotate-half, so the arenas must be identical byte for byte.
    REQUIRE(a->weight_bytes() == b->weight_bytes());
    CHECK(std::memcmp(a->arena_.data(), b->arena_.data(), a->weight_bytes()) == 0);
    if (!packing_available()) MESSAGE("kernel packing is a stub in this build: only norm vectors compared");
}

TEST_CASE("loader: bad llama2.c .bin files") {
    TempDir d;
    const auto p = d.path / "m.bin";
    auto header = [](std::vector<int32_t> h) { return std::string(reinterpret_cast<const char*>(h.data()), h.size() * 4); };
    write_file(p, header({8, 16}));
    expect_error([&] { Model::load(p, f32_options()); }, ErrorKind::format, {p.string(), "header"});
    write_file(p, header({8, 16, 1, 2, 1, 10, 4}) + std::string(100, '\0'));
    expect_error([&] { Model::load(p, f32_options()); }, ErrorKind::format, {p.string(), "bytes"});
    write_file(p, header({8, 16, 1, 3, 1, 10, 4}) + std::string(100, '\0'));
    expect_error([&] { Model::load(p, f32_options()); }, ErrorKind::format, {p.string(), "n_heads"});
    write_file(p, header({8, 16, 1, 2, 1, 0, 4}));
    expect_error([&] { Model::load(p, f32_options()); }, ErrorKind::format, {p.string(), "vocab_size"});
    // A valid tiny one (dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, vocab 10 untied, seq 4) loads;
    // a NaN inside is reported by tensor name.
    const size_t floats = 10 * 8 + 8 + 64 + 32 + 32 + 64 + 8 + 3 * 128 + 8 + 2 * 4 * 2 + 10 * 8;
    std::vector<float> w = test_values(floats, 5);
    write_file(p, header({8, 16, 1, 2, 1, -10, 4}) + f32_bytes(w));
    const auto m = Model::load(p, f32_options());
    CHECK(!m->config().tie_embeddings);
    CHECK(m->weights().lm_head.data != m->weights().embed.data);
    CHECK(m->weights().layers[0].k.n == 4);
    w[10 * 8 + 8 + 5] = std::nanf("");  // wq[0][5]
    write_file(p, header({8, 16, 1, 2, 1, -10, 4}) + f32_bytes(w));
    expect_error([&] { Model::load(p, f32_options()); }, ErrorKind::model, {"q_proj", p.string()});
}

TEST_CASE(
    "load: the Hugging Face cache layout (snapshots/<rev>/<file> -> ../../blobs/<hash>) is "
    "followed, other links out are not") {
    namespace fs = std::filesystem;
    TempDir d;
    const fs::path repo = d.path / "models--x--tiny";
    const fs::path snap = repo / "snapshots" / "0123abc";
    fs::create_directories(snap);
    fs::create_directories(repo / "blobs");
    TinyLlama m;
    m.build().write(d.path / "plain");
    for (const char* name : {"config.json", "model.safetensors"}) {
        fs::copy_file(d.path / "plain" / name, repo / "blobs" / (std::string("sha-") + name));
        fs::create_symlink(fs::path("..") / ".." / "blobs" / (std::string("sha-") + name),
                           snap / name);
    }
    const auto model = Model::load(snap, f32_options());
    CHECK(model->config().vocab == m.vocab);
    // The same links from a directory that is not a cache snapshot are refused.
    const fs::path other = d.path / "other" / "rev";
    fs::create_directories(other);
    fs::create_symlink(repo / "blobs" / "sha-config.json", other / "config.json");
    fs::create_symlink(repo / "blobs" / "sha-model.safetensors", other / "model.safetensors");
    expect_error([&] { Model::load(other, f32_options()); }, ErrorKind::io,
                 {(other / "config.json").string(), "outside the model directory"});
}

TEST_CASE("loader: tying follows transformers; a head that is not used is a warning (issue 18)") {
    TempDir d;
    TinyLlama t;  // tied: no lm_head.weight
    t.build();
    const LoadOptions o = f32_options();
    {
        t.write(d.path / "tied");
        const auto m = Model::load(d.path / "tied", o);
        CHECK(m->config().tie_embeddings);
        CHECK(m->warnings().empty());
    }
    // An lm_head.weight equal to the embedding: tied, nothing to say.
    {
        std::vector<RawTensor> ts = t.tensors();
        ts.push_back({"lm_head.weight", "F32", {20, 40}, f32_bytes(t.values.at("model.embed_tokens.weight"))});
        std::filesystem::create_directories(d.path / "copy");
        write_file(d.path / "copy" / "config.json", t.config_json());
        write_file(d.path / "copy" / "model.safetensors", safetensors_file(ts));
        const auto m = Model::load(d.path / "copy", o);
        CHECK(m->config().tie_embeddings);
        CHECK(m->weights().lm_head.data == m->weights().embed.data);
        CHECK(m->warnings().empty());
    }
    // A different lm_head.weight: transformers does not tie then, and uses it.
    {
        std::vector<RawTensor> ts = t.tensors();
        const std::vector<float> head = test_values(20 * 40, 77);
        ts.push_back({"lm_head.weight", "F32", {20, 40}, f32_bytes(head)});
        std::filesystem::create_directories(d.path / "differs");
        write_file(d.path / "differs" / "config.json", t.config_json());
        write_file(d.path / "differs" / "model.safetensors", safetensors_file(ts));
        const auto m = Model::load(d.path / "differs", o);
        CHECK(!m->config().tie_embeddings);
        CHECK(m->weights().lm_head.data != m->weights().embed.data);
        REQUIRE(m->warnings().size() == 1);
        CHECK(m->warnings()[0].find("lm_head.weight") != std::string::npos);
        CHECK(m->warnings()[0].find("as transformers does") != std::string::npos);
        if (packing_available()) check_unpacks(m->weights().lm_head, head, "lm_head");
    }
    // Untied without a head is an error (it used to fall back to the embedding).
    {
        std::string cfg = t.config_json();
        cfg.replace(cfg.find("\"tie_word_embeddings\":true"), 26, "\"tie_word_embeddings\":false");
        t.write(d.path / "nohead");
        write_file(d.path / "nohead" / "config.json", cfg);
        expect_error([&] { Model::load(d.path / "nohead", o); }, ErrorKind::model,
                     {"missing tensor 'lm_head.weight'", "[20, 40]", "tie_word_embeddings is false"});
    }
    // The transformers 5.24 untied Gemma4ForConditionalGeneration: top-level flag false,
    // text_config's true, lm_head.weight present (golden logits: test_golden.cpp).
    {
        const auto m = Model::load(fixtures_dir() / "gemma4-untied-cond", o);
        CHECK(!m->config().tie_embeddings);
        CHECK(m->weights().lm_head.data != m->weights().embed.data);
        CHECK(m->warnings().empty());
    }
}

TEST_CASE("loader: every checkpoint tensor the model does not use is named in a warning") {
    TempDir d;
    TinyLlama t;
    t.build();
    std::vector<RawTensor> ts = t.tensors();
    const std::string extra = "model.layers.0.self_attn.rotary_emb.inv_freq";
    ts.push_back({extra, "F32", {5}, f32_bytes(test_values(5, 3))});
    std::filesystem::create_directories(d.path);
    write_file(d.path / "config.json", t.config_json());
    write_file(d.path / "model.safetensors", safetensors_file(ts));
    const auto m = Model::load(d.path, f32_options());
    REQUIRE(m->warnings().size() == 1);
    CHECK(m->warnings()[0].find("tensor '" + extra + "'") != std::string::npos);
    CHECK(m->warnings()[0].find("not used") != std::string::npos);

    // K/V left in a checkpoint for KV-sharing layers: one line for the group.
    const auto g = Model::load(fixtures_dir() / "gemma4-e2b-like-cond", f32_options());
    REQUIRE(g->warnings().size() == 1);
    CHECK(g->warnings()[0].find("skipped 6 K/V tensors of KV-sharing layers") != std::string::npos);
    CHECK(g->warnings()[0].find("model.language_model.layers.3.self_attn.k_norm.weight") != std::string::npos);
}

TEST_CASE("convert_weights adds norm_weight_offset to norm vectors ((1 + w) RMSNorm, Gemma 1-3)") {
    TinyLlama t;
    t.build();
    Model m;
    m.config_ = parse_model_config(t.config_json(), "config.json");
    m.config_.norm_weight_offset = 1.0f;
    std::vector<WeightEntry> plan = detail::plan_weights(m.config_, m.weights_, detail::TensorNaming{});
    const std::filesystem::path file = "tiny.safetensors";
    std::vector<std::vector<std::byte>> bytes;
    std::vector<TensorView> views;
    views.reserve(plan.size());
    for (const WeightEntry& e : plan) {
        const std::vector<float>& v = t.values.at(e.name);
        bytes.emplace_back(v.size() * 4);
        std::memcpy(bytes.back().data(), v.data(), v.size() * 4);
        TensorView tv;
        tv.name = e.name;
        tv.dtype = DType::f32;
        tv.shape = t.shapes.at(e.name);
        tv.numel = v.size();
        tv.bytes = v.size() * 4;
        tv.data = bytes.back().data();
        tv.file = &file;
        views.push_back(tv);
    }
    std::vector<const TensorView*> src;
    for (const TensorView& v : views) src.push_back(&v);
    detail::convert_weights(m, plan, src, f32_options());
    std::vector<float> want = t.values.at("model.layers.1.post_attention_layernorm.weight");
    for (float& x : want) x += 1.0f;
    check_vector(m.weights().layers[1].ffn_norm, want);
    if (packing_available())  // matrices are untouched
        check_unpacks(m.weights().layers[0].q, t.values.at("model.layers.0.self_attn.q_proj.weight"), "q0");
}
