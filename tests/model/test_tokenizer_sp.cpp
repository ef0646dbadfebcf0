// Tests of the SentencePiece tokenizer (model/tokenizer_sp.cpp), StreamDecoder and
// load_tokenizer (model/tokenizer.cpp) against ../shared/data tokenizers: ids and
// pieces from tokenizer_reference.json (made by the sentencepiece library), hand cases.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "staticlm/error.hpp"
#include "tokenizer/sp_model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace fs = std::filesystem;
using namespace staticlm;

namespace {

// ../shared/data next to the checkout; STATICLM_DATA_DIR overrides it (git worktrees
// that live elsewhere).
fs::path data_dir() {
    if (const char* env = std::getenv("STATICLM_DATA_DIR"); env && *env) return env;
    return fs::path(STATICLM_SOURCE_DIR) / ".." / "shared" / "data";
}
const fs::path kData = data_dir();
const fs::path kTok512 = kData / "stories260K" / "tok512.model";
const fs::path kLlama2 = kData / "llama2-tokenizer" / "tokenizer.model";

bool have_data() {
    if (fs::exists(kTok512) && fs::exists(kLlama2)) return true;
    MESSAGE("skipped: " << kData.string() << " (shared test data) is absent");
    return false;
}

// A scratch directory removed at scope end.
struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& name)
        : path(fs::temp_directory_path() /
               ("staticlm_test_tok_" + name + "_" + std::to_string(std::random_device{}()))) {
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
    fs::path write(const std::string& file, const std::string& text) const {
        std::ofstream(path / file, std::ios::binary) << text;
        return path / file;
    }
};

bool valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        uint32_t cp = n == 1 ? c : c & (0xFF >> (n + 1));
        for (size_t k = 1; k < n; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (d & 0x3F);
        }
        const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n;
    }
    return true;
}

template <class F>
void check_error(F&& f, ErrorKind kind, const std::string& needle) {
    try {
        f();
        FAIL("no Error thrown; expected one mentioning " << needle);
    } catch (const Error& e) {
        CHECK(e.kind() == kind);
        CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
    }
}

// Counts the ids handed to decode(), to show StreamDecoder decodes a window only.
class CountingTokenizer final : public Tokenizer {
public:
    explicit CountingTokenizer(const Tokenizer& t) : t_(t) {}
    std::vector<int> encode(std::string_view s, bool a) const override { return t_.encode(s, a); }
    std::string decode(const std::vector<int>& ids) const override {
        decoded_ids += ids.size();
        return t_.decode(ids);
    }
    int vocab_size() const override { return t_.vocab_size(); }
    int token_id(std::string_view p) const override { return t_.token_id(p); }
    std::string piece(int id) const override { return t_.piece(id); }
    int bos_id() const override { return t_.bos_id(); }
    int eos_id() const override { return t_.eos_id(); }
    mutable size_t decoded_ids = 0;

private:
    const Tokenizer& t_;
};

// Streams `ids`, checks every chunk is valid UTF-8, returns the concatenation + flush.
std::string stream(StreamDecoder& dec, const std::vector<int>& ids) {
    std::string all;
    for (int id : ids) {
        const auto chunk = dec.push(id);
        CHECK_MESSAGE(valid_utf8(chunk), "invalid UTF-8 chunk after id " << id);
        all += chunk;
    }
    const auto rest = dec.flush();
    CHECK(valid_utf8(rest));
    all += rest;
    return all;
}

}  // namespace

TEST_CASE("sentencepiece: ids, pieces and text match the sentencepiece library") {
    if (!have_data()) return;
    std::ifstream in(kData / "tokenizer_reference.json");
    const auto ref = nlohmann::json::parse(in);
    for (const char* key : {"tok512_sentencepiece", "llama2_sentencepiece"}) {
        const auto& r = ref.at(key);
        CAPTURE(key);
        const auto tok = load_sentencepiece(kData / r.at("file").get<std::string>(), {});
        CHECK(tok->vocab_size() == r.at("vocab_size").get<int>());
        CHECK(tok->bos_id() == r.at("bos_id").get<int>());
        CHECK(tok->eos_id() == r.at("eos_id").get<int>());
        for (const auto& c : r.at("cases")) {
            const auto text = c.at("text").get<std::string>();
            const auto ids = c.at("ids").get<std::vector<int>>();
            const auto pieces = c.at("pieces").get<std::vector<std::string>>();
            CAPTURE(text);
            CHECK(tok->encode(text, false) == ids);
            auto with_bos = ids;
            with_bos.insert(with_bos.begin(), tok->bos_id());
            CHECK(tok->encode(text, true) == with_bos);  // no tokenizer_config: add_bos_token true
            REQUIRE(pieces.size() == ids.size());
            for (size_t i = 0; i < ids.size(); ++i) {
                CHECK(tok->piece(ids[i]) == pieces[i]);
                CHECK(tok->token_id(pieces[i]) == ids[i]);
            }
            CHECK(tok->decode(ids) == c.at("decoded").get<std::string>());
            CHECK(tok->decode(with_bos) == c.at("decoded").get<std::string>());  // BOS is dropped
        }
    }
}

TEST_CASE("sentencepiece: hand-checked cases") {
    if (!have_data()) return;
    const auto tok = load_sentencepiece(kTok512, {});
    // stories260K/reference.json: the prompt "Once upon a time" with BOS.
    CHECK(tok->encode("Once upon a time", true) == std::vector<int>{1, 403, 407, 261, 378});
    CHECK(tok->piece(0) == "<unk>");
    CHECK(tok->piece(1) == "<s>");
    CHECK(tok->piece(2) == "</s>");
    CHECK(tok->piece(3 + 0x41) == "<0x41>");  // byte pieces follow the 3 specials
    CHECK(tok->token_id("<unk>") == 0);
    CHECK(tok->token_id("\xE2\x96\x81" "Once") == 403);
    CHECK(tok->token_id("no such piece") == -1);
    CHECK(tok->encode("", true) == std::vector<int>{1});
    CHECK(tok->encode("", false).empty());
    CHECK(tok->decode({}).empty());
    CHECK(tok->decode({1, 2}).empty());  // control tokens have no text
    CHECK(tok->decode({3 + 0x41, 3 + 0x42}) == "AB");

    const auto llama = load_sentencepiece(kLlama2, {});
    // U+1F999 (llama) has no piece: byte fallback F0 9F A6 99 after the dummy-prefix piece.
    CHECK(llama->encode("\xF0\x9F\xA6\x99", true) ==
          std::vector<int>{1, 29871, 3 + 0xF0, 3 + 0x9F, 3 + 0xA6, 3 + 0x99});
}

TEST_CASE("sentencepiece: tokenizer_config.json add_bos_token, special tokens and errors") {
    if (!have_data()) return;
    TempDir dir("cfg");
    const auto no_bos = dir.write("no_bos.json", R"({"add_bos_token": false, "add_eos_token": true})");
    const auto tok = load_sentencepiece(kTok512, no_bos);
    CHECK(tok->encode("Once upon a time", true) == std::vector<int>{403, 407, 261, 378, 2});
    CHECK(tok->encode("Once upon a time", false) == std::vector<int>{403, 407, 261, 378});

    const auto objects = dir.write(
        "objects.json",
        R"({"bos_token": {"content": "</s>", "lstrip": false}, "eos_token": "<s>", "add_bos_token": null})");
    const auto swapped = load_sentencepiece(kTok512, objects);
    CHECK(swapped->bos_id() == 2);
    CHECK(swapped->eos_id() == 1);
    CHECK(swapped->encode("Once", true).front() == 2);

    const auto missing_cfg = dir.path / "absent.json";  // absent config: defaults
    CHECK(load_sentencepiece(kTok512, missing_cfg)->encode("a", true).front() == 1);

    const auto bad_json = dir.write("bad.json", "{\"add_bos_token\": tru");
    check_error([&] { load_sentencepiece(kTok512, bad_json); }, ErrorKind::format, "bad.json");
    const auto bad_type = dir.write("type.json", R"({"add_bos_token": "yes"})");
    check_error([&] { load_sentencepiece(kTok512, bad_type); }, ErrorKind::format, "add_bos_token");
    const auto bad_token = dir.write("token.json", R"({"bos_token": "<nope>"})");
    check_error([&] { load_sentencepiece(kTok512, bad_token); }, ErrorKind::format, "<nope>");

    check_error([&] { load_sentencepiece(dir.path / "tokenizer.model", {}); }, ErrorKind::io,
                "tokenizer.model");
    const auto not_model = dir.write("garbage.model", "this is not a protobuf");
    check_error([&] { load_sentencepiece(not_model, {}); }, ErrorKind::format, "garbage.model");

    check_error([&] { tok->decode({5, 512}); }, ErrorKind::input, "512");
    check_error([&] { tok->decode({-1}); }, ErrorKind::input, "tok512.model");
    check_error([&] { tok->piece(100000); }, ErrorKind::input, "100000");
}

TEST_CASE("load_tokenizer: picks tokenizer.model in a model directory") {
    if (!have_data()) return;
    const auto tok = load_tokenizer(kData / "stories260K-hf");
    CHECK(tok->vocab_size() == 512);
    CHECK(tok->encode("Once upon a time", true) == std::vector<int>{1, 403, 407, 261, 378});

    TempDir dir("dir");
    check_error([&] { load_tokenizer(dir.path / "nope"); }, ErrorKind::io, "nope");
    check_error([&] { load_tokenizer(dir.path); }, ErrorKind::io, "tokenizer.model");
    fs::copy_file(kTok512, dir.path / "tokenizer.model");
    dir.write("tokenizer_config.json", R"({"add_bos_token": false})");
    CHECK(load_tokenizer(dir.path)->encode("Once upon a time", true) ==
          std::vector<int>{403, 407, 261, 378});
}

TEST_CASE("StreamDecoder: hand-checked chunks") {
    if (!have_data()) return;
    const auto llama = load_sentencepiece(kLlama2, {});
    StreamDecoder dec(*llama);
    // "<s>Hello 🦙" : the space of ▁Hello after BOS is dropped; the emoji's four
    // byte pieces come out as one chunk.
    const std::vector<std::pair<int, std::string>> steps = {
        {1, ""}, {15043, "Hello"}, {29871, " "}, {3 + 0xF0, ""}, {3 + 0x9F, ""},
        {3 + 0xA6, ""}, {3 + 0x99, "\xF0\x9F\xA6\x99"}, {3186, " world"}, {2, ""}};
    for (const auto& step : steps) {
        CAPTURE(step.first);
        CHECK(std::string(dec.push(step.first)) == step.second);
    }
    CHECK(dec.flush().empty());

    // After reset the leading-space rule applies again; "▁Once" alone, no BOS.
    dec.reset();
    CHECK(std::string(dec.push(9038)) == "Once");
    CHECK(std::string(dec.push(2501)) == " upon");

    // An unfinished byte sequence is held back, then flushed as U+FFFD.
    dec.reset();
    CHECK(std::string(dec.push(15043)) == "Hello");
    CHECK(dec.push(3 + 0xE2).empty());
    CHECK(dec.push(3 + 0x96).empty());
    CHECK(std::string(dec.flush()) == llama->decode({3 + 0xE2, 3 + 0x96}));
    CHECK(valid_utf8(llama->decode({3 + 0xE2, 3 + 0x96})));

    check_error([&] { dec.push(32000); }, ErrorKind::input, "32000");
    check_error([&] { dec.push(-3); }, ErrorKind::input, "-3");
}

TEST_CASE("StreamDecoder: a window of control tokens does not lose the next space") {
    if (!have_data()) return;
    const auto tok = load_sentencepiece(kTok512, {});
    StreamDecoder dec(*tok);
    std::vector<int> ids = {1, 403};  // <s> ▁Once
    ids.insert(ids.end(), 40, 2);     // many </s>: no text
    ids.push_back(407);               // ▁upon
    ids.insert(ids.end(), 40, tok->token_id("\xE2\x96\x81"));  // lone ▁ pieces
    ids.push_back(261);               // ▁a
    const auto got = stream(dec, ids);
    CHECK(got == tok->decode(ids));
    CHECK(got.rfind("Once upon", 0) == 0);
    CHECK(got.substr(got.size() - 2) == " a");
}

TEST_CASE("StreamDecoder: concatenated chunks equal decode(ids) for random ids") {
    if (!have_data()) return;
    for (const auto& file : {kTok512, kLlama2}) {
        const auto base = load_sentencepiece(file, {});
        CountingTokenizer tok(*base);
        CAPTURE(file.string());
        StreamDecoder dec(tok);
        std::mt19937 rng(1234);
        const int v = tok.vocab_size();
        size_t pushed = 0;
        for (int trial = 0; trial < 60; ++trial) {
            const int n = 1 + static_cast<int>(rng() % 300);
            std::vector<int> ids;
            if (trial % 2 == 0) ids.push_back(tok.bos_id());
            const int ws = tok.token_id("\xE2\x96\x81");
            // Well-formed multi-byte characters, to be split into byte pieces.
            const char* chars[] = {"\xE2\x96\x81", "\xF0\x9F\x98\x80", "\xC3\xA9", "\xE6\x97\xA5"};
            for (int i = 0; i < n; ++i) {
                // Mix: any id, single byte-fallback pieces (ids 3..258), whole UTF-8
                // characters as byte pieces, control ids, whitespace-only pieces.
                const unsigned kind = rng() % 10;
                if (kind < 3) {
                    ids.push_back(static_cast<int>(rng() % v));
                } else if (kind < 5) {
                    ids.push_back(3 + static_cast<int>(rng() % 256));
                } else if (kind < 8) {
                    for (const char* p = chars[rng() % 4]; *p; ++p)
                        ids.push_back(3 + static_cast<unsigned char>(*p));
                } else if (kind == 8) {
                    ids.push_back(static_cast<int>(rng() % 3));
                } else {
                    ids.push_back(ws);
                }
            }
            dec.reset();
            const auto expected = base->decode(ids);
            const auto got = stream(dec, ids);
            CHECK_MESSAGE(got == expected, "trial " << trial);
            pushed += ids.size();
        }
        // Each push decodes a bounded window, not the whole history.
        CHECK(tok.decoded_ids <= pushed * 40);
    }
}

TEST_CASE("StreamDecoder: encoded multilingual text and emoji round-trip") {
    if (!have_data()) return;
    const std::string text =
        "Once upon a time \xF0\x9F\xA6\x99 h\xC3\xA9llo w\xC3\xB6rld \xE6\x97\xA5\xE6\x9C\xAC"
        "\xE8\xAA\x9E  two  spaces\ttab\nnew line \xF0\x9F\x98\x80\xF0\x9F\x98\x80!";
    for (const auto& file : {kTok512, kLlama2}) {
        const auto tok = load_sentencepiece(file, {});
        StreamDecoder dec(*tok);
        const auto ids = tok->encode(text, true);
        const auto got = stream(dec, ids);
        CHECK(got == tok->decode(ids));
        if (file == kLlama2) CHECK(got == text);  // llama2 keeps repeated spaces
    }
}

namespace {

// A precompiled_charsmap blob: <uint32 trie bytes><units><strings>.
std::string charsmap(const std::vector<uint32_t>& units, const std::string& strings) {
    std::string b(4 + 4 * units.size(), '\0');
    const uint32_t n = uint32_t(4 * units.size());
    std::memcpy(b.data(), &n, 4);
    std::memcpy(b.data() + 4, units.data(), 4 * units.size());
    return b + strings;
}
// darts-clone unit: label, has_leaf, offset (< 2^22, unshifted).
uint32_t unit(uint32_t label, bool leaf, uint32_t offset) {
    return (offset << 10) | (leaf ? 1u << 8 : 0) | label;
}

// A chain root -> 1 -> 1 -> ... of `n` leaves: node j at j*256 + 1 (label 1),
// its base (j+1)*256 holding its value unit (offset 0 into "x").
std::string leaf_chain(int n) {
    // Unused units get bit 31 in their label, so that no input byte matches
    // them (darts-clone gives them labels that cannot match, too).
    std::vector<uint32_t> u(size_t(256) * (n + 2), 1u << 31);
    u[0] = unit(0x02, false, 256);  // root: base 256 (label 2: not child 0 of itself)
    for (int j = 1; j <= n; ++j) {
        const uint32_t index = uint32_t(j) * 256 + 1, base = uint32_t(j + 1) * 256;
        u[index] = unit(1, true, index ^ base);
        u[base] = (1u << 31) | 0;  // the value: "x"
    }
    return charsmap(u, std::string("x\0", 2));
}

}  // namespace

TEST_CASE(
    "sentencepiece: precompiled charsmaps are checked against their blob before the library sees "
    "them") {
    // Real ones (sentencepiece 0.2.3, BPE, byte fallback): nmt_nfkc and a
    // three-rule TSV (U+FB01 -> fi, U+FF21 -> A, U+2122 -> TM). Ids from the
    // sentencepiece library for the same text.
    const std::vector<int> expected = {265, 75, 266, 274, 274, 270, 265, 291, 271, 272, 266,
                                       265, 68, 69,  285, 80,  265, 280, 270, 277, 274, 268};
    const fs::path sp = fs::path(STATICLM_SOURCE_DIR) / "tests" / "fixtures" / "sp";
    for (const char* f : {"nfkc_bpe.model", "charsmap_rules.model"}) {
        INFO(f);
        const auto tok = load_sentencepiece(sp / f, {});
        CHECK(tok->encode("Hello \xef\xac\x81ne \xef\xbc\xa1"
                          "B\xe2\x84\xa2 world",
                          false) == expected);
    }
    bool ascii = false;
    CHECK(check_charsmap("", ascii).empty());
    CHECK(check_charsmap(leaf_chain(32), ascii).empty());
    CHECK(check_charsmap(leaf_chain(33), ascii).find("more than 32 prefixes") != std::string::npos);
    // root -> 'a' whose base is the root's block again: 'a' is its own child.
    std::vector<uint32_t> cyc(256, 0);
    cyc[0] = unit(0x01, false, 0);
    cyc['a'] = unit('a', false, 'a');  // base 'a' ^ 'a' = 0: child 'a' is index 'a' again
    CHECK(check_charsmap(charsmap(cyc, std::string("x\0", 2)), ascii).find("cycle") !=
          std::string::npos);
    CHECK(ascii);  // 'a' is a printable ASCII key byte
    std::vector<uint32_t> out(256, 0);
    out[0] = unit(0x01, false, 300);  // base 300: block [256, 512) of a 256-unit array
    CHECK(check_charsmap(charsmap(out, "x"), ascii).find("outside the trie") != std::string::npos);
    CHECK(check_charsmap(std::string("\x05\x00\x00\x00"
                                     "abcd",
                                     8),
                         ascii)
              .find("runs past") != std::string::npos);
    CHECK(check_charsmap(std::string(9u << 20, '\0'), ascii).find("8 MiB") != std::string::npos);
}
