// Tokenizer::encode_limited (tokenizer/tokenizer.cpp): chunked encoding gives
// exactly encode()'s ids on long texts — for every tokenizer at hand, with
// chunk sizes small enough to cut between most words — and stops early, with
// work bounded by the token budget, on a 10 MB prompt.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "model/gguf.hpp"
#include "tests/model/st_writer.hpp"
#include "tests/support.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_json.hpp"

using namespace staticlm;
using namespace staticlm::test;
namespace fs = std::filesystem;

namespace {

std::string read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool valid_utf8(const std::string& s) {
    try {
        check_utf8(s, "");
        return true;
    } catch (const Error&) {
        return false;
    }
}

// The story, then every valid case of the tokenizer corpus (Unicode, digits,
// whitespace runs, special-token strings), joined by spaces, repeated past 100 KB.
std::string long_text() {
    std::string base = read_bytes(fixtures_dir() / "perplexity" / "story.txt");
    const auto j =
        nlohmann::json::parse(read_bytes(fixtures_dir() / "tokenizers" / "expected_ids.json"));
    for (const auto& c : j["cases"]) {
        const std::string hex = c["text_hex"].get<std::string>();
        std::string t;
        for (size_t i = 0; i + 1 < hex.size(); i += 2)
            t.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
        if (valid_utf8(t)) base += " " + t + " and so on";
    }
    std::string text;
    while (text.size() < 100000) text += base + "\nThe end of a part ";
    return text;
}

struct Named {
    std::string name;
    std::shared_ptr<Tokenizer> tok;
    bool chunked;  // whether cuts must be found (the early stop is then observable)
};

// Loaded once (the real ones take a while, and longer under ASan).
const std::vector<Named>& tokenizers() {
    static const std::vector<Named> all = [] {
        std::vector<Named> out;
        const fs::path fuzz = source_dir() / "fuzz" / "corpus" / "tokenizer_json";
        out.push_back({"tiny_bpe.model",
                       load_sentencepiece(fixtures_dir() / "sp" / "tiny_bpe.model", {}), true});
        out.push_back({"charsmap_rules.model",
                       load_sentencepiece(fixtures_dir() / "sp" / "charsmap_rules.model", {}),
                       true});
        // nmt_nfkc maps some ASCII sequences: no cut is provable, encoded whole.
        out.push_back({"nfkc_bpe.model",
                       load_sentencepiece(fixtures_dir() / "sp" / "nfkc_bpe.model", {}), false});
        out.push_back(
            {"bytelevel_bpe.json", load_tokenizer_json(fuzz / "bytelevel_bpe.json", {}), true});
        out.push_back({"sp_bpe_bytefallback.json",
                       load_tokenizer_json(fuzz / "sp_bpe_bytefallback.json", {}), true});
        // Found by fuzz_tokenizer_json: the byte-level seed without its
        // pre-tokenizer. " " is then no token and drops out of the one BPE
        // word, so "Hello world" merges o+w across the space: no cut is exact.
        {
            static const TempDir dir;
            auto j = nlohmann::json::parse(read_bytes(fuzz / "bytelevel_bpe.json"));
            j["pre_tokenizer"] = nullptr;
            std::ofstream(dir / "tokenizer.json") << j.dump();
            out.push_back({"bytelevel_bpe.json without a pre-tokenizer",
                           load_tokenizer_json(dir / "tokenizer.json", {}), false});
        }
        // Found in review: SentencePiece models whose facts were misread. A
        // trainer_spec.model_type of 2^32 + 1 is UNIGRAM to protobuf (enums
        // are int32; the reader kept BPE, and unigram sums round differently
        // in a chunk), and a "▁" that is the UNKNOWN piece with unk_piece
        // renamed (unknowns around it fuse into one id whole, two cut).
        for (const char* f : {"sentencepiece-enum-int32-unigram.model", "sentencepiece-unk-space.model"})
            out.push_back({std::string(f), load_sentencepiece(fixtures_dir() / "fuzz" / f, {}), false});
        // GGUF vocabularies (tokenizer/tokenizer_gguf.cpp) build the same
        // pipelines: SentencePiece-style (llama), Gemma 4's, and gpt2 with the
        // llama-bpe and qwen2 pre-tokenizers.
        for (const char* f : {"llama-tied.gguf", "gemma3-4b-like-causal.gguf", "gemma4-e2b-like-causal.gguf",
                              "llama-mqa-3layer.gguf", "qwen2-tied.gguf"})
            out.push_back({std::string(f), load_gguf_tokenizer(GgufFile(fixtures_dir() / "gguf" / f)), true});
        if (have_gemma3_gguf())
            out.push_back({"gemma-3-270m-q4_k_m.gguf", load_gguf_tokenizer(GgufFile(gemma3_gguf())), true});
        if (have_shared_data("encode_limited on the real tokenizers")) {
            const fs::path d = shared_data();
            out.push_back({"llama2",
                           load_sentencepiece(d / "llama2-tokenizer" / "tokenizer.model", {}),
                           true});
            out.push_back({"llama3", load_tokenizer(d / "llama3-tokenizer", true), true});
            out.push_back({"gemma3", load_tokenizer(d / "gemma3-tokenizer", true), true});
        }
        return out;
    }();
    return all;
}

}  // namespace

TEST_CASE("encode_limited: chunked ids equal encode() exactly") {
    const std::string text = long_text();
    for (const Named& t : tokenizers()) {
        INFO("tokenizer " << t.name);
        for (const bool special : {false, true}) {
            const std::vector<int> whole = t.tok->encode(text, special);
            for (const size_t chunk :
                 {size_t{24}, size_t{97}, size_t{1000}, Tokenizer::kEncodeChunkBytes}) {
                INFO("chunk " << chunk << " add_special " << special);
                CHECK(t.tok->encode_limited(text, special, std::numeric_limits<size_t>::max(),
                                            chunk) == whole);
            }
            // A budget it fits exactly in: the same ids.
            CHECK(t.tok->encode_limited(text, special, whole.size(), 97) == whole);
            // One id short: more than the budget, a prefix of the ids.
            const std::vector<int> over =
                t.tok->encode_limited(text, special, whole.size() - 1, 97);
            CHECK(over.size() > whole.size() - 1);
            CHECK(std::equal(over.begin(), over.end(), whole.begin()));
            // A small budget stops after the first chunks when cuts exist.
            const std::vector<int> early = t.tok->encode_limited(text, special, 50, 97);
            CHECK(early.size() > 50);
            if (t.chunked) CHECK(early.size() < 200);
            CHECK(std::equal(early.begin(), early.end(), whole.begin()));
        }
    }
}

TEST_CASE("encode_limited: a 10 MB prompt against a 2048-token budget stops early") {
    std::string text;
    const std::string story = read_bytes(fixtures_dir() / "perplexity" / "story.txt");
    while (text.size() < (size_t{10} << 20)) text += story + " ";
    for (const Named& t : tokenizers()) {
        if (!t.chunked) continue;
        INFO("tokenizer " << t.name);
        const auto start = std::chrono::steady_clock::now();
        const std::vector<int> ids = t.tok->encode_limited(text, true, 2048);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        CHECK(ids.size() > 2048);
        CHECK(ids.size() <
              2048 + Tokenizer::kEncodeChunkBytes);  // at most one chunk past the budget
        MESSAGE(t.name << ": 10 MB prompt, budget 2048: stopped at " << ids.size() << " ids in "
                       << s << " s");
    }
    // Invalid UTF-8 at the very end is still found (the whole text is checked first).
    const std::string bad = text + "\xff";
    expect_error([&] { tokenizers().front().tok->encode_limited(bad, true, 2048); },
                 ErrorKind::input, {"invalid UTF-8", "byte " + std::to_string(text.size())});
}

// Found in review: with Prepend, every segment between raw added tokens gets
// its own "▁", so a raw token that ends or starts with a letter next to a cut
// changes the segments ("Hel" [lo] " world": "▁▁world" whole, "▁world" cut).
TEST_CASE("encode_limited: with Prepend, a raw added token with a letter at either end disables cuts") {
    const fs::path fuzz = source_dir() / "fuzz" / "corpus" / "tokenizer_json";
    std::string text;
    while (text.size() < 5000) text += "Hello world, the quick brown fox jumps over the lazy dog. ";
    for (const char* added : {"lo", "qu", "<x>"}) {
        INFO("raw added token " << std::string(added));
        auto j = nlohmann::json::parse(read_bytes(fuzz / "sp_bpe_bytefallback.json"));
        j["normalizer"] = {{"type", "Sequence"},
                           {"normalizers",
                            {{{"type", "Prepend"}, {"prepend", "\xe2\x96\x81"}},
                             {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xe2\x96\x81"}}}}};
        int next_id = 0;
        for (const auto& [piece, id] : j["model"]["vocab"].items()) next_id = std::max(next_id, id.get<int>() + 1);
        for (const auto& a : j["added_tokens"]) next_id = std::max(next_id, a["id"].get<int>() + 1);
        j["added_tokens"].push_back({{"id", next_id}, {"content", added}, {"special", false}, {"normalized", false}});
        TempDir dir;
        write_file(dir.path / "t.json", j.dump());
        const auto tok = load_tokenizer_json(dir.path / "t.json", {});
        const auto* jt = dynamic_cast<const tokjson::JsonTokenizer*>(tok.get());
        REQUIRE(jt);
        CHECK(jt->chunk_rule().enabled == (std::string(added) == "<x>"));
        CHECK(tok->encode_limited(text, true, std::numeric_limits<size_t>::max(), 50) == tok->encode(text, true));
    }
}

TEST_CASE(
    "encode_limited: no cut inside an added token, a raw space in an added token disables cuts") {
    const fs::path fuzz = source_dir() / "fuzz" / "corpus" / "tokenizer_json";
    auto j = nlohmann::json::parse(read_bytes(fuzz / "bytelevel_bpe.json"));
    TempDir dir;
    // An added token holding "a b": a cut there would split it.
    j["added_tokens"].push_back(
        {{"id", 301}, {"content", "ab cd"}, {"special", true}, {"normalized", false}});
    write_file(dir.path / "t.json", j.dump());
    const auto tok = load_tokenizer_json(dir.path / "t.json", {});
    const auto* jt = dynamic_cast<const tokjson::JsonTokenizer*>(tok.get());
    REQUIRE(jt);
    CHECK_FALSE(jt->chunk_rule().enabled);
    std::string text;
    while (text.size() < 5000) text += "xy ab cd zz ";
    CHECK(tok->encode_limited(text, true, std::numeric_limits<size_t>::max(), 50) ==
          tok->encode(text, true));
}
