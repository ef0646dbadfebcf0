// The C++ API surface the embedding work added or fixed: default buckets
// derived from max_seq, busy sessions, greedy at tiny temperatures, the token
// callback and its abort, max_tokens -1, and sampling defaults from
// generation_config.json.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "staticlm/error.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "tests/model/st_writer.hpp"
#include "tests/support.hpp"

using namespace staticlm;
using namespace staticlm::test;
namespace fs = std::filesystem;

namespace {

std::shared_ptr<const Model> fixture(const fs::path& dir = fixtures_dir() / "llama-tied") {
    LoadOptions o;
    o.weights = WeightType::f32;
    o.threads = 1;
    o.load_tokenizer = false;
    return load_model(dir, o);
}

SessionOptions small(int max_seq) {
    SessionOptions o;
    o.max_seq = max_seq;
    o.prefill_buckets = default_prefill_buckets(max_seq);
    o.append_buckets = default_append_buckets(max_seq);
    o.threads = 1;
    return o;
}

}  // namespace

TEST_CASE("default buckets follow max_seq") {
    CHECK(default_prefill_buckets(2048) == std::vector<int>{64, 128, 256, 512});
    CHECK(default_prefill_buckets(512) == std::vector<int>{64, 128, 256, 512});
    CHECK(default_prefill_buckets(256) == std::vector<int>{64, 128, 256});
    CHECK(default_prefill_buckets(100) == std::vector<int>{64, 100});
    CHECK(default_prefill_buckets(64) == std::vector<int>{64});
    CHECK(default_prefill_buckets(5) == std::vector<int>{5});
    CHECK(default_append_buckets(2048) == std::vector<int>{16, 32, 64});
    CHECK(default_append_buckets(40) == std::vector<int>{16, 32, 40});
    CHECK(default_append_buckets(8) == std::vector<int>{8});
    // A session of any capacity works with them (max_seq 64 used to need flags).
    const auto model = fixture();
    for (int k : {1, 7, 64, 100, 256}) {
        Session s(model, small(k));
        s.prefill(std::vector<int>(size_t(k), 3));
        CHECK(s.pos() == k);
    }
}

TEST_CASE("a session entered while a call runs throws busy and stays as it was") {
    const auto model = fixture();
    SessionOptions o = small(32);
    o.all_logits = true;
    Session s(model, o);
    s.prefill(std::vector<int>{1, 2, 3});
    struct Ctx {
        Session* s;
        bool busy = false;
        std::string message;
    } ctx{&s, false, {}};
    // The sink runs inside prefill: calling into the same session is a second entry.
    const LogitsSink reenter{[](void* c, int, const float*, int, int) {
                                 auto& x = *static_cast<Ctx*>(c);
                                 try {
                                     x.s->decode(4);
                                 } catch (const Error& e) {
                                     x.busy = e.kind() == ErrorKind::busy;
                                     x.message = e.what();
                                 }
                             },
                             &ctx};
    s.append(std::vector<int>{4, 5}, reenter);
    CHECK(ctx.busy);
    CHECK(ctx.message.find("one thread at a time") != std::string::npos);
    CHECK(s.pos() == 5);  // the refused decode changed nothing
}

TEST_CASE("temperatures whose reciprocal overflows sample greedily") {
    // Before: 1/1e-40 = inf, (x - max) * inf = NaN for the best token, and the
    // sampler returned the last of the top-k candidates every time.
    std::vector<float> logits(300);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(float(i) * 0.37f) * 5.0f;
    const int best = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    for (float t : {1e-40f, 1e-38f, 1e-7f, 0.0f, -1.0f}) {
        SamplingOptions o;
        o.temperature = t;
        o.top_k = 40;
        o.top_p = 0.95f;
        o.min_p = 0.05f;
        Sampler sampler(int(logits.size()), o);
        for (int i = 0; i < 5; ++i) CHECK(sampler.sample(logits, {}) == best);
    }
    SamplingOptions o;
    o.temperature = 1e-5f;  // above kGreedyTemperature: sampling, finite, still the best here
    Sampler sampler(int(logits.size()), o);
    CHECK(sampler.sample(logits, {}) == best);
}

TEST_CASE("greedy sampling: the first largest logit; a mask and a penalty still apply; short logits refused") {
    // 1000 logits (no multiple of 64, so the argmax has a tail): the largest value twice, at
    // 700 and 901, so the answer is the first; then a mask without 700 and a
    // penalty on 700 move it to 901.
    std::vector<float> logits(1000);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::cos(float(i) * 0.11f);
    logits[700] = 9.0f;
    logits[901] = 9.0f;
    Sampler sampler(int(logits.size()), SamplingOptions{});
    CHECK(sampler.sample(logits, {}) == 700);
    std::vector<uint64_t> allowed((logits.size() + 63) / 64, ~uint64_t(0));
    allowed[700 / 64] &= ~(uint64_t(1) << (700 % 64));
    CHECK(sampler.sample(logits, {}, allowed) == 901);
    SamplingOptions pen;
    pen.repetition_penalty = 1.5f;
    Sampler penalised(int(logits.size()), pen);
    const std::vector<int> recent{700};
    CHECK(penalised.sample(logits, recent) == 901);
    CHECK(penalised.sample(logits, {}) == 700);
    const std::span<const float> short_logits(logits.data(), 999);
    CHECK_THROWS_WITH_AS(sampler.sample(short_logits, {}), "sampler: 999 logits for a vocabulary of 1000", Error);
}

TEST_CASE("generate: the token callback sees every token, can stop, and -1 runs to capacity") {
    const auto model = fixture();
    Session s(model, small(24));
    GenerateOptions g;
    g.max_tokens = 6;
    g.stop_ids = {-5};  // none: the fixture's EOS must not end the run early
    struct Seen {
        std::vector<int> tokens;
        int stop_after = 1000;
    } seen;
    g.on_token = {[](void* c, int token, std::string_view) {
                      auto& x = *static_cast<Seen*>(c);
                      if (token >= 0) x.tokens.push_back(token);
                      return int(x.tokens.size()) < x.stop_after;
                  },
                  &seen};
    GenerateResult r = generate(s, nullptr, std::vector<int>{1, 2, 3}, g);
    CHECK(r.reason == StopReason::max_tokens);
    CHECK(seen.tokens == r.tokens);

    seen = {};
    seen.stop_after = 2;
    s.reset();
    r = generate(s, nullptr, std::vector<int>{1, 2, 3}, g);
    CHECK(r.reason == StopReason::aborted);
    CHECK(r.tokens.size() == 2);
    CHECK(s.pos() == 3 + 1);  // the last sampled token is not in the cache
    CHECK(std::string(stop_reason_name(r.reason)) == "aborted");

    seen = {};
    g.max_tokens = -1;
    s.reset();
    r = generate(s, nullptr, std::vector<int>{1, 2, 3}, g);
    CHECK(r.reason == StopReason::capacity);
    CHECK(s.pos() == 24);
    CHECK(r.tokens.size() == 24 - 3 + 1);
}

TEST_CASE("generate: streamed text through the token callback equals the result's text") {
    if (!have_shared_data("stories260K")) return;
    LoadOptions lo;
    lo.weights = WeightType::f32;
    lo.threads = 2;
    const auto model = load_model(shared_data() / "stories260K-hf", lo);
    Session s(model, small(128));
    const Tokenizer* tok = model_tokenizer(*model);
    REQUIRE(tok);
    GenerateOptions g;
    g.max_tokens = 40;
    g.stop_strings = {" park"};
    std::string streamed;
    g.on_token = {[](void* c, int, std::string_view text) {
                      *static_cast<std::string*>(c) += text;
                      return true;
                  },
                  &streamed};
    const GenerateResult r = generate(s, tok, tok->encode("Once upon a time", true), g);
    CHECK(streamed == r.text);
    CHECK(r.text.find(" park") == std::string::npos);
}

TEST_CASE("sampling defaults come from generation_config.json") {
    TempDir tmp;
    const fs::path src = fixtures_dir() / "llama-tied";
    auto with_gen = [&](const std::string& name, const std::string& json) {
        const fs::path d = tmp.path / name;
        fs::create_directories(d);
        fs::copy_file(src / "config.json", d / "config.json");
        fs::copy_file(src / "model.safetensors", d / "model.safetensors");
        std::ofstream(d / "generation_config.json") << json;
        return model_config(*fixture(d));
    };
    const SamplingOptions builtin = suggested_sampling(model_config(*fixture()));
    CHECK(builtin.temperature == doctest::Approx(0.8));
    CHECK(builtin.top_k == 40);
    CHECK(builtin.top_p == doctest::Approx(0.95));
    CHECK(builtin.min_p == doctest::Approx(0.05));
    CHECK(builtin.seed == 42);

    const ModelConfig c =
        with_gen("llama3", R"({"eos_token_id": [2, 7], "do_sample": true, "temperature": 0.6, "top_p": 0.9})");
    const SamplingOptions s = suggested_sampling(c);
    CHECK(s.temperature == doctest::Approx(0.6));
    CHECK(s.top_p == doctest::Approx(0.9));
    CHECK(s.top_k == 40);  // not in the file: the built-in value
    CHECK(c.eos_ids == std::vector<int>{2, 7});

    const SamplingOptions greedy = suggested_sampling(with_gen("greedy", R"({"do_sample": false, "top_k": 5})"));
    CHECK(greedy.temperature == 0.0f);
    CHECK(greedy.top_k == 5);

    expect_error([&] { with_gen("bad", R"({"repetition_penalty": 0})"); }, ErrorKind::format,
                 {"generation_config.json", "'repetition_penalty'"});
}
