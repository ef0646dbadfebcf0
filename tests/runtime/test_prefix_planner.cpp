// PrefixPlanner (runtime/batch_job.cpp): prefixes found as requests come, for
// the C API's batch: which run each request shares and how much of it, a
// prompt that shares none becoming a run, runs given up when the pool is full
// (least recently used first), and nothing planned where nothing can be shared.
#include <doctest/doctest.h>

#include <vector>

#include "staticlm/batch.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/error.hpp"
#include "staticlm/model.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

// A prompt of `n` ids: `head` repeated, then `tail`.
std::vector<int> prompt(int head, int n_head, std::vector<int> tail) {
    std::vector<int> p(size_t(n_head), head);
    p.front() = 1;  // BOS
    p.insert(p.end(), tail.begin(), tail.end());
    return p;
}

EngineRequest request(uint64_t tag, std::vector<int> ids) {
    EngineRequest r;
    r.tag = tag;
    r.prompt = std::move(ids);
    r.options.max_tokens = 1;
    return r;
}

}  // namespace

TEST_CASE("prefix planner: runs shared as requests come, the least recently used given up") {
    if (!test::have_shared_data("prefix planner")) return;
    LoadOptions lo;
    lo.weights = WeightType::f32;
    lo.threads = 1;
    const auto model = load_model(test::shared_data() / "stories260K-hf", lo);
    BatchSessionOptions bo;
    bo.slots = 4;
    bo.session.max_seq = 128;
    bo.session.prefill_buckets = {16, 64, 128};
    bo.session.append_buckets = {16, 128};
    bo.session.threads = 1;  // one thread: every split computes rows exactly
    PrefixOptions po;
    po.pool_tokens = 50;  // one run of 40 at a time
    auto engine = make_batched_engine(model, bo, po);
    REQUIRE(engine->prefix_limit() == 50);
    PrefixPlanner planner(8);
    std::vector<EngineOutcome> done;
    auto submit = [&](EngineRequest r) {
        engine->submit(std::move(r));
        while (engine->active() > 0) engine->step(done);
    };

    // A: no run yet: its prompt less its last token becomes one.
    EngineRequest a = request(1, prompt(7, 30, {20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30}));
    planner.plan(a, *engine);
    CHECK(a.prefix.use == 40);
    REQUIRE(a.prefix.tokens);
    CHECK(a.prefix.tokens->size() == 40);
    const uint64_t key_a = a.prefix.key;
    submit(std::move(a));
    CHECK(engine->prefix_held(key_a));
    // B shares the first 32 tokens of A's run: it uses them, no new run.
    EngineRequest b = request(2, prompt(7, 30, {20, 21, 99, 98, 97}));
    planner.plan(b, *engine);
    CHECK(b.prefix.key == key_a);
    CHECK(b.prefix.use == 32);
    submit(std::move(b));
    // C shares 7 tokens (BOS + 6): below the minimum of 8, so it is a run of
    // its own, which does not fit beside A's: A's run is given up.
    EngineRequest c = request(3, prompt(7, 7, std::vector<int>(30, 40)));
    planner.plan(c, *engine);
    CHECK(c.prefix.key != key_a);
    CHECK(c.prefix.use == 36);
    const uint64_t key_c = c.prefix.key;
    submit(std::move(c));
    CHECK(engine->prefix_held(key_c));
    CHECK_FALSE(engine->prefix_held(key_a));
    // D starts as A did: A's run is gone, so D makes a new one.
    EngineRequest d = request(4, prompt(7, 30, {20, 21, 22, 5}));
    planner.plan(d, *engine);
    CHECK(d.prefix.key != key_a);
    CHECK(d.prefix.key != key_c);
    CHECK(d.prefix.use == 33);
    submit(std::move(d));
    const EngineCounters counters = engine->counters();
    CHECK(counters.prefixes == 3);
    CHECK(counters.shared_positions == 40 + 32 + 36 + 33);

    // Nothing to plan: a prompt of min_len tokens or fewer, a scoring request,
    // an engine without a pool.
    EngineRequest short_one = request(5, prompt(7, 8, {}));
    planner.plan(short_one, *engine);
    CHECK(short_one.prefix.use == 0);
    EngineRequest scoring = request(6, prompt(7, 30, {20, 21, 22}));
    scoring.score = {{5, 6}};
    planner.plan(scoring, *engine);
    CHECK(scoring.prefix.use == 0);
    auto no_pool = make_batched_engine(model, bo, PrefixOptions{});
    EngineRequest e = request(7, prompt(7, 30, {20, 21, 22}));
    planner.plan(e, *no_pool);
    CHECK(e.prefix.use == 0);
    CHECK_THROWS_AS(PrefixPlanner(0), Error);
}
