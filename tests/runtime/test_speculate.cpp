// Prompt-lookup speculative decoding (runtime/speculate.cpp, generate.cpp):
// the drafter on hand-made histories, the acceptance rule on a hand-computed
// case and as a distribution, the split invariance it relies on, and greedy
// generate() identical with and without speculation on stories260K.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "staticlm/constrain.hpp"
#include "staticlm/generate.hpp"
#include "model/model.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "staticlm/tokenizer.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

std::vector<int> draft_of(const std::vector<int>& history, int n, int max_ngram = 3, int min_ngram = 1) {
    SpeculationOptions o;
    o.max_draft = n;
    o.max_ngram = max_ngram;
    o.min_ngram = min_ngram;
    std::vector<int> out(size_t(n), -7);
    out.resize(size_t(ngram_draft(history, o, out)));
    return out;
}

std::string error_of(auto&& call) {
    try {
        call();
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::config);
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("ngram_draft: the tokens after the most recent earlier occurrence of the longest suffix") {
    // [1 2 3] occurred at 0..2: what followed it.
    CHECK(draft_of({1, 2, 3, 4, 9, 1, 2, 3}, 4) == std::vector<int>{4, 9, 1, 2});
    // The 3-token match wins over the more recent 1-token match of [3] (at 5).
    CHECK(draft_of({1, 2, 3, 10, 9, 3, 11, 1, 2, 3}, 4) == std::vector<int>{10, 9, 3, 11});
    // Of two equal matches, the more recent: [7 8] at 0..1 and at 4..5.
    CHECK(draft_of({7, 8, 1, 2, 7, 8, 5, 6, 7, 8}, 2) == std::vector<int>{5, 6});
    // Past the end of the history the copy goes on through the draft.
    CHECK(draft_of({5, 6, 5, 6}, 5) == std::vector<int>{5, 6, 5, 6, 5});
    CHECK(draft_of({4, 4}, 3) == std::vector<int>{4, 4, 4});
    // Nothing earlier matches the last token.
    CHECK(draft_of({1, 2, 3}, 4).empty());
    // A 1-token match only with min_ngram 1.
    CHECK(draft_of({1, 2, 3, 2}, 2) == std::vector<int>{3, 2});
    CHECK(draft_of({1, 2, 3, 2}, 2, 3, 2).empty());
    // max_ngram 1: the most recent occurrence of the last token alone.
    CHECK(draft_of({1, 2, 3, 10, 9, 3, 11, 1, 2, 3}, 2, 1) == std::vector<int>{11, 1});
    CHECK(draft_of({}, 3).empty());
    CHECK(draft_of({5}, 3).empty());
    CHECK(draft_of({5, 5}, 0).empty());
}

TEST_CASE("speculative_pick: the acceptance rule on a hand-computed case") {
    // Target weights 2 : 1.5 : 0.5 (sum 4) over tokens 7, 3, 9; draft 3, p = 0.375.
    const std::vector<float> w = {2.0f, 1.5f, 0.5f};
    const std::vector<int> ids = {7, 3, 9};
    CHECK(speculative_pick(w, ids, 3, 0.30, 0.99) == 3);  // 0.30 * 4 = 1.2 < 1.5: accepted
    CHECK(speculative_pick(w, ids, 3, 0.374, 0.0) == 3);
    // 0.375 * 4 = 1.5, not < 1.5: rejected; the rest is 7 : 9 = 2 : 0.5.
    CHECK(speculative_pick(w, ids, 3, 0.375, 0.0) == 7);
    CHECK(speculative_pick(w, ids, 3, 0.40, 0.70) == 7);  // 0.70 * 2.5 = 1.75 < 2
    CHECK(speculative_pick(w, ids, 3, 0.40, 0.80) == 9);  // 0.80 * 2.5 = 2.0, not < 2
    CHECK(speculative_pick(w, ids, 3, 0.99, 0.99) == 9);
    // A draft outside the candidates is never kept: the draw is over all of them.
    CHECK(speculative_pick(w, ids, 4, 0.0, 0.49) == 7);   // 0.49 * 4 = 1.96 < 2
    CHECK(speculative_pick(w, ids, 4, 0.0, 0.50) == 3);   // 2.0: past 7, < 3.5
    CHECK(speculative_pick(w, ids, 4, 0.0, 0.875) == 9);  // 3.5: past 3
    // The draft holds all the mass: kept whatever the draws.
    CHECK(speculative_pick(std::vector<float>{0.0f, 1.0f}, std::vector<int>{1, 2}, 2, 0.999, 0.5) == 2);
}

TEST_CASE("Sampler::sample_draft: the output distribution is the sampler's") {
    // Logits over 6 tokens; temperature 0.7 and top-k 4, computed here
    // independently: p_i = exp(l_i / T) / sum over the 4 best.
    const std::vector<float> logits = {1.0f, 2.5f, 0.2f, 2.0f, -1.0f, 1.6f};
    SamplingOptions so;
    so.temperature = 0.7f;
    so.top_k = 4;
    so.top_p = 1.0f;
    so.min_p = 0.0f;
    so.seed = 11;
    const int top4[] = {1, 3, 5, 0};
    double expect[6] = {}, sum = 0;
    for (int t : top4) sum += std::exp(double(logits[size_t(t)]) / 0.7);
    for (int t : top4) expect[t] = std::exp(double(logits[size_t(t)]) / 0.7) / sum;
    for (int draft : {3, 1, 2}) {  // a likely token, the most likely, one outside the top 4
        Sampler s(6, so);
        const int n = 200000;
        int count[6] = {};
        for (int i = 0; i < n; ++i) ++count[s.sample_draft(logits, {}, {}, draft)];
        for (int t = 0; t < 6; ++t) {
            const double sd = std::sqrt(expect[t] * (1 - expect[t]) / n);
            CHECK_MESSAGE(std::fabs(double(count[t]) / n - expect[t]) <= 5 * sd + 1e-9, "draft ", draft, " token ",
                          t, ": ", double(count[t]) / n, " vs ", expect[t]);
        }
    }
    // Greedy: the argmax, whatever the draft.
    SamplingOptions greedy;
    Sampler g(6, greedy);
    CHECK(g.sample_draft(logits, {}, {}, 3) == 1);
    CHECK(g.sample_draft(logits, {}, {}, 1) == 1);
}

namespace {

std::shared_ptr<const Model> stories(WeightType w = WeightType::q8) {
    LoadOptions lo;
    lo.weights = w;
    lo.threads = 2;
    return load_model(test::shared_data() / "stories260K-hf", lo);
}

SessionOptions session_options(int max_seq, bool all_logits) {
    SessionOptions so;
    so.max_seq = max_seq;
    so.prefill_buckets = default_prefill_buckets(max_seq);
    so.append_buckets = default_append_buckets(max_seq);
    so.threads = 2;
    so.all_logits = all_logits;
    return so;
}

struct Rows {
    std::vector<float> data;
    static void fn(void* ctx, int, const float* rows, int t, int vocab) {
        auto& r = *static_cast<Rows*>(ctx);
        r.data.insert(r.data.end(), rows, rows + size_t(t) * size_t(vocab));
    }
};

}  // namespace

TEST_CASE("speculation relies on it: an append's rows are the decode steps' logits, bit for bit") {
    if (!test::have_shared_data("stories260K-hf")) return;
    const auto model = stories();
    const std::vector<int> prompt = model->tokenizer()->encode("Once upon a time, Lily", true);
    const std::vector<int> run = {403, 407, 261, 378, 290, 11, 7};
    Session a(model, session_options(128, true)), b(model, session_options(128, false));
    a.prefill(prompt);
    b.prefill(prompt);
    Rows rows;
    a.append(run, LogitsSink{Rows::fn, &rows});
    const size_t V = size_t(model->config().vocab);
    REQUIRE(rows.data.size() == run.size() * V);
    for (size_t i = 0; i < run.size(); ++i) {
        const std::span<const float> l = b.decode(run[i]);
        CHECK_MESSAGE(std::memcmp(l.data(), rows.data.data() + i * V, V * sizeof(float)) == 0, "row ", i);
    }
    // After a rewind the same positions are recomputed the same way.
    a.rewind(4);
    rows.data.clear();
    a.append(std::span<const int>(run).subspan(3), LogitsSink{Rows::fn, &rows});
    CHECK(std::memcmp(rows.data.data() + 3 * V, b.logits().data(), V * sizeof(float)) == 0);
}

TEST_CASE("generate(): greedy output with speculation is the output without, on stories260K") {
    if (!test::have_shared_data("stories260K-hf")) return;
    for (WeightType w : {WeightType::q8, WeightType::f32}) {
        const auto model = stories(w);
        const Tokenizer& tok = *model->tokenizer();
        Session plain(model, session_options(256, false)), spec(model, session_options(256, true));
        const char* starts[] = {"Once upon a time", "Lily and Tom", "The cat", "One day, a little boy",
                                "The sun was", "Sam had a big red ball.", "Mom said", "In the park",
                                "The dog and the bird were friends.", "Tim"};
        const char* seconds[] = {"", " She was happy.", " They wanted to play.", " \"Look!\" said Lily."};
        int accepted = 0, compared = 0;
        for (int i = 0; i < 40; ++i) {
            std::string text = std::string(starts[i % 10]) + seconds[i / 10];
            if (i % 7 == 3) text = text + " " + text;  // something to copy
            const std::vector<int> prompt = tok.encode(text, true);
            GenerateOptions o;
            o.max_tokens = i % 5 == 4 ? -1 : 48;  // -1: up to EOS or the capacity
            if (i % 6 == 5) o.stop_strings = {"play"};
            plain.reset();
            const GenerateResult want = generate(plain, &tok, prompt, o);
            o.speculation.max_draft = 1 + (i * 5) % 16;
            o.speculation.max_ngram = 1 + i % 3;
            spec.reset();
            const GenerateResult got = generate(spec, &tok, prompt, o);
            CAPTURE(text);
            CHECK(got.tokens == want.tokens);
            CHECK(got.text == want.text);
            CHECK(got.reason == want.reason);
            // The cache holds what it holds without speculation: no drafted token left behind.
            CHECK(spec.pos() == plain.pos());
            CHECK(std::equal(spec.tokens().begin(), spec.tokens().end(), plain.tokens().begin(), plain.tokens().end()));
            CHECK(got.stats.accepted_tokens <= got.stats.drafted_tokens);
            accepted += got.stats.accepted_tokens;
            ++compared;
        }
        CHECK(compared == 40);
        CHECK(accepted > 100);  // drafts were verified and kept, not only proposed
    }
}

TEST_CASE("generate(): speculation at the capacity, with log-probabilities and with a JSON schema") {
    if (!test::have_shared_data("stories260K-hf")) return;
    const auto model = stories();
    const Tokenizer& tok = *model->tokenizer();
    const std::vector<int> prompt = tok.encode("Lily saw a cat. Lily saw a dog. Lily saw", true);
    for (int max_seq : {40, 41, 47}) {
        Session plain(model, session_options(max_seq, false)), spec(model, session_options(max_seq, true));
        GenerateOptions o;
        o.max_tokens = -1;
        o.stop_ids = {-1};
        o.logprobs = 3;
        const GenerateResult want = generate(plain, &tok, prompt, o);
        o.speculation.max_draft = 8;
        const GenerateResult got = generate(spec, &tok, prompt, o);
        CHECK(want.reason == StopReason::capacity);
        CHECK(got.reason == StopReason::capacity);
        CHECK(got.tokens == want.tokens);
        CHECK(got.logprobs == want.logprobs);
        REQUIRE(got.top_logprobs.size() == want.top_logprobs.size());
        for (size_t i = 0; i < got.top_logprobs.size(); ++i) {
            CHECK(got.top_logprobs[i].token == want.top_logprobs[i].token);
            CHECK(got.top_logprobs[i].logprob == want.top_logprobs[i].logprob);
        }
        CHECK(spec.pos() == plain.pos());
        CHECK(got.stats.drafted_tokens > 0);
    }
    const auto vocab = std::make_shared<const TokenVocabulary>(tok);
    const auto c = Constraint::json_schema(R"({"type":"array","items":{"type":"integer"},"maxItems":6})", vocab);
    for (uint64_t seed : {0, 1, 2}) {
        Session plain(model, session_options(128, false)), spec(model, session_options(128, true));
        GenerateOptions o;
        o.max_tokens = 60;
        o.constraint = c;
        o.sampling.seed = seed;
        const std::vector<int> p = tok.encode(seed == 0 ? "[1, 2, 1, 2, 1" : "Lily has", true);
        const GenerateResult want = generate(plain, &tok, p, o);
        o.speculation.max_draft = 6;
        const GenerateResult got = generate(spec, &tok, p, o);
        CHECK(got.tokens == want.tokens);
        CHECK(got.text == want.text);
        CHECK(got.complete == want.complete);
        // Sampled: another stream, but every token still obeys the schema.
        o.sampling.temperature = 1.0f;
        spec.reset();
        const GenerateResult sampled = generate(spec, &tok, p, o);
        if (sampled.reason == StopReason::eos) CHECK(sampled.complete);
        CHECK(sampled.text.find_first_not_of("[]0123456789, -\n\t") == std::string::npos);
    }
}

TEST_CASE("generate(): bad speculation options are config errors naming the field") {
    if (!test::have_shared_data("stories260K-hf")) return;
    const auto model = stories();
    Session plain(model, session_options(64, false)), spec(model, session_options(64, true));
    const std::vector<int> prompt = {1, 403};
    GenerateOptions o;
    o.max_tokens = 4;
    o.speculation.max_draft = 8;
    CHECK(error_of([&] { generate(plain, nullptr, prompt, o); }).find("all_logits") != std::string::npos);
    CHECK(plain.pos() == 0);  // refused before the prompt ran
    o.speculation.max_draft = kMaxDraft + 1;
    CHECK(error_of([&] { generate(spec, nullptr, prompt, o); }).find("max_draft must be in 0..64 (0: off), got 65") !=
          std::string::npos);
    o.speculation.max_draft = -1;
    CHECK(error_of([&] { generate(spec, nullptr, prompt, o); }).find("got -1") != std::string::npos);
    o.speculation.max_draft = 4;
    o.speculation.max_ngram = 0;
    CHECK(error_of([&] { generate(spec, nullptr, prompt, o); }).find("max_ngram") != std::string::npos);
    o.speculation.max_ngram = 3;
    o.speculation.min_ngram = 4;
    CHECK(error_of([&] { generate(spec, nullptr, prompt, o); }).find("min_ngram must be in 1..max_ngram (3), got 4") !=
          std::string::npos);
}
