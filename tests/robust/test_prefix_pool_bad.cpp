// Bad inputs to the prefix pool and the calls around it (runtime/prefix_pool.cpp,
// Session/BatchSession save_prefix/load_prefix, BatchGenerator::start_after_prefix,
// batch_memory): each is a clear Error naming the count or limit, and the
// object it was called on is left as it was.
#include <doctest/doctest.h>

#include "staticlm/batch.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/model.hpp"
#include "staticlm/prefix_pool.hpp"
#include "tests/support.hpp"

using namespace staticlm;

namespace {

std::shared_ptr<const Model> fixture(const char* name) {
    LoadOptions lo;
    lo.weights = WeightType::f32;
    lo.threads = 1;
    lo.load_tokenizer = false;
    return load_model(test::fixtures_dir() / name, lo);
}

SessionOptions small() {
    SessionOptions so;
    so.max_seq = 32;
    so.prefill_buckets = {8};
    so.append_buckets = {4};
    so.threads = 1;
    return so;
}

}  // namespace

TEST_CASE("prefix pool bad inputs: sizes, entries, sessions that do not hold the prefix, other models") {
    auto model = fixture("llama-gqa-llama3");
    const SessionOptions so = small();
    test::expect_error([&] { PrefixPool(model, so, 0); }, ErrorKind::config, {">= 1 token", "0"});
    test::expect_error([&] { PrefixPool(nullptr, so, 8); }, ErrorKind::config, {"needs a model"});

    PrefixPool pool(model, so, 16);
    CHECK(pool.add(1, 0) == -1);
    CHECK(pool.add(1, 17) == -1);  // longer than the pool
    const int e = pool.add(1, 10);
    REQUIRE(e >= 0);
    test::expect_error([&] { pool.add(1, 2); }, ErrorKind::input, {"key 1", "already"});
    CHECK(pool.add(2, 7) == -1);  // 10 + 7 > 16
    test::expect_error([&] { pool.remove(9); }, ErrorKind::input, {"no entry 9"});
    test::expect_error([&] { (void)pool.length(-1); }, ErrorKind::input, {"no entry -1"});

    // A session holding 6 of the entry's 10 positions cannot fill it; the entry stays unfilled.
    Session s(model, so);
    const std::vector<int> ids = {1, 2, 3, 4, 5, 6};
    s.prefill(ids);
    test::expect_error([&] { s.save_prefix(pool, e); }, ErrorKind::input, {"entry of 10 tokens", "holds 6"});
    CHECK_FALSE(pool.filled(e));
    // Loading an unfilled entry or too many positions leaves the session where it was.
    test::expect_error([&] { s.load_prefix(pool, e, 4); }, ErrorKind::input, {"not filled"});
    CHECK(s.pos() == 6);
    const std::vector<int> more = {7, 8, 9, 10};
    s.append(more);
    s.save_prefix(pool, e);
    CHECK(pool.filled(e));
    test::expect_error([&] { s.load_prefix(pool, e, 0); }, ErrorKind::input, {"0 tokens asked", "10"});
    test::expect_error([&] { s.load_prefix(pool, e, 11); }, ErrorKind::input, {"11 tokens asked", "10"});
    CHECK(s.pos() == 10);

    // A pool made for another model (other layers) is refused before anything is copied.
    auto other = fixture("llama-mqa-3layer");
    Session t(other, so);
    test::expect_error([&] { t.load_prefix(pool, e, 4); }, ErrorKind::input, {"KV copy", "layers"});
    CHECK(t.pos() == 0);

    // A ring that no longer holds the prefix cannot save it.
    auto swa = fixture("mistral-swa");  // window 6
    SessionOptions ro = so;
    ro.ring_sliding = true;  // rings of 6 + 8 slots
    Session r(swa, ro);
    PrefixPool rpool(swa, ro, 32);
    const int re = rpool.add(3, 20);
    std::vector<int> twenty(20);
    for (int i = 0; i < 20; ++i) twenty[size_t(i)] = i + 1;
    r.prefill(twenty);
    test::expect_error([&] { r.save_prefix(rpool, re); }, ErrorKind::input, {"ring", "14 slots", "20 positions"});
    CHECK_FALSE(rpool.filled(re));
}

TEST_CASE("prefix bad inputs in batches: start_after_prefix, batch_memory options") {
    auto model = fixture("llama-gqa-llama3");
    BatchSessionOptions bo;
    bo.slots = 2;
    bo.session = small();
    BatchGenerator g(model, bo);
    PrefixPool pool(model, bo.session, 16);
    const int e = pool.add(5, 4);
    const std::vector<int> head = {3, 4, 5, 6};
    g.session().prefill(0, head);
    g.session().save_prefix(0, pool, e);
    const std::vector<int> prompt = {3, 4, 5, 6};
    const int slot = g.submit(1, prompt, SamplingOptions{}, 2, {});
    // The whole prompt from the pool would leave nothing to compute the first token's logits from.
    test::expect_error([&] { g.start_after_prefix(slot, pool, e, 4); }, ErrorKind::input, {"4 tokens", "4 prompt tokens"});
    test::expect_error([&] { g.start_after_prefix(1 - slot, pool, e, 2); }, ErrorKind::input, {"not a freshly submitted"});
    g.start_after_prefix(slot, pool, e, 3);
    test::expect_error([&] { g.start_after_prefix(slot, pool, e, 3); }, ErrorKind::input, {"not a freshly submitted"});
    CHECK(g.session().pos(slot) == 3);

    PrefixOptions po;
    po.pool_tokens = -5;
    test::expect_error([&] { (void)batch_memory(*model, bo, po); }, ErrorKind::config, {"prefix pool", "-5"});
    po.pool_tokens = 8;
    BatchSessionOptions none = bo;
    none.slots = 0;
    test::expect_error([&] { (void)batch_memory(*model, none, po); }, ErrorKind::config, {"slots", "0"});
    // Caches that do not fit are refused even without a pool, naming what to lower.
    po.pool_tokens = 0;
    po.memory_budget = 1024;
    test::expect_error([&] { make_batched_engine(model, bo, po); }, ErrorKind::capacity,
                       {"does not fit", "budget of 1024 bytes", "--slots"});
}
