// Shared prompt prefixes in batch jobs (runtime/batch_job.cpp,
// runtime/prefix_pool.cpp): results with and without sharing are bit-identical
// with any batch size and shard split, on stories260K (200 classification
// requests under one long instruction, and greedy/sampled generations) and on
// a sliding-window fixture with ring caches; the prompt rows computed drop
// with sharing; a pool that cannot fit is refused before anything runs.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "staticlm/batch.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/model.hpp"
#include "staticlm/prefix_pool.hpp"
#include "staticlm/score.hpp"
#include "staticlm/tokenizer.hpp"
#include "tests/support.hpp"

using namespace staticlm;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using staticlm::test::read_file;
using staticlm::test::TempDir;

// id -> result line without its timing (the only field that may differ).
std::map<std::string, json> results_by_id(const std::string& file) {
    std::map<std::string, json> out;
    std::istringstream in(read_file(file));
    std::string line;
    while (std::getline(in, line)) {
        json j = json::parse(line);
        j.erase("timing");
        const std::string id = j["id"].get<std::string>();
        CHECK_MESSAGE(out.count(id) == 0, "duplicate result for " << id);
        out[id] = j;
    }
    return out;
}

std::shared_ptr<const Model> stories() {
    LoadOptions lo;
    lo.weights = WeightType::q8;
    lo.threads = 2;
    return load_model(test::shared_data() / "stories260K-hf", lo);
}

SessionOptions session_options(int threads) {
    SessionOptions so;
    so.max_seq = 512;
    so.prefill_buckets = {16, 64, 256};
    so.append_buckets = {16, 32};
    so.threads = threads;
    return so;
}

// "c17" (GCC 12 warns falsely on "c" + std::to_string(i)).
std::string id_of(char letter, int i) {
    std::string s(1, letter);
    s += std::to_string(i);
    return s;
}

const char* kWords[] = {"dog", "cat", "ball", "tree", "sun", "rain", "cake", "friend", "park", "toy"};

// The shared instruction: `rules` numbered lines.
std::string instruction(int rules) {
    std::string s = "Read the little story and say how the child feels.\n";
    for (int i = 0; i < rules; ++i)
        s += "Rule " + std::to_string(i + 1) + ": if the " + kWords[i % 10] + " is " +
             (i % 3 ? "big" : "small") + ", the child is " + (i % 2 ? "happy" : "sad") + ".\n";
    return s;
}

std::string story(int i) {
    return "Story " + std::to_string(i) + ": Tim saw a " + kWords[i % 10] + " and a " + kWords[(i * 7 + 3) % 10] +
           " in the park.\nThe child feels";
}

// A prefix pool of max_seq tokens (`staticlm batch`'s default; the library's is none).
PrefixOptions pool_of_max_seq() {
    PrefixOptions p;
    p.pool_tokens = -1;
    return p;
}

BatchSummary run_job(const Model& model, BatchEngine& engine, const std::string& in, const std::string& out,
                     ShardSpec shard = {}, int plan_window = 4096) {
    BatchJobOptions o;
    o.input = in;
    o.output = out;
    o.shard = shard;
    o.plan_window = plan_window;
    BatchJob job(o);
    return job.run(model, engine);
}

void check_same(const std::map<std::string, json>& a, const std::map<std::string, json>& b, const char* what) {
    INFO(what);
    REQUIRE(a.size() == b.size());
    int differ = 0;
    for (const auto& [id_, j] : a) {
        const auto& id = id_;  // names, not bindings: INFO/CHECK lambdas capture them (clang 14)
        INFO(id);
        REQUIRE(b.count(id) == 1);
        if (j != b.at(id)) ++differ;
        CHECK(j == b.at(id));  // scores in shortest round-trip form: bit for bit
        if (differ > 3) break;
    }
}

}  // namespace

// Under AddressSanitizer (tools/test.sh's build-asan) 24 requests planned 8 at
// a time: the same paths at an eighth of the instrumented run time (200 took
// most of the sanitizer pass's ten minutes).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kRequests = 24, kWindow = 8;
#else
constexpr int kRequests = 200, kWindow = 64;
#endif

TEST_CASE("prefix sharing: 200 classifications under one instruction give the same labels and scores, "
          "any batch size and shard split, with at most 1/5 of the prompt rows") {
    if (!test::have_shared_data("prefix sharing, classification")) return;
    auto model = stories();
    const Tokenizer& tok = *model_tokenizer(*model);
    TempDir dir;
    const std::string in = dir / "in.jsonl";
    const std::string instr = instruction(12);
    {
        std::ofstream f(in);
        for (int i = 0; i < kRequests; ++i)
            f << json({{"id", id_of('c', i)},
                       {"prompt", instr + story(i)},
                       {"choices", {" happy", " sad", " angry"}}})
                     .dump()
              << "\n";
    }
    const int shared = int(tok.encode(instr, true).size());
    MESSAGE("instruction: " << shared << " tokens; a whole prompt "
                            << tok.encode(instr + story(7), true).size());
    CHECK(shared >= 250);
    CHECK(shared <= 400);

    BatchSessionOptions bo;
    bo.session = session_options(2);
    bo.slots = 8;
    PrefixOptions off;
    off.pool_tokens = 0;
    auto engine_off = make_batched_engine(model, bo, off);
    const BatchSummary s_off = run_job(*model, *engine_off, in, dir / "off.jsonl");
    const auto ref = results_by_id(dir / "off.jsonl");
    REQUIRE(ref.size() == size_t(kRequests));
    long prompt_tokens = 0, shortest = 1 << 30;
    for (const auto& [id, j] : ref) {
        CHECK(j["finish_reason"] == "scored");
        prompt_tokens += j["prompt_tokens"].get<long>();
        shortest = std::min(shortest, j["prompt_tokens"].get<long>());
    }
    // Without sharing every prompt row is computed once per request.
    CHECK(s_off.progress.prompt_positions == prompt_tokens);
    CHECK(s_off.progress.shared_positions == 0);

    // The reference itself against the library alone, for a few requests.
    SessionOptions so = session_options(2);
    so.all_logits = true;
    Session solo(model, so);
    for (int i : {0, kRequests * 77 / 200, kRequests - 1}) {
        const std::string id = id_of('c', i);
        const std::vector<std::string> choices = {" happy", " sad", " angry"};
        const ScoreIds ids = score_ids(tok, instr + story(i), choices);
        const std::vector<ContinuationScore> s = score_continuations(solo, ids.prompt, ids.continuations);
        for (size_t k = 0; k < s.size(); ++k)
            CHECK(ref.at(id)["scores"][k]["logprob"].get<double>() == s[k].logprob);
    }

    for (int slots : {1, 8, 32}) {
        bo.slots = slots;
        auto engine = make_batched_engine(model, bo, pool_of_max_seq());
        const std::string out = dir / ("on" + std::to_string(slots) + ".jsonl");
        const BatchSummary s = run_job(*model, *engine, in, out);
        check_same(ref, results_by_id(out), ("sharing on, slots " + std::to_string(slots)).c_str());
        MESSAGE("slots " << slots << ": prompt rows " << s.progress.prompt_positions << " with sharing ("
                         << s.progress.prefixes << " prefix, " << s.progress.shared_positions << " rows copied), "
                         << s_off.progress.prompt_positions << " without");
        CHECK(s.progress.prefixes == 1);
        CHECK(s.progress.prompt_positions * 5 <= s_off.progress.prompt_positions);
        // Every row is either computed or copied; the prefix (shorter than any prompt) once more.
        CHECK(s.progress.prompt_positions + s.progress.shared_positions > prompt_tokens + shared);
        CHECK(s.progress.prompt_positions + s.progress.shared_positions < prompt_tokens + shortest);
    }

    // Three shards, each finding its own prefix, merged.
    bo.slots = 8;
    auto engine = make_batched_engine(model, bo, pool_of_max_seq());
    // Planned kWindow requests at a time: the prefix is computed once per window.
    const BatchSummary windows = run_job(*model, *engine, in, dir / "windows.jsonl", {}, kWindow);
    CHECK(windows.progress.prefixes == (kRequests + kWindow - 1) / kWindow);
    check_same(ref, results_by_id(dir / "windows.jsonl"), "planned in windows");
    std::vector<std::string> files;
    long rows = 0;
    for (int i = 0; i < 3; ++i) {
        files.push_back(shard_output_path(dir / "sh.jsonl", {i, 3}));
        rows += run_job(*model, *engine, in, files.back(), {i, 3}).progress.prompt_positions;
    }
    merge_results(in, files, dir / "merged.jsonl");
    check_same(ref, results_by_id(dir / "merged.jsonl"), "3 shards, sharing on");
    CHECK(rows * 5 <= s_off.progress.prompt_positions);
}

TEST_CASE("prefix sharing: greedy and seeded sampled generations are the same with sharing on and off") {
    if (!test::have_shared_data("prefix sharing, generation")) return;
    auto model = stories();
    TempDir dir;
    const std::string in = dir / "in.jsonl";
    const std::string instr = instruction(5);
    {
        std::ofstream f(in);
        for (int i = 0; i < 24; ++i) {
            json j = {{"id", id_of('g', i)}, {"prompt", instr + story(i)}, {"n_predict", 6 + i % 7}};
            j["temperature"] = i % 2 ? 0.8 : 0.0;
            if (i % 4 == 1) j["seed"] = 500 + i;  // the others derive theirs from the id
            if (i % 3 == 0) j["logprobs"] = 2;
            if (i % 5 == 4) j["repetition_penalty"] = 1.3;  // sees the whole prompt, the prefix included
            f << j.dump() << "\n";
        }
        f << json({{"id", "short"}, {"prompt", "Read the little story"}, {"n_predict", 4}}).dump() << "\n";
    }
    BatchSessionOptions bo;
    bo.session = session_options(2);
    bo.slots = 4;
    PrefixOptions off;
    off.pool_tokens = 0;
    auto engine_off = make_batched_engine(model, bo, off);
    run_job(*model, *engine_off, in, dir / "off.jsonl");
    const auto ref = results_by_id(dir / "off.jsonl");
    REQUIRE(ref.size() == 25);
    for (int slots : {1, 5}) {
        bo.slots = slots;
        auto engine = make_batched_engine(model, bo, pool_of_max_seq());
        const std::string out = dir / ("on" + std::to_string(slots) + ".jsonl");
        const BatchSummary s = run_job(*model, *engine, in, out);
        CHECK(s.progress.prefixes == 1);
        CHECK(s.progress.shared_positions > 0);
        check_same(ref, results_by_id(out), ("generation, sharing on, slots " + std::to_string(slots)).c_str());
    }
}

namespace {

// The requests of the engine-level ring test: a shared run of `shared` ids
// (ids from a fixed LCG), then a suffix of 1..n ids; scoring or generation.
std::vector<EngineRequest> ring_requests(int vocab, int shared, std::shared_ptr<const std::vector<int>>& prefix) {
    uint32_t x = 12345;
    auto next = [&] { return int((x = x * 1664525u + 1013904223u) >> 8) % vocab; };
    std::vector<int> head(static_cast<size_t>(shared));
    for (int& id : head) id = next();
    prefix = std::make_shared<const std::vector<int>>(head);
    std::vector<EngineRequest> out;
    for (int i = 0; i < 10; ++i) {
        EngineRequest r;
        r.tag = uint64_t(i);
        r.prompt = head;
        for (int k = 0; k <= i * 2; ++k) r.prompt.push_back(next());  // rests of 1, 3, 5, ... ids
        if (i % 2) {
            r.score = {{next(), next()}, {next()}};
        } else {
            r.options.max_tokens = 5;
            r.options.sampling.temperature = i % 4 ? 0.7f : 0.0f;
            r.options.sampling.seed = uint64_t(i);
        }
        out.push_back(std::move(r));
    }
    return out;
}

std::map<uint64_t, EngineOutcome> run_engine(BatchEngine& engine, std::vector<EngineRequest> requests) {
    std::map<uint64_t, EngineOutcome> done;
    std::vector<EngineOutcome> finished;
    size_t next = 0;
    while (next < requests.size() || engine.active() > 0) {
        while (next < requests.size() && engine.active() < engine.capacity()) engine.submit(requests[next++]);
        finished.clear();
        engine.step(finished);
        for (EngineOutcome& o : finished) done[o.tag] = std::move(o);
    }
    return done;
}

}  // namespace

TEST_CASE("prefix sharing on ring caches (sliding window), many threads: the engine's rule keeps results "
          "bit-identical; a pool too small for the prefix shares nothing") {
    LoadOptions lo;
    lo.weights = WeightType::q8;
    lo.threads = 1;
    lo.load_tokenizer = false;
    auto model = load_model(test::fixtures_dir() / "mistral-swa", lo);
    const int vocab = model_config(*model).vocab;
    BatchSessionOptions bo;
    bo.slots = 3;
    bo.session.max_seq = 128;
    bo.session.prefill_buckets = {8, 32};
    bo.session.append_buckets = {4};
    bo.session.ring_sliding = true;  // window 6: rings of 6 + 32 slots
    bo.session.threads = 8;          // more threads than a 1-row step has heads: such steps split keys
    PrefixOptions off;
    off.pool_tokens = 0;
    auto ref_engine = make_batched_engine(model, bo, off);
    std::shared_ptr<const std::vector<int>> prefix;
    std::vector<EngineRequest> reqs = ring_requests(vocab, 30, prefix);
    const auto ref = run_engine(*ref_engine, reqs);

    auto engine = make_batched_engine(model, bo, pool_of_max_seq());
    CHECK(engine->prefix_limit() == 38);  // the ring: window + largest bucket
    // As the job plans: the longest n whose rest is computed exactly.
    int sharing = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
        EngineRequest& r = reqs[i];
        const int N = int(r.prompt.size());
        const bool scoring = !r.score.empty();
        // A prompt whose own plan ends in a step that splits keys (33 = 32 + 1 rows) keeps its whole prefill.
        if (!engine->prompt_rows_exact(0, N, scoring)) continue;
        for (int n = std::min(30, N - 1); n >= 8; --n)
            if (engine->prompt_rows_exact(n, N - n, scoring)) {
                r.prefix = {7, prefix, n, i + 1 == reqs.size()};  // the last request is a sharing one
                ++sharing;
                break;
            }
    }
    // A one-row rest of a 4-head layer on 8 threads is not exact: that request keeps a shorter prefix.
    CHECK_FALSE(engine->prompt_rows_exact(30, 1, false));
    CHECK(reqs[0].prefix.use == 29);
    CHECK(reqs[1].prefix.use == 0);  // 33 rows: 32 + 1
    CHECK(reqs[2].prefix.use == 0);  // 35 rows: 32 + 3
    CHECK(sharing == 8);
    const EngineCounters c0 = engine->counters();
    const auto got = run_engine(*engine, reqs);
    const EngineCounters c1 = engine->counters();
    CHECK(c1.prefixes - c0.prefixes == 1);
    CHECK(c1.shared_positions - c0.shared_positions > 200);
    REQUIRE(got.size() == ref.size());
    for (const auto& [tag_, o] : ref) {
        const auto& tag = tag_;  // names, not bindings: INFO/CHECK lambdas capture them (clang 14)
        INFO("request " << tag);
        const EngineOutcome& g = got.at(tag);
        CHECK_FALSE(o.failed);
        CHECK(g.result.tokens == o.result.tokens);
        REQUIRE(g.scores.size() == o.scores.size());
        for (size_t k = 0; k < o.scores.size(); ++k) {
            CHECK(g.scores[k].logprob == o.scores[k].logprob);
            CHECK(g.scores[k].greedy == o.scores[k].greedy);
        }
    }

    // A pool of 16 tokens has no room for the 30-token prefix: every request runs alone, the same.
    PrefixOptions tiny;
    tiny.pool_tokens = 16;
    auto small = make_batched_engine(model, bo, tiny);
    CHECK(small->prefix_limit() == 16);
    const auto got_small = run_engine(*small, reqs);
    CHECK(small->counters().shared_positions == 0);
    for (const auto& [tag, o] : ref) CHECK(got_small.at(tag).result.tokens == o.result.tokens);
}

TEST_CASE("prefix pool: copies are exact, bad entries and a pool that cannot fit are refused") {
    LoadOptions lo;
    lo.weights = WeightType::f32;
    lo.threads = 1;
    lo.load_tokenizer = false;
    auto model = load_model(test::fixtures_dir() / "llama-gqa-llama3", lo);
    SessionOptions so;
    so.max_seq = 64;
    so.prefill_buckets = {8, 32};
    so.append_buckets = {4};
    so.threads = 1;
    const int vocab = model_config(*model).vocab;
    std::vector<int> ids(40);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int((i * 37 + 11) % size_t(vocab));
    PrefixPool pool(model, so, 48);
    CHECK(pool.bytes() == PrefixPool::bytes_needed(*model, so.kv, 48));
    Session a(model, so), b(model, so);
    const std::span<const int> head(ids.data(), 20), rest(ids.data() + 20, 20);
    a.prefill(head);
    const int e = pool.add(1, 20);
    REQUIRE(e >= 0);
    CHECK(pool.add(2, 40) == -1);  // 20 + 40 > 48
    test::expect_error([&] { b.load_prefix(pool, e, 20); }, ErrorKind::input, {"not filled"});
    a.save_prefix(pool, e);
    b.load_prefix(pool, e, 20);
    CHECK(b.pos() == 20);
    // The same rows as a whole-prompt prefill, bit for bit (f32 K/V, one thread).
    const std::span<const float> x = b.append(rest);
    const std::vector<float> with_prefix(x.begin(), x.end());
    const std::span<const float> y = a.prefill(ids);
    CHECK(std::equal(with_prefix.begin(), with_prefix.end(), y.begin()));
    test::expect_error([&] { b.load_prefix(pool, e, 21); }, ErrorKind::input, {"21", "20"});
    test::expect_error([&] { b.load_prefix(pool, 5, 1); }, ErrorKind::input, {"no entry 5"});
    SessionOptions other = so;
    other.max_seq = 32;
    other.prefill_buckets = {8};
    Session c(model, other);
    test::expect_error([&] { c.load_prefix(pool, e, 4); }, ErrorKind::input, {"max_seq 64"});
    pool.remove(e);
    CHECK(pool.add(2, 40) >= 0);

    // The memory budget: a pool that cannot fit is refused before anything is allocated.
    BatchSessionOptions bo;
    bo.session = so;
    bo.slots = 2;
    PrefixOptions po;
    po.pool_tokens = 1 << 20;
    po.memory_budget = 64ull << 20;
    const BatchMemory m = batch_memory(*model, bo, po);
    CHECK(m.pool == PrefixPool::bytes_needed(*model, so.kv, 1 << 20));
    test::expect_error([&] { make_batched_engine(model, bo, po); }, ErrorKind::capacity,
                       {"prefix pool of 1048576 tokens", "budget of 67108864 bytes", "--prefix-pool"});
    po.pool_tokens = 64;
    CHECK_NOTHROW(make_batched_engine(model, bo, po));
}
