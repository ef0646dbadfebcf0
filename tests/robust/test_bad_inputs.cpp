// The bad-input table (issue 8): broken model directories, tensors, configs,
// tokenizers, prompts and session settings, each built in a temp dir from the
// golden fixture llama-tied. Every row must throw staticlm::Error of the exact
// kind with a message naming the offending thing, and must leave an existing
// session as it was (same pos, same logits, same next-step logits).
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/config.hpp"
#include "model/model.hpp"
#include "staticlm/chat.hpp"
#include "staticlm/error.hpp"
#include "staticlm/files.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "model/gguf.hpp"
#include "tests/model/gguf_writer.hpp"
#include "tests/model/st_writer.hpp"
#include "tests/support.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_json.hpp"

using namespace staticlm;
using namespace staticlm::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const fs::path kFixture = fixtures_dir() / "llama-tied";  // vocab 256, hidden 64, 2 layers
// stories260K's SentencePiece model (vocab 512), kept in the repo as a fuzz seed.
const fs::path kSpModel = source_dir() / "tests" / "fixtures" / "sp" / "tiny_bpe.model";
// A byte-level BPE tokenizer.json (300 tokens + 2 added), the fuzz seed.
const fs::path kTokJson = source_dir() / "fuzz" / "corpus" / "tokenizer_json" / "bytelevel_bpe.json";
// Inputs that crashed a fuzz target once, kept as regression rows.
const fs::path kFuzzFound = source_dir() / "tests" / "fixtures" / "fuzz";

std::string read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A safetensors file as header JSON + data, parsed here independently of the reader.
struct StFile {
    json header;
    std::string data;

    static StFile read(const fs::path& p) {
        const std::string b = read_bytes(p);
        uint64_t n = 0;
        std::memcpy(&n, b.data(), 8);
        return {json::parse(b.substr(8, n)), b.substr(8 + n)};
    }
    void write(const fs::path& p) const { write_file(p, safetensors_file(header.dump(), data)); }
    // Byte offset of element `index` of an F32 tensor inside `data`.
    size_t f32_at(const std::string& name, size_t index) const {
        return header[name]["data_offsets"][0].get<size_t>() + 4 * index;
    }
    void set_f32(const std::string& name, size_t index, float v) {
        std::memcpy(data.data() + f32_at(name, index), &v, 4);
    }
    // Removes a tensor and its bytes (the others move down: no gap is left).
    void erase(const std::string& name) {
        const uint64_t b = header[name]["data_offsets"][0].get<uint64_t>();
        const uint64_t e = header[name]["data_offsets"][1].get<uint64_t>();
        header.erase(name);
        data.erase(b, e - b);
        for (auto& [key, t] : header.items()) {
            if (key == "__metadata__") continue;
            for (auto& o : t["data_offsets"])
                if (o.get<uint64_t>() >= e) o = o.get<uint64_t>() - (e - b);
        }
    }
};

// Builds broken model directories: each is a copy of the fixture, then edited.
struct Dirs {
    TempDir tmp;
    int n = 0;

    fs::path copy(const std::function<void(const fs::path&)>& edit = {}, const fs::path& fixture = kFixture) {
        char name[24];  // snprintf: GCC 12 warns falsely (-Wrestrict) on "m" + std::to_string(n)
        std::snprintf(name, sizeof name, "m%d", n++);
        const fs::path d = tmp.path / name;
        fs::create_directories(d);
        fs::copy_file(fixture / "config.json", d / "config.json");
        fs::copy_file(fixture / "model.safetensors", d / "model.safetensors");
        if (edit) edit(d);
        return d;
    }
    // A copy of another fixture (a Gemma 4 one) with an edited config.json.
    fs::path config_of(const fs::path& fixture, const std::function<void(json&)>& edit) {
        return copy(
            [&](const fs::path& d) {
                json j = json::parse(read_bytes(d / "config.json"));
                edit(j);
                write_file(d / "config.json", j.dump());
            },
            fixture);
    }
    fs::path config(const std::function<void(json&)>& edit) {
        return copy([&](const fs::path& d) {
            json j = json::parse(read_bytes(d / "config.json"));
            edit(j);
            write_file(d / "config.json", j.dump());
        });
    }
    fs::path tensors(const std::function<void(StFile&)>& edit) {
        return copy([&](const fs::path& d) {
            StFile f = StFile::read(d / "model.safetensors");
            edit(f);
            f.write(d / "model.safetensors");
        });
    }
    // A directory with the fixture's weights and the seed tokenizer.json, edited.
    fs::path tokenizer_json(const std::function<void(json&)>& edit) {
        return copy([&](const fs::path& d) {
            json j = json::parse(read_bytes(kTokJson));
            edit(j);
            write_file(d / "tokenizer.json", j.dump());
        });
    }
    fs::path tokenizer_json_text(const std::string& text) {
        return copy([&](const fs::path& d) { write_file(d / "tokenizer.json", text); });
    }
    // A directory with the fixture's weights and a tokenizer.model (+ optional tokenizer_config.json).
    fs::path tokenizer(const std::string& model_bytes, const std::string& tokenizer_config = {}) {
        return copy([&](const fs::path& d) {
            write_file(d / "tokenizer.model", model_bytes);
            if (!tokenizer_config.empty()) write_file(d / "tokenizer_config.json", tokenizer_config);
        });
    }
};

// `n` nested arrays: [[[...]]].
std::string nested_arrays(size_t n) { return std::string(n, '[') + std::string(n, ']'); }
// `n` nested Sequence components of `kind` ("normalizer" -> "normalizers") around `inner`.
std::string nested_sequences(size_t n, const std::string& list_key, const std::string& inner) {
    std::string s;
    const std::string open = "{\"type\":\"Sequence\",\"" + list_key + "\":[";
    s.reserve(n * (open.size() + 2) + inner.size());
    for (size_t i = 0; i < n; ++i) s += open;
    s += inner;
    for (size_t i = 0; i < n; ++i) s += "]}";
    return s;
}
// A JSON object's text with one more member appended (text of the value as given).
std::string with_member(const std::string& object_text, const std::string& key,
                        const std::string& value) {
    const size_t close = object_text.rfind('}');
    return object_text.substr(0, close) + ",\"" + key + "\":" + value + "}";
}
// Protobuf: a length-delimited field.
std::string pb_bytes(int field, const std::string& payload) {
    std::string out(1, char(field << 3 | 2));
    size_t n = payload.size();
    do {
        out += char((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
        n >>= 7;
    } while (n);
    return out + payload;
}
// A precompiled_charsmap blob: <uint32 trie bytes><trie><strings>.
std::string charsmap_blob(uint32_t trie_bytes, const std::string& trie,
                          const std::string& strings) {
    std::string b(4, '\0');
    std::memcpy(b.data(), &trie_bytes, 4);
    return b + trie + strings;
}

LoadOptions options(bool tokenizer = false) {
    LoadOptions o;
    o.weights = WeightType::f32;
    o.threads = 1;
    o.load_tokenizer = tokenizer;
    return o;
}

struct Row {
    std::string what;
    ErrorKind kind;
    std::vector<std::string> needles;  // substrings the message must contain
    std::function<void()> call;
};

const std::string q0 = "model.layers.0.self_attn.q_proj.weight";
const std::string down1 = "model.layers.1.mlp.down_proj.weight";
const std::string norm0 = "model.layers.0.input_layernorm.weight";

}  // namespace

TEST_CASE("bad-input table: exact error kinds, messages naming the culprit, sessions unaffected") {
    REQUIRE(fs::is_regular_file(kSpModel));
    Dirs dirs;
    const auto model = load_model(kFixture, options());
    const int V = model_config(*model).vocab;
    REQUIRE(V == 256);
    SessionOptions so;
    so.max_seq = 16;
    so.prefill_buckets = {8};
    so.append_buckets = {4};
    so.threads = 1;
    Session s(model, so), twin(model, so);
    const std::vector<int> prompt = {1, 17, 200, 3, 99, 5, 42, 7, 255, 0};
    s.prefill(prompt);
    twin.prefill(prompt);
    const int P = s.pos();
    const std::span<const float> t = twin.decode(7);
    const std::vector<float> next(t.begin(), t.end());  // what the session must give for token 7 next

    const std::string sp_bytes = read_bytes(kSpModel);
    const auto sp_dir = dirs.tokenizer(sp_bytes);
    const auto tok = load_tokenizer(sp_dir);
    REQUIRE(tok->vocab_size() == 512);

    auto session_with = [&](auto&& edit) {
        SessionOptions o = so;
        edit(o);
        Session x(model, o);
    };
    auto load = [](const fs::path& d, bool tokenizer = false) { load_model(d, options(tokenizer)); };

    std::vector<Row> rows;
    auto row = [&](std::string what, ErrorKind kind, std::vector<std::string> needles, std::function<void()> call) {
        rows.push_back({std::move(what), kind, std::move(needles), std::move(call)});
    };

    // --- model directories and config.json ---
    {
        const fs::path d = dirs.tmp.path / "no_such_model";
        row("missing directory", ErrorKind::io, {"no_such_model"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.copy([](const fs::path& p) { fs::remove(p / "config.json"); });
        row("no config.json", ErrorKind::io, {(d / "config.json").string()}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.copy([](const fs::path& p) {
            write_file(p / "config.json", read_bytes(p / "config.json").substr(0, 100));
        });
        row("config.json truncated", ErrorKind::format, {"config.json", "invalid JSON"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.copy([](const fs::path& p) { write_file(p / "config.json", "[1, 2]"); });
        row("config.json not an object", ErrorKind::format, {"config.json", "not a JSON object"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.config([](json& j) {
            j["architectures"] = {"MambaForCausalLM"};
            j["model_type"] = "mamba";
        });
        row("unsupported architecture", ErrorKind::unsupported, {"MambaForCausalLM"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.config([](json& j) { j["hidden_size"] = 0; });
        row("hidden_size 0", ErrorKind::format, {"config.json", "hidden_size"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.config([](json& j) { j["num_hidden_layers"] = -2; });
        row("negative layer count", ErrorKind::format, {"num_hidden_layers"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.config([](json& j) { j["vocab_size"] = "256"; });
        row("vocab_size is a string", ErrorKind::format, {"vocab_size"}, [=] { load(d); });
    }
    {
        // Would overflow int and every size computation if accepted.
        const fs::path d = dirs.config([](json& j) { j["vocab_size"] = int64_t{1} << 40; });
        row("absurd vocab_size 2^40", ErrorKind::format, {"vocab_size"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.config([](json& j) { j["intermediate_size"] = int64_t{3000000000}; });
        row("absurd intermediate_size 3e9", ErrorKind::format, {"intermediate_size"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.config([](json& j) { j["num_key_value_heads"] = 3; });
        row("kv heads do not divide heads", ErrorKind::format, {"num_key_value_heads"}, [=] { load(d); });
    }
    {
        // The config's vocab no longer matches the embedding's [256, 64].
        const fs::path d = dirs.config([](json& j) { j["vocab_size"] = 300; });
        row("vocab_size vs embedding rows", ErrorKind::model,
            {"model.embed_tokens.weight", "[300, 64]", "[256, 64]"}, [=] { load(d); });
    }

    // Issue 18: float fields are range-checked in the precision they are used
    // in (each of these once loaded and gave NaN or inf logits).
    {
        const fs::path d = dirs.config([](json& j) { j["rms_norm_eps"] = 1e300; });
        row("rms_norm_eps 1e300", ErrorKind::format, {"config.json", "'rms_norm_eps' = 1e+300", "(0, 1]"},
            [=] { load(d); });
        const fs::path tiny = dirs.config([](json& j) { j["rms_norm_eps"] = 1e-50; });
        row("rms_norm_eps 1e-50 (0 as a float)", ErrorKind::format, {"rms_norm_eps", "is 0 as a float"},
            [=] { load(tiny); });
    }
    {
        const fs::path d = dirs.config([](json& j) {
            j.erase("rope_parameters");  // the legacy form of Llama 3.x files
            j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 1e-300}, {"low_freq_factor", 1.0},
                                 {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
        });
        row("rope_scaling.factor 1e-300", ErrorKind::format, {"config.json", "'rope_scaling.factor' = 1e-300"},
            [=] { load(d); });
    }
    {
        const fs::path d = dirs.config([](json& j) { j["rope_theta"] = 1e39; });
        row("rope_theta 1e39 (inf as a float)", ErrorKind::format, {"rope_theta", "1e+39"}, [=] { load(d); });
    }
    {
        const fs::path keqv = fixtures_dir() / "gemma4-keqv-causal";
        const fs::path cap = dirs.config_of(keqv, [](json& j) { j["final_logit_softcapping"] = 1e300; });
        row("final_logit_softcapping 1e300", ErrorKind::format, {"final_logit_softcapping", "1e+300"},
            [=] { load(cap); });
        const fs::path factor = dirs.config_of(keqv, [](json& j) {
            j["rope_parameters"]["full_attention"]["factor"] = 1e-300;
        });
        row("Gemma 4 rope factor 1e-300", ErrorKind::format, {"rope_parameters.full_attention.factor"},
            [=] { load(factor); });
        // strtol skipped the space and took layer 1.
        const fs::path key = dirs.config_of(keqv, [](json& j) {
            j["per_layer_config"] = {{" 1", {{"head_dim", 8}}}};
        });
        row("per_layer_config key ' 1'", ErrorKind::format, {"per_layer_config", "key ' 1' is not a layer index"},
            [=] { load(key); });
    }
    {
        // Granite's multipliers are floats in (0, FLT_MAX] (logits_scaling: its reciprocal is used).
        const fs::path granite = fixtures_dir() / "granite-multipliers";
        const fs::path neg = dirs.config_of(granite, [](json& j) { j["residual_multiplier"] = -0.22; });
        row("Granite residual_multiplier -0.22", ErrorKind::format, {"config.json", "'residual_multiplier' = -0.22"},
            [=] { load(neg); });
        const fs::path big = dirs.config_of(granite, [](json& j) { j["embedding_multiplier"] = 1e39; });
        row("Granite embedding_multiplier 1e39 (inf as a float)", ErrorKind::format, {"embedding_multiplier", "1e+39"},
            [=] { load(big); });
        const fs::path zero = dirs.config_of(granite, [](json& j) { j["logits_scaling"] = 0; });
        row("Granite logits_scaling 0", ErrorKind::format, {"logits_scaling"}, [=] { load(zero); });
    }
    {
        // perplexity's default window became 1 and it blamed a --ctx never given.
        const fs::path d = dirs.config([](json& j) { j["max_position_embeddings"] = 1; });
        row("max_position_embeddings 1", ErrorKind::format, {"'max_position_embeddings' = 1", "[2, "},
            [=] { load(d); });
    }
    {
        // Loaded and silently used the embedding as the head.
        const fs::path d = dirs.config([](json& j) { j["tie_word_embeddings"] = false; });
        row("untied config without lm_head.weight", ErrorKind::model,
            {"missing tensor 'lm_head.weight'", "tie_word_embeddings is false"}, [=] { load(d); });
    }

    // --- safetensors files and tensors ---
    {
        const fs::path d = dirs.copy([](const fs::path& p) {
            const std::string b = read_bytes(p / "model.safetensors");
            write_file(p / "model.safetensors", b.substr(0, b.size() / 2));
        });
        row("model.safetensors truncated", ErrorKind::format,
            {(d / "model.safetensors").string(), "outside the data section"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.copy([](const fs::path& p) { write_file(p / "model.safetensors", "abc"); });
        row("model.safetensors of 3 bytes", ErrorKind::format, {"model.safetensors", "truncated: 3 bytes"},
            [=] { load(d); });
    }
    {
        const fs::path d = dirs.copy([](const fs::path& p) {
            std::string b = read_bytes(p / "model.safetensors");
            const uint64_t huge = uint64_t{1} << 62;
            std::memcpy(b.data(), &huge, 8);
            write_file(p / "model.safetensors", b);
        });
        row("header length 2^62", ErrorKind::format, {"model.safetensors", "header length 4611686018427387904"},
            [=] { load(d); });
    }
    {
        const fs::path d = dirs.copy([](const fs::path& p) {
            write_file(p / "model.safetensors", safetensors_file("{\"a\": [1, 2", std::string(16, '\0')));
        });
        row("header not JSON", ErrorKind::format, {"model.safetensors", "header is not valid JSON"},
            [=] { load(d); });
    }
    {
        const fs::path d = dirs.tensors([](StFile& f) { f.erase(q0); });
        row("missing tensor", ErrorKind::model, {"missing tensor '" + q0 + "'", "[64, 64]"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.tensors([](StFile& f) { f.header[q0]["dtype"] = "I32"; });
        row("wrong dtype I32", ErrorKind::unsupported, {q0, "I32"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.tensors([](StFile& f) { f.header[q0]["dtype"] = "F12"; });
        row("unknown dtype", ErrorKind::format, {q0, "unknown dtype 'F12'"}, [=] { load(d); });
    }
    {
        // Same byte count, transposed: only the shape check can catch it.
        const fs::path d = dirs.tensors([](StFile& f) { f.header[down1]["shape"] = {160, 64}; });
        row("transposed shape", ErrorKind::model, {down1, "expected [64, 160]", "got [160, 64]"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.tensors([](StFile& f) { f.header[q0]["dtype"] = "F16"; });
        row("shape x dtype vs byte range", ErrorKind::format, {q0, "8192 bytes but data_offsets cover 16384"},
            [=] { load(d); });
    }
    {
        const fs::path d = dirs.tensors([](StFile& f) {
            f.header[q0]["shape"] = {uint64_t{1} << 40, uint64_t{1} << 40};
        });
        row("shape element count overflows", ErrorKind::format, {q0, "overflows"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.tensors([](StFile& f) {
            const uint64_t b = f.header[q0]["data_offsets"][0].get<uint64_t>();
            f.header[q0]["data_offsets"] = {b + (uint64_t{1} << 40), b + (uint64_t{1} << 40) + 16384};
        });
        row("data_offsets past the end", ErrorKind::format, {q0, "outside the data section"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.tensors([](StFile& f) { f.header[q0]["data_offsets"] = f.header[down1]["data_offsets"]; f.header[q0]["shape"] = {64, 160}; });
        row("overlapping tensors", ErrorKind::format, {"overlapping data_offsets", q0}, [=] { load(d); });
    }
    {
        // Two header entries with the same name (JSON parsers silently keep one).
        const fs::path d = dirs.copy([](const fs::path& p) {
            StFile f = StFile::read(p / "model.safetensors");
            std::string h = f.header.dump();
            const std::string entry = "\"" + norm0 + "\":" + f.header[norm0].dump();
            h.insert(1, entry + ",");
            write_file(p / "model.safetensors", safetensors_file(h, f.data));
        });
        row("duplicate tensor name", ErrorKind::format, {"duplicate", norm0}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.tensors([](StFile& f) { f.set_f32(down1, 777, std::nanf("")); });
        row("NaN weight", ErrorKind::model, {down1, "index 777"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.tensors([](StFile& f) { f.set_f32(norm0, 63, -INFINITY); });
        row("-Inf norm weight", ErrorKind::model, {norm0, "index 63"}, [=] { load(d); });
    }
    {
        const fs::path d = dirs.copy([](const fs::path& p) {
            fs::remove(p / "model.safetensors");
            write_file(p / "model.safetensors.index.json",
                       "{\"weight_map\": {\"model.norm.weight\": \"model-00001-of-00002.safetensors\"}}");
        });
        row("index names a missing shard", ErrorKind::io, {"model-00001-of-00002.safetensors", "cannot open"},
            [=] { load(d); });
    }
    {
        const fs::path d = dirs.copy([](const fs::path& p) {
            fs::rename(p / "model.safetensors", p / "shard.safetensors");
            write_file(p / "model.safetensors.index.json",
                       "{\"weight_map\": {\"model.norm.weight\": \"../shard.safetensors\"}}");
        });
        row("index shard path escapes the directory", ErrorKind::format, {"../shard.safetensors", "not a file name"},
            [=] { load(d); });
    }
    {
        const fs::path d = dirs.copy([](const fs::path& p) {
            fs::rename(p / "model.safetensors", p / "shard.safetensors");
            write_file(p / "model.safetensors.index.json",
                       "{\"weight_map\": {\"lm_head.extra\": \"shard.safetensors\"}}");
        });
        row("index lists a tensor its shard lacks", ErrorKind::format, {"lm_head.extra", "shard.safetensors"},
            [=] { load(d); });
    }

    // --- llama2.c .bin checkpoints (the seed is a tiny valid file: dim 8, vocab 16) ---
    {
        const std::string bin = read_bytes(source_dir() / "fuzz" / "corpus" / "llama2c" / "tiny_shared.bin");
        REQUIRE(bin.size() > 28);
        const fs::path ok = dirs.tmp.path / "ok.bin";
        write_file(ok, bin);
        REQUIRE(model_config(*load_model(ok, options())).vocab == 16);  // the seed itself loads
        const fs::path short_header = dirs.tmp.path / "short.bin";
        write_file(short_header, bin.substr(0, 20));
        row("llama2.c header truncated", ErrorKind::format, {"short.bin", "truncated llama2.c header (20 bytes)"},
            [=] { load(short_header); });
        std::string neg = bin;
        const int32_t minus5 = -5;
        std::memcpy(neg.data(), &minus5, 4);
        const fs::path neg_dim = dirs.tmp.path / "neg.bin";
        write_file(neg_dim, neg);
        row("llama2.c negative dim", ErrorKind::format, {"neg.bin", "dim = -5 is out of range"},
            [=] { load(neg_dim); });
        const fs::path cut = dirs.tmp.path / "cut.bin";
        write_file(cut, bin.substr(0, bin.size() - 4));
        row("llama2.c weights truncated", ErrorKind::format,
            {"cut.bin", "is " + std::to_string(bin.size() - 4) + " bytes, the header implies " + std::to_string(bin.size())},
            [=] { load(cut); });
    }

    // --- GGUF files (built by tests/model/gguf_writer.hpp from a valid tiny llama) ---
    {
        // The file, the model facts, the vocabulary, every tensor's decoding,
        // then Model::load (the family's metadata, the weight plan, conversion).
        const auto open_gguf = [](const fs::path& p) {
            {
                const GgufFile f(p);
                read_gguf_model_info(f);
                load_gguf_tokenizer(f);
                for (const GgufTensor& t : f.tensors()) gguf_read_f32(t);
            }
            LoadOptions lo;
            lo.threads = 2;
            Model::load(p, lo);
        };
        using W = GgufWriter;
        const auto gguf = [&](const std::string& name, const std::string& bytes) {
            const fs::path p = dirs.tmp.path / name;
            write_file(p, bytes);
            return p;
        };
        const fs::path ok = gguf("ok.gguf", tiny_gguf_model().bytes());
        open_gguf(ok);  // the base file is valid
        const std::string ok_bytes = read_bytes(ok);
        const auto with_kv = [&](const std::string& key, uint32_t type, const std::string& value) {
            return tiny_gguf_model().kv_raw(key, type, value).bytes();
        };
        const auto with_tensor = [&](std::vector<uint64_t> ne, uint32_t type, const std::string& data,
                                     std::optional<uint64_t> offset = std::nullopt) {
            return tiny_gguf_model().tensor("extra.weight", std::move(ne), type, data, offset).bytes();
        };
        const auto load_row = [&](std::string what, ErrorKind kind, std::vector<std::string> needles,
                                  const std::string& file, const std::string& bytes) {
            const fs::path p = gguf(file, bytes);
            needles.push_back(file);
            row(std::move(what), kind, std::move(needles), [=] { open_gguf(p); });
        };
        load_row("gguf truncated header", ErrorKind::format, {"truncated: 10 bytes", "24-byte GGUF header"},
                 "g_short.gguf", ok_bytes.substr(0, 10));
        load_row("gguf bad magic", ErrorKind::format, {"not a GGUF file"}, "g_magic.gguf",
                 "GGUX" + ok_bytes.substr(4));
        {
            W w = tiny_gguf_model();
            w.version = 1;
            load_row("gguf version 1", ErrorKind::unsupported, {"GGUF version 1"}, "g_v1.gguf", w.bytes());
            w.version = 0x03000000;
            load_row("gguf big-endian", ErrorKind::unsupported, {"big-endian"}, "g_be.gguf", w.bytes());
        }
        load_row("gguf truncated in the metadata", ErrorKind::format, {"runs past the end of the file"},
                 "g_cut.gguf", ok_bytes.substr(0, 300));
        load_row("gguf truncated in the tensor data", ErrorKind::format,
                 {"tensor 'blk.1.ffn_down.weight'", "past the end of the file"}, "g_cut_data.gguf",
                 ok_bytes.substr(0, ok_bytes.size() - 8));
        load_row("gguf string length past EOF", ErrorKind::format,
                 {"key 'general.url'", "string value of length 1099511627776", "past the end of the file"},
                 "g_str.gguf", with_kv("general.url", W::STRING, W::pod<uint64_t>(uint64_t{1} << 40) + "http"));
        load_row("gguf array of 2^40 elements", ErrorKind::format,
                 {"key 'big'", "array of UINT32 of 1099511627776 elements", "past the end of the file"},
                 "g_arr.gguf", with_kv("big", W::ARRAY, W::pod<uint32_t>(W::U32) + W::pod<uint64_t>(uint64_t{1} << 40)));
        load_row("gguf string array of 2^61 elements", ErrorKind::format,
                 {"key 'strs'", "array of STRING of 2305843009213693952 elements"}, "g_sarr.gguf",
                 with_kv("strs", W::ARRAY, W::pod<uint32_t>(W::STRING) + W::pod<uint64_t>(uint64_t{1} << 61)));
        load_row("gguf unknown value type", ErrorKind::format, {"key 'weird'", "unknown value type 13"},
                 "g_type.gguf", with_kv("weird", 13, ""));
        load_row("gguf unknown array element type", ErrorKind::format, {"key 'weird'", "unknown value type 99"},
                 "g_etype.gguf", with_kv("weird", W::ARRAY, W::pod<uint32_t>(99) + W::pod<uint64_t>(0)));
        {
            std::string deep = W::array(W::U8, 0, "");
            for (int d = 0; d < 8; ++d) deep = W::array(W::ARRAY, 1, deep);  // 9 levels
            load_row("gguf nested arrays 9 deep", ErrorKind::format, {"key 'deep'", "nested deeper than 8"},
                     "g_deep.gguf", with_kv("deep", W::ARRAY, deep));
        }
        load_row("gguf BOOL value 2", ErrorKind::format, {"key 'flag'", "BOOL value 2"}, "g_bool.gguf",
                 with_kv("flag", W::BOOL, W::pod<uint8_t>(2)));
        load_row("gguf duplicate key", ErrorKind::format, {"key 'llama.block_count'", "duplicate key"}, "g_dup.gguf",
                 with_kv("llama.block_count", W::U32, W::pod<uint32_t>(2)));
        load_row("gguf empty key", ErrorKind::format, {"metadata key #", "empty key"}, "g_ekey.gguf",
                 with_kv("", W::U32, W::pod<uint32_t>(2)));
        {
            W w = tiny_gguf_model();
            w.n_kv_override = uint64_t{1} << 60;
            load_row("gguf key count 2^60", ErrorKind::format, {"metadata of 1152921504606846976 elements"},
                     "g_nkv.gguf", w.bytes());
        }
        load_row("gguf alignment 3", ErrorKind::format, {"key 'general.alignment'", "3 is not a power of two"},
                 "g_align.gguf", with_kv("general.alignment", W::U32, W::pod<uint32_t>(3)));
        load_row("gguf tensor past EOF", ErrorKind::format, {"tensor 'extra.weight'", "past the end of the file"},
                 "g_teof.gguf", with_tensor({8}, W::T_F32, std::string(32, '\0'), uint64_t{1} << 40));
        load_row("gguf misaligned tensor offset", ErrorKind::format,
                 {"tensor 'extra.weight'", "data offset 4 is not a multiple of the alignment 32"}, "g_mis.gguf",
                 with_tensor({8}, W::T_F32, std::string(32, '\0'), 4));
        load_row("gguf unknown tensor type", ErrorKind::format, {"tensor 'extra.weight'", "unknown tensor type 99"},
                 "g_ttype.gguf", with_tensor({8}, 99, std::string(32, '\0')));
        load_row("gguf dims product overflow", ErrorKind::format, {"tensor 'extra.weight'", "element count overflows"},
                 "g_ovf.gguf", with_tensor({uint64_t{1} << 40, uint64_t{1} << 40}, W::T_F32, ""));
        load_row("gguf zero row length with overflowing rows", ErrorKind::format,
                 {"tensor 'extra.weight'", "[0, 4294967296, 4294967296]: element count overflows"}, "g_ovf0.gguf",
                 with_tensor({0, uint64_t{1} << 32, uint64_t{1} << 32}, W::T_F32, ""));
        load_row("gguf 5 dimensions", ErrorKind::format, {"tensor 'extra.weight'", "5 dimensions (1 to 4"},
                 "g_dims.gguf", with_tensor({1, 1, 1, 1, 8}, W::T_F32, std::string(32, '\0')));
        load_row("gguf row not a whole number of blocks", ErrorKind::format,
                 {"tensor 'extra.weight'", "row length 31 is not a multiple of the Q8_0 block size 32"},
                 "g_blk.gguf", with_tensor({31}, W::T_Q8_0, std::string(34, '\0')));
        load_row("gguf overlapping tensors", ErrorKind::format, {"'extra.weight'", "overlapping data"},
                 "g_overlap.gguf", with_tensor({8}, W::T_F32, std::string(32, '\0'), 0));
        load_row("gguf duplicate tensor name", ErrorKind::format, {"tensor 'output_norm.weight'", "duplicate tensor name"},
                 "g_dupt.gguf", tiny_gguf_model().tensor("output_norm.weight", {16}, W::T_F32, std::string(64, '\0')).bytes());
        {
            const fs::path p = dirs.tmp.path / "g_dir.gguf";
            fs::create_directories(p);
            row("gguf path is a directory", ErrorKind::io, {"g_dir.gguf", "not a regular file"}, [=] { open_gguf(p); });
        }
        {
            // A FIFO named .gguf: opening it without O_NONBLOCK blocked forever.
            const fs::path p = dirs.tmp.path / "g_fifo.gguf";
            REQUIRE(::mkfifo(p.c_str(), 0600) == 0);
            row("gguf path is a FIFO", ErrorKind::io, {"g_fifo.gguf", "not a regular file"}, [=] { open_gguf(p); });
            row("gguf FIFO as a model", ErrorKind::io, {"g_fifo.gguf", "not a regular file"},
                [=] { load_model(p, LoadOptions{}); });
        }
        {
            const fs::path p = gguf("g_iq2.gguf", read_bytes(fixtures_dir() / "gguf" / "unsupported_type.gguf"));
            row("gguf tensor of type IQ2_XXS", ErrorKind::unsupported,
                {"unsupported tensor type IQ2_XXS", "tensor 'iq2_xxs'", "g_iq2.gguf"},
                [=] { gguf_read_f32(GgufFile(p).tensor("iq2_xxs")); });
        }
        load_row("gguf missing required key", ErrorKind::model, {"missing key 'llama.block_count'"}, "g_nokey.gguf",
                 tiny_gguf_model("llama", 32, {"llama.block_count"}).bytes());
        load_row("gguf wrong-arch metadata", ErrorKind::model, {"missing key 'gemma3.block_count'"}, "g_arch.gguf",
                 tiny_gguf_model("llama", 32, {"general.architecture"}).kv_string("general.architecture", "gemma3").bytes());
        load_row("gguf unsupported architecture", ErrorKind::unsupported, {"architecture 'mamba' is not supported"},
                 "g_mamba.gguf", tiny_gguf_model("mamba").bytes());
        load_row("gguf key of the wrong type", ErrorKind::format,
                 {"key 'llama.embedding_length' is STRING, expected an integer"}, "g_ktype.gguf",
                 tiny_gguf_model("llama", 32, {"llama.embedding_length"}).kv_string("llama.embedding_length", "16").bytes());
        load_row("gguf kv heads do not divide heads", ErrorKind::format, {"key 'llama.attention.head_count_kv'", "3 does not divide"},
                 "g_kv.gguf", tiny_gguf_model("llama", 32, {"llama.attention.head_count_kv"}).kv_u32("llama.attention.head_count_kv", 3).bytes());
        load_row("gguf vocab size vs embedding rows", ErrorKind::model,
                 {"tensor 'token_embd.weight'", "32 rows but tokenizer.ggml.tokens has 33 entries"}, "g_vocab.gguf",
                 tiny_gguf_model("llama", 32, {}, 33).bytes());
        load_row("gguf missing layer tensor", ErrorKind::model, {"missing tensor 'blk.1.ffn_down.weight'", "[24, 16]"},
                 "g_notensor.gguf", tiny_gguf_model("llama", 32, {"blk.1.ffn_down.weight"}).bytes());
        load_row("gguf transposed layer tensor", ErrorKind::model,
                 {"tensor 'blk.0.ffn_up.weight'", "expected [16, 24]", "got [24, 16]"}, "g_shape.gguf",
                 tiny_gguf_model("llama", 32, {"blk.0.ffn_up.weight"})
                     .tensor("blk.0.ffn_up.weight", {24, 16}, W::T_F32, std::string(24 * 16 * 4, '\0')).bytes());
        load_row("gguf scores shorter than tokens", ErrorKind::format,
                 {"tokenizer.ggml.scores has 31 entries, tokenizer.ggml.tokens 32"}, "g_scores.gguf",
                 tiny_gguf_model("llama", 32, {"tokenizer.ggml.scores"}).kv_f32s("tokenizer.ggml.scores", std::vector<float>(31, -1.0f)).bytes());
        {
            std::vector<float> scores(32, -1.0f);
            scores[4] = std::nanf("");
            load_row("gguf NaN score", ErrorKind::format, {"tokenizer.ggml.scores[4] is not finite"}, "g_nan.gguf",
                     tiny_gguf_model("llama", 32, {"tokenizer.ggml.scores"}).kv_f32s("tokenizer.ggml.scores", scores).bytes());
            std::vector<int32_t> types(32, 1);
            types[5] = 9;
            load_row("gguf token type 9", ErrorKind::format, {"tokenizer.ggml.token_type[5] = 9"}, "g_ttype9.gguf",
                     tiny_gguf_model("llama", 32, {"tokenizer.ggml.token_type"}).kv_i32s("tokenizer.ggml.token_type", types).bytes());
        }
        load_row("gguf BOS id outside the vocabulary", ErrorKind::format,
                 {"tokenizer.ggml.bos_token_id = 1000 is outside the vocabulary [0, 32)"}, "g_bos.gguf",
                 tiny_gguf_model("llama", 32, {"tokenizer.ggml.bos_token_id"}).kv_u32("tokenizer.ggml.bos_token_id", 1000).bytes());
        load_row("gguf unsupported tokenizer model", ErrorKind::unsupported, {"tokenizer.ggml.model \"bert\""},
                 "g_bert.gguf", tiny_gguf_model("llama", 32, {"tokenizer.ggml.model"}).kv_string("tokenizer.ggml.model", "bert").bytes());
        // What Model::load adds: the family's keys, RoPE data and weight values.
        load_row("gguf partial rotary embedding", ErrorKind::unsupported,
                 {"key 'llama.rope.dimension_count'", "= 2: partial rotary"}, "g_rotary.gguf",
                 tiny_gguf_model().kv_u32("llama.rope.dimension_count", 2).bytes());
        load_row("gguf unsupported rope scaling", ErrorKind::unsupported,
                 {"key 'llama.rope.scaling.type'", "'longrope' is not supported"}, "g_longrope.gguf",
                 tiny_gguf_model().kv_string("llama.rope.scaling.type", "longrope").bytes());
        load_row("gguf yarn factor below 1", ErrorKind::format,
                 {"key 'llama.rope.scaling.factor'", "is outside [1"}, "g_yarn.gguf",
                 tiny_gguf_model()
                     .kv_string("llama.rope.scaling.type", "yarn")
                     .kv_f32("llama.rope.scaling.factor", 0.5f)
                     .kv_u32("llama.rope.scaling.original_context_length", 64)
                     .bytes());
        load_row("gguf yarn original context 0", ErrorKind::format,
                 {"key 'llama.rope.scaling.original_context_length'", "not a context length"}, "g_yarn0.gguf",
                 tiny_gguf_model()
                     .kv_string("llama.rope.scaling.type", "yarn")
                     .kv_f32("llama.rope.scaling.factor", 4.0f)
                     .kv_u32("llama.rope.scaling.original_context_length", 0)
                     .bytes());
        load_row("gguf rope_freqs divisor 0", ErrorKind::format,
                 {"index 1 of tensor 'rope_freqs.weight'", "not a positive frequency divisor"}, "g_ropef.gguf",
                 tiny_gguf_model().tensor("rope_freqs.weight", {2}, W::T_F32, W::f32_data({1.0f, 0.0f})).bytes());
        load_row("gguf gemma3 without a sliding window", ErrorKind::model,
                 {"missing key 'gemma3.attention.sliding_window'"}, "g_swa.gguf", tiny_gguf_model("gemma3").bytes());
        load_row("gguf gemma3 rope scaling factor 0.5", ErrorKind::format,
                 {"key 'gemma3.rope.scaling.factor'", "outside [1"}, "g_g3f.gguf",
                 tiny_gguf_model("gemma3").kv_u32("gemma3.attention.sliding_window", 4)
                     .kv_string("gemma3.rope.scaling.type", "linear").kv_f32("gemma3.rope.scaling.factor", 0.5f).bytes());
        load_row("gguf granite residual_scale -1", ErrorKind::format,
                 {"key 'granite.residual_scale'", "not a finite positive scale"}, "g_gr_res.gguf",
                 tiny_gguf_model("granite").kv_f32("granite.residual_scale", -1.0f).bytes());
        load_row("gguf granite logit_scale inf", ErrorKind::format,
                 {"key 'granite.logit_scale'", "not a finite positive scale"}, "g_gr_logit.gguf",
                 tiny_gguf_model("granite").kv_f32("granite.logit_scale", std::numeric_limits<float>::infinity()).bytes());
        load_row("gguf granite attention.scale 0", ErrorKind::format,
                 {"key 'granite.attention.scale'", "not a finite positive scale"}, "g_gr_att.gguf",
                 tiny_gguf_model("granite").kv_f32("granite.attention.scale", 0.0f).bytes());
        {
            std::vector<float> v(16 * 32, 0.5f);
            v[16 * 3 + 5] = std::numeric_limits<float>::infinity();
            load_row("gguf non-finite weight", ErrorKind::model,
                     {"non-finite value", "flat index 53", "tensor 'token_embd.weight'"}, "g_inf.gguf",
                     tiny_gguf_model("llama", 32, {"token_embd.weight"})
                         .tensor("token_embd.weight", {16, 32}, W::T_F32, W::f32_data(v)).bytes());
        }
        load_row("gguf gpt2 merge of unknown tokens", ErrorKind::format,
                 {"tokenizer.ggml.merges[0] (zz + qq)", "missing from tokenizer.ggml.tokens"}, "g_merge.gguf",
                 tiny_gguf_model("llama", 32, {"tokenizer.ggml.model"})
                     .kv_string("tokenizer.ggml.model", "gpt2").kv_string("tokenizer.ggml.pre", "llama-bpe")
                     .kv_strings("tokenizer.ggml.merges", {"zz qq"}).bytes());
    }

    // --- tokenizers ---
    {
        const fs::path d = dirs.tokenizer("this is not a protobuf");
        row("tokenizer.model garbage", ErrorKind::format, {"tokenizer.model", "not a SentencePiece model"},
            [=] { load_tokenizer(d); });
    }
    {
        const fs::path d = dirs.tokenizer(sp_bytes.substr(0, sp_bytes.size() / 2));
        row("tokenizer.model truncated", ErrorKind::format, {"tokenizer.model", "not a SentencePiece model"},
            [=] { load_tokenizer(d); });
    }
    {
        const fs::path d = dirs.tokenizer("");
        row("tokenizer.model empty", ErrorKind::format, {"tokenizer.model"}, [=] { load_tokenizer(d); });
    }
    {
        const fs::path d = dirs.copy();
        row("no tokenizer file", ErrorKind::io, {"neither tokenizer.model nor tokenizer.json"},
            [=] { load(d, true); });
    }
    {
        const fs::path d = dirs.tokenizer(sp_bytes, "{\"add_bos_token\": tru");
        row("tokenizer_config.json invalid", ErrorKind::format, {"tokenizer_config.json", "invalid JSON"},
            [=] { load_tokenizer(d); });
    }
    {
        const fs::path d = dirs.tokenizer(sp_bytes, "{\"add_bos_token\": \"yes\"}");
        row("add_bos_token not a boolean", ErrorKind::format, {"\"add_bos_token\" is not a boolean"},
            [=] { load_tokenizer(d); });
    }
    {
        const fs::path d = dirs.tokenizer(sp_bytes, "{\"bos_token\": \"<nope>\"}");
        row("bos_token not in the vocabulary", ErrorKind::format, {"bos_token \"<nope>\"", "tokenizer.model"},
            [=] { load_tokenizer(d); });
    }
    {
        // Found by fuzz_sentencepiece: libsentencepiece would throw through
        // code that cannot unwind (std::terminate) on a piece holding a NUL.
        const fs::path d = dirs.tokenizer(read_bytes(kFuzzFound / "sentencepiece-nul-piece.model"));
        row("tokenizer.model piece with a NUL byte (fuzz)", ErrorKind::format,
            {"tokenizer.model", "piece 1 contains a NUL byte"}, [=] { load_tokenizer(d); });
    }
    {
        // Found in review: a group (wire types 3/4, which protobuf skips and
        // no ModelProto has) stopped the piece and flag checks while the
        // library still loaded what follows it.
        const fs::path d = dirs.tokenizer(sp_bytes + "\x9b\x06\x9c\x06");
        row("tokenizer.model with a protobuf group", ErrorKind::format,
            {"tokenizer.model", "not a SentencePiece model", "unreadable protobuf field in the model"},
            [=] { load_tokenizer(d); });
    }
    {
        // ModelProto { pieces {} }: a piece message without its string.
        const fs::path d = dirs.tokenizer(std::string("\x0a\x00", 2));
        row("tokenizer.model empty piece", ErrorKind::format, {"tokenizer.model", "piece 0 is empty"},
            [=] { load_tokenizer(d); });
    }
    {
        // ModelProto { pieces { piece: "ab" } pieces { piece: "ab" } }
        const fs::path d = dirs.tokenizer(std::string("\x0a\x04\x0a\x02" "ab" "\x0a\x04\x0a\x02" "ab"));
        row("tokenizer.model duplicate piece", ErrorKind::format,
            {"tokenizer.model", "piece 1 repeats piece 0"}, [=] { load_tokenizer(d); });
    }
    {
        const std::string text = read_bytes(kTokJson);
        const fs::path cut = dirs.tokenizer_json_text(text.substr(0, text.size() / 2));
        row("tokenizer.json truncated", ErrorKind::format, {"tokenizer.json", "malformed JSON"},
            [=] { load_tokenizer(cut); });
        const fs::path empty = dirs.tokenizer_json_text("");
        row("tokenizer.json empty", ErrorKind::format, {"tokenizer.json", "unexpected end of file"},
            [=] { load_tokenizer(empty); });
    }
    {
        const fs::path d = dirs.tokenizer_json([](json& j) { j.erase("model"); });
        row("tokenizer.json without a model", ErrorKind::format, {"tokenizer.json", "no \"model\""},
            [=] { load_tokenizer(d); });
    }
    {
        const fs::path d = dirs.tokenizer_json([](json& j) { j["model"]["type"] = "WordPiece"; });
        row("tokenizer.json WordPiece model", ErrorKind::unsupported, {"tokenizer.json", "model type \"WordPiece\""},
            [=] { load_tokenizer(d); });
    }
    {
        const fs::path d = dirs.tokenizer_json([](json& j) { j["normalizer"] = {{"type", "BertNormalizer"}}; });
        row("tokenizer.json unsupported normalizer", ErrorKind::unsupported, {"normalizer BertNormalizer"},
            [=] { load_tokenizer(d); });
    }
    {
        const fs::path d = dirs.tokenizer_json([](json& j) {
            j["pre_tokenizer"] = {{"type", "Split"}, {"behavior", "Isolated"}};
        });
        row("tokenizer.json Split without a pattern", ErrorKind::format, {"pre_tokenizer Split has no pattern"},
            [=] { load_tokenizer(d); });
    }
    {
        const fs::path d = dirs.tokenizer_json([](json& j) { j["model"]["merges"].push_back({"zz", "qq"}); });
        row("tokenizer.json merge of unknown tokens", ErrorKind::format,
            {"tokenizer.json", "merge #42 (zz + qq)", "missing from the vocab"}, [=] { load_tokenizer(d); });
    }
    {
        // An id that would size the id table at 2^31 entries.
        const fs::path d = dirs.tokenizer_json([](json& j) { j["model"]["vocab"]["$"] = int64_t{1} << 31; });
        row("tokenizer.json absurd token id", ErrorKind::format,
            {"tokenizer.json", "token id 2147483648 of \"$\" is outside"}, [=] { load_tokenizer(d); });
    }
    {
        const fs::path d = dirs.tokenizer_json([](json& j) { j["model"]["vocab"]["&"] = j["model"]["vocab"]["%"]; });
        row("tokenizer.json two tokens with one id", ErrorKind::format, {"tokens \"%\" and \"&\" share id"},
            [=] { load_tokenizer(d); });
    }
    {
        // Found by fuzz_tokenizer_json: an id of 1e121 reached a float-to-int
        // cast (undefined behaviour, UBSan abort).
        const fs::path d = dirs.copy([](const fs::path& p) {
            fs::copy_file(kFuzzFound / "tokenizer-json-float-id.json", p / "tokenizer.json");
        });
        row("tokenizer.json added token id 1e121 (fuzz)", ErrorKind::format,
            {"tokenizer.json", "added token id is not a token id (1e+121)"}, [=] { load_tokenizer(d); });
        const fs::path post = dirs.tokenizer_json([](json& j) {
            j["post_processor"] = {{"type", "TemplateProcessing"},
                                   {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}}},
                                   {"pair", json::array()},
                                   {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {2.5}}}}}}};
        });
        row("tokenizer.json post_processor id 2.5", ErrorKind::format,
            {"post_processor id of <s> is not a token id (2.5)"}, [=] { load_tokenizer(post); });
    }
    {
        // Found by fuzz_json: a number beyond a double is nlohmann's
        // out_of_range, not a parse_error; it escaped the loader uncaught.
        const fs::path d = dirs.tokenizer_json_text(R"({"model": {"type": "BPE", "vocab": {}, "merges": []}, "a": 2e+308})");
        row("tokenizer.json number beyond a double (fuzz)", ErrorKind::format,
            {"tokenizer.json", "unreadable JSON", "number overflow"}, [=] { load_tokenizer(d); });
    }
    {
        const fs::path d = dirs.tokenizer_json([](json& j) { j["added_tokens"][0]["id"] = 100000; });
        row("tokenizer.json added token id beyond the vocab", ErrorKind::format,
            {"added token \"<|begin_of_text|>\" has id 100000", "[0, 302)"}, [=] { load_tokenizer(d); });
    }
    {
        const fs::path d = dirs.tokenizer_json([](json& j) {
            j["post_processor"] = {{"type", "TemplateProcessing"},
                                   {"single", {{{"SpecialToken", {{"id", "<x>"}, {"type_id", 0}}}}}},
                                   {"pair", json::array()},
                                   {"special_tokens", json::object()}};
        });
        row("tokenizer.json template names an unknown special", ErrorKind::format,
            {"post_processor template names <x>"}, [=] { load_tokenizer(d); });
    }
    {
        const std::shared_ptr<Tokenizer> json_tok = load_tokenizer(dirs.tokenizer_json([](json&) {}));
        row("invalid UTF-8 through tokenizer.json", ErrorKind::input,
            {"tokenizer.json", "invalid UTF-8 at byte 2"}, [=] { json_tok->encode("ab\xff", true); });
        row("tokenizer.json decode id out of range", ErrorKind::input, {"token id 4000", "tokenizer.json"},
            [=] { json_tok->decode({4000}); });
    }
    {
        // A 512-token tokenizer with a 256-row embedding: the prompt's ids above 255
        // are refused when they reach the session, naming the id and the vocab.
        const std::vector<int> ids = tok->encode("Once upon a time, a girl", true);
        REQUIRE(*std::max_element(ids.begin(), ids.end()) >= V);
        row("tokenizer ids beyond the model's vocab", ErrorKind::input, {"invalid token id", "vocab size 256"},
            [&s, ids] { s.append(ids); });
    }
    row("decode id past the vocabulary", ErrorKind::input, {"token id 9999", "[0, 512)"},
        [&] { tok->decode({1, 9999}); });
    row("decode negative id", ErrorKind::input, {"token id -3"}, [&] { tok->decode({-3}); });

    // --- prompts ---
    row("invalid UTF-8 byte", ErrorKind::input, {"invalid UTF-8", "byte 3"},
        [&] { tok->encode("abc\xff def", true); });
    row("truncated UTF-8 sequence", ErrorKind::input, {"invalid UTF-8", "byte 5"},
        [&] { tok->encode("hello\xe2\x82", true); });
    row("overlong UTF-8 encoding", ErrorKind::input, {"invalid UTF-8", "byte 0"},
        [&] { tok->encode("\xc0\xaf", false); });
    row("UTF-16 surrogate in UTF-8", ErrorKind::input, {"invalid UTF-8", "byte 1"},
        [&] { tok->encode("a\xed\xa0\x80", false); });
    row("token id == vocab", ErrorKind::input, {"invalid token id 256", "index 1", "vocab size 256"},
        [&] { s.append(std::vector<int>{3, V}); });
    row("negative token id", ErrorKind::input, {"invalid token id -1"}, [&] { s.append(std::vector<int>{-1}); });
    row("decode id out of range", ErrorKind::input, {"invalid token id 1000"}, [&] { s.decode(1000); });
    row("empty prompt", ErrorKind::input, {"empty input"}, [&] { s.append(std::vector<int>{}); });
    row("prompt over capacity (append)", ErrorKind::capacity, {"P=10 + T=7 > K=16", "max_seq"},
        [&] { s.append(std::vector<int>(7, 1)); });
    row("prompt over capacity (prefill)", ErrorKind::capacity, {"P=0 + T=17 > K=16"},
        [&] { s.prefill(std::vector<int>(17, 1)); });
    row("generate with a prompt over capacity", ErrorKind::capacity, {"K=16"}, [&] {
        GenerateOptions g;
        g.max_tokens = 2;
        generate(s, nullptr, std::vector<int>(9, 1), g);
    });
    row("rewind past the start", ErrorKind::input, {"cannot rewind 11 tokens"}, [&] { s.rewind(11); });
    row("chat message with an unknown role", ErrorKind::input, {"unknown chat role 'robot'", "message 1"}, [&] {
        render_chat(ChatFormat::llama3, {{"user", "hi"}, {"robot", "beep"}}, {}, true);
    });

    // --- session and generation settings ---
    row("empty prefill buckets", ErrorKind::config, {"prefill_buckets is empty"},
        [&] { session_with([](SessionOptions& o) { o.prefill_buckets = {}; }); });
    row("zero append bucket", ErrorKind::config, {"append_buckets", "block size 0"},
        [&] { session_with([](SessionOptions& o) { o.append_buckets = {4, 0}; }); });
    row("negative bucket", ErrorKind::config, {"prefill_buckets", "block size -8"},
        [&] { session_with([](SessionOptions& o) { o.prefill_buckets = {-8}; }); });
    row("bucket above max_seq", ErrorKind::config, {"prefill_buckets", "block size 32", "1..16"},
        [&] { session_with([](SessionOptions& o) { o.prefill_buckets = {32}; }); });
    row("negative threads", ErrorKind::config, {"threads must be >= 0", "-1"},
        [&] { session_with([](SessionOptions& o) { o.threads = -1; }); });
    row("max_seq 0", ErrorKind::config, {"max_seq must be >= 1, got 0"},
        [&] { session_with([](SessionOptions& o) { o.max_seq = 0; }); });
    row("max_seq beyond memory", ErrorKind::capacity, {"max_seq 2147483647", "bytes"},
        [&] { session_with([](SessionOptions& o) { o.max_seq = std::numeric_limits<int>::max(); o.prefill_buckets = {8}; }); });
    row("negative load threads", ErrorKind::config, {"threads", "-3"}, [&] {
        LoadOptions o = options();
        o.threads = -3;
        load_model(kFixture, o);
    });
    row("top_p 0", ErrorKind::config, {"top_p must be in (0, 1]"}, [&] {
        GenerateOptions g;
        g.sampling.temperature = 1.0f;
        g.sampling.top_p = 0.0f;
        generate(s, nullptr, std::vector<int>{1}, g);
    });
    row("NaN temperature", ErrorKind::config, {"temperature must be finite"}, [&] {
        GenerateOptions g;
        g.sampling.temperature = std::nanf("");
        generate(s, nullptr, std::vector<int>{1}, g);
    });
    row("max_tokens below -1", ErrorKind::config, {"max_tokens must be >= 0, or -1 for no limit, got -2"}, [&] {
        GenerateOptions g;
        g.max_tokens = -2;
        generate(s, nullptr, std::vector<int>{1}, g);
    });

    // --- issue 18: every input path (one row per class member found; see docs/HARDENING.md) ---
    const std::string tok_json_text = json::parse(read_bytes(kTokJson)).dump();
    REQUIRE(tok_json_text.find("\"normalizer\":null") != std::string::npos);
    auto tok_json_with = [&](const std::string& key, const std::string& value) {
        std::string t = tok_json_text;
        const std::string from = "\"" + key + "\":null";
        const size_t at = t.find(from);
        if (at != std::string::npos) return t.replace(at, from.size(), "\"" + key + "\":" + value);
        return with_member(t, key, value);
    };
    {
        // Deep nesting: nlohmann's parser is iterative, but copying or walking
        // the tree recursed (j.value("normalizer", json()) deep-copied it): SIGSEGV.
        const fs::path arrays =
            dirs.tokenizer_json_text(tok_json_with("normalizer", nested_arrays(200000)));
        row("tokenizer.json normalizer of 200000 nested arrays", ErrorKind::format,
            {"tokenizer.json", "nested deeper than 64 levels"}, [=] { load_tokenizer(arrays); });
        const std::string prepend = "{\"type\":\"Prepend\",\"prepend\":\"x\"}";
        const fs::path seq = dirs.tokenizer_json_text(
            tok_json_with("normalizer", nested_sequences(100000, "normalizers", prepend)));
        row("tokenizer.json 100000 nested Sequence normalizers", ErrorKind::format,
            {"tokenizer.json", "nested deeper than 64 levels"}, [=] { load_tokenizer(seq); });
        const fs::path dec = dirs.tokenizer_json_text(
            tok_json_with("decoder", nested_sequences(100000, "decoders", "{\"type\":\"Fuse\"}")));
        row("tokenizer.json 100000 nested Sequence decoders", ErrorKind::format,
            {"tokenizer.json", "nested deeper than 64 levels"}, [=] { load_tokenizer(dec); });
        const fs::path post = dirs.tokenizer_json_text(tok_json_with(
            "post_processor", nested_sequences(100000, "processors", "{\"type\":\"ByteLevel\"}")));
        row("tokenizer.json 100000 nested Sequence post_processors", ErrorKind::format,
            {"tokenizer.json", "nested deeper than 64 levels"}, [=] { load_tokenizer(post); });
        const fs::path in_model = dirs.tokenizer_json_text(
            tok_json_text.substr(0, tok_json_text.find("\"model\":{") + 9) +
            "\"x\":" + nested_arrays(200000) + "," +
            tok_json_text.substr(tok_json_text.find("\"model\":{") + 9));
        row("tokenizer.json 200000 nested arrays inside model", ErrorKind::format,
            {"tokenizer.json", "nested deeper than 64 levels"}, [=] { load_tokenizer(in_model); });
    }
    {
        const std::string deep = nested_arrays(200000);
        const fs::path cfg = dirs.copy([&](const fs::path& p) {
            write_file(p / "config.json", with_member(read_bytes(p / "config.json"), "x", deep));
        });
        row("config.json nested 200000 deep", ErrorKind::format,
            {"config.json", "nested deeper than 64 levels"}, [=] { load(cfg); });
        const fs::path gen = dirs.copy([&](const fs::path& p) {
            write_file(p / "generation_config.json", "{\"eos_token_id\": 2, \"x\": " + deep + "}");
        });
        row("generation_config.json nested 200000 deep", ErrorKind::format,
            {"generation_config.json", "nested deeper than 64 levels"}, [=] { load(gen); });
        const fs::path tc =
            dirs.tokenizer(sp_bytes, "{\"add_bos_token\": true, \"x\": " + deep + "}");
        row("tokenizer_config.json nested 200000 deep", ErrorKind::format,
            {"tokenizer_config.json", "nested deeper than 64 levels"}, [=] { load_tokenizer(tc); });
        const fs::path st = dirs.copy([&](const fs::path& p) {
            const StFile f = StFile::read(p / "model.safetensors");
            write_file(
                p / "model.safetensors",
                safetensors_file(with_member(f.header.dump(), "__metadata__", deep), f.data));
        });
        row("safetensors header nested 200000 deep", ErrorKind::format,
            {"model.safetensors", "nested deeper than 64 levels"}, [=] { load(st); });
        const fs::path idx = dirs.copy([&](const fs::path& p) {
            fs::rename(p / "model.safetensors", p / "shard.safetensors");
            write_file(p / "model.safetensors.index.json",
                       "{\"metadata\": " + deep + ", \"weight_map\": {}}");
        });
        row("safetensors index nested 200000 deep", ErrorKind::format,
            {"model.safetensors.index.json", "nested deeper than 64 levels"}, [=] { load(idx); });
        const fs::path jinja = dirs.copy([&](const fs::path& p) {
            write_file(p / "tokenizer_config.json",
                       "{\"chat_template\": \"x\", \"y\": " + deep + "}");
        });
        row("tokenizer_config.json for the chat template nested 200000 deep", ErrorKind::format,
            {"tokenizer_config.json", "nested deeper than 64 levels"},
            [=] { detect_chat_format(jinja); });
    }
    {
        // A precompiled_charsmap the library trusts: appending one
        // normalizer_spec (field 3) with a bogus blob to a valid model made the
        // first encode read far outside the trie (SIGSEGV).
        const std::string units(1024, '\xff');  // offsets ~2^30: children far outside 256 units
        const fs::path bogus =
            dirs.tokenizer(sp_bytes + pb_bytes(3, pb_bytes(2, charsmap_blob(1024, units, "a"))));
        row("tokenizer.model charsmap with children outside the trie", ErrorKind::format,
            {"tokenizer.model", "normalizer_spec.precompiled_charsmap is not a valid charsmap",
             "outside"},
            [=] { load_tokenizer(bogus)->encode("Hello world", true); });
        // The library's own size check lets a trie size of blob - 4 .. blob - 1
        // through and then reads past the blob.
        const fs::path past =
            dirs.tokenizer(sp_bytes + pb_bytes(3, pb_bytes(2, charsmap_blob(9, "", "abcdef"))));
        row("tokenizer.model charsmap trie size past the blob", ErrorKind::format,
            {"tokenizer.model", "trie size 9 runs past the blob"},
            [=] { load_tokenizer(past)->encode("Hello world", true); });
        // A leaf whose replacement offset lies outside the string table: root
        // (offset 0) -> child 'a' (has_leaf, its base 0x80) -> value unit 5000.
        std::string trie(256 * 4, '\0');
        auto put = [&](size_t i, uint32_t u) { std::memcpy(trie.data() + 4 * i, &u, 4); };
        put(0, 0x01);                                               // root: label 1, offset 0
        put('a', (uint32_t(0x61 ^ 0x80) << 10) | (1u << 8) | 'a');  // label 'a', leaf, offset 0xe1
        put(0x80, (1u << 31) | 5000);  // the value: offset 5000 into "x"
        const fs::path far =
            dirs.tokenizer(sp_bytes + pb_bytes(3, pb_bytes(2, charsmap_blob(1024, trie, "x"))));
        row("tokenizer.model charsmap replacement outside the strings", ErrorKind::format,
            {"tokenizer.model", "not a NUL-terminated string"},
            [=] { load_tokenizer(far)->encode("a", true); });
        const fs::path denorm =
            dirs.tokenizer(sp_bytes + pb_bytes(5, pb_bytes(2, charsmap_blob(1024, units, "a"))));
        row("tokenizer.model denormalizer charsmap with children outside the trie",
            ErrorKind::format, {"tokenizer.model", "denormalizer_spec.precompiled_charsmap"}, [=] {
                load_tokenizer(denorm)->decode({5, 6, 7});
            });
    }
    {
        // Truncated while loading: the weights were mapped, so reading a page
        // past the new end of the file was a SIGBUS; now it is an error.
        const fs::path d = dirs.copy();
        row("model.safetensors truncated while loading", ErrorKind::io,
            {(d / "model.safetensors").string(), "truncated while loading", "reading tensor"}, [=] {
                LoadOptions o = options();
                bool cut = false;
                o.progress = [&](uint64_t, uint64_t) {
                    if (!cut) fs::resize_file(d / "model.safetensors", 4096);
                    cut = true;
                };
                load_model(d, o);
            });
    }
    {
        // FIFOs opened before any file-type check blocked forever.
        auto fifo = [&](const std::string& name, const fs::path& d) {
            fs::remove(d / name);
            REQUIRE(::mkfifo((d / name).c_str(), 0600) == 0);
        };
        const fs::path cfg = dirs.copy([&](const fs::path& p) { fifo("config.json", p); });
        row("config.json is a FIFO", ErrorKind::io, {"config.json", "FIFO"}, [=] { load(cfg); });
        const fs::path gen =
            dirs.copy([&](const fs::path& p) { fifo("generation_config.json", p); });
        row("generation_config.json is a FIFO", ErrorKind::io, {"generation_config.json", "FIFO"},
            [=] { load(gen); });
        const fs::path st = dirs.copy([&](const fs::path& p) { fifo("model.safetensors", p); });
        row("model.safetensors is a FIFO", ErrorKind::io, {"model.safetensors", "FIFO"},
            [=] { load(st); });
        const fs::path idx = dirs.copy([&](const fs::path& p) {
            fs::remove(p / "model.safetensors");
            fifo("model.safetensors.index.json", p);
        });
        row("model.safetensors.index.json is a FIFO", ErrorKind::io,
            {"model.safetensors.index.json", "FIFO"}, [=] { load(idx); });
        const fs::path shard = dirs.copy([&](const fs::path& p) {
            fs::remove(p / "model.safetensors");
            write_file(p / "model.safetensors.index.json",
                       "{\"weight_map\": {\"model.norm.weight\": \"s.safetensors\"}}");
            fifo("s.safetensors", p);
        });
        row("a shard is a FIFO", ErrorKind::io, {"s.safetensors", "FIFO"}, [=] { load(shard); });
        const fs::path tj = dirs.copy([&](const fs::path& p) { fifo("tokenizer.json", p); });
        row("tokenizer.json is a FIFO", ErrorKind::io, {"tokenizer.json", "FIFO"},
            [=] { load_tokenizer(tj); });
        const fs::path tm = dirs.copy([&](const fs::path& p) { fifo("tokenizer.model", p); });
        row("tokenizer.model is a FIFO", ErrorKind::io, {"tokenizer.model", "FIFO"},
            [=] { load_tokenizer(tm); });
        const fs::path tc = dirs.tokenizer(sp_bytes, "{}");
        fifo("tokenizer_config.json", tc);
        row("tokenizer_config.json is a FIFO", ErrorKind::io, {"tokenizer_config.json", "FIFO"},
            [=] { load_tokenizer(tc); });
        const fs::path jinja =
            dirs.copy([&](const fs::path& p) { fifo("chat_template.jinja", p); });
        row("chat_template.jinja is a FIFO", ErrorKind::io, {"chat_template.jinja", "FIFO"},
            [=] { detect_chat_format(jinja); });
    }
    {
        // Links to /dev/zero were read until memory ran out.
        auto zero = [&](const std::string& name, const fs::path& d) {
            fs::remove(d / name);
            fs::create_symlink("/dev/zero", d / name);
        };
        const fs::path cfg = dirs.copy([&](const fs::path& p) { zero("config.json", p); });
        row("config.json links to /dev/zero", ErrorKind::io, {"config.json", "/dev/zero"},
            [=] { load(cfg); });
        const fs::path gen =
            dirs.copy([&](const fs::path& p) { zero("generation_config.json", p); });
        row("generation_config.json links to /dev/zero", ErrorKind::io,
            {"generation_config.json", "/dev/zero"}, [=] { load(gen); });
        const fs::path tc = dirs.tokenizer(sp_bytes, "{}");
        zero("tokenizer_config.json", tc);
        row("tokenizer_config.json links to /dev/zero", ErrorKind::io,
            {"tokenizer_config.json", "/dev/zero"}, [=] { load_tokenizer(tc); });
        const fs::path jinja =
            dirs.copy([&](const fs::path& p) { zero("chat_template.jinja", p); });
        row("chat_template.jinja links to /dev/zero", ErrorKind::io,
            {"chat_template.jinja", "/dev/zero"}, [=] { detect_chat_format(jinja); });
        // The same device named directly (a prompt file, a tokenizer path).
        row("read_text_file of /dev/zero", ErrorKind::io, {"/dev/zero", "character device"},
            [=] { read_text_file("/dev/zero", 1 << 20, "a prompt file"); });
        row("tokenizer.json path /dev/zero", ErrorKind::io, {"/dev/zero", "character device"},
            [=] { load_tokenizer_json("/dev/zero", {}); });
        // A regular file too big to be a config (sparse: nothing is written).
        const fs::path big =
            dirs.copy([&](const fs::path& p) { fs::resize_file(p / "config.json", 65 << 20); });
        row("config.json of 65 MiB", ErrorKind::format,
            {"config.json", "more than 64 MiB, the limit for a JSON config"}, [=] { load(big); });
        const fs::path big_jinja = dirs.copy([&](const fs::path& p) {
            write_file(p / "chat_template.jinja", "");
            fs::resize_file(p / "chat_template.jinja", 65 << 20);
        });
        row("chat_template.jinja of 65 MiB", ErrorKind::format, {"chat_template.jinja", "64 MiB"},
            [=] { detect_chat_format(big_jinja); });
        const fs::path big_header = dirs.copy([&](const fs::path& p) {
            std::string b(8, '\0');
            const uint64_t n = 100000001;
            std::memcpy(b.data(), &n, 8);
            write_file(p / "model.safetensors", b);
            fs::resize_file(p / "model.safetensors", 8 + n + 16);
        });
        row("safetensors header over 100 MB", ErrorKind::format,
            {"model.safetensors", "header length 100000001", "100000000-byte limit"},
            [=] { load(big_header); });
    }
    {
        // 300k distinct eos ids took 18-60 s (quadratic merge) and were accepted.
        std::string ids = "[";
        for (int i = 0; i < 300000; ++i) {  // appended piece by piece: GCC 12 warns falsely (-Wrestrict) on +
            if (i) ids += ',';
            ids += std::to_string(i);
        }
        ids += "]";
        const fs::path d = dirs.copy([&](const fs::path& p) {
            write_file(p / "generation_config.json", "{\"eos_token_id\": " + ids + "}");
        });
        row("generation_config.json with 300000 eos ids", ErrorKind::format,
            {"generation_config.json", "eos_token_id", "300000 token ids", "4096"},
            [=] { load(d); });
    }
    {
        const fs::path cfg = dirs.copy([](const fs::path& p) {
            fs::remove(p / "config.json");
            fs::create_directory(p / "config.json");
        });
        row("config.json is a directory", ErrorKind::io, {"config.json", "is a directory"},
            [=] { load(cfg); });
        const fs::path tj =
            dirs.copy([](const fs::path& p) { fs::create_directory(p / "tokenizer.json"); });
        row("tokenizer.json is a directory", ErrorKind::io, {"tokenizer.json", "is a directory"},
            [=] { load_tokenizer(tj); });
    }
    {
        // Gaps and trailing bytes were accepted; the reference implementation
        // (and now staticlm) requires the tensors to tile the data section.
        const fs::path gap = dirs.tensors([](StFile& f) {
            const uint64_t b = f.header[down1]["data_offsets"][0].get<uint64_t>();
            f.data.insert(b, 16, '\0');
            for (auto& [key, t] : f.header.items()) {
                if (key == "__metadata__") continue;
                for (auto& o : t["data_offsets"])
                    if (o.get<uint64_t>() >= b &&
                        !(key != down1 && o.get<uint64_t>() == b && &o == &t["data_offsets"][1]))
                        o = o.get<uint64_t>() + 16;
            }
        });
        row("safetensors gap between tensors", ErrorKind::format,
            {"model.safetensors", down1, "gap of 16 bytes"}, [=] { load(gap); });
        const fs::path tail = dirs.tensors([](StFile& f) { f.data += std::string(100, '\0'); });
        row("safetensors bytes after the last tensor", ErrorKind::format,
            {"model.safetensors", "100 bytes after the last tensor"}, [=] { load(tail); });
        // The same tensor in two shards: which one is the model?
        const fs::path two = dirs.copy([](const fs::path& p) {
            fs::rename(p / "model.safetensors", p / "a.safetensors");
            StFile f = StFile::read(p / "a.safetensors");
            json weight_map = json::object();
            for (auto& [key, t] : f.header.items())
                if (key != "__metadata__") weight_map[key] = "a.safetensors";
            // b.safetensors holds model.norm.weight (listed there) and a second norm0.
            const std::vector<float> v(64, 1.0f);
            write_file(p / "b.safetensors",
                       safetensors_file({{norm0, "F32", {64}, f32_bytes(v)},
                                         {"model.norm.weight", "F32", {64}, f32_bytes(v)}}));
            weight_map["model.norm.weight"] = "b.safetensors";
            write_file(p / "model.safetensors.index.json", json{{"weight_map", weight_map}}.dump());
        });
        row("tensor in two shards", ErrorKind::format,
            {norm0, "is in two shards", "a.safetensors", "b.safetensors"}, [=] { load(two); });
    }
    {
        // A link inside the directory to a file outside it was followed
        // (/etc/passwd parsed as a shard, its size echoed).
        const fs::path shard = dirs.copy([](const fs::path& p) {
            fs::remove(p / "model.safetensors");
            write_file(p / "model.safetensors.index.json",
                       "{\"weight_map\": {\"model.norm.weight\": \"evil.safetensors\"}}");
            fs::create_symlink("/etc/passwd", p / "evil.safetensors");
        });
        row("shard links to /etc/passwd", ErrorKind::io,
            {"evil.safetensors", "outside the model directory"}, [=] { load(shard); });
        const fs::path outside = dirs.tmp.path / "outside";
        fs::create_directories(outside);
        fs::copy_file(kFixture / "model.safetensors", outside / "model.safetensors",
                      fs::copy_options::overwrite_existing);
        const fs::path weights = dirs.copy([&](const fs::path& p) {
            fs::remove(p / "model.safetensors");
            fs::create_symlink(outside / "model.safetensors", p / "model.safetensors");
        });
        row("model.safetensors links outside the directory", ErrorKind::io,
            {"model.safetensors", "outside the model directory"}, [=] { load(weights); });
        const fs::path tok = dirs.copy([&](const fs::path& p) {
            fs::create_symlink(fs::absolute(kSpModel), p / "tokenizer.model");
        });
        row("tokenizer.model links outside the directory", ErrorKind::io,
            {"tokenizer.model", "outside the model directory"}, [=] { load_tokenizer(tok); });
    }
    {
        // A NUL in a shard name cut the message at the NUL ("<dir>/model: cannot open").
        const fs::path d = dirs.copy([](const fs::path& p) {
            fs::remove(p / "model.safetensors");
            write_file(p / "model.safetensors.index.json",
                       "{\"weight_map\": {\"model.norm.weight\": \"model\\u0000.safetensors\"}}");
        });
        row("shard name with a NUL byte", ErrorKind::format,
            {"model\\x00.safetensors", "is not a file name"}, [=] { load(d); });
    }
    {
        // Well-formed JSON of the wrong shape was "malformed JSON at byte N"
        // or an nlohmann type_error naming no field.
        const fs::path vocab = dirs.tokenizer_json([](json& j) {
            j["model"]["vocab"] = json::array({"a", "b"});
        });
        row("tokenizer.json model.vocab is an array", ErrorKind::format,
            {"tokenizer.json", "model.vocab must be an object", "not array"},
            [=] { load_tokenizer(vocab); });
        const fs::path id = dirs.tokenizer_json([](json& j) { j["model"]["vocab"]["!"] = "1"; });
        row("tokenizer.json vocab id is a string", ErrorKind::format,
            {"model.vocab[\"!\"] must be an integer token id, not string"},
            [=] { load_tokenizer(id); });
        const fs::path merges = dirs.tokenizer_json([](json& j) { j["model"]["merges"][3] = 7; });
        row("tokenizer.json merge is a number", ErrorKind::format,
            {"model.merges[3] must be a string \"a b\" or a pair of strings, not number"},
            [=] { load_tokenizer(merges); });
        const fs::path content = dirs.tokenizer_json([](json& j) {
            j["normalizer"] = {
                {"type", "Sequence"},
                {"normalizers",
                 {{{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", 5}}}}};
        });
        row("tokenizer.json normalizer content is a number", ErrorKind::format,
            {"normalizer.normalizers[0].content must be a string, not integer"},
            [=] { load_tokenizer(content); });
        const fs::path added =
            dirs.tokenizer_json([](json& j) { j["added_tokens"][1]["content"] = true; });
        row("tokenizer.json added token content is a boolean", ErrorKind::format,
            {"added_tokens[1].content must be a string, not boolean"},
            [=] { load_tokenizer(added); });
        const fs::path root = dirs.tokenizer_json_text("[1, 2]");
        row("tokenizer.json is an array", ErrorKind::format,
            {"the document must be a JSON object, not array"}, [=] { load_tokenizer(root); });
    }

    // --- issue 18: limits on settings and inputs that used to crash or misbehave ---
    row("threads 1000000 (session)", ErrorKind::config, {"threads 1000000", "CPUs", "at most"},
        [&] { session_with([](SessionOptions& o) { o.threads = 1000000; }); });
    row("threads above 4 x CPUs (session)", ErrorKind::config, {"at most " + std::to_string(max_threads())},
        [&] { session_with([](SessionOptions& o) { o.threads = max_threads() + 1; }); });
    row("threads 1000000 (load)", ErrorKind::config, {"invalid load options", "threads 1000000", "at most"}, [&] {
        LoadOptions o = options();
        o.threads = 1000000;
        load_model(kFixture, o);
    });
    row("threads 1000000 (synthetic)", ErrorKind::config, {"threads 1000000"},
        [&] { synthetic_model("tiny-llama", WeightType::f32, 1, 1000000); });
    row("act_bits 12 (load)", ErrorKind::config, {"invalid act_bits 12: 8 or 16"}, [&] {
        LoadOptions o = options();
        o.act_bits = 12;
        load_model(kFixture, o);
    });
    row("act_bits -1 (synthetic)", ErrorKind::config, {"invalid act_bits -1"},
        [&] { synthetic_model("tiny-llama", WeightType::q8, 1, 1, -1); });
    auto sample_with = [&](auto&& edit) {
        GenerateOptions g;
        g.sampling.temperature = 1.0f;
        edit(g.sampling);
        generate(s, nullptr, std::vector<int>{1}, g);
    };
    row("repetition_penalty inf", ErrorKind::config, {"repetition_penalty must be in [0.001", "inf"},
        [&] { sample_with([](SamplingOptions& o) { o.repetition_penalty = INFINITY; }); });
    row("repetition_penalty 1e-30 (logits / 1e-30 overflow)", ErrorKind::config, {"repetition_penalty"},
        [&] { sample_with([](SamplingOptions& o) { o.repetition_penalty = 1e-30f; }); });
    row("repetition_penalty NaN", ErrorKind::config, {"repetition_penalty"},
        [&] { sample_with([](SamplingOptions& o) { o.repetition_penalty = std::nanf(""); }); });
    row("top_p NaN", ErrorKind::config, {"top_p must be in (0, 1]"},
        [&] { sample_with([](SamplingOptions& o) { o.top_p = std::nanf(""); }); });
    row("min_p NaN", ErrorKind::config, {"min_p must be in [0, 1]"},
        [&] { sample_with([](SamplingOptions& o) { o.min_p = std::nanf(""); }); });
    row("min_p 1.5", ErrorKind::config, {"min_p must be in [0, 1]"},
        [&] { sample_with([](SamplingOptions& o) { o.min_p = 1.5f; }); });
    row("negative repetition_window", ErrorKind::config, {"repetition_window must be >= 0"},
        [&] { sample_with([](SamplingOptions& o) { o.repetition_window = -1; }); });
    row("temperature inf", ErrorKind::config, {"temperature must be finite"},
        [&] { sample_with([](SamplingOptions& o) { o.temperature = INFINITY; }); });
    {
        // Finite weights whose activations overflow: layer 1's attention norm
        // scales by 3e38. The error names the first layer and intermediate.
        const fs::path d = dirs.tensors([](StFile& f) {
            for (size_t i = 0; i < 64; ++i) f.set_f32("model.layers.1.input_layernorm.weight", i, 3e38f);
        });
        row("non-finite logits name the first layer", ErrorKind::model,
            {"non-finite logits", "'attn_norm' of layer 1", "position 0"}, [=] {
                const auto m = load_model(d, options());
                SessionOptions o;
                o.max_seq = 16;
                o.prefill_buckets = {8};
                o.append_buckets = {4};
                o.threads = 1;
                Session bad(m, o);
                bad.prefill(std::vector<int>{1, 2, 3});
            });
        // Logits that overflow for some contexts only: lm_head row 0 becomes
        // c·e_j, so logit 0 is c·h_j (h = the final normed hidden state, scaled
        // by the final norm's weights). j and c are chosen from the model itself
        // (lm_head rows 0..71 = the identity and norm weights 1 first)
        // so that contexts A = {1, 2, 3} and {1, 2, 3, 7} stay finite while B = {1, 2, 3, 4, 5}
        // and C = {6, 5} overflow. A failed append leaves the session at A, a
        // failed prefill over it leaves it empty (it had overwritten positions
        // 0 and 1), and either continues exactly like a fresh session.
        {
            const fs::path untied = fixtures_dir() / "llama-gqa-llama3";  // hidden 72, vocab 320, untied
            const size_t hidden = 72;
            // The final norm's weights all `gain` (h scales with it), lm_head rows 0..71 w(row, col).
            auto with_head = [&](float gain, const std::function<float(size_t row, size_t col)>& w) {
                return dirs.copy(
                    [&](const fs::path& p) {
                        StFile f = StFile::read(p / "model.safetensors");
                        for (size_t c = 0; c < hidden; ++c) f.set_f32("model.norm.weight", c, gain);
                        for (size_t r = 0; r < hidden; ++r)
                            for (size_t c = 0; c < hidden; ++c) f.set_f32("lm_head.weight", r * hidden + c, w(r, c));
                        f.write(p / "model.safetensors");
                    },
                    untied);
            };
            SessionOptions o;
            o.max_seq = 16;
            o.prefill_buckets = {4};
            o.append_buckets = {4};
            o.threads = 1;
            const auto probe =
                load_model(with_head(1.0f, [](size_t r, size_t c) { return r == c ? 1.0f : 0.0f; }), options());
            auto hidden_of = [&](std::vector<int> ids) {
                Session s(probe, o);
                const auto l = s.prefill(ids);
                return std::vector<float>(l.begin(), l.begin() + long(hidden));
            };
            const auto ha = hidden_of({1, 2, 3}), hb = hidden_of({1, 2, 3, 4, 5}), hc = hidden_of({6, 5}),
                       hd = hidden_of({1, 2, 3, 7});
            size_t j = 0;
            double best = 0;
            for (size_t i = 0; i < hidden; ++i) {
                const double r = std::min(std::fabs(hb[i]), std::fabs(hc[i])) / std::max(std::fabs(ha[i]), std::fabs(hd[i]));
                if (r > best) best = r, j = i;
            }
            REQUIRE(best > 1.5);
            const double gain = 1e6;  // h_j of order 1e6: c below stays finite
            const float c = float(double(FLT_MAX) / gain /
                                  std::sqrt(std::max(std::fabs(double(ha[j])), std::fabs(double(hd[j]))) *
                                            std::min(std::fabs(hb[j]), std::fabs(hc[j]))));
            const auto m = load_model(
                with_head(float(gain), [&](size_t r, size_t col) { return r == 0 && col == j ? c : 0.0f; }), options());
            Session s(m, o), fresh(m, o);
            s.prefill(std::vector<int>{1, 2, 3});
            CHECK_THROWS_WITH_AS(s.append(std::vector<int>{4, 5}), doctest::Contains("non-finite logits"), Error);
            CHECK(s.pos() == 3);
            s.decode(7);  // continues from A
            fresh.prefill(std::vector<int>{1, 2, 3, 7});
            CHECK(std::vector<float>(s.logits().begin(), s.logits().end()) ==
                  std::vector<float>(fresh.logits().begin(), fresh.logits().end()));
            CHECK_THROWS_WITH_AS(s.prefill(std::vector<int>{6, 5}), doctest::Contains("non-finite logits"), Error);
            CHECK(s.pos() == 0);
            CHECK(s.tokens().empty());
            s.append(std::vector<int>{1, 2, 3, 7});
            CHECK(std::vector<float>(s.logits().begin(), s.logits().end()) ==
                  std::vector<float>(fresh.logits().begin(), fresh.logits().end()));
        }
        row("non-finite logits stop generate", ErrorKind::model, {"non-finite logits", "layer 1"}, [=] {
            const auto m = load_model(d, options());
            SessionOptions o;
            o.max_seq = 16;
            o.prefill_buckets = {8};
            o.append_buckets = {4};
            o.threads = 1;
            Session bad(m, o);
            GenerateOptions g;
            generate(bad, nullptr, std::vector<int>{1, 2, 3}, g);
        });
    }
    {
        const fs::path d = dirs.copy([](const fs::path& p) {
            write_file(p / "generation_config.json", "{\"eos_token_id\": 2, \"top_p\": 1.5}");
        });
        row("generation_config.json top_p 1.5", ErrorKind::format, {"generation_config.json", "'top_p'", "(0"},
            [=] { load(d); });
    }
    {
        const fs::path file = kFixture / "model.safetensors";
        row("a safetensors file instead of its directory", ErrorKind::io,
            {"model.safetensors: is a file", "give the model directory"}, [=] { load(file); });
        row("a GGUF file that does not exist", ErrorKind::io, {"x.gguf"},
            [&] { load(dirs.tmp.path / "x.gguf"); });
    }

    CHECK(rows.size() >= 70);
    for (const Row& r : rows) {
        INFO("row: " << r.what);
        const std::vector<float> before(s.logits().begin(), s.logits().end());
        bool threw = false;
        try {
            r.call();
        } catch (const Error& e) {
            threw = true;
            CHECK_MESSAGE(e.kind() == r.kind, "kind " << error_kind_name(e.kind()) << " (want "
                                                      << error_kind_name(r.kind) << "): " << e.what());
            for (const std::string& n : r.needles)
                CHECK_MESSAGE(std::string(e.what()).find(n) != std::string::npos,
                              "'" << n << "' not in: " << e.what());
        } catch (const std::exception& e) {
            threw = true;
            FAIL_CHECK("not a staticlm::Error: " << e.what());
        }
        CHECK_MESSAGE(threw, "no error thrown");
        // The session is untouched: same position, same logits, same next step.
        REQUIRE(s.pos() == P);
        CHECK(std::equal(before.begin(), before.end(), s.logits().begin(), s.logits().end()));
        const std::span<const float> got = s.decode(7);
        CHECK(std::equal(next.begin(), next.end(), got.begin(), got.end()));
        s.rewind(1);
    }
}
