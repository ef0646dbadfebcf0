// BatchSession and BatchGenerator (runtime/batch_session.cpp): every slot's
// logits equal those of the same sequence run alone in a Session, whatever
// the other rows of its decode steps and however its prompt's prefill steps
// interleave with them; the generator's tokens equal generate()'s.
#include <doctest/doctest.h>

#include <cstring>
#include <deque>
#include <random>

#include "model/model.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/metrics.hpp"
#include "staticlm/session.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

std::shared_ptr<const Model> load(const char* fixture, WeightType w) {
    LoadOptions lo;
    lo.weights = w;
    lo.threads = 2;
    lo.load_tokenizer = false;
    return Model::load(test::fixtures_dir() / fixture, lo);
}

SessionOptions options(bool ring) {
    SessionOptions so;
    so.max_seq = 64;
    so.prefill_buckets = {4, 16};
    so.append_buckets = {4};
    so.threads = 2;
    so.ring_sliding = ring;
    return so;
}

struct Seq {
    std::vector<int> ids;
    int prompt = 0;
    int done = 0;
    std::vector<std::vector<float>> logits;  // after the prompt, then after each decoded token
};

// Largest PEIR between the batched logits of each sequence and a solo run;
// -1 when some logits differ in a way PEIR cannot show (NaN); sets `bitwise`.
double compare_with_solo(std::shared_ptr<const Model> model, const SessionOptions& so,
                         const std::vector<Seq>& seqs, bool& bitwise) {
    Session solo(model, so);
    double worst = 0;
    bitwise = true;
    for (const Seq& s : seqs) {
        REQUIRE(!s.logits.empty());
        std::vector<std::span<const float>> got;
        std::vector<std::vector<float>> ref;
        auto l = solo.prefill(std::span<const int>(s.ids.data(), size_t(s.prompt)));
        ref.emplace_back(l.begin(), l.end());
        for (int p = s.prompt; p < s.done; ++p) {
            l = solo.decode(s.ids[size_t(p)]);
            ref.emplace_back(l.begin(), l.end());
        }
        REQUIRE(ref.size() == s.logits.size());
        for (size_t i = 0; i < ref.size(); ++i) {
            if (std::memcmp(ref[i].data(), s.logits[i].data(), ref[i].size() * sizeof(float)) != 0)
                bitwise = false;
            worst = std::max(worst, compare_logits(s.logits[i], ref[i]).peir);
        }
    }
    return worst;
}

// Four sequences through one BatchSession: prompts prefilled step by step
// between decode steps of the others, rows in changing order and subsets.
std::vector<Seq> run_batched(std::shared_ptr<const Model> model, const SessionOptions& so) {
    const int V = model->config().vocab;
    std::vector<Seq> seqs(4);
    const int prompts[] = {5, 19, 1, 33};
    for (int s = 0; s < 4; ++s) {
        seqs[size_t(s)].prompt = prompts[s];
        for (int i = 0; i < 60; ++i) seqs[size_t(s)].ids.push_back((i * 37 + s * 101 + 5) % V);
    }
    BatchSession bs(model, {4, so});
    auto prefill_step = [&](int s) {
        Seq& q = seqs[size_t(s)];
        const int t = bs.prefill_step(s, std::span<const int>(q.ids.data() + q.done, size_t(q.prompt - q.done)));
        q.done += t;
        if (q.done == q.prompt) q.logits.emplace_back(bs.logits(s).begin(), bs.logits(s).end());
        return q.done == q.prompt;
    };
    auto decode = [&](std::vector<int> rows) {
        std::vector<int> toks;
        for (int s : rows) toks.push_back(seqs[size_t(s)].ids[size_t(seqs[size_t(s)].done)]);
        bs.decode(rows, toks);
        // Row i of the step is slot rows[i]'s logits, whether the head wrote
        // the slots' logits directly (consecutive slots) or copied them.
        for (size_t i = 0; i < rows.size(); ++i) {
            const auto row = bs.row_logits(int(i));
            const auto slot = bs.logits(rows[i]);
            REQUIRE(row.size() == slot.size());
            CHECK(std::memcmp(row.data(), slot.data(), row.size() * sizeof(float)) == 0);
        }
        for (int s : rows) {
            Seq& q = seqs[size_t(s)];
            ++q.done;
            q.logits.emplace_back(bs.logits(s).begin(), bs.logits(s).end());
        }
    };
    while (!prefill_step(0)) {
    }
    prefill_step(1);  // 16 of 19
    decode({0});
    prefill_step(1);  // the remaining 3
    decode({0, 1});
    decode({1, 0});
    while (!prefill_step(2)) {
    }
    prefill_step(3);
    decode({2, 0, 1});
    prefill_step(3);
    decode({0, 1, 2});
    while (!prefill_step(3)) decode({1});
    for (int k = 0; k < 8; ++k) decode(k % 3 ? std::vector<int>{3, 2, 1, 0} : std::vector<int>{2, 0});
    decode({3});
    return seqs;
}

}  // namespace

TEST_CASE("batch session: each slot's logits equal a solo session's") {
    struct Case {
        const char* fixture;
        bool ring;
    };
    for (const Case& c : {Case{"llama-gqa-llama3", false}, Case{"llama-mqa-3layer", false},
                          Case{"gemma4-e2b-like-causal", false}, Case{"gemma4-e2b-like-causal", true},
                          Case{"gemma4-keqv-causal", false}}) {
        // The q8 KV cache with q8 weights: rows still equal solo sessions of that cache type.
        for (auto [w, kv] : {std::pair{WeightType::q8, KvType::f16}, std::pair{WeightType::f16, KvType::f16},
                             std::pair{WeightType::f32, KvType::f16}, std::pair{WeightType::q8, KvType::q8}}) {
            auto model = load(c.fixture, w);
            SessionOptions so = options(c.ring);
            so.kv = kv;
            const std::vector<Seq> seqs = run_batched(model, so);
            bool bitwise = false;
            const double peir = compare_with_solo(model, so, seqs, bitwise);
            const std::string what = std::string(c.fixture) + (c.ring ? " (ring) " : " ") + weight_type_name(w) +
                                     " kv " + kv_type_name(kv);
            INFO(what << ": PEIR " << peir);
            MESSAGE(what << ": batched vs solo " << (bitwise ? std::string("bit-identical") : "PEIR " + std::to_string(peir)));
            CHECK(bitwise);
        }
    }
}

TEST_CASE("batch session: errors leave the slots as they were") {
    auto model = load("llama-gqa-llama3", WeightType::q8);
    SessionOptions so = options(false);
    so.max_seq = 8;
    so.prefill_buckets = {4, 8};
    BatchSession bs(model, {2, so});
    const int V = model->config().vocab;
    const std::vector<int> eight = {1, 2, 3, 4, 5, 6, 7, 8};
    bs.prefill(0, eight);
    bs.prefill(1, std::span<const int>(eight.data(), 3));
    test::expect_error([&] { bs.decode(std::vector<int>{0, 1}, std::vector<int>{1, 2}); }, ErrorKind::capacity,
                       {"P=8", "K=8"});
    CHECK(bs.pos(1) == 3);
    test::expect_error([&] { bs.decode(std::vector<int>{1, 1}, std::vector<int>{1, 2}); }, ErrorKind::input,
                       {"slot 1 appears twice"});
    test::expect_error([&] { bs.decode(std::vector<int>{1}, std::vector<int>{V}); }, ErrorKind::input,
                       {"invalid token id"});
    test::expect_error([&] { bs.decode(std::vector<int>{2}, std::vector<int>{1}); }, ErrorKind::input,
                       {"slot 2 outside 0..1"});
    test::expect_error([&] { bs.prefill_step(1, std::vector<int>(6, 1)); }, ErrorKind::capacity, {"K=8"});
    CHECK(bs.pos(1) == 3);
    bs.decode(std::vector<int>{1}, std::vector<int>{4});
    CHECK(bs.pos(1) == 4);
    test::expect_error([] { BatchSession(nullptr, {}); }, ErrorKind::config, {"model"});
    auto m2 = model;
    test::expect_error([&] { BatchSession(m2, {0, options(false)}); }, ErrorKind::config, {"slots must be >= 1"});
}

namespace {

struct Request {
    std::vector<int> prompt;
    GenerateOptions options;
};

std::vector<Request> requests(int V, int max_seq) {
    std::vector<Request> out;
    std::mt19937 rng(7);
    for (int i = 0; i < 9; ++i) {
        Request r;
        const int len = 1 + int(rng() % 30);
        for (int k = 0; k < len; ++k) r.prompt.push_back(int(rng() % unsigned(V)));
        r.options.max_tokens = i == 4 ? 0 : 3 + int(rng() % 20);
        if (i == 6) r.options.max_tokens = max_seq;  // runs into capacity
        r.options.sampling.temperature = i % 3 == 0 ? 0.0f : 0.9f;
        r.options.sampling.top_k = 40;
        r.options.sampling.top_p = 0.95f;
        r.options.sampling.repetition_penalty = i % 2 ? 1.1f : 1.0f;
        r.options.sampling.seed = 1000 + uint64_t(i);
        r.options.stop_ids = {int(rng() % unsigned(V)), int(rng() % unsigned(V))};
        out.push_back(r);
    }
    return out;
}

}  // namespace

TEST_CASE("batch generator: continuous batching gives each sequence what generate() gives it alone") {
    for (WeightType w : {WeightType::q8, WeightType::f32}) {
        auto model = load("llama-gqa-llama3", w);
        SessionOptions so = options(false);
        so.max_seq = 40;
        const std::vector<Request> reqs = requests(model->config().vocab, so.max_seq);
        BatchGenerator gen(model, {3, so}, 6);
        std::deque<size_t> queue;
        for (size_t i = 0; i < reqs.size(); ++i) queue.push_back(i);
        std::vector<std::vector<int>> got(reqs.size());
        std::vector<StopReason> reasons(reqs.size());
        int steps = 0;
        while (!queue.empty() || gen.active() > 0) {
            while (!queue.empty() && gen.active() < gen.capacity()) {
                const Request& r = reqs[queue.front()];
                gen.submit(queue.front(), r.prompt, r.options.sampling, r.options.max_tokens, r.options.stop_ids);
                queue.pop_front();
            }
            gen.step();
            ++steps;
            for (int s = 0; s < gen.capacity(); ++s)
                if (gen.finished(s)) {
                    const size_t i = size_t(gen.tag(s));
                    got[i].assign(gen.generated(s).begin(), gen.generated(s).end());
                    reasons[i] = gen.reason(s);
                    CHECK(gen.stats(s).prompt_tokens == int(reqs[i].prompt.size()));
                    CHECK(gen.stats(s).generated_tokens == int(got[i].size()));
                    gen.release(s);
                }
            REQUIRE(steps < 1000);
        }
        Session solo(model, so);
        int capacity_stops = 0;
        for (size_t i = 0; i < reqs.size(); ++i) {
            solo.reset();
            const GenerateResult g = generate(solo, nullptr, reqs[i].prompt, reqs[i].options);
            INFO(weight_type_name(w), " request ", i);
            CHECK(got[i] == g.tokens);  // bitwise logits: the same tokens
            CHECK(reasons[i] == g.reason);
            capacity_stops += g.reason == StopReason::capacity;
        }
        CHECK(capacity_stops >= 1);
    }
}

TEST_CASE("batch generator: submit errors, stop and release") {
    auto model = load("llama-gqa-llama3", WeightType::q8);
    SessionOptions so = options(false);
    so.max_seq = 16;
    BatchGenerator gen(model, {2, so});
    const std::vector<int> p = {3, 4, 5};
    test::expect_error([&] { gen.submit(0, std::vector<int>(17, 1), {}, 4, {}); }, ErrorKind::capacity,
                       {"P=0 + T=17 > K=16"});
    test::expect_error([&] { gen.submit(0, {}, {}, 4, {}); }, ErrorKind::input, {"empty input"});
    test::expect_error([&] { gen.submit(0, p, {}, -1, {}); }, ErrorKind::config, {"max_tokens"});
    SamplingOptions bad;
    bad.top_p = 0;
    test::expect_error([&] { gen.submit(0, p, bad, 4, {}); }, ErrorKind::config, {"top_p"});
    CHECK(gen.active() == 0);
    const int a = gen.submit(10, p, {}, 50, {});
    const int b = gen.submit(11, p, {}, 50, {});
    test::expect_error([&] { gen.submit(12, p, {}, 4, {}); }, ErrorKind::capacity, {"all 2 slots are in use"});
    test::expect_error([&] { gen.release(a); }, ErrorKind::input, {"has not finished"});
    gen.step();
    gen.step();
    CHECK(gen.generated(a).size() == 2);
    gen.stop(a, StopReason::stop_string);
    CHECK(gen.finished(a));
    CHECK(gen.reason(a) == StopReason::stop_string);
    gen.release(a);
    CHECK_FALSE(gen.in_use(a));
    gen.step();
    CHECK(gen.generated(b).size() == 3);
    CHECK(gen.active() == 1);
}
