// Tokenizers from GGUF metadata (tokenizer/tokenizer_gguf.cpp via
// model/gguf_vocab.cpp): small hand-made vocabularies, the byte-level BPE
// fixture written as a GGUF here, Qwen2-, Phi-4-mini- (gpt-4o) and Mistral Nemo-
// layout (tekken) vocabularies made by llama.cpp's converter, and — when
// present — the real Gemma 3 GGUF and a converted Llama 3 vocabulary against
// the tokenizers library's ids (tests/fixtures/tokenizers/).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "model/gguf.hpp"
#include "staticlm/error.hpp"
#include "tests/model/gguf_writer.hpp"
#include "tests/model/st_writer.hpp"
#include "tests/support.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_json_unicode.hpp"

using namespace staticlm;
using namespace staticlm::test;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json read_json(const fs::path& p) {
    std::ifstream f(p);
    REQUIRE_MESSAGE(f, "cannot open " << p.string());
    return json::parse(f);
}

std::string from_hex(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

std::string sanitized(std::string_view s) {
    std::string out;
    return tokjson::sanitize_utf8(s, out) ? std::string(s) : out;
}

std::unique_ptr<Tokenizer> tokenizer_from(const TempDir& tmp, const std::string& name, const GgufWriter& w) {
    const fs::path p = tmp.path / name;
    write_file(p, w.bytes());
    const GgufFile f(p);
    return load_gguf_tokenizer(f);
}

// Compares a tokenizer with the corpus ids of the tokenizers library: ids
// without and with special tokens (with_key "": not compared), and
// decode(skip_special_tokens=True) except for id lists holding an id for which
// `own_decode` is true.
void check_corpus(const Tokenizer& tok, const json& cases, const std::string& key, const std::string& with_key,
                  const std::string& decoded_key, const std::function<bool(int)>& own_decode = {}) {
    size_t n = 0, ok = 0, ok_special = 0, ok_decoded = 0, n_decoded = 0;
    for (const json& c : cases) {
        if (!c.contains(key)) continue;
        const std::string text = sanitized(from_hex(c.at("text_hex").get<std::string>()));
        const auto want = c.at(key).get<std::vector<int>>();
        const std::vector<int> got = tok.encode(text, false);
        INFO("case " << n << ": \"" << text << "\"");
        CHECK(got == want);
        ok += got == want;
        if (!with_key.empty() && c.contains(with_key)) {
            const bool same = tok.encode(text, true) == c.at(with_key).get<std::vector<int>>();
            CHECK(same);
            ok_special += same;
        } else {
            ++ok_special;
        }
        ++n;
        if (own_decode && std::any_of(want.begin(), want.end(), own_decode)) continue;
        const std::string decoded = tok.decode(want);
        CHECK(decoded == c.at(decoded_key).get<std::string>());
        ok_decoded += decoded == c.at(decoded_key).get<std::string>();
        ++n_decoded;
    }
    CHECK(n >= 300);
    MESSAGE(key << ": " << ok << "/" << n << " id lists equal the tokenizers library's, " << ok_special
                << " with special tokens, " << ok_decoded << "/" << n_decoded << " decodes");
}

// The byte-level BPE fixture's tokenizer.json as GGUF arrays (what llama.cpp's
// converter writes for a gpt2 vocabulary).
GgufWriter bytelevel_gguf(const std::string& pre) {
    const json tj = read_json(fixtures_dir() / "gguf" / "tokenizers" / "bytelevel_bpe_384" / "tokenizer.json");
    std::vector<std::string> tokens(384);
    std::vector<int32_t> types(384, 1);
    for (auto it = tj["model"]["vocab"].begin(); it != tj["model"]["vocab"].end(); ++it)
        tokens.at(it.value().get<size_t>()) = it.key();
    for (const json& a : tj["added_tokens"]) {
        tokens.at(a["id"].get<size_t>()) = a["content"].get<std::string>();
        types.at(a["id"].get<size_t>()) = 3;  // CONTROL
    }
    std::vector<std::string> merges;
    for (const json& m : tj["model"]["merges"])
        merges.push_back(m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>());
    GgufWriter w;
    w.kv_string("general.architecture", "llama")
        .kv_string("tokenizer.ggml.model", "gpt2")
        .kv_string("tokenizer.ggml.pre", pre)
        .kv_strings("tokenizer.ggml.tokens", tokens)
        .kv_i32s("tokenizer.ggml.token_type", types)
        .kv_strings("tokenizer.ggml.merges", merges)
        .kv_u32("tokenizer.ggml.bos_token_id", 382)
        .kv_u32("tokenizer.ggml.eos_token_id", 383)
        .kv_bool("tokenizer.ggml.add_bos_token", true);
    return w;
}

}  // namespace

TEST_CASE("gguf llama vocabulary: merges by score, byte fallback, control tokens, space prefix") {
    TempDir tmp;
    // Pieces with SentencePiece-like scores: higher merges first.
    const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "<0x41>", "<0xC3>", "<0xA9>", "\xE2\x96\x81",
                                             "a", "b", "c", "ab", "bc", "abc", "\xE2\x96\x81" "a", "<ctl>", "\n\n"};
    const std::vector<float> scores = {0, 0, 0, 0, 0, 0, -1, -2, -3, -4, -10, -5, -6, -7, 0, 0};
    const std::vector<int32_t> types = {2, 3, 3, 6, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 3, 4};
    GgufWriter w;
    w.kv_string("tokenizer.ggml.model", "llama")
        .kv_strings("tokenizer.ggml.tokens", tokens)
        .kv_f32s("tokenizer.ggml.scores", scores)
        .kv_i32s("tokenizer.ggml.token_type", types)
        .kv_u32("tokenizer.ggml.bos_token_id", 1)
        .kv_u32("tokenizer.ggml.eos_token_id", 2)
        .kv_u32("tokenizer.ggml.unknown_token_id", 0)
        .kv_bool("tokenizer.ggml.add_space_prefix", false);
    auto tok = tokenizer_from(tmp, "spm.gguf", w);
    CHECK(tok->vocab_size() == 16);
    CHECK(tok->bos_id() == 1);
    CHECK(tok->eos_id() == 2);
    // "abc": bc (score -5) merges before ab (-10), then a + bc -> abc (-6).
    CHECK(tok->encode("abc", false) == std::vector<int>{12});
    // "abab": ab + ab; no "abab" piece.
    CHECK(tok->encode("abab", false) == std::vector<int>{10, 10});
    CHECK(tok->encode("a b", false) == std::vector<int>{7, 6, 8});  // ▁ + b: no "▁b" piece
    CHECK(tok->encode(" a", false) == std::vector<int>{13});
    // Byte fallback: "A" is not a piece, é is two byte pieces; "x" has no byte piece -> unk.
    CHECK(tok->encode("A\xC3\xA9", false) == std::vector<int>{3, 4, 5});
    CHECK(tok->encode("xx", false) == std::vector<int>{0});  // unknowns fuse
    // Control and user-defined tokens match whole; add_special prepends BOS (llama's default).
    CHECK(tok->encode("a<ctl>b\n\n", true) == std::vector<int>{1, 7, 14, 8, 15});
    CHECK(tok->decode({1, 7, 14, 8, 15, 3, 4, 5}) == "ab\n\nA\xC3\xA9");  // control tokens dropped
    CHECK(tok->decode({13, 6, 8}) == " a b");

    // add_space_prefix (llama.cpp's default): a leading ▁, stripped again by decode.
    GgufWriter w2 = w;
    w2.kv_bool("tokenizer.ggml.add_space_prefix", true);  // a second key of the same name is an error...
    expect_error([&] { tokenizer_from(tmp, "dup.gguf", w2); }, ErrorKind::format,
                 {"duplicate key", "tokenizer.ggml.add_space_prefix"});
    GgufWriter w3;
    w3.kv_string("tokenizer.ggml.model", "llama")
        .kv_strings("tokenizer.ggml.tokens", tokens)
        .kv_f32s("tokenizer.ggml.scores", scores)
        .kv_i32s("tokenizer.ggml.token_type", types)
        .kv_u32("tokenizer.ggml.bos_token_id", 1);
    auto prefixed = tokenizer_from(tmp, "prefix.gguf", w3);
    CHECK(prefixed->encode("a b", false) == std::vector<int>{13, 6, 8});
    CHECK(prefixed->decode({13, 6, 8}) == "a b");
}

TEST_CASE("gguf gpt2 vocabulary: the byte-level BPE fixture matches the tokenizers library") {
    TempDir tmp;
    const json expected = read_json(fixtures_dir() / "gguf" / "bytelevel_bpe_384_expected_ids.json");
    // gpt-2's pre-tokenizer would split differently; llama-bpe is the Llama 3 split.
    auto tok = tokenizer_from(tmp, "bytelevel.gguf", bytelevel_gguf("llama-bpe"));
    CHECK(tok->vocab_size() == 384);
    CHECK(tok->bos_id() == 382);
    check_corpus(*tok, expected.at("cases"), "ids", "ids_with_special", "decoded");
    expect_error(
        [&] { tokenizer_from(tmp, "pre.gguf", bytelevel_gguf("dbrx")); }, ErrorKind::unsupported,
        {"pre.gguf", "tokenizer.ggml.pre \"dbrx\"", "supported: llama-bpe", "qwen2", "refact", "tekken"});
    auto gpt2 = tokenizer_from(tmp, "gpt2.gguf", bytelevel_gguf("gpt-2"));
    CHECK(gpt2->decode(gpt2->encode("Hello, world!  ok", false)) == "Hello, world!  ok");
}

TEST_CASE("gguf qwen2 vocabulary (llama.cpp's converter) gives the tokenizers library's ids") {
    // tools/fixtures/make_tokenizer_qwen2.py: qwen2_bpe converted with --vocab-only.
    const fs::path path = fixtures_dir() / "gguf" / "tokenizers" / "qwen2_bpe_vocab.gguf";
    const GgufFile f(path);
    const json expected = read_json(fixtures_dir() / "tokenizers" / "qwen2_bpe_expected_ids.json");
    auto tok = load_gguf_tokenizer(f);
    CHECK(tok->vocab_size() == 1000);
    CHECK(tok->eos_id() == 997);  // <|im_end|>
    // NFC, the Qwen2 split; the converter made <think> USER_DEFINED (kept by decode).
    check_corpus(*tok, expected.at("cases"), "qwen2", "qwen2", "qwen2_decoded");
    CHECK(tok->encode("<|im_start|>", true) == std::vector<int>{996});  // add_bos_token false

    // The same vocabulary under the other values: deepseek-r1-qwen is Qwen2's
    // rule; starcoder, refact (Granite 3) and smollm split each digit, then GPT-2.
    GgufVocab v = read_gguf_vocab(f);
    CHECK(v.pre == "qwen2");
    v.pre = "deepseek-r1-qwen";
    auto ds = load_gguf_tokenizer(v);
    for (const char* text : {"x = 12345;", "cafe\xCC\x81 it's", "<think>1</think>"})
        CHECK(ds->encode(text, false) == tok->encode(text, false));
    for (const char* pre : {"refact", "smollm", "starcoder"}) {
        INFO("pre " << pre);
        v.pre = pre;
        auto star = load_gguf_tokenizer(v);
        check_corpus(*star, expected.at("cases"), "starcoder", "starcoder", "starcoder_decoded");
    }
    // Any other value is an error naming it, the file and what is supported.
    for (const char* pre : {"gpt4o", "Tekken", "qwen35", "dbrx", ""}) {
        v.pre = pre;
        expect_error([&] { load_gguf_tokenizer(v); }, ErrorKind::unsupported,
                     {path.string(), "tokenizer.ggml.pre \"" + std::string(pre) + "\"",
                      "supported: llama-bpe, llama3, llama-v3, smaug-bpe, qwen2, deepseek-r1-qwen, "
                      "starcoder, refact, smollm, gpt-4o, tekken, gpt-2"});
    }
}

TEST_CASE("gguf gpt-4o and tekken vocabularies (llama.cpp's converter) give the tokenizers library's ids") {
    // tools/fixtures/make_tokenizer_cased.py: o200k_bpe (Phi-4-mini's layout) and
    // tekken_bpe (Mistral Nemo's) converted with --vocab-only.
    const json expected = read_json(fixtures_dir() / "tokenizers" / "cased_bpe_expected_ids.json");
    const json& cases = expected.at("cases");
    REQUIRE(cases.size() >= 600);
    {
        const fs::path path = fixtures_dir() / "gguf" / "tokenizers" / "o200k_bpe_vocab.gguf";
        const GgufFile f(path);
        auto tok = load_gguf_tokenizer(f);
        CHECK(tok->vocab_size() == 1000);
        CHECK(tok->eos_id() == 995);  // <|endoftext|>
        check_corpus(*tok, cases, "o200k", "o200k_special", "o200k_decoded");
        GgufVocab v = read_gguf_vocab(f);
        CHECK(v.pre == "gpt-4o");
        // o200k's split, not Llama 3's: "DON'T" is one piece (the vocabulary has "ON'T").
        v.pre = "llama-bpe";
        auto l3 = load_gguf_tokenizer(v);
        CHECK(l3->encode("DON'T", false) != tok->encode("DON'T", false));
    }
    {
        const fs::path path = fixtures_dir() / "gguf" / "tokenizers" / "tekken_bpe_vocab.gguf";
        const GgufFile f(path);
        auto tok = load_gguf_tokenizer(f);
        CHECK(tok->vocab_size() == 1000);
        CHECK(tok->bos_id() == 1);  // <s>, added (add_bos_token true)
        CHECK(tok->eos_id() == 2);
        check_corpus(*tok, cases, "tekken", "tekken_special", "tekken_decoded");
        // Without tokenizer.ggml.add_bos_token, llama.cpp's default for tekken: BOS.
        GgufVocab v = read_gguf_vocab(f);
        CHECK(v.pre == "tekken");
        v.add_bos = -1;
        auto no_key = load_gguf_tokenizer(v);
        CHECK(no_key->encode("Hi", true) == tok->encode("Hi", true));
        CHECK(no_key->encode("Hi", true).front() == 1);
        // Tekken's rules on the o200k vocabulary: single digits, no suffixes.
        const GgufFile o200k(fixtures_dir() / "gguf" / "tokenizers" / "o200k_bpe_vocab.gguf");
        GgufVocab ov = read_gguf_vocab(o200k);
        ov.pre = "tekken";
        auto t2 = load_gguf_tokenizer(ov);
        ov.pre = "gpt-4o";
        auto o2 = load_gguf_tokenizer(ov);
        CHECK(t2->encode("DON'T", false) != o2->encode("DON'T", false));
    }
}

TEST_CASE("gguf twins' vocabularies: byte-level BPE as tokenizers, SentencePiece as sentencepiece") {
    const fs::path dir = fixtures_dir() / "gguf";
    {
        const GgufFile f(dir / "llama-mqa-3layer.gguf");
        auto tok = load_gguf_tokenizer(f);
        const json expected = read_json(dir / "bytelevel_bpe_384_expected_ids.json");
        check_corpus(*tok, expected.at("cases"), "ids", "ids_with_special", "decoded");
    }
    // Gemma 4 twins ("gemma4" vocabularies with merges) against their tokenizer.json.
    const json corpus = read_json(fixtures_dir() / "tokenizers" / "expected_ids.json");
    for (const auto& [twin_, json_dir] : {std::pair{"gemma4-keqv-causal.gguf", "gemma_bpe_320"},
                                          std::pair{"gemma4-e2b-like-causal.gguf", "gemma_bpe_256"}}) {
        const char* twin = twin_;  // names, not bindings: INFO/CHECK lambdas capture them (clang 14)
        INFO("twin " << std::string(twin));
        const GgufFile f(dir / twin);
        auto tok = load_gguf_tokenizer(f);
        auto ref = load_tokenizer_json(dir / "tokenizers" / json_dir / "tokenizer.json",
                                       dir / "tokenizers" / json_dir / "tokenizer_config.json");
        CHECK(tok->vocab_size() == ref->vocab_size());
        size_t n = 0, same = 0;
        for (const json& c : corpus.at("cases")) {
            const std::string text = sanitized(from_hex(c.at("text_hex").get<std::string>()));
            const auto a = tok->encode(text, true), b = ref->encode(text, true);
            CHECK_MESSAGE(a == b, "case " << n << ": \"" << text << "\"");
            CHECK(tok->decode(a) == ref->decode(b));
            same += a == b;
            ++n;
        }
        CHECK(n >= 300);
        MESSAGE(std::string(twin) << ": " << same << "/" << n << " id lists equal those of " << std::string(json_dir));
    }

    // The Llama twins' vocabulary is sp256.model, padded with [PAD256].. (UNUSED)
    // by the converter. sp256.model also collapses runs of spaces and trims
    // them at both ends (SentencePiece's remove_extra_whitespaces, which
    // neither GGUF nor llama.cpp knows, and which Llama's own model has off):
    // texts where that matters are left out, and so are texts with a literal
    // U+2581 (whitespace to that normalizer too) or "<" (control tokens such as
    // <s> match whole here, as in tokenizer.json and llama.cpp, while
    // sentencepiece reads them as text). (The Gemma 3 twin turns the
    // dummy prefix off, as Gemma does, so sentencepiece is no reference for it.)
    auto sp = load_sentencepiece(dir / "tokenizers" / "sp256.model", "");
    for (const char* twin : {"llama-tied.gguf", "llama-gqa-llama3.gguf"}) {
        INFO("twin " << std::string(twin));
        const GgufFile f(dir / twin);
        auto tok = load_gguf_tokenizer(f);
        CHECK(tok->vocab_size() == int(f.get_array_count("tokenizer.ggml.tokens")));
        size_t n = 0, same = 0;
        for (const json& c : corpus.at("cases")) {
            const std::string text = sanitized(from_hex(c.at("text_hex").get<std::string>()));
            if (text.empty() || text.front() == ' ' || text.back() == ' ' || text.find("  ") != std::string::npos ||
                text.find("\xE2\x96\x81") != std::string::npos || text.find('<') != std::string::npos)
                continue;
            const auto a = tok->encode(text, true), b = sp->encode(text, true);
            CHECK_MESSAGE(a == b, "case " << n << ": \"" << text << "\"");
            same += a == b;
            ++n;
        }
        CHECK(n >= 200);
        MESSAGE(std::string(twin) << ": " << same << "/" << n << " id lists equal sentencepiece's");
    }
}

TEST_CASE("gguf: the Gemma 3 vocabulary gives the ids of its tokenizer.json (skipped when not installed)") {
    if (!test::have_gemma3_gguf()) return;
    const GgufFile f(test::gemma3_gguf());
    const auto t0 = std::chrono::steady_clock::now();
    auto tok = load_gguf_tokenizer(f);
    const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE("Gemma 3 GGUF vocabulary loaded in " << load_ms << " ms");
    CHECK(tok->vocab_size() == 262144);
    CHECK(tok->bos_id() == 2);
    CHECK(tok->eos_id() == 1);
    CHECK(tok->token_id("<start_of_turn>") == 105);
    const json corpus = read_json(fixtures_dir() / "tokenizers" / "expected_ids.json");
    // GGUF keeps llama.cpp's token types, not tokenizer.json's "special" flags:
    // decode() drops control tokens (<unused0>, <mask>: not special for
    // tokenizers) and keeps user-defined ones (<start_of_image>: special there).
    const GgufVocab v = read_gguf_vocab(f);
    const auto added = [&](int id) {
        const auto type = GgufTokenType(v.token_types[size_t(id)]);
        return type == GgufTokenType::control ||
               (type == GgufTokenType::user_defined && v.tokens[size_t(id)].starts_with("<"));
    };
    check_corpus(*tok, corpus.at("cases"), "gemma3", "gemma3_with_special", "gemma3_decoded", added);
    CHECK(tok->decode({tok->token_id("<unused0>"), 9259, tok->token_id("<start_of_image>")}) ==
          "Hello<start_of_image>");
}

TEST_CASE("gguf: a converted Llama 3 vocabulary gives the ids of its tokenizer.json (skipped when absent)") {
    const char* env = std::getenv("STATICLM_LLAMA3_VOCAB_GGUF");
    const fs::path path = env ? fs::path(env) : fs::path("/tmp/llama3-vocab.gguf");
    if (!fs::is_regular_file(path)) {
        MESSAGE("SKIPPED: " << path.string()
                            << " is absent (a llama.cpp conversion of ../shared/data/llama3-tokenizer; "
                               "set STATICLM_LLAMA3_VOCAB_GGUF)");
        return;
    }
    const GgufFile f(path);
    auto tok = load_gguf_tokenizer(f);
    CHECK(tok->vocab_size() == 128256);
    CHECK(tok->bos_id() == 128000);
    const json corpus = read_json(fixtures_dir() / "tokenizers" / "expected_ids.json");
    check_corpus(*tok, corpus.at("cases"), "llama3", "", "llama3_decoded");
}
