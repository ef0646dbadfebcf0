// Prompt-lookup speculation in BatchGenerator (runtime/batch_session.cpp): on
// stories260K, over 48 prompts at 1, 4 and 16 slots, greedy tokens and
// log-probabilities are those without speculation bit for bit; sampled
// output is generate()'s with the same speculation and seed, token for token
// (the same draft control and acceptance rule, on bit-identical logits); a
// run of decode_runs equals one-row decode steps; bad settings are refused.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "staticlm/tokenizer.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

std::shared_ptr<const Model> stories() {
    LoadOptions lo;
    lo.weights = WeightType::q8;
    lo.threads = 2;
    return load_model(test::shared_data() / "stories260K-hf", lo);
}

SessionOptions session_options(int max_seq) {
    SessionOptions so;
    so.max_seq = max_seq;
    so.prefill_buckets = default_prefill_buckets(max_seq);
    so.append_buckets = default_append_buckets(max_seq);
    so.threads = 2;
    return so;
}

// Prompts that copy (a sentence said twice) and prompts that do not.
std::vector<std::vector<int>> prompts(const Tokenizer& tok, int n) {
    const char* starts[] = {"Once upon a time", "Lily and Tom", "The cat", "One day, a little boy",
                            "The sun was", "Sam had a big red ball.", "Mom said", "In the park",
                            "The dog and the bird were friends.", "Tim", "Lily saw a big dog. Lily saw a big",
                            "Ben"};
    std::vector<std::vector<int>> out;
    for (int i = 0; i < n; ++i) {
        std::string text = starts[i % 12];
        if (i % 3 == 1) text = text + " " + text + " " + text;
        out.push_back(tok.encode(text, true));
    }
    return out;
}

struct Out {
    std::vector<int> tokens;
    std::vector<float> logprobs;
    std::vector<TokenLogprob> top;  // [tokens][2]
    StopReason reason = StopReason::max_tokens;
    GenerateStats stats;
};

// Runs every prompt through a generator of `slots` slots, submitting as slots
// free up; max_tokens varies per prompt, so runs end at different steps.
std::vector<Out> run_batch(std::shared_ptr<const Model> model, int slots, int max_draft,
                           const std::vector<std::vector<int>>& ps, const SamplingOptions& sampling, int max_seq) {
    BatchSessionOptions bo;
    bo.slots = slots;
    bo.session = session_options(max_seq);
    bo.max_draft = max_draft;
    BatchGenerator gen(model, bo);
    std::vector<Out> out(ps.size());
    std::vector<int> which(size_t(slots), -1);
    size_t next = 0, done = 0;
    SpeculationOptions spec;
    spec.max_draft = max_draft;
    while (done < ps.size()) {
        for (int s = 0; s < slots && next < ps.size(); ++s)
            if (!gen.in_use(s)) {
                SamplingOptions so = sampling;
                so.seed = sampling.seed + next;
                const int max_tokens = next % 4 == 3 ? 400 : 24 + int(next % 5) * 9;
                const int slot = gen.submit(next, ps[next], so, max_tokens, model->config().eos_ids, 2, nullptr, spec);
                which[size_t(slot)] = int(next++);
            }
        gen.step();
        for (int s = 0; s < slots; ++s) {
            if (which[size_t(s)] < 0 || !gen.in_use(s)) continue;
            Out& o = out[size_t(which[size_t(s)])];
            const std::span<const TokenLogprob> top = gen.step_top_logprobs(s);
            o.top.insert(o.top.end(), top.begin(), top.end());
            if (!gen.finished(s)) continue;
            const std::span<const int> g = gen.generated(s);
            o.tokens.assign(g.begin(), g.end());
            const std::span<const float> lp = gen.logprobs(s);
            o.logprobs.assign(lp.begin(), lp.end());
            o.reason = gen.reason(s);
            o.stats = gen.stats(s);
            gen.release(s);
            which[size_t(s)] = -1;
            ++done;
        }
    }
    return out;
}

bool same_top(const std::vector<TokenLogprob>& a, const std::vector<TokenLogprob>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].token != b[i].token || std::memcmp(&a[i].logprob, &b[i].logprob, sizeof(float)) != 0) return false;
    return true;
}

}  // namespace

TEST_CASE("batch speculation: greedy tokens and log-probabilities equal those without, at 1, 4 and 16 slots") {
    if (!test::have_shared_data("stories260K-hf")) return;
    const auto model = stories();
    // The sanitizer pass (test::kSanitized) runs a third of the prompts.
    const int n_prompts = test::kSanitized ? 16 : 48;
    const auto ps = prompts(*model->tokenizer(), n_prompts);
    const SamplingOptions greedy;
    const std::vector<Out> want = run_batch(model, 4, 0, ps, greedy, 256);
    for (int slots : {1, 4, 16}) {
        CAPTURE(slots);
        const std::vector<Out> got = run_batch(model, slots, 8, ps, greedy, 256);
        int accepted = 0, drafted = 0, same = 0;
        for (size_t i = 0; i < ps.size(); ++i) {
            CAPTURE(i);
            CHECK(got[i].tokens == want[i].tokens);
            CHECK(got[i].reason == want[i].reason);
            CHECK(std::memcmp(got[i].logprobs.data(), want[i].logprobs.data(),
                              std::min(got[i].logprobs.size(), want[i].logprobs.size()) * sizeof(float)) == 0);
            CHECK(got[i].logprobs.size() == want[i].logprobs.size());
            CHECK(same_top(got[i].top, want[i].top));
            CHECK(got[i].top.size() == got[i].tokens.size() * 2);
            same += got[i].tokens == want[i].tokens;
            accepted += got[i].stats.accepted_tokens;
            drafted += got[i].stats.drafted_tokens;
            CHECK(got[i].stats.accepted_tokens <= got[i].stats.drafted_tokens);
            CHECK(want[i].stats.drafted_tokens == 0);
        }
        MESSAGE(slots << " slots: " << same << " of " << n_prompts << " identical, " << accepted << " of "
                      << drafted << " drafted tokens accepted");
        CHECK(accepted > 200 * n_prompts / 48);  // drafts were verified and kept, not only proposed
    }
}

TEST_CASE("batch speculation: sampled output is generate()'s with the same speculation and seed") {
    if (!test::have_shared_data("stories260K-hf")) return;
    const auto model = stories();
    const Tokenizer& tok = *model->tokenizer();
    const auto ps = prompts(tok, 16);
    SamplingOptions sampling;
    sampling.temperature = 0.9f;
    sampling.top_k = 40;
    sampling.seed = 7;
    // Capacity 96: the long requests end on the capacity, inside drafts.
    const std::vector<Out> got = run_batch(model, 4, 6, ps, sampling, 96);
    SessionOptions so = session_options(96);
    so.all_logits = true;
    Session solo(model, so);
    int accepted = 0, capacity = 0;
    for (size_t i = 0; i < ps.size(); ++i) {
        CAPTURE(i);
        GenerateOptions o;
        o.sampling = sampling;
        o.sampling.seed = sampling.seed + i;
        o.max_tokens = i % 4 == 3 ? 400 : 24 + int(i % 5) * 9;
        o.logprobs = 2;
        o.speculation.max_draft = 6;
        solo.reset();
        const GenerateResult want = generate(solo, &tok, ps[i], o);
        CHECK(got[i].tokens == want.tokens);
        CHECK(got[i].reason == want.reason);
        CHECK(got[i].logprobs == want.logprobs);
        CHECK(got[i].stats.accepted_tokens == want.stats.accepted_tokens);
        CHECK(got[i].stats.drafted_tokens == want.stats.drafted_tokens);
        accepted += want.stats.accepted_tokens;
        capacity += want.reason == StopReason::capacity;
    }
    CHECK(accepted > 20);
    CHECK(capacity > 0);
}

TEST_CASE("BatchSession::decode_runs: a run's rows are one-row decode steps, bit for bit") {
    if (!test::have_shared_data("stories260K-hf")) return;
    const auto model = stories();
    const int V = model->config().vocab;
    BatchSessionOptions bo;
    bo.slots = 3;
    bo.session = session_options(64);
    bo.max_draft = 5;
    BatchSession runs(model, bo), steps(model, bo);
    CHECK(runs.max_rows() == 3 + 15);
    std::vector<int> ids(40);
    for (int i = 0; i < 40; ++i) ids[size_t(i)] = (i * 37 + 11) % V;
    for (int s = 0; s < 3; ++s) {
        runs.prefill(s, std::span<const int>(ids.data() + s, size_t(5 + s)));
        steps.prefill(s, std::span<const int>(ids.data() + s, size_t(5 + s)));
    }
    // Slot 2: 6 rows, slot 0: 1 row, slot 1: 4 rows.
    const std::vector<int> slots = {2, 0, 1}, counts = {6, 1, 4};
    const std::vector<int> tokens(ids.begin() + 20, ids.begin() + 31);
    runs.decode_runs(slots, counts, tokens);
    size_t r = 0;
    for (size_t i = 0; i < slots.size(); ++i)
        for (int j = 0; j < counts[i]; ++j, ++r) {
            const int row[] = {slots[i]};
            steps.decode(row, std::span<const int>(&tokens[r], 1));
            const std::span<const float> want = steps.logits(slots[i]), got = runs.row_logits(int(r));
            CHECK(std::memcmp(want.data(), got.data(), want.size_bytes()) == 0);
        }
    for (int s = 0; s < 3; ++s) CHECK(runs.pos(s) == steps.pos(s));
    CHECK(std::memcmp(runs.logits(1).data(), steps.logits(1).data(), size_t(V) * sizeof(float)) == 0);
    // Rewinding a run's tail and decoding again gives the steps' logits.
    runs.rewind(2, 3);
    steps.rewind(2, 3);
    const int two[] = {2};
    runs.decode(two, std::span<const int>(&ids[0], 1));
    steps.decode(two, std::span<const int>(&ids[0], 1));
    CHECK(std::memcmp(runs.logits(2).data(), steps.logits(2).data(), size_t(V) * sizeof(float)) == 0);

    test::expect_error([&] { runs.decode_runs(slots, std::vector<int>{6, 1, 0}, tokens); }, ErrorKind::input,
                       {"holds 1..", "got 0"});
    test::expect_error([&] { runs.decode_runs(slots, std::vector<int>{6, 1, 3}, tokens); }, ErrorKind::input,
                       {"got 11 tokens for runs of 10 rows"});
    test::expect_error([&] { runs.row_logits(1); }, ErrorKind::input, {"row 1 outside the last decode step's 0..0"});
    bo.max_draft = kMaxDraft + 1;
    test::expect_error([&] { BatchSession bad(model, bo); }, ErrorKind::config, {"max_draft must be in 0..64", "65"});
    bo.max_draft = 2;
    BatchGenerator gen(model, bo);
    SpeculationOptions spec;
    spec.max_draft = 3;
    test::expect_error([&] { gen.submit(1, std::span<const int>(ids.data(), 4), {}, 8, {}, -1, nullptr, spec); },
                       ErrorKind::config, {"max_draft 3 is more than the batch's max_draft 2"});
    spec.max_draft = 2;
    spec.min_ngram = 4;
    test::expect_error([&] { gen.submit(1, std::span<const int>(ids.data(), 4), {}, 8, {}, -1, nullptr, spec); },
                       ErrorKind::config, {"min_ngram must be in 1..max_ngram (3), got 4"});
    CHECK(gen.active() == 0);
}
