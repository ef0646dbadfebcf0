// BatchEngine::cancel (runtime/batch_job.cpp): a cancelled request ends at
// once with what it generated (StopReason::aborted), a prefix of the request
// run to the end; the other requests are unaffected; unknown tags are refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "staticlm/batch.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/model.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

std::shared_ptr<const Model> fixture() {
    LoadOptions lo;
    lo.weights = WeightType::q8;
    lo.threads = 1;
    lo.load_tokenizer = false;
    return load_model(test::fixtures_dir() / "llama-tied", lo);
}

SessionOptions session() {
    SessionOptions so;
    so.max_seq = 64;
    so.prefill_buckets = {16, 64};
    so.threads = 1;
    return so;
}

EngineRequest request(uint64_t tag, std::vector<int> prompt, int max_tokens) {
    EngineRequest r;
    r.tag = tag;
    r.prompt = std::move(prompt);
    r.options.max_tokens = max_tokens;
    r.options.stop_ids = {-1};  // none the model samples
    r.options.sampling.temperature = 0.9f;
    r.options.sampling.seed = tag;
    return r;
}

// Steps until the engine holds nothing, collecting outcomes by tag.
std::map<uint64_t, EngineOutcome> drain(BatchEngine& e) {
    std::map<uint64_t, EngineOutcome> out;
    std::vector<EngineOutcome> f;
    while (e.active() > 0) {
        f.clear();
        e.step(f);
        for (EngineOutcome& o : f) out[o.tag] = std::move(o);
    }
    return out;
}

}  // namespace

TEST_CASE("batched engine: cancel ends one request with its tokens so far") {
    auto model = fixture();
    BatchSessionOptions bo;
    bo.slots = 2;
    bo.session = session();
    auto full = make_batched_engine(model, bo);
    full->submit(request(1, {1, 17, 200}, 20));
    full->submit(request(2, {1, 5}, 20));
    const auto want = drain(*full);
    REQUIRE(want.size() == 2);
    REQUIRE(want.at(1).result.tokens.size() == 20);

    auto e = make_batched_engine(model, bo);
    e->submit(request(1, {1, 17, 200}, 20));
    e->submit(request(2, {1, 5}, 20));
    std::vector<EngineOutcome> f;
    for (int i = 0; i < 6; ++i) e->step(f);
    CHECK(f.empty());
    EngineOutcome c;
    CHECK_FALSE(e->cancel(99, c));
    REQUIRE(e->cancel(1, c));
    CHECK(c.tag == 1);
    CHECK(c.result.reason == StopReason::aborted);
    REQUIRE(c.result.tokens.size() == 6);  // one token per step
    CHECK(std::equal(c.result.tokens.begin(), c.result.tokens.end(), want.at(1).result.tokens.begin()));
    CHECK(e->active() == 1);
    CHECK_FALSE(e->cancel(1, c));  // no longer running
    const auto rest = drain(*e);
    REQUIRE(rest.size() == 1);
    CHECK(rest.at(2).result.tokens == want.at(2).result.tokens);
}

TEST_CASE("sequential engine: cancel drops the pending request") {
    auto e = make_sequential_engine(fixture(), session());
    e->submit(request(4, {1, 2, 3}, 5));
    EngineOutcome c;
    CHECK_FALSE(e->cancel(5, c));
    REQUIRE(e->cancel(4, c));
    CHECK(c.result.reason == StopReason::aborted);
    CHECK(c.result.tokens.empty());
    CHECK(c.result.stats.prompt_tokens == 3);
    CHECK(e->active() == 0);
}
