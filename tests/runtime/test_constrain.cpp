// Constrained decoding (runtime/constrain*.cpp): token masks of a tiny
// hand-made vocabulary against masks worked out by hand from the schema's
// compact output form, the cursor's stop-id rule, and constrained generation
// on stories260K whose every output parses.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "model/model.hpp"
#include "staticlm/batch.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/constrain.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "staticlm/tokenizer.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

// Token 0 is the EOS (no bytes).
const std::vector<std::string> kBytes = {
    "",        // 0 EOS
    "{",       // 1
    "}",       // 2
    "\"",      // 3
    "a",       // 4
    "b",       // 5
    ":",       // 6
    ",",       // 7
    "1",       // 8
    "12",      // 9
    "true",    // 10
    "{\"a\":", // 11
    "\"}",     // 12
    " ",       // 13
    "null",    // 14
    "\\",      // 15
    "0",       // 16
    "-",       // 17
    "\xC3",    // 18 first byte of U+00E9
    "\xA9",    // 19 its second byte
    "e",       // 20
    ".",       // 21
};
const std::vector<int> kEos = {0};

std::shared_ptr<const TokenVocabulary> tiny() { return std::make_shared<const TokenVocabulary>(kBytes); }

std::set<int> allowed(std::span<const uint64_t> mask) {
    std::set<int> out;
    for (int t = 0; t < int(kBytes.size()); ++t)
        if (mask[size_t(t) / 64] >> (t % 64) & 1) out.insert(t);
    return out;
}

// Walks `tokens` through a cursor and returns the mask after them.
std::set<int> after(const Constraint& c, std::initializer_list<int> tokens) {
    ConstraintCursor cur(int(kBytes.size()));
    cur.start(&c);
    for (int t : tokens) {
        REQUIRE(allowed(cur.mask(kEos)).count(t) == 1);
        cur.advance(t);
    }
    return allowed(cur.mask(kEos));
}

}  // namespace

TEST_CASE("constrain: vocabulary trie holds every non-empty token once") {
    const TokenVocabulary v(kBytes);
    CHECK(v.size() == int(kBytes.size()));
    CHECK(v.node_tokens.size() == kBytes.size() - 1);  // token 0 has no bytes
    // Shared prefixes: "1"/"12" share one node, "{"/"{\"a\":" share one: nodes
    // = total bytes - shared prefix bytes.
    size_t total = 0;
    for (const std::string& s : kBytes) total += s.size();
    CHECK(v.node_byte.size() == total - 1 /* "1" in "12" */ - 1 /* "{" */ - 1 /* "\"" in "\"}" */);
    CHECK(v.bytes(11) == "{\"a\":");
}

TEST_CASE("constrain: object with one required integer, by hand") {
    const auto c = Constraint::json_schema(
        R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})", tiny());
    // {"a":<integer>} exactly, no whitespace.
    CHECK(after(*c, {}) == std::set<int>{1, 11});
    CHECK(after(*c, {1}) == std::set<int>{3});
    CHECK(after(*c, {1, 3}) == std::set<int>{4});
    CHECK(after(*c, {1, 3, 4}) == std::set<int>{3});
    CHECK(after(*c, {1, 3, 4, 3}) == std::set<int>{6});
    CHECK(after(*c, {11}) == std::set<int>{8, 9, 16, 17});        // 1, 12, 0, -
    CHECK(after(*c, {11, 16}) == std::set<int>{2});               // 0 takes no more digits
    CHECK(after(*c, {11, 17}) == std::set<int>{8, 9, 16});
    CHECK(after(*c, {11, 9}) == std::set<int>{2, 8, 9, 16});      // more digits or }
    CHECK(after(*c, {11, 9, 2}) == std::set<int>{0});             // complete: EOS only
    CHECK(c->next(c->start(), 13) == -1);                         // no whitespace
}

TEST_CASE("constrain: optional properties in declared order") {
    // "b" is declared before "a": the output order is b, a.
    const auto c = Constraint::json_schema(
        R"({"type":"object","properties":{"b":{"type":"null"},"a":{"type":"boolean"}}})", tiny());
    CHECK(after(*c, {1}) == std::set<int>{2, 3});                 // } or a key
    CHECK(after(*c, {1, 3}) == std::set<int>{4, 5});              // "a or "b
    CHECK(after(*c, {1, 3, 4, 3, 6}) == std::set<int>{10});       // {"a": -> true (no "false" token)
    CHECK(after(*c, {1, 3, 4, 3, 6, 10}) == std::set<int>{2});    // a is last: }
    CHECK(after(*c, {1, 3, 5, 3, 6, 14}) == std::set<int>{2, 7}); // after b: } or ,
    CHECK(after(*c, {1, 3, 5, 3, 6, 14, 7}) == std::set<int>{3});
    CHECK(after(*c, {1, 3, 5, 3, 6, 14, 7, 3}) == std::set<int>{4}); // b again is not allowed
    CHECK(after(*c, {1, 2}) == std::set<int>{0});
}

TEST_CASE("constrain: enum, const and strings") {
    const auto e = Constraint::json_schema(R"({"enum":["ab","b",12]})", tiny());
    // "1" alone leads nowhere (no "2" token): only "12" starts the number.
    CHECK(after(*e, {}) == std::set<int>{3, 9});
    CHECK(after(*e, {3}) == std::set<int>{4, 5});
    CHECK(after(*e, {3, 4}) == std::set<int>{5});
    CHECK(after(*e, {3, 4, 5}) == std::set<int>{3});
    CHECK(after(*e, {3, 4, 5, 3}) == std::set<int>{0});

    const auto s = Constraint::json_schema(R"({"type":"string","minLength":1,"maxLength":2})", tiny());
    CHECK(after(*s, {}) == std::set<int>{3, 12});                // " or "} (an opening quote and })
    // One or two characters: every one-character token but '"' (minLength 1),
    // "12" (two), "\\" (an escape), the first byte of é; not "true", "null".
    CHECK(after(*s, {3}) == std::set<int>{1, 2, 4, 5, 6, 7, 8, 9, 13, 15, 16, 17, 18, 20, 21});
    CHECK(after(*s, {3, 18}) == std::set<int>{19});               // the continuation byte only
    CHECK(after(*s, {3, 18, 19}) == std::set<int>{1, 2, 3, 4, 5, 6, 7, 8, 13, 15, 16, 17, 18, 20, 21});
    CHECK(after(*s, {3, 9}) == std::set<int>{3});                 // two characters: close
    CHECK(after(*s, {3, 15}) == std::set<int>{3, 12, 5, 15});     // \" \"} \b \\ (the } of \"} is char 2)
    CHECK(after(*s, {3, 9, 3}) == std::set<int>{0});
}

TEST_CASE("constrain: arrays with minItems/maxItems and anyOf") {
    const std::vector<std::string> bytes = {"", "[", "]", ",", "1", "null", "[1", "1,"};
    const auto v = std::make_shared<const TokenVocabulary>(bytes);
    const auto c = Constraint::json_schema(
        R"({"type":"array","items":{"anyOf":[{"type":"null"},{"enum":[1]}]},"minItems":1,"maxItems":2})", v);
    ConstraintCursor cur(int(bytes.size()));
    auto mask_after = [&](std::initializer_list<int> tokens) {
        cur.start(c.get());
        for (int t : tokens) cur.advance(t);
        std::set<int> out;
        const auto m = cur.mask(kEos);
        for (int t = 0; t < int(bytes.size()); ++t)
            if (m[0] >> t & 1) out.insert(t);
        return out;
    };
    CHECK(mask_after({}) == std::set<int>{1, 6});
    CHECK(mask_after({1}) == std::set<int>{4, 5, 7});       // not ] (minItems 1)
    CHECK(mask_after({6}) == std::set<int>{2, 3});          // [1 -> ] or ,
    CHECK(mask_after({1, 7}) == std::set<int>{4, 5});       // [1, -> one more item, no "1," (a third)
    CHECK(mask_after({1, 7, 5}) == std::set<int>{2});       // maxItems 2
    CHECK(mask_after({1, 7, 5, 2}) == std::set<int>{0});
}

TEST_CASE("constrain: a model with more logits than tokenizer tokens never gets the extra ones") {
    const auto c = Constraint::json_schema(R"({"enum":["ab"]})", tiny());
    ConstraintCursor cur(200);  // 22 tokens in the vocabulary, 200 logits
    cur.start(c.get());
    const int stop[] = {150};
    auto m = cur.mask(stop);
    REQUIRE(m.size() == 4);
    CHECK(m[0] == uint64_t(1) << 3);  // '"' only
    CHECK(m[1] == 0);
    CHECK(m[2] == 0);                 // 150 is a stop id: not before the value is complete
    for (int t : {3, 4, 5, 3}) cur.advance(t);
    CHECK(cur.complete());
    m = cur.mask(stop);
    CHECK(m[0] == 0);
    CHECK(m[2] == uint64_t(1) << (150 - 128));
    ConstraintCursor small(10);
    CHECK_THROWS_AS(small.start(c.get()), Error);
}

TEST_CASE("constrain: apply_token_mask sets exactly the disallowed logits to -inf") {
    std::vector<float> logits(130, 1.0f);
    std::vector<uint64_t> mask(3, 0);
    mask[0] = 0b101;               // 0, 2
    mask[1] = ~uint64_t(0);        // 64..127
    mask[2] = uint64_t(1) << 1;    // 129
    apply_token_mask(logits, mask);
    for (int i = 0; i < 130; ++i) {
        const bool ok = i == 0 || i == 2 || (i >= 64 && i < 128) || i == 129;
        CHECK_MESSAGE((logits[size_t(i)] == 1.0f) == ok, "token ", i);
    }
}

TEST_CASE("constrain: stories260K outputs parse and follow the schema") {
    if (!test::have_shared_data("stories260K-hf")) return;
    LoadOptions lo;
    lo.threads = 1;
    const auto model = load_model(test::shared_data() / "stories260K-hf", lo);
    const auto vocab = std::make_shared<const TokenVocabulary>(*model->tokenizer());
    const auto c = Constraint::json_schema(
        R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer"},)"
        R"("happy":{"type":"boolean"},"tags":{"type":"array","items":{"enum":["cat","dog"]},"maxItems":3}},)"
        R"("required":["name","age","happy"]})",
        vocab);
    SessionOptions so;
    so.max_seq = 256;
    so.prefill_buckets = default_prefill_buckets(so.max_seq);
    so.append_buckets = default_append_buckets(so.max_seq);
    Session session(model, so);
    for (uint64_t seed : {1, 2, 3, 4, 5}) {
        GenerateOptions o;
        o.sampling.temperature = 1.0f;
        o.sampling.seed = seed;
        o.max_tokens = 200;
        o.constraint = c;
        session.reset();
        const GenerateResult r = generate(session, model->tokenizer(), model->tokenizer()->encode("Once upon", true), o);
        INFO("seed ", seed, ": ", r.text);
        REQUIRE(r.reason == StopReason::eos);
        CHECK(r.complete);
        const nlohmann::json j = nlohmann::json::parse(r.text);
        CHECK(j.at("name").is_string());
        CHECK(j.at("age").is_number_integer());
        CHECK(j.at("happy").is_boolean());
        // Keys in declared order: the text starts with the first one.
        CHECK(r.text.rfind("{\"name\":\"", 0) == 0);
        if (j.contains("tags")) CHECK(j["tags"].size() <= 3);
    }
    // max_tokens inside the value: length, incomplete.
    GenerateOptions o;
    o.max_tokens = 3;
    o.constraint = c;
    session.reset();
    const GenerateResult r = generate(session, model->tokenizer(), model->tokenizer()->encode("Once", true), o);
    CHECK(r.reason == StopReason::max_tokens);
    CHECK_FALSE(r.complete);
}

TEST_CASE("constrain: BatchGenerator gives generate()'s constrained tokens") {
    if (!test::have_shared_data("stories260K-hf")) return;
    LoadOptions lo;
    lo.threads = 1;
    const auto model = load_model(test::shared_data() / "stories260K-hf", lo);
    const auto vocab = std::make_shared<const TokenVocabulary>(*model->tokenizer());
    const auto c = Constraint::json_schema(R"({"type":"array","items":{"type":"integer"},"maxItems":4})", vocab);
    BatchSessionOptions bo;
    bo.slots = 3;
    bo.session.max_seq = 128;
    bo.session.prefill_buckets = default_prefill_buckets(128);
    bo.session.append_buckets = default_append_buckets(128);
    BatchGenerator gen(model, bo);
    const std::vector<int> prompt = model->tokenizer()->encode("Lily", true);
    std::vector<std::vector<int>> expect;
    for (uint64_t seed = 0; seed < 3; ++seed) {
        SamplingOptions so;
        so.temperature = 1.0f;
        so.seed = seed;
        gen.submit(seed, prompt, so, 40, model->config().eos_ids, -1, c);
        Session session(model, bo.session);
        GenerateOptions o;
        o.sampling = so;
        o.max_tokens = 40;
        o.constraint = c;
        expect.push_back(generate(session, nullptr, prompt, o).tokens);
    }
    while (gen.active() > 0) {
        gen.step();
        for (int s = 0; s < 3; ++s) {
            if (!gen.in_use(s) || !gen.finished(s)) continue;
            const auto got = gen.generated(s);
            CHECK(std::vector<int>(got.begin(), got.end()) == expect[size_t(gen.tag(s))]);
            CHECK(gen.complete(s) == (gen.reason(s) == StopReason::eos));
            gen.release(s);
        }
    }
}

TEST_CASE("constrain: GBNF grammar masks, by hand") {
    const auto g = Constraint::grammar("root ::= \"a\" digits (\"e\" | \":\" \"b\")?\ndigits ::= [0-9]{1,2}\n", tiny());
    CHECK(after(*g, {}) == std::set<int>{4});
    CHECK(after(*g, {4}) == std::set<int>{8, 9, 16});
    CHECK(after(*g, {4, 8}) == std::set<int>{0, 6, 8, 16, 20});  // complete: EOS too; "12" would be 3 digits
    CHECK(after(*g, {4, 9}) == std::set<int>{0, 6, 20});
    CHECK(after(*g, {4, 9, 6}) == std::set<int>{5});
    CHECK(after(*g, {4, 9, 20}) == std::set<int>{0});
    // A negated class over code points: é (two byte tokens) is one character.
    const auto n = Constraint::grammar("root ::= [^a-z]\n", tiny());
    CHECK(after(*n, {}) == std::set<int>{1, 2, 3, 6, 7, 8, 13, 15, 16, 17, 18, 21});
    CHECK(after(*n, {18}) == std::set<int>{19});
    CHECK(after(*n, {18, 19}) == std::set<int>{0});
}

namespace {

struct TempFile {
    std::string path;
    explicit TempFile(const char* name) : path("/tmp/staticlm-constrain-" + std::to_string(::getpid()) + "-" + name) {}
    ~TempFile() { std::remove(path.c_str()); }
};

}  // namespace

TEST_CASE("constrain: batch lines with json_schema and grammar, bad ones as per-line errors") {
    if (!test::have_shared_data("stories260K-hf")) return;
    LoadOptions lo;
    lo.threads = 1;
    const auto model = load_model(test::shared_data() / "stories260K-hf", lo);
    TempFile in("in.jsonl"), out("out.jsonl");
    {
        std::ofstream f(in.path);
        f << R"({"id":"good","prompt":"Once","n_predict":80,"json_schema":{"type":"object","properties":{"who":{"type":"string","maxLength":10},"n":{"type":"integer"}},"required":["who","n"]}})" "\n"
          << R"({"id":"kw","prompt":"Once","json_schema":{"type":"integer","minimum":0}})" "\n"
          << R"({"id":"rec","prompt":"Once","json_schema":{"$defs":{"t":{"type":"array","items":{"$ref":"#/$defs/t"}}},"$ref":"#/$defs/t"}})" "\n"
          << R"({"id":"undef","prompt":"Once","grammar":"root ::= nope\n"})" "\n"
          << R"({"id":"short","prompt":"Once","n_predict":2,"json_schema":{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}})" "\n"
          << R"({"id":"both","prompt":"Once","grammar":"root ::= \"a\"\n","json_schema":{"type":"null"}})" "\n"
          << R"({"id":"gram","prompt":"Once","n_predict":40,"grammar":"root ::= [a-z]{1,8} \"!\"\n"})" "\n";
    }
    BatchJobOptions o;
    o.input = in.path;
    o.output = out.path;
    SessionOptions so;
    so.max_seq = 256;
    so.prefill_buckets = {16, 64};
    so.threads = 1;
    BatchSessionOptions bo;
    bo.slots = 4;
    bo.session = so;
    std::map<std::string, nlohmann::json> first;  // the sequential engine's results
    for (int engine_kind = 0; engine_kind < 2; ++engine_kind) {
        std::remove(out.path.c_str());
        auto engine = engine_kind == 0 ? make_sequential_engine(model, so) : make_batched_engine(model, bo);
        {
            BatchJob job(o);
            const BatchSummary s = job.run(*model, *engine);
            CHECK(s.progress.done == 7);
            CHECK(s.progress.errors == 4);
        }
        std::map<std::string, nlohmann::json> res;
        std::ifstream f(out.path);
        for (std::string line; std::getline(f, line);) {
            const nlohmann::json j = nlohmann::json::parse(line);
            res[j["id"].get<std::string>()] = j;
        }
        REQUIRE(res.size() == 7);
        INFO("engine ", engine_kind);
        const nlohmann::json good = nlohmann::json::parse(res["good"]["text"].get<std::string>());
        CHECK(res["good"]["finish_reason"] == "stop");
        CHECK(res["good"]["complete"] == true);
        CHECK(good["who"].get<std::string>().size() <= 10 * 4);
        CHECK(good["n"].is_number_integer());
        auto error_of = [&](const char* id) { return res[id]["error"]["message"].get<std::string>(); };
        CHECK(error_of("kw").find("unsupported keyword 'minimum' at $") != std::string::npos);
        CHECK(error_of("kw").find("line 2") != std::string::npos);
        CHECK(error_of("rec").find("recursive $ref '#/$defs/t'") != std::string::npos);
        CHECK(error_of("undef").find("undefined rule 'nope'") != std::string::npos);
        CHECK(error_of("both").find("not both") != std::string::npos);
        CHECK(res["short"]["finish_reason"] == "length");
        CHECK(res["short"]["complete"] == false);
        const std::string g = res["gram"]["text"].get<std::string>();
        CHECK(res["gram"]["complete"] == true);
        REQUIRE(g.size() >= 2);
        CHECK(g.back() == '!');
        for (size_t i = 0; i + 1 < g.size(); ++i) CHECK((g[i] >= 'a' && g[i] <= 'z'));
        // The batched engine gives the sequential engine's tokens.
        if (engine_kind == 0) first = res;
        for (const char* id : {"good", "short", "gram"}) CHECK(res[id]["tokens"] == first[id]["tokens"]);
    }
}
