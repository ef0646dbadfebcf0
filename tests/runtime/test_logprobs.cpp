// Log-probabilities and continuation scoring (runtime/logprob.cpp,
// runtime/score.cpp, generate()'s logprobs): the log-softmax against a plain
// double reference, and stories260K against transformers
// (tests/fixtures/logprobs/stories260K.json, tools/fixtures/make_logprob_fixtures.py).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "staticlm/batch_session.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/score.hpp"
#include "staticlm/session.hpp"
#include "staticlm/tokenizer.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

// Budget against transformers, f32 weights and an f32 KV cache (nats).
constexpr double kRefBudget = 1e-3;

nlohmann::json reference() {
    std::ifstream in(test::fixtures_dir() / "logprobs" / "stories260K.json");
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

std::shared_ptr<const Model> stories() {
    LoadOptions lo;
    lo.weights = WeightType::f32;
    lo.threads = 1;
    return load_model(test::shared_data() / "stories260K-hf", lo);
}

SessionOptions session_options(KvType kv) {
    SessionOptions so;
    so.max_seq = 128;
    so.prefill_buckets = {16, 64};
    so.append_buckets = {4, 16};
    so.threads = 1;
    so.kv = kv;
    so.all_logits = true;
    return so;
}

}  // namespace

TEST_CASE("token_logprob: log-softmax in double, the top alternatives best first, ties by id") {
    const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f, 1000.0f - 1000.0f};
    double sum = 0;
    for (float l : logits) sum += std::exp(double(l));
    std::vector<TokenLogprob> top(4);
    const float lp = token_logprob(logits, 2, top);
    CHECK(lp == doctest::Approx(-2.0 - std::log(sum)).epsilon(1e-7));
    CHECK(top[0].token == 1);  // equal to 3: the lower id first
    CHECK(top[1].token == 3);
    CHECK(top[2].token == 0);
    CHECK(top[3].token == 4);
    CHECK(top[0].logprob == top[1].logprob);
    CHECK(top[0].logprob == doctest::Approx(3.0 - std::log(sum)).epsilon(1e-7));
    CHECK(token_logprob(logits, 1) == top[0].logprob);
    // Large logits do not overflow (max-subtracted).
    const std::vector<float> big = {1e4f, 1e4f, -1e4f};  // exp(1e4) overflows even a double
    CHECK(token_logprob(big, 0) == doctest::Approx(-std::log(2.0)));
    CHECK(std::isfinite(token_logprob(big, 2)));
    test::expect_error([&] { token_logprob(logits, 6); }, ErrorKind::input,
                       {"token 6", "vocabulary of 6"});
    std::vector<TokenLogprob> too_many(7);
    test::expect_error([&] { token_logprob(logits, 0, too_many); }, ErrorKind::config,
                       {"7 alternatives"});
}

TEST_CASE("stories260K logprobs and scores agree with transformers") {
    if (!test::have_shared_data("logprobs reference")) return;
    const nlohmann::json ref = reference();
    auto model = stories();
    const Tokenizer& tok = *model_tokenizer(*model);

    for (KvType kv : {KvType::f32, KvType::f16}) {
        // An f16 cache rounds K/V: a looser budget, reported with the f32 one.
        const double budget = kv == KvType::f32 ? kRefBudget : 3e-2;
        Session session(model, session_options(kv));
        double max_score = 0, max_gen = 0;
        for (const nlohmann::json& p : ref["pairs"]) {
            const std::string prompt = p["prompt"], cont = p["continuation"];
            INFO(prompt << " | " << cont);
            const ScoreIds ids = score_ids(tok, prompt, std::vector<std::string>{cont});
            CHECK(ids.prompt == p["prompt_ids"].get<std::vector<int>>());
            REQUIRE(ids.continuations.size() == 1);
            CHECK(ids.continuations[0] == p["continuation_ids"].get<std::vector<int>>());
            const std::vector<ContinuationScore> s =
                score_continuations(session, ids.prompt, ids.continuations);
            REQUIRE(s.size() == 1);
            const double d = std::abs(s[0].logprob - p["logprob"].get<double>());
            max_score = std::max(max_score, d);
            CHECK(d < budget);
            CHECK(s[0].tokens == int(ids.continuations[0].size()));
            CHECK(s[0].greedy == p["greedy"].get<bool>());
        }
        for (const nlohmann::json& g : ref["greedy"]) {
            const std::vector<int> prompt = g["prompt_ids"];
            CHECK(tok.encode(g["prompt"].get<std::string>(), true) == prompt);
            GenerateOptions o;
            o.sampling.temperature = 0;
            o.max_tokens = int(g["steps"].size());
            o.stop_ids = {-1};
            o.logprobs = 5;
            session.reset();
            const GenerateResult r = generate(session, nullptr, prompt, o);
            REQUIRE(r.tokens.size() == g["steps"].size());
            REQUIRE(r.logprobs.size() == r.tokens.size());
            REQUIRE(r.top_n == 5);
            REQUIRE(r.top_logprobs.size() == r.tokens.size() * 5);
            for (size_t i = 0; i < r.tokens.size(); ++i) {
                const nlohmann::json& st = g["steps"][i];
                CHECK(r.tokens[i] == st["token"].get<int>());
                max_gen = std::max(max_gen,
                                   std::abs(double(r.logprobs[i]) - st["logprob"].get<double>()));
                CHECK(r.top_logprobs[i * 5].token == r.tokens[i]);
                CHECK(r.top_logprobs[i * 5].logprob == r.logprobs[i]);
                for (size_t k = 0; k < 5; ++k) {
                    // (f16 K/V may swap alternatives closer than its rounding; the values stay
                    // sorted.)
                    if (kv == KvType::f32)
                        CHECK(r.top_logprobs[i * 5 + k].token == st["top"][k][0].get<int>());
                    max_gen = std::max(max_gen, std::abs(double(r.top_logprobs[i * 5 + k].logprob) -
                                                         st["top"][k][1].get<double>()));
                }
            }
        }
        CHECK(max_gen < budget);
        MESSAGE("kv " << std::string(kv_type_name(kv)) << ": max |delta| vs transformers: scores "
                      << max_score << " nats, generated-token logprobs " << max_gen << " nats");
    }
}

TEST_CASE("scoring: the prompt once, continuations independent of each other; errors") {
    if (!test::have_shared_data("scoring")) return;
    auto model = stories();
    const Tokenizer& tok = *model_tokenizer(*model);
    Session session(model, session_options(KvType::f16));
    const std::vector<std::string> conts = {" there was a girl", ",",
                                            " the end of a long story about a dog"};
    const ScoreIds ids = score_ids(tok, "Once upon a time", conts);
    const std::vector<ContinuationScore> all =
        score_continuations(session, ids.prompt, ids.continuations);
    REQUIRE(all.size() == 3);
    CHECK(session.pos() == int(ids.prompt.size()));  // left holding the prompt
    for (size_t i = 0; i < conts.size(); ++i) {
        const std::vector<ContinuationScore> one =
            score_continuations(session, ids.prompt, std::span(ids.continuations).subspan(i, 1));
        CHECK(one[0].logprob == all[i].logprob);  // bit for bit
        CHECK(one[0].greedy == all[i].greedy);
        CHECK(one[0].tokens == all[i].tokens);
    }
    // The boundary rule: white space at the end of the prompt joins the continuation.
    const ScoreIds moved =
        score_ids(tok, "Once upon a time ", std::vector<std::string>{"there was a girl"});
    CHECK(moved.prompt == ids.prompt);
    CHECK(moved.continuations[0] == ids.continuations[0]);

    test::expect_error(
        [&] {
            score_ids(tok, "x", std::vector<std::string>{"a", ""});
        },
        ErrorKind::input, {"continuation 1", "empty"});
    const std::vector<std::vector<int>> long_cont = {std::vector<int>(200, 300)};
    test::expect_error([&] { score_continuations(session, ids.prompt, long_cont); },
                       ErrorKind::capacity, {"continuation 0", "max_seq"});
    SessionOptions plain = session_options(KvType::f16);
    plain.all_logits = false;
    Session no_rows(model, plain);
    test::expect_error([&] { score_continuations(no_rows, ids.prompt, ids.continuations); },
                       ErrorKind::config, {"all_logits"});
}

TEST_CASE("logprobs of a batched generation equal generate() alone, bit for bit") {
    if (!test::have_shared_data("batched logprobs")) return;
    auto model = stories();
    const Tokenizer& tok = *model_tokenizer(*model);
    SessionOptions so = session_options(KvType::f16);
    so.all_logits = false;
    BatchSessionOptions bo;
    bo.slots = 3;
    bo.session = so;
    BatchGenerator gen(model, bo);
    const char* prompts[] = {"Once upon a time", "The little dog", "Lily and Ben", "",
                             "Tom had a red ball"};
    struct Run {
        std::vector<int> tokens;
        std::vector<float> lp;
        std::vector<TokenLogprob> top;
    };
    std::vector<Run> batched(5);
    std::vector<int> top_n(5);
    size_t next = 0;
    int done = 0;
    std::vector<size_t> of_slot(3);
    while (done < 5) {
        while (gen.active() < gen.capacity() && next < 5) {
            SamplingOptions s;
            s.temperature = next % 2 ? 0.9f : 0.0f;
            s.seed = 7 + next;
            top_n[next] = int(next % 3) * 4;  // 0, 4, 8
            const std::vector<int> ids = tok.encode(prompts[next], true);
            const int slot =
                gen.submit(next, ids, s, 6 + int(next), std::vector<int>{}, top_n[next]);
            of_slot[size_t(slot)] = next++;
        }
        gen.step();
        for (int slot = 0; slot < gen.capacity(); ++slot) {
            if (!gen.in_use(slot)) continue;
            Run& r = batched[of_slot[size_t(slot)]];
            const auto top = gen.last_top_logprobs(slot);
            if (r.top.size() < gen.generated(slot).size() * top.size())
                r.top.insert(r.top.end(), top.begin(), top.end());
            if (!gen.finished(slot)) continue;
            r.tokens.assign(gen.generated(slot).begin(), gen.generated(slot).end());
            r.lp.assign(gen.logprobs(slot).begin(), gen.logprobs(slot).end());
            gen.release(slot);
            ++done;
        }
    }
    Session session(model, so);
    for (size_t i = 0; i < 5; ++i) {
        INFO(prompts[i]);
        GenerateOptions o;
        o.sampling.temperature = i % 2 ? 0.9f : 0.0f;
        o.sampling.seed = 7 + i;
        o.max_tokens = 6 + int(i);
        o.stop_ids = {-1};
        o.logprobs = top_n[i];
        session.reset();
        const GenerateResult g = generate(session, nullptr, tok.encode(prompts[i], true), o);
        CHECK(g.tokens == batched[i].tokens);
        REQUIRE(g.logprobs.size() == batched[i].lp.size());
        for (size_t k = 0; k < g.logprobs.size(); ++k) CHECK(g.logprobs[k] == batched[i].lp[k]);
        REQUIRE(g.top_logprobs.size() == batched[i].top.size());
        for (size_t k = 0; k < g.top_logprobs.size(); ++k) {
            CHECK(g.top_logprobs[k].token == batched[i].top[k].token);
            CHECK(g.top_logprobs[k].logprob == batched[i].top[k].logprob);
        }
    }
    GenerateOptions bad;
    bad.logprobs = 21;
    test::expect_error([&] { generate(session, nullptr, std::vector<int>{1}, bad); },
                       ErrorKind::config, {"logprobs", "0..20", "21"});
}

TEST_CASE(
    "scoring on a ring cache: a continuation longer than the ring can rewind re-prefills the "
    "prompt") {
    LoadOptions lo;
    lo.weights = WeightType::f32;
    lo.threads = 1;
    lo.load_tokenizer = false;
    auto model = load_model(test::fixtures_dir() / "gemma4-e2b-like-causal", lo);
    const int V = model_config(*model).vocab;
    std::vector<int> prompt(10);
    for (int i = 0; i < 10; ++i) prompt[size_t(i)] = (i * 37 + 5) % V;
    std::vector<std::vector<int>> conts = {std::vector<int>(30), {7, 8}, std::vector<int>(25)};
    for (size_t c = 0; c < conts.size(); ++c)
        for (size_t i = 0; i < conts[c].size(); ++i)
            conts[c][i] = int((i * 11 + c * 5 + 3) % size_t(V));
    auto scores = [&](bool ring) {
        SessionOptions so;
        so.max_seq = 64;
        so.prefill_buckets = {4, 8};
        so.append_buckets = {4};
        so.threads = 1;
        so.all_logits = true;
        so.ring_sliding = ring;
        Session s(model, so);
        if (ring) {  // the first continuation cannot be rewound
            s.prefill(prompt);
            s.append(std::span<const int>(conts[0].data(), 29));
            CHECK(s.max_rewind() < 29);
        }
        std::vector<ContinuationScore> all = score_continuations(s, prompt, conts);
        // Each alone equals its score among the others.
        for (size_t c = 0; c < conts.size(); ++c)
            CHECK(score_continuations(s, prompt, std::span(conts).subspan(c, 1))[0].logprob ==
                  all[c].logprob);
        return all;
    };
    const std::vector<ContinuationScore> full = scores(false), ring = scores(true);
    for (size_t c = 0; c < conts.size(); ++c)
        CHECK(ring[c].logprob == doctest::Approx(full[c].logprob).epsilon(1e-5));
}

TEST_CASE("scoring ids: the tokenizer's BOS rule, not a guess (a BOS id that is not added)") {
    // The Qwen2 vocabulary fixture has a BOS id (995) but adds none, as Qwen's
    // files: an empty prompt gets the BOS id to predict from, and the
    // continuation keeps all its ids.
    const auto tok = load_model_tokenizer(test::fixtures_dir() / "gguf" / "tokenizers" / "qwen2_bpe_vocab.gguf", false);
    REQUIRE(tok->bos_id() >= 0);
    REQUIRE(tok->encode("", true).empty());
    const std::vector<int> cont = tok->encode(" the end", false);
    REQUIRE(cont.size() >= 2);
    ScoreIds ids = score_ids(*tok, "", std::vector<std::string>{" the end"});
    CHECK(ids.prompt == std::vector<int>{tok->bos_id()});
    REQUIRE(ids.continuations.size() == 1);
    CHECK(ids.continuations[0] == cont);
    // A prompt: its ids alone (no BOS added), the continuation after them.
    ids = score_ids(*tok, "once", std::vector<std::string>{" the end"});
    CHECK(ids.prompt == tok->encode("once", false));
    CHECK(ids.continuations[0] == cont);
}
