// Tests of the tokenizer.json tokenizer: the hand-written Unicode splitters,
// NFC and UTF-8 repair on hand-computed cases, a tiny hand-made BPE file,
// small Qwen2-, Phi-4-mini- (o200k) and Mistral Nemo-layout (Tekken) files, and the real Llama 3 /
// Gemma 3 files against ids from the Hugging Face `tokenizers` library
// (tests/fixtures/tokenizers/).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "staticlm/error.hpp"
#include "tokenizer/tokenizer_json.hpp"
#include "tokenizer/tokenizer_json_unicode.hpp"

using namespace staticlm;
using namespace staticlm::tokjson;
namespace fs = std::filesystem;

namespace {

fs::path data_dir() {
    if (const char* env = std::getenv("STATICLM_DATA_DIR")) return env;
    return fs::path(STATICLM_SOURCE_DIR) / ".." / "shared" / "data";
}

std::vector<std::string> split(SplitRegex which, std::string_view text) {
    SplitScratch sc;
    std::vector<std::pair<uint32_t, uint32_t>> m;
    split_regex(which, text, sc, m);
    std::vector<std::string> out;
    for (auto [b, e] : m) out.emplace_back(text.substr(b, e - b));
    return out;
}

std::string from_hex(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

std::string sanitized(std::string_view s) {
    std::string out;
    return sanitize_utf8(s, out) ? std::string(s) : out;
}

bool valid_utf8(std::string_view s) {
    std::string out;
    return sanitize_utf8(s, out);
}

fs::path write_temp(const std::string& name, const std::string& text) {
    fs::path p = fs::temp_directory_path() / ("staticlm_test_" + name);
    std::ofstream(p, std::ios::binary) << text;
    return p;
}

}  // namespace

TEST_CASE("unicode classes") {
    CHECK(char_class('a') == CharClass::kLetter);
    CHECK(char_class(0xE9) == CharClass::kLetter);    // é
    CHECK(char_class(0x4E2D) == CharClass::kLetter);  // 中
    CHECK(char_class(0x01C5) == CharClass::kLetter);  // ǅ (Lt)
    CHECK(char_class(0x02B0) == CharClass::kLetter);  // ʰ (Lm)
    CHECK(char_class('7') == CharClass::kNumber);
    CHECK(char_class(0x0663) == CharClass::kNumber);  // Arabic-Indic 3 (Nd)
    CHECK(char_class(0x2162) == CharClass::kNumber);  // Ⅲ (Nl)
    CHECK(char_class(0x00BD) == CharClass::kNumber);  // ½ (No)
    CHECK(char_class(0x00A0) == CharClass::kSpace);
    CHECK(char_class(0x3000) == CharClass::kSpace);
    CHECK(char_class(0x2028) == CharClass::kSpace);
    CHECK(char_class('\n') == CharClass::kNewline);
    CHECK(char_class(0x180E) == CharClass::kOther);   // not White_Space since Unicode 6.3
    CHECK(char_class(0x200B) == CharClass::kOther);   // zero width space is Cf
    CHECK(char_class(0x1F600) == CharClass::kOther);  // 😀
    CHECK(char_class(0x0301) == CharClass::kOther);   // combining acute (Mn)
}

TEST_CASE("llama3 split regex, hand-computed") {
    using V = std::vector<std::string>;
    const auto L3 = SplitRegex::kLlama3;
    CHECK(split(L3, "Hello world") == V{"Hello", " world"});
    CHECK(split(L3, "it's I'M we'Re") == V{"it", "'s", " I", "'M", " we", "'Re"});
    CHECK(split(L3, "12345 1234567") == V{"123", "45", " ", "123", "456", "7"});
    CHECK(split(L3, "a  b") == V{"a", " ", " b"});
    CHECK(split(L3, "a \n\n b") == V{"a", " \n\n", " b"});
    CHECK(split(L3, "x   ") == V{"x", "   "});
    CHECK(split(L3, "...\n\nnext") == V{"...\n\n", "next"});
    CHECK(split(L3, " (x)") == V{" (", "x", ")"});
    CHECK(split(L3, "\tfoo") == V{"\tfoo"});
    CHECK(split(L3, "\nfoo") == V{"\n", "foo"});
    CHECK(split(L3, "caf\xC3\xA9 \xE4\xB8\xAD") == V{"caf\xC3\xA9", " \xE4\xB8\xAD"});
    CHECK(split(L3, "'hello") == V{"'hello"});
    CHECK(split(L3, "'\xC5\xBF") == V{"'\xC5\xBF"});  // 'ſ: ſ folds to s under (?i)
    CHECK(split(L3, "").empty());
}

TEST_CASE("qwen2 split regex, hand-computed") {
    using V = std::vector<std::string>;
    const auto Q = SplitRegex::kQwen2;
    // Llama 3's alternatives, but every number character alone.
    CHECK(split(Q, "12345 abc1234") == V{"1", "2", "3", "4", "5", " abc", "1", "2", "3", "4"});
    CHECK(split(Q, " 42") == V{" ", "4", "2"});
    CHECK(split(Q, "x\xC2\xB2\xC2\xBD") == V{"x", "\xC2\xB2", "\xC2\xBD"});  // x²½ (No)
    CHECK(split(Q, "it's IT'S") == V{"it", "'s", " IT", "'S"});
    CHECK(split(Q, "a \n\n b...\n") == V{"a", " \n\n", " b", "...\n"});
    SplitRegex which = SplitRegex::kGpt2;
    CHECK(
        known_split_regex("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                          "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
                          which));
    CHECK(which == Q);
    CHECK_FALSE(
        known_split_regex("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,2}| "
                          "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
                          which));
}

TEST_CASE("o200k and tekken split regexes, hand-computed") {
    using V = std::vector<std::string>;
    const auto O = SplitRegex::kO200k, T = SplitRegex::kTekken;
    // Case classes: Lu Lt upper; Ll lower; Lm Lo and marks both.
    CHECK(case_class('A') == kCaseUpper);
    CHECK(case_class('z') == kCaseLower);
    CHECK(case_class(0x01C5) == kCaseUpper);                 // ǅ (Lt)
    CHECK(case_class(0x10D0) == kCaseLower);                 // Georgian ა (Ll)
    CHECK(case_class(0x1C90) == kCaseUpper);                 // Georgian Ა (Lu)
    CHECK(case_class(0x02B0) == (kCaseUpper | kCaseLower));  // ʰ (Lm)
    CHECK(case_class(0x4E2D) == (kCaseUpper | kCaseLower));  // 中 (Lo)
    CHECK(case_class(0x0301) == (kCaseUpper | kCaseLower));  // combining acute (Mn)
    CHECK(case_class(0x20E3) == (kCaseUpper | kCaseLower));  // combining keycap (Me)
    CHECK(case_class('1') == 0);
    CHECK(case_class(0x2160) == 0);  // Ⅰ (Nl)
    CHECK(case_class('\'') == 0);
    // Results of the tokenizers library (0.23.3) for these strings.
    for (const auto which : {O, T}) {
        INFO((which == O ? "o200k" : "tekken"));
        CHECK(split(which, "getHTTPResponseCode") == V{"get", "HTTPResponse", "Code"});
        CHECK(split(which,
                    "E\xCC\x81"
                    "COLE") == V{"E\xCC\x81", "COLE"});  // É (decomposed) COLE
        CHECK(split(which,
                    "\xCC\x81"
                    "A") == V{"\xCC\x81", "A"});  // a mark is prefix or letter
        CHECK(split(which,
                    " \xCC\x81"
                    "A") == V{" \xCC\x81", "A"});
        CHECK(split(which,
                    " \xCC\x81"
                    "a") == V{" \xCC\x81"
                              "a"});
        CHECK(split(which,
                    "A\xCA\xB0"
                    "B") == V{"A\xCA\xB0", "B"});  // Aʰ B: Lm gives W+ its letter
        CHECK(split(which, "\xC7\x85ungla \xC7\x84UNGLA") == V{"\xC7\x85ungla", " \xC7\x84UNGLA"});
        CHECK(split(which, "a/b/\n/c d") == V{"a", "/b", "/\n/", "c", " d"});
        CHECK(split(which,
                    "ABC\xE4\xB8\xAD\xE6\x96\x87"
                    "def") == V{"ABC\xE4\xB8\xAD\xE6\x96\x87"
                                "def"});
        CHECK(split(which, "1\xEF\xB8\x8F\xE2\x83\xA3") ==
              V{"1", "\xEF\xB8\x8F\xE2\x83\xA3"});  // 1️⃣
        CHECK(split(which, "a \n\n b...\n") == V{"a", " \n\n", " b", "...\n"});
        CHECK(split(which, "").empty());
    }
    CHECK(split(O, "DON'T it's IT'S x'\xC5\xBF") == V{"DON'T", " it's", " IT'S", " x'\xC5\xBF"});
    CHECK(split(T, "DON'T it's IT'S x'\xC5\xBF") ==
          V{"DON", "'T", " it", "'s", " IT", "'S", " x", "'\xC5\xBF"});
    CHECK(split(O, "'s'S") == V{"'s'S"});
    CHECK(split(T, "'s'S") == V{"'s", "'S"});
    CHECK(split(O, "12345") == V{"123", "45"});
    CHECK(split(T, "12345") == V{"1", "2", "3", "4", "5"});
    SplitRegex which = SplitRegex::kGpt2;
    const std::string o200k =
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+("
        "?i:'s|'t|"
        "'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}"
        "\\p{Lm}\\p{Lo}"
        "\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?"
        "!\\S)|\\s+";
    const std::string tekken =
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
        "[^\\r\\n\\p"
        "{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| "
        "?[^\\s\\p{L}\\p"
        "{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    CHECK(known_split_regex(o200k, which));
    CHECK(which == O);
    CHECK(known_split_regex(tekken, which));
    CHECK(which == T);
    // Any other text is not recognized (here: \p{Lt} left out of one class).
    std::string other = o200k;
    other.replace(other.find("\\p{Lu}\\p{Lt}"), 12, "\\p{Lu}");
    CHECK_FALSE(known_split_regex(other, which));
}

TEST_CASE("NFC, hand-computed") {
    auto n = [](std::string s) {
        nfc(s);
        return s;
    };
    CHECK(n("plain ascii 123") == "plain ascii 123");
    CHECK(n("caf\xC3\xA9") == "caf\xC3\xA9");                    // already composed
    CHECK(n("cafe\xCC\x81") == "caf\xC3\xA9");                   // e + U+0301 -> é
    CHECK(n("\xE2\x84\xAB") == "\xC3\x85");                      // Å sign U+212B -> Å (singleton)
    CHECK(n("e\xCC\x81\xCC\x81") == "\xC3\xA9\xCC\x81");         // the second accent is blocked
    CHECK(n("q\xCC\x87\xCC\xA3") == "q\xCC\xA3\xCC\x87");        // reordered: class 220 before 230
    CHECK(n("\xE1\xBA\x9B\xCC\xA3") == "\xE1\xBA\x9B\xCC\xA3");  // ẛ̣ (UAX #15's example)
    CHECK(n("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8") == "\xEA\xB0\x81");  // jamo -> 각
    CHECK(n("\xEA\xB0\x80\xE1\x86\xA8") == "\xEA\xB0\x81");              // 가 + final jamo -> 각
    CHECK(n("\xCC\x81z") == "\xCC\x81z");                                // a leading mark stays
    // tokenizers' (older) tables: U+11935 U+11930 stays, U+1DF6 has class 0.
    CHECK(n("\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0") == "\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0");
    CHECK(n("a\xE1\xB7\xB6\xCC\xB4") == "a\xE1\xB7\xB6\xCC\xB4");
}

TEST_CASE("gpt2 split regex, hand-computed") {
    using V = std::vector<std::string>;
    const auto G = SplitRegex::kGpt2;
    CHECK(split(G, "Hello world 123 !!") == V{"Hello", " world", " 123", " !!"});
    CHECK(split(G, "it's IT'S") == V{"it", "'s", " IT", "'", "S"});
    CHECK(split(G, "a  b") == V{"a", " ", " b"});
    CHECK(split(G, "a\tb") == V{"a", "\t", "b"});
}

TEST_CASE("UTF-8 repair uses maximal subparts") {
    std::string out;
    CHECK(sanitize_utf8("plain", out));
    CHECK(sanitize_utf8("caf\xC3\xA9", out));
    const std::string r = "\xEF\xBF\xBD";
    CHECK(sanitized("a\xFF"
                    "b") == "a" + r + "b");
    CHECK(sanitized("\xF0\x9F\x98") == r);  // cut 4-byte sequence: one
    CHECK(sanitized("\xE2\x82(") == r + "(");
    CHECK(sanitized("\xC0\x80") == r + r);                  // overlong: two
    CHECK(sanitized("\xED\xA0\x80") == r + r + r);          // surrogate: three
    CHECK(sanitized("\xF4\x90\x80\x80") == r + r + r + r);  // above U+10FFFF
    CHECK(complete_utf8_prefix("ab\xE4\xB8") == 2);
    CHECK(complete_utf8_prefix("ab\xE4\xB8\xAD") == 5);
    CHECK(complete_utf8_prefix("ab\xF0\x9F\x98") == 2);
    CHECK(complete_utf8_prefix("ab\xFF") == 3);  // invalid, not unfinished
    CHECK(complete_utf8_prefix("ab\xE4"
                               "A") == 4);
}

namespace {

// A tiny byte-fallback BPE whose merges are easy to follow by hand.
const char* kTinyJson = R"({
  "version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [
    {"id": 12, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
     "normalized": false, "special": true},
    {"id": 13, "content": "<sep>", "single_word": false, "lstrip": false, "rstrip": false,
     "normalized": false, "special": false}],
  "normalizer": {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "\u2581"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
  "pre_tokenizer": null,
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [12], "tokens": ["<s>"]}}},
  "decoder": {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "fuse_unk": true,
    "byte_fallback": true, "ignore_merges": false,
    "vocab": {"<unk>": 0, "a": 1, "b": 2, "c": 3, "\u2581": 4, "ab": 5, "bc": 6, "abc": 7,
              "<0xC3>": 8, "<0xA9>": 9, "\u2581a": 10, "\u2581abc": 11},
    "merges": [["b", "c"], ["a", "b"], ["a", "bc"], ["\u2581", "a"], ["\u2581", "abc"]]}
})";

}  // namespace

TEST_CASE("tiny BPE: merge order, byte fallback, unk, added tokens") {
    const fs::path p = write_temp("tiny_tokenizer.json", kTinyJson);
    auto tok = load_tokenizer_json(p, "");
    REQUIRE(tok);
    CHECK(tok->vocab_size() == 14);
    // "abc": b+c (rank 0) before a+b (rank 1), then a+bc; "▁" + "abc" last.
    CHECK(tok->encode("abc", false) == std::vector<int>{11});
    // "ab c": ▁ab▁c -> ▁,a,b,▁,c -> a+b (rank 1) beats ▁+a (rank 3): ▁ ab ▁ c
    CHECK(tok->encode("ab c", false) == std::vector<int>{4, 5, 4, 3});
    // é is not in the vocab: bytes C3 A9; x has neither, so it is unk (fused).
    CHECK(tok->encode("a\xC3\xA9xx", false) == std::vector<int>{10, 8, 9, 0});
    CHECK(tok->encode("a<s>b<sep>", false) == std::vector<int>{10, 12, 4, 2, 13});
    CHECK(tok->encode("abc", true) == std::vector<int>{12, 11});
    CHECK(tok->decode({11, 4, 5, 8, 9}) == "abc ab\xC3\xA9");  // Strip drops one leading space
    CHECK(tok->decode({12, 10, 13}) == "a<sep>");              // special <s> dropped
    CHECK(tok->decode({1, 8, 1}) ==
          "a\xEF\xBF\xBD"
          "a");  // lone C3 byte
    // é then a lone C3: one U+FFFD for the unfinished character only (tokenizers
    // would give three, one per byte of the run; see the ByteFallback note).
    CHECK(tok->decode({8, 9, 8}) == "\xC3\xA9\xEF\xBF\xBD");
    CHECK(tok->token_id("<sep>") == 13);
    CHECK(tok->token_id("abc") == 7);
    CHECK(tok->token_id("nope") == -1);
    CHECK(tok->piece(6) == "bc");
    CHECK(tok->bos_id() == 12);
    CHECK_THROWS_AS(tok->decode({99}), Error);
    auto* jt = dynamic_cast<JsonTokenizer*>(tok.get());
    REQUIRE(jt);
    CHECK(jt->decode_stable({1, 8}) == "a");  // C3 is held back
    CHECK(jt->decode_stable({1, 8, 9}) == "a\xC3\xA9");
    fs::remove(p);
}

TEST_CASE("unsupported components are clear errors naming the file") {
    std::string text = kTinyJson;
    text.replace(text.find("\"type\": \"Prepend\", \"prepend\": \"\\u2581\""),
                 std::string("\"type\": \"Prepend\", \"prepend\": \"\\u2581\"").size(),
                 "\"type\": \"NFKC\"");
    const fs::path p = write_temp("nfkc_tokenizer.json", text);
    try {
        load_tokenizer_json(p, "");
        FAIL("NFKC must be rejected");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::unsupported);
        CHECK(std::string(e.what()).find("normalizer NFKC") != std::string::npos);
        CHECK(std::string(e.what()).find(p.string()) != std::string::npos);
    }
    fs::remove(p);
    const fs::path bad = write_temp("bad_tokenizer.json", "{\"model\": {\"vocab\": {\"a\": 1,");
    CHECK_THROWS_AS(load_tokenizer_json(bad, ""), Error);
    fs::remove(bad);
    CHECK_THROWS_AS(load_tokenizer_json(fs::temp_directory_path() / "staticlm_no_such.json", ""),
                    Error);
}

namespace {

// encode() refuses invalid UTF-8 with an input error naming the byte; the
// fixture's ids for such strings are what `tokenizers` gives after Python's
// decode('utf-8', 'replace'), so they must match the repaired text.
std::vector<int> encode_fixture_text(const Tokenizer& tok, const std::string& text, bool special) {
    if (valid_utf8(text)) return tok.encode(text, special);
    try {
        tok.encode(text, special);
        FAIL_CHECK("invalid UTF-8 accepted");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::input);
        CHECK(std::string(e.what()).find("invalid UTF-8 at byte") != std::string::npos);
    }
    return tok.encode(sanitized(text), special);
}

void check_against_fixture(const std::string& name) {
    const fs::path dir = data_dir() / (name + "-tokenizer");
    if (!fs::exists(dir / "tokenizer.json")) {
        MESSAGE("SKIPPED: " << (dir / "tokenizer.json").string()
                            << " is absent (set STATICLM_DATA_DIR to the shared data folder)");
        return;
    }
    std::ifstream f(fs::path(STATICLM_SOURCE_DIR) / "tests/fixtures/tokenizers/expected_ids.json");
    REQUIRE(f);
    const nlohmann::json fixture = nlohmann::json::parse(f);
    auto tok = load_tokenizer_json(dir / "tokenizer.json", dir / "tokenizer_config.json");
    auto* jt = dynamic_cast<JsonTokenizer*>(tok.get());
    REQUIRE(jt);
    size_t n_cases = 0, n_lossless = 0;
    for (const auto& c : fixture.at("cases")) {
        const std::string text = from_hex(c.at("text_hex").get<std::string>());
        const auto expected = c.at(name).get<std::vector<int>>();
        const std::vector<int> ids = encode_fixture_text(*tok, text, false);
        INFO(name << " case " << n_cases << ": \"" << sanitized(text) << "\"");
        CHECK(ids == expected);
        const std::string decoded = tok->decode(expected);
        CHECK(decoded == c.at(name + "_decoded").get<std::string>());
        if (c.contains(name + "_with_special"))
            CHECK(encode_fixture_text(*tok, text, true) ==
                  c.at(name + "_with_special").get<std::vector<int>>());
        // Lossless round trip wherever no special token was dropped and, for
        // Gemma, the text has no literal U+2581 (the decoder turns it into a space).
        bool has_special = false;
        for (int id : expected) has_special = has_special || jt->is_special(id);
        const bool metaspace_lossy =
            name == "gemma3" && text.find("\xE2\x96\x81") != std::string::npos;
        if (!has_special && !metaspace_lossy) {
            CHECK(decoded == sanitized(text));
            ++n_lossless;
        }
        // Streaming: the stable text of every prefix is valid UTF-8 and a
        // prefix of the next one and of the full decode.
        std::string previous;
        std::vector<int> prefix;
        bool stable_ok = true;
        for (int id : expected) {
            prefix.push_back(id);
            const std::string now = jt->decode_stable(prefix);
            stable_ok = stable_ok && valid_utf8(now) &&
                        now.compare(0, previous.size(), previous) == 0 &&
                        decoded.compare(0, now.size(), now) == 0;
            previous = now;
        }
        CHECK(stable_ok);
        CHECK(previous == decoded);
        // The shared StreamDecoder over this tokenizer: valid UTF-8 chunks that
        // add up to the full decode.
        StreamDecoder stream(*tok);
        std::string streamed;
        bool chunks_valid = true;
        for (int id : expected) {
            const std::string_view chunk = stream.push(id);
            chunks_valid = chunks_valid && valid_utf8(chunk);
            streamed += chunk;
        }
        streamed += stream.flush();
        CHECK(chunks_valid);
        CHECK(streamed == decoded);
        ++n_cases;
    }
    CHECK(n_cases >= 200);
    MESSAGE(name << ": " << n_cases << " fixture strings, " << n_lossless << " round-tripped");
}

}  // namespace

TEST_CASE("llama3 tokenizer.json matches the tokenizers library") {
    check_against_fixture("llama3");
    const fs::path dir = data_dir() / "llama3-tokenizer";
    if (!fs::exists(dir / "tokenizer.json")) return;
    auto tok = load_tokenizer_json(dir / "tokenizer.json", dir / "tokenizer_config.json");
    CHECK(tok->vocab_size() == 128256);
    CHECK(tok->bos_id() == 128000);
    CHECK(tok->eos_id() == 128001);
    // Special tokens inside text are matched whole and never split.
    const auto ids = tok->encode("a<|eot_id|>b", false);
    REQUIRE(ids.size() == 3);
    CHECK(ids[1] == 128009);
    CHECK(tok->piece(128009) == "<|eot_id|>");
    CHECK(tok->decode(ids) == "ab");
}

TEST_CASE("gemma3 tokenizer.json matches the tokenizers library") {
    check_against_fixture("gemma3");
    const fs::path dir = data_dir() / "gemma3-tokenizer";
    if (!fs::exists(dir / "tokenizer.json")) return;
    auto tok = load_tokenizer_json(dir / "tokenizer.json", dir / "tokenizer_config.json");
    CHECK(tok->vocab_size() == 262145);  // 262144 + <image_soft_token>, as tokenizers says
    CHECK(tok->bos_id() == 2);
    CHECK(tok->token_id("<end_of_turn>") == tok->eos_id());
    const auto ids = tok->encode("<start_of_turn>user", true);
    REQUIRE(ids.size() >= 3);
    CHECK(ids[0] == 2);
    CHECK(ids[1] == tok->token_id("<start_of_turn>"));
}

namespace {

// The Qwen2-layout fixture (tools/fixtures/make_tokenizer_qwen2.py) and the
// tokenizers library's ids for its corpus.
const fs::path kQwen2Dir = fs::path(STATICLM_SOURCE_DIR) / "tests/fixtures/tokenizers/qwen2_bpe";

nlohmann::json read_json_file(const fs::path& p) {
    std::ifstream f(p);
    REQUIRE_MESSAGE(f, "cannot open " << p.string());
    return nlohmann::json::parse(f);
}

// Every corpus string of a fixture's `name` column ("qwen2", "starcoder",
// "o200k", "tekken") through tok: ids without and with special tokens, and decode.
void check_corpus(const Tokenizer& tok, const nlohmann::json& fixture, const std::string& name,
                  size_t min_cases) {
    size_t n = 0, ok = 0, ok_special = 0, ok_decoded = 0;
    for (const auto& c : fixture.at("cases")) {
        const std::string text = from_hex(c.at("text_hex").get<std::string>());
        const auto expected = c.at(name).get<std::vector<int>>();
        // With special tokens: "<name>_special" where the fixture has it, else nothing is added.
        const auto expected_special =
            c.contains(name + "_special") ? c.at(name + "_special").get<std::vector<int>>() : expected;
        INFO(name << " case " << n << ": \"" << sanitized(text) << "\"");
        const std::vector<int> ids = encode_fixture_text(tok, text, false);
        CHECK(ids == expected);
        const bool special = encode_fixture_text(tok, text, true) == expected_special;
        CHECK(special);
        const std::string decoded = tok.decode(expected);
        CHECK(decoded == c.at(name + "_decoded").get<std::string>());
        ok += ids == expected;
        ok_special += special;
        ok_decoded += decoded == c.at(name + "_decoded").get<std::string>();
        ++n;
    }
    CHECK(n >= min_cases);
    MESSAGE(name << ": " << ok << "/" << n << " id lists (" << ok_special << " with special tokens) and "
                 << ok_decoded << " decodes equal the tokenizers library's");
}

}  // namespace

TEST_CASE("qwen2 tokenizer.json (NFC, Qwen2 split) matches the tokenizers library") {
    const nlohmann::json fixture =
        read_json_file(kQwen2Dir.parent_path() / "qwen2_bpe_expected_ids.json");
    auto tok =
        load_tokenizer_json(kQwen2Dir / "tokenizer.json", kQwen2Dir / "tokenizer_config.json");
    CHECK(tok->vocab_size() == 1000);
    CHECK(tok->token_id("<|im_end|>") == 997);
    CHECK(tok->eos_id() == 997);
    CHECK(tok->bos_id() == -1);
    check_corpus(*tok, fixture, "qwen2", 500);
    // <think> is an added token but not special: matched whole, kept by decode.
    const auto ids = tok->encode("<|im_start|>x<think>", false);
    CHECK(ids.front() == 996);
    CHECK(ids.back() == 998);
    CHECK(tok->decode(ids) == "x<think>");
    // encode_limited cuts at "letter space letter", where NFC changes nothing:
    // chunked ids equal encode()'s on the whole corpus.
    std::string all;
    for (const auto& c : fixture.at("cases"))
        all += sanitized(from_hex(c.at("text_hex").get<std::string>())) + " a ";
    const std::vector<int> whole = tok->encode(all, false);
    for (const size_t chunk : {size_t{24}, size_t{97}, size_t{1000}})
        CHECK(tok->encode_limited(all, false, std::numeric_limits<size_t>::max(), chunk) == whole);
    const std::vector<int> early = tok->encode_limited(all, false, 50, 97);
    CHECK(early.size() < 200);  // the cuts exist: it stopped early
    CHECK(std::equal(early.begin(), early.end(), whole.begin()));
}

TEST_CASE(
    "starcoder-style pre-tokenizer (Digits, GPT-2 ByteLevel) matches the tokenizers library") {
    // The same vocabulary behind StarCoder / SmolLM2 / Granite 3's pipeline.
    const nlohmann::json fixture =
        read_json_file(kQwen2Dir.parent_path() / "qwen2_bpe_expected_ids.json");
    nlohmann::json tj = read_json_file(kQwen2Dir / "tokenizer.json");
    tj["normalizer"] = fixture.at("starcoder_normalizer");
    tj["pre_tokenizer"] = fixture.at("starcoder_pre_tokenizer");
    const fs::path p = write_temp("starcoder_tokenizer.json", tj.dump());
    auto tok = load_tokenizer_json(p, "");
    fs::remove(p);
    check_corpus(*tok, fixture, "starcoder", 500);
    // Digits without individual_digits keeps runs together (the vocabulary has
    // "12" and "123"; the tokenizers library agrees).
    auto id = [&](const char* piece) {
        const int i = tok->token_id(piece);
        REQUIRE(i >= 0);
        return i;
    };
    const std::string space = "\xC4\xA0";  // ByteLevel's image of ' '
    for (const bool individual : {true, false}) {
        tj["pre_tokenizer"]["pretokenizers"][0]["individual_digits"] = individual;
        const fs::path p2 = write_temp("digit_runs_tokenizer.json", tj.dump());
        auto t = load_tokenizer_json(p2, "");
        fs::remove(p2);
        CHECK(t->encode("x12 123", false) ==
              (individual ? std::vector<int>{id("x"), id("1"), id("2"), id(space.c_str()), id("1"),
                                             id("2"), id("3")}
                          : std::vector<int>{id("x"), id("12"), id(space.c_str()), id("123")}));
    }
}

// The o200k (Phi-4-mini layout) and Tekken (Mistral Nemo layout) fixtures of
// tools/fixtures/make_tokenizer_cased.py against the tokenizers library's ids.
TEST_CASE(
    "o200k (Phi-4-mini) and tekken (Mistral Nemo) tokenizer.json match the tokenizers library") {
    const fs::path dir = fs::path(STATICLM_SOURCE_DIR) / "tests/fixtures/tokenizers";
    const nlohmann::json fixture = read_json_file(dir / "cased_bpe_expected_ids.json");
    for (const std::string name : {"o200k", "tekken"}) {
        const fs::path d = dir / (name + "_bpe");
        auto tok = load_tokenizer_json(d / "tokenizer.json", d / "tokenizer_config.json");
        CHECK(tok->vocab_size() == 1000);
        check_corpus(*tok, fixture, name, 600);
        // encode_limited's cuts at "letter space letter" are match boundaries
        // of both regexes: chunked ids equal encode()'s on the whole corpus.
        std::string all;
        for (const auto& c : fixture.at("cases"))
            all += sanitized(from_hex(c.at("text_hex").get<std::string>())) + " a ";
        const std::vector<int> whole = tok->encode(all, false);
        for (const size_t chunk : {size_t{24}, size_t{97}, size_t{1000}})
            CHECK(tok->encode_limited(all, false, std::numeric_limits<size_t>::max(), chunk) ==
                  whole);
    }
    auto tekken = load_tokenizer_json(dir / "tekken_bpe/tokenizer.json",
                                      dir / "tekken_bpe/tokenizer_config.json");
    CHECK(tekken->bos_id() == 1);
    CHECK(tekken->encode("Hi", true).front() == 1);  // TemplateProcessing "<s> $A"
}

TEST_CASE("a Split regex staticlm does not implement is an error naming the file and the regex") {
    nlohmann::json tj = read_json_file(kQwen2Dir / "tokenizer.json");
    std::string re = tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"].get<std::string>();
    re.replace(re.find("\\p{N}|"), 6, "\\p{N}{1,2}|");
    tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = re;
    const fs::path p = write_temp("unknown_regex_tokenizer.json", tj.dump());
    try {
        load_tokenizer_json(p, "");
        FAIL("an unknown regex must be rejected");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::unsupported);
        const std::string what = e.what();
        CHECK(what.find(p.string()) != std::string::npos);
        CHECK(what.find("pre_tokenizer Split regex") != std::string::npos);
        CHECK(what.find("\\p{N}{1,2}") != std::string::npos);
    }
    fs::remove(p);
}

TEST_CASE(
    "pipeline variants (Metaspace, Split behaviors, GPT-2 ByteLevel, Strip) match tokenizers") {
    std::ifstream f(fs::path(STATICLM_SOURCE_DIR) / "tests/fixtures/tokenizers/expected_ids.json");
    REQUIRE(f);
    const nlohmann::json fixture = nlohmann::json::parse(f);
    std::string loaded_base;
    nlohmann::json base;
    for (const auto& v : fixture.at("variants")) {
        const std::string name = v.at("name").get<std::string>();
        const std::string base_name = v.at("base").get<std::string>();
        const fs::path dir = data_dir() / (base_name + "-tokenizer");
        if (!fs::exists(dir / "tokenizer.json")) {
            MESSAGE("SKIPPED: variant " << name << ": " << dir.string() << " is absent");
            continue;
        }
        if (loaded_base != base_name) {  // the fixture groups variants by base
            std::ifstream bf(dir / "tokenizer.json");
            base = nlohmann::json::parse(bf);
            loaded_base = base_name;
        }
        nlohmann::json patched = base;
        for (const auto& [key, value] : v.at("patch").items()) patched[key] = value;
        const fs::path p = write_temp(name + ".json", patched.dump());
        auto tok = load_tokenizer_json(p, "");
        fs::remove(p);
        const auto& cases = fixture.at("cases");
        const auto& used = v.at("cases");
        for (size_t k = 0; k < used.size(); ++k) {
            const size_t i = used[k].get<size_t>();
            const std::string text = from_hex(cases[i].at("text_hex").get<std::string>());
            const auto expected = v.at("ids")[k].get<std::vector<int>>();
            INFO(name << " case " << i << ": \"" << sanitized(text) << "\"");
            CHECK(encode_fixture_text(*tok, text, false) == expected);
            CHECK(tok->decode(expected) == v.at("decoded")[k].get<std::string>());
        }
    }
}

TEST_CASE("cross-check with tokenizer_reference.json (a JavaScript port)") {
    const fs::path ref_file = data_dir() / "tokenizer_reference.json";
    if (!fs::exists(ref_file)) {
        MESSAGE("SKIPPED: " << ref_file.string() << " is absent");
        return;
    }
    std::ifstream f(ref_file);
    const nlohmann::json ref = nlohmann::json::parse(f);
    for (const char* name : {"llama3", "gemma3"}) {
        const fs::path dir = data_dir() / (std::string(name) + "-tokenizer");
        auto tok = load_tokenizer_json(dir / "tokenizer.json", dir / "tokenizer_config.json");
        for (const auto& c : ref.at(std::string(name) + "_tokenizer_json").at("cases")) {
            const std::string text = c.at("text").get<std::string>();
            INFO(std::string(name) << ": \"" << text << "\"");
            const auto ids = c.at("ids").get<std::vector<int>>();
            CHECK(tok->encode(text, false) == ids);
            CHECK(tok->encode(text, true) == c.at("ids_with_special").get<std::vector<int>>());
            // The port's decoded text keeps special tokens; ours drops them.
            const auto* jt = dynamic_cast<const JsonTokenizer*>(tok.get());
            bool has_special = false;
            for (int id : ids) has_special = has_special || jt->is_special(id);
            if (!has_special) CHECK(tok->decode(ids) == c.at("decoded").get<std::string>());
        }
    }
}
