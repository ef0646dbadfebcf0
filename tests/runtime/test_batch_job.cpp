// The batch job layer (runtime/batch_io.cpp, runtime/batch_job.cpp): request
// parsing and its errors, the stable shard hash, the results file (resume,
// torn last line, ownership, lock), merge, and a job on stories260K whose
// texts equal generate() of each prompt alone, also after an interrupted run.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "staticlm/batch.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/model.hpp"
#include "staticlm/tokenizer.hpp"
#include "tests/support.hpp"

using namespace staticlm;
namespace fs = std::filesystem;

namespace {

using staticlm::test::read_file;
using staticlm::test::TempDir;

void write_file(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

BatchRequest parse(const std::string& line) { return parse_request(line, 7, RequestDefaults{}); }

void expect_bad(const std::string& line, ErrorKind kind, const std::string& needle) {
    const BatchRequest r = parse(line);
    INFO(line);
    CHECK(r.failed);
    CHECK_MESSAGE(r.error_kind == kind, r.error);
    CHECK_MESSAGE(r.error.find(needle) != std::string::npos, r.error);
    CHECK_MESSAGE(r.error.find("line 7") != std::string::npos, r.error);
}

std::string result_line(const std::string& id_json, const std::string& text) {
    return std::string(kResultMarker) + "\"id\":" + id_json + ",\"line\":1,\"finish_reason\":\"stop\",\"text\":\"" +
           text + "\"}\n";
}

}  // namespace

TEST_CASE("batch requests: fields, defaults and seeds") {
    RequestDefaults d;
    d.generate.max_tokens = 99;
    d.generate.sampling.temperature = 0.5f;
    const BatchRequest a = parse_request(
        R"({"id":"x1","prompt":"Hi","n_predict":5,"temperature":0,"top_k":3,"top_p":0.5,"min_p":0.1,)"
        R"("repetition_penalty":1.1,"seed":7,"stop":["a","b"],"meta":{"k":[1,2]}})",
        3, d);
    REQUIRE_FALSE(a.failed);
    CHECK(a.key == "=x1");
    CHECK(a.id_json == "\"x1\"");
    CHECK(a.line == 3);
    CHECK(a.prompt == "Hi");
    CHECK(a.options.max_tokens == 5);
    CHECK(a.options.sampling.temperature == 0.0f);
    CHECK(a.options.sampling.top_k == 3);
    CHECK(a.options.sampling.top_p == 0.5f);
    CHECK(a.options.sampling.seed == 7);
    CHECK(a.seed == 7);
    CHECK(a.options.stop_strings == std::vector<std::string>{"a", "b"});
    CHECK(a.meta_json == R"({"k":[1,2]})");

    // Defaults fill what a line leaves out; the seed comes from the id.
    const BatchRequest b = parse_request(R"({"id":42,"messages":[{"role":"user","content":"yo"}]})", 1, d);
    REQUIRE_FALSE(b.failed);
    CHECK(b.key == "=42");
    CHECK(b.id == "42");
    CHECK(b.id_json == "42");
    CHECK(b.chat);
    CHECK(b.messages.size() == 1);
    CHECK(b.options.max_tokens == 99);
    CHECK(b.options.sampling.temperature == 0.5f);
    CHECK(b.seed == request_seed(42, "42"));
    CHECK(request_seed(42, "42") != request_seed(42, "43"));
    CHECK(request_seed(42, "42") != request_seed(43, "42"));
    CHECK(parse_request(R"({"id":"s","prompt":"","seed":0})", 1, d).seed == 0);

    // Reasoning models: enable_thinking per chat request (-1: the job's), hide_thinking.
    CHECK(b.thinking == -1);
    CHECK_FALSE(b.hide_thinking);
    const BatchRequest t = parse_request(
        R"({"id":"t","messages":[{"role":"user","content":"yo"}],"enable_thinking":false,"hide_thinking":true})", 1,
        d);
    REQUIRE_FALSE(t.failed);
    CHECK(t.thinking == 0);
    CHECK(t.hide_thinking);
    CHECK(parse_request(R"({"id":"u","messages":[{"role":"user","content":"y"}],"enable_thinking":true})", 1, d)
              .thinking == 1);
}

TEST_CASE("batch requests: every bad line is an error naming the line and the field") {
    expect_bad("not json", ErrorKind::format, "malformed JSON");
    expect_bad(R"({"id":"a","prompt":"x")", ErrorKind::format, "malformed JSON");
    expect_bad("[1,2]", ErrorKind::format, "not a JSON object");
    expect_bad(R"({"prompt":"x"})", ErrorKind::input, "no \"id\"");
    expect_bad(R"({"id":1.5,"prompt":"x"})", ErrorKind::input, "\"id\" must be a string or an integer");
    expect_bad(R"({"id":"","prompt":"x"})", ErrorKind::input, "empty string");
    expect_bad(R"({"id":"a"})", ErrorKind::input, "no \"prompt\" or \"messages\"");
    expect_bad(R"({"id":"a","prompt":"x","messages":[{"role":"user","content":"y"}]})", ErrorKind::input,
               "not both");
    expect_bad(R"({"id":"a","prompt":3})", ErrorKind::input, "\"prompt\" must be a string");
    expect_bad(R"({"id":"a","prompt":"x","n_predict":"ten"})", ErrorKind::input,
               "\"n_predict\" must be an integer");
    expect_bad(R"({"id":"a","prompt":"x","n_predict":-1})", ErrorKind::input, "\"n_predict\"");
    expect_bad(R"({"id":"a","prompt":"x","temperature":-0.5})", ErrorKind::input, "\"temperature\"");
    expect_bad(R"({"id":"a","prompt":"x","top_p":0})", ErrorKind::input, "\"top_p\" must be a number in (0, 1]");
    expect_bad(R"({"id":"a","prompt":"x","top_k":2.5})", ErrorKind::input, "\"top_k\"");
    expect_bad(R"({"id":"a","prompt":"x","seed":-3})", ErrorKind::input, "\"seed\"");
    expect_bad(R"({"id":"a","prompt":"x","stop":[1]})", ErrorKind::input, "\"stop[0]\" must be a string");
    expect_bad(R"({"id":"a","prompt":"x","stop":""})", ErrorKind::input, "empty string");
    expect_bad(R"({"id":"a","prompt":"x","colour":"red"})", ErrorKind::input, "unknown field \"colour\"");
    expect_bad(R"({"id":"a","messages":[{"role":"robot","content":"x"}]})", ErrorKind::input,
               "messages[0].role");
    expect_bad(R"({"id":"a","messages":[{"role":"user"}]})", ErrorKind::input, "needs \"role\" and \"content\"");
    expect_bad(R"({"id":"a","messages":[]})", ErrorKind::input, "\"messages\" must be a non-empty array");
    expect_bad(R"({"id":"a","messages":[{"role":"user","content":"y"}],"enable_thinking":"no"})", ErrorKind::input,
               "\"enable_thinking\" must be true or false");
    expect_bad(R"({"id":"a","prompt":"x","enable_thinking":false})", ErrorKind::input,
               "\"enable_thinking\" goes with \"messages\"");
    expect_bad(R"({"id":"a","prompt":"x","hide_thinking":1})", ErrorKind::input,
               "\"hide_thinking\" must be true or false");
    // Deep nesting is refused before the parser sees it; the id is unknown then.
    const std::string deep = R"({"id":"a","prompt":"x","meta":)" + std::string(100000, '[') +
                             std::string(100000, ']') + "}";
    expect_bad(deep, ErrorKind::format, "nested deeper than 16");
    RequestLimits small;
    small.max_line_bytes = 10;
    const BatchRequest big = parse_request(R"({"id":"a","prompt":"xxxxxxxx"})", 2, {}, small);
    CHECK(big.failed);
    CHECK(big.error.find("longer than 10 bytes") != std::string::npos);

    // A line whose id could be read keeps it (its error result carries it).
    const BatchRequest r = parse(R"({"id":"keep","prompt":"x","top_k":"many","meta":1})");
    CHECK(r.failed);
    CHECK(r.key == "=keep");
    CHECK(r.meta_json == "1");
    CHECK(parse("not json").key == "#7");
}

TEST_CASE("batch shards: FNV-1a 64, a stable split, shard file names") {
    CHECK(fnv1a64("") == 0xcbf29ce484222325ull);
    CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cull);
    CHECK(fnv1a64("foobar") == 0x85944171f73967e8ull);
    CHECK(shard_of_key("=foobar", 3) == int(0x85944171f73967e8ull % 3));
    CHECK(shard_of_key("=anything", 1) == 0);
    int counts[3] = {};
    for (int i = 0; i < 300; ++i) ++counts[shard_of_key("=story-" + std::to_string(i), 3)];
    for (int c : counts) CHECK(c > 70);
    CHECK(parse_shard("2/5").index == 2);
    CHECK(parse_shard("2/5").count == 5);
    test::expect_error([] { parse_shard("5/5"); }, ErrorKind::config, {"I/N", "5/5"});
    test::expect_error([] { parse_shard("1"); }, ErrorKind::config, {"I/N"});
    test::expect_error([] { parse_shard("-1/3"); }, ErrorKind::config, {"I/N"});
    CHECK(shard_output_path("out/res.jsonl", {1, 3}) == "out/res.1-of-3.jsonl");
    CHECK(shard_output_path("out.d/res", {0, 2}) == "out.d/res.0-of-2");
    CHECK(shard_output_path("res.jsonl", {0, 1}) == "res.jsonl");
    CHECK(shard_output_path("-", {0, 4}) == "-");
}

TEST_CASE("batch results file: resume, torn last line, ownership, lock, unwritable") {
    TempDir dir;
    const std::string out = dir / "out.jsonl";
    {
        ResultsWriter w(out, {}, 1 << 20);
        CHECK(w.done_count() == 0);
        w.append(result_line("\"a\"", "one"));
        w.append(result_line("7", "two"));
    }
    // A killed writer leaves a line without its newline: it is cut and not done.
    { std::ofstream(out, std::ios::app) << result_line("\"b\"", "torn").substr(0, 30); }
    const size_t before = fs::file_size(out);
    {
        ResultsWriter w(out, {}, 1 << 20);
        CHECK(w.done("=a"));
        CHECK(w.done("=7"));
        CHECK_FALSE(w.done("=b"));
        CHECK(w.torn_bytes_dropped() == 30);
        CHECK(fs::file_size(out) == before - 30);
        w.append(result_line("\"b\"", "three"));
        // A second writer of the same file is refused while this one holds it.
        test::expect_error([&] { ResultsWriter again(out, {}, 1 << 20); }, ErrorKind::io,
                           {out, "another process is writing it"});
    }
    const ResultsScan scan = scan_results(out, 1 << 20);
    CHECK(scan.torn_bytes == 0);
    REQUIRE(scan.lines.size() == 3);
    CHECK(scan.lines[2].key == "=b");

    // Files that are not ours are refused and left as they were.
    for (const std::string& foreign : {std::string("hello\n"), std::string("{\"id\":\"a\"}\n"),
                                       std::string(kResultMarker) + "garbage\n"}) {
        const std::string f = dir / "foreign.txt";
        write_file(f, foreign);
        test::expect_error([&] { ResultsWriter w(f, {}, 1 << 20); }, ErrorKind::format,
                           {f, "line 1", "not a staticlm batch results file", "refusing to append"});
        CHECK(read_file(f) == foreign);
    }
    // An empty file is adopted; a missing directory or a directory is an io error.
    write_file(dir / "empty.jsonl", "");
    CHECK_NOTHROW(ResultsWriter(dir / "empty.jsonl", {}, 1 << 20));
    test::expect_error([&] { ResultsWriter w(dir / "no/such/dir.jsonl", {}, 1 << 20); }, ErrorKind::io,
                       {"no/such/dir.jsonl", "cannot open for writing"});
    test::expect_error([&] { ResultsWriter w(dir.path.string(), {}, 1 << 20); }, ErrorKind::io,
                       {dir.path.string()});
}

TEST_CASE("batch input: duplicate ids are an error up front; blank lines are skipped") {
    TempDir dir;
    const std::string in = dir / "in.jsonl";
    write_file(in, "{\"id\":\"a\",\"prompt\":\"x\"}\n\n{\"id\":1,\"prompt\":\"y\"}\r\n{\"id\":\"1\",\"prompt\":\"z\"}\n");
    test::expect_error([&] { read_requests(in, {}, {}); }, ErrorKind::input,
                       {in, "duplicate id \"1\"", "lines 3 and 4"});
    write_file(in, "{\"id\":\"a\",\"prompt\":\"x\"}\n\n   \n{\"id\":1,\"prompt\":\"y\"}\r\nbad");
    const std::vector<BatchRequest> r = read_requests(in, {}, {});
    REQUIRE(r.size() == 3);
    CHECK(r[1].line == 4);
    CHECK_FALSE(r[1].failed);
    CHECK(r[2].failed);
    CHECK(r[2].key == "#5");
    test::expect_error([&] { read_requests(dir / "missing.jsonl", {}, {}); }, ErrorKind::io,
                       {"missing.jsonl", "cannot open"});
    // An output over the job's own input is refused (its lines are not results).
    BatchJobOptions o;
    o.input = in;
    o.output = in;
    test::expect_error([&] { BatchJob job(o); }, ErrorKind::format, {"not a staticlm batch results file"});
}

TEST_CASE("batch merge: every id exactly once, in input order") {
    TempDir dir;
    const std::string in = dir / "in.jsonl";
    write_file(in, "{\"id\":\"a\",\"prompt\":\"x\"}\n{\"id\":\"b\",\"prompt\":\"x\"}\nbroken\n{\"id\":3,\"prompt\":\"x\"}\n");
    const std::string s0 = dir / "s0.jsonl", s1 = dir / "s1.jsonl", out = dir / "merged.jsonl";
    const std::string err3 = std::string(kResultMarker) +
                             "\"id\":null,\"line\":3,\"finish_reason\":\"error\",\"error\":{}}\n";
    write_file(s0, result_line("3", "c") + result_line("\"a\"", "a"));
    write_file(s1, err3 + result_line("\"b\"", "b"));
    const MergeSummary m = merge_results(in, {s0, s1}, out);
    CHECK(m.requests == 4);
    CHECK(m.errors == 1);
    CHECK(read_file(out) == result_line("\"a\"", "a") + result_line("\"b\"", "b") + err3 + result_line("3", "c"));
    CHECK(scan_results(out, 1 << 20).lines.size() == 4);  // a merged file is a results file

    write_file(s1, err3);
    test::expect_error([&] { merge_results(in, {s0, s1}, out); }, ErrorKind::input,
                       {"1 of 4 requests have no result", "id 'b'"});
    write_file(s1, err3 + result_line("\"b\"", "b") + result_line("\"a\"", "again"));
    test::expect_error([&] { merge_results(in, {s0, s1}, out); }, ErrorKind::input,
                       {"a has two results", s0, s1});
    write_file(s1, err3 + result_line("\"b\"", "b") + result_line("\"zz\"", "extra"));
    test::expect_error([&] { merge_results(in, {s0, s1}, out); }, ErrorKind::input,
                       {"zz is not in", in});
    write_file(s1, err3 + result_line("\"b\"", "b").substr(0, 20));
    test::expect_error([&] { merge_results(in, {s0, s1}, out); }, ErrorKind::input,
                       {s1, "incomplete line", "rerun"});
    test::expect_error([&] { merge_results(in, {s0, s1}, s0); }, ErrorKind::config, {"one of the shard files"});
}

namespace {

std::shared_ptr<const Model> stories() {
    LoadOptions lo;
    lo.weights = WeightType::f32;
    lo.threads = 1;
    return load_model(test::shared_data() / "stories260K-hf", lo);
}

SessionOptions small_session() {
    SessionOptions so;
    so.max_seq = 256;
    so.prefill_buckets = {16, 64};
    so.threads = 1;
    return so;
}

// The request lines of the job tests: different lengths, stop strings and an empty prompt.
std::string job_input() {
    const char* starts[] = {"Once upon a time", "The little dog", "Lily and Ben", "", "One day, a cat",
                            "Tom had a red ball", "The sun was", "\"Hello,\" said"};
    std::string s;
    for (int i = 0; i < 24; ++i) {
        char id[16];
        std::snprintf(id, sizeof(id), "r%d", i);  // (GCC 12 warns falsely on "r" + to_string)
        nlohmann::json j = {{"id", id}, {"prompt", starts[i % 8]},
                            {"n_predict", 8 + 3 * i}, {"temperature", 0}};
        if (i % 5 == 2) j["stop"] = "the";
        if (i % 7 == 3) j["temperature"] = 0.9, j["seed"] = 1000 + i;
        s += j.dump() + "\n";
    }
    s += nlohmann::json({{"id", "toolong"}, {"prompt", std::string(2000, 'a')}}).dump() + "\n";
    return s;
}

// id -> text of a results file.
std::map<std::string, nlohmann::json> results_by_id(const std::string& file) {
    std::map<std::string, nlohmann::json> out;
    std::istringstream in(read_file(file));
    std::string line;
    while (std::getline(in, line)) {
        nlohmann::json j = nlohmann::json::parse(line);
        const std::string id = j["id"].get<std::string>();
        CHECK_MESSAGE(out.count(id) == 0, "duplicate result for " << id);
        out[id] = j;
    }
    return out;
}

}  // namespace

TEST_CASE("batch job on stories260K: texts equal generate() alone; an interrupted run resumes") {
    if (!test::have_shared_data("batch job")) return;
    auto model = stories();
    const Tokenizer& tok = *model_tokenizer(*model);
    TempDir dir;
    const std::string in = dir / "in.jsonl", out = dir / "out.jsonl";
    write_file(in, job_input());

    BatchJobOptions o;
    o.input = in;
    o.output = out;
    o.defaults.generate.max_tokens = 10;
    int progress_calls = 0;
    o.progress = [&](const BatchProgress&) { ++progress_calls; };
    auto engine = make_sequential_engine(model, small_session());
    {
        BatchJob job(o);
        CHECK(job.pending() == 25);
        const BatchSummary s = job.run(*model, *engine);
        CHECK(s.progress.done == 25);
        CHECK(s.progress.errors == 1);
        CHECK(progress_calls == 26);
    }
    const auto full = results_by_id(out);
    REQUIRE(full.size() == 25);
    CHECK(full.at("toolong")["finish_reason"] == "error");
    CHECK(full.at("toolong")["error"]["kind"] == "capacity");

    // Each text is what generate() gives for that prompt alone in a fresh session.
    Session session(model, small_session());
    for (const BatchRequest& r : read_requests(in, o.defaults, {})) {
        if (r.id == "toolong") continue;
        session.reset();
        std::vector<int> ids = tok.encode(r.prompt, true);
        const GenerateResult g = generate(session, &tok, ids, r.options);
        const nlohmann::json& j = full.at(r.id);
        CHECK_MESSAGE(j["text"] == g.text, r.id);
        CHECK(j["tokens"].get<std::vector<int>>() == g.tokens);
        CHECK(j["prompt_tokens"] == int(ids.size()));
        CHECK(j["seed"] == r.seed);
        CHECK(j["finish_reason"] == (g.reason == StopReason::max_tokens ? "length" : "stop"));
    }

    // Interrupted: the first 9 lines and a torn tenth. The rerun redoes the rest.
    std::istringstream lines(read_file(out));
    std::string partial, line;
    for (int i = 0; i < 9 && std::getline(lines, line); ++i) partial += line + "\n";
    std::getline(lines, line);
    partial += line.substr(0, line.size() / 2);
    const std::string out2 = dir / "out2.jsonl";
    write_file(out2, partial);
    o.output = out2;
    {
        BatchJob job(o);
        CHECK(job.pending() == 16);
        CHECK(job.torn_bytes_dropped() == line.size() / 2);
        job.run(*model, *engine);
    }
    const auto resumed = results_by_id(out2);
    REQUIRE(resumed.size() == 25);
    for (const auto& [id_, j] : full) {
        const std::string& id = id_;  // names, not bindings: INFO/CHECK lambdas capture them (clang 14)
        CHECK(resumed.at(id)["finish_reason"] == j["finish_reason"]);
        if (j.contains("text")) CHECK_MESSAGE(resumed.at(id)["text"] == j["text"], id);
    }

    // Shards: each request in exactly one of 3 files; the merge equals the single run.
    std::vector<std::string> files;
    for (int i = 0; i < 3; ++i) {
        o.shard = {i, 3};
        o.output = shard_output_path(dir / "sh.jsonl", o.shard);
        files.push_back(o.output);
        BatchJob job(o);
        CHECK(job.shard_requests() > 3);
        job.run(*model, *engine);
    }
    merge_results(in, files, dir / "merged.jsonl");
    const auto merged = results_by_id(dir / "merged.jsonl");
    REQUIRE(merged.size() == 25);
    for (const auto& [id_, j] : full) {
        const std::string& id = id_;  // names, not bindings: INFO/CHECK lambdas capture them (clang 14)
        if (j.contains("text")) CHECK_MESSAGE(merged.at(id)["text"] == j["text"], id);
    }
}

TEST_CASE("batch requests: logprobs, score and choices, and their bad lines") {
    const BatchRequest a = parse(R"({"id":"a","prompt":"x","logprobs":5})");
    REQUIRE_FALSE(a.failed);
    CHECK(a.options.logprobs == 5);
    CHECK(a.score.empty());
    CHECK(parse(R"({"id":"a","prompt":"x"})").options.logprobs == -1);
    const BatchRequest s = parse(R"({"id":"s","prompt":"x","score":[" a"," b"],"meta":1})");
    REQUIRE_FALSE(s.failed);
    CHECK(s.score == std::vector<std::string>{" a", " b"});
    CHECK_FALSE(s.choices);
    const BatchRequest c = parse(R"({"id":"c","prompt":"x","choices":["yes","no"]})");
    REQUIRE_FALSE(c.failed);
    CHECK(c.choices);
    CHECK(c.score.size() == 2);

    expect_bad(R"({"id":"a","prompt":"x","logprobs":1000})", ErrorKind::input,
               "field \"logprobs\" must be an integer in [0, 20]");
    expect_bad(R"({"id":"a","prompt":"x","logprobs":-1})", ErrorKind::input, "\"logprobs\"");
    expect_bad(R"({"id":"a","prompt":"x","score":[" a",""]})", ErrorKind::input, "\"score[1]\" is an empty string");
    expect_bad(R"({"id":"a","prompt":"x","score":" a"})", ErrorKind::input,
               "\"score\" must be a non-empty array of non-empty strings");
    expect_bad(R"({"id":"a","prompt":"x","choices":[]})", ErrorKind::input,
               "\"choices\" must be a non-empty array");
    expect_bad(R"({"id":"a","prompt":"x","choices":[3]})", ErrorKind::input, "\"choices[0]\" must be a string");
    expect_bad(R"({"id":"a","messages":[{"role":"user","content":"y"}],"score":["a"]})", ErrorKind::input,
               "\"score\" goes with \"prompt\"");
    expect_bad(R"({"id":"a","prompt":"x","score":["a"],"choices":["b"]})", ErrorKind::input,
               "\"score\" or \"choices\", not both");
    expect_bad(R"({"id":"a","prompt":"x","choices":["a"],"n_predict":3})", ErrorKind::input,
               "\"n_predict\" is for generation; \"choices\"");
    expect_bad(R"({"id":"a","prompt":"x","logprobs":2,"score":["a"]})", ErrorKind::input,
               "\"logprobs\" is for generation");
}

TEST_CASE("batch logprobs and scores on stories260K: equal to generate() and score_continuations() alone, "
          "any engine, any shard") {
    if (!test::have_shared_data("batch scores")) return;
    auto model = stories();
    const Tokenizer& tok = *model_tokenizer(*model);
    TempDir dir;
    const std::string in = dir / "in.jsonl";
    std::string lines;
    const char* starts[] = {"Once upon a time", "The little dog", "Lily and Ben ", ""};
    for (int i = 0; i < 12; ++i) {
        char id[16];
        std::snprintf(id, sizeof(id), "q%d", i);
        nlohmann::json j = {{"id", id}, {"prompt", starts[i % 4]}};
        if (i % 3 == 0) {
            j["n_predict"] = 5 + i;
            j["logprobs"] = i % 2 ? 3 : 0;
            if (i % 4 == 1) j["temperature"] = 0.8;
        } else if (i % 3 == 1) {
            j["score"] = {" there was a girl", ",", "went home."};
        } else {
            j["choices"] = {" happy", " sad", " a dog"};
        }
        lines += j.dump() + "\n";
    }
    lines += R"({"id":"bad1","prompt":"x","logprobs":1000})" "\n";
    lines += R"({"id":"bad2","prompt":"x","score":["a",""]})" "\n";
    lines += R"({"id":"bad3","prompt":"x","choices":[]})" "\n";
    lines += R"({"id":"bad4","messages":[{"role":"user","content":"y"}],"choices":["a"]})" "\n";
    lines += nlohmann::json({{"id", "long"}, {"prompt", "x"}, {"score", {std::string(1500, 'b')}}}).dump() + "\n";
    write_file(in, lines);

    BatchJobOptions o;
    o.input = in;
    auto run = [&](BatchEngine& engine, ShardSpec shard, const std::string& out) {
        o.shard = shard;
        o.output = out;
        BatchJob job(o);
        job.run(*model, engine);
    };
    auto seq = make_sequential_engine(model, small_session());
    BatchSessionOptions bo;
    bo.slots = 3;
    bo.session = small_session();
    auto batched = make_batched_engine(model, bo);
    run(*seq, {0, 1}, dir / "seq.jsonl");
    run(*batched, {0, 1}, dir / "bat.jsonl");
    std::vector<std::string> files;
    for (int i = 0; i < 2; ++i) {
        files.push_back(shard_output_path(dir / "sh.jsonl", {i, 2}));
        run(*batched, {i, 2}, files.back());
    }
    merge_results(in, files, dir / "merged.jsonl");
    const auto seq_r = results_by_id(dir / "seq.jsonl");
    const auto bat_r = results_by_id(dir / "bat.jsonl");
    const auto mer_r = results_by_id(dir / "merged.jsonl");
    REQUIRE(seq_r.size() == 17);
    for (const auto& [id_, j] : seq_r) {
        const std::string& id = id_;  // names, not bindings: INFO/CHECK lambdas capture them (clang 14)
        INFO(id);
        nlohmann::json a = j, b = bat_r.at(id), m = mer_r.at(id);
        for (nlohmann::json* x : {&a, &b, &m}) x->erase("timing");
        CHECK(a == b);  // logprobs and scores bit for bit (shortest round-trip numbers)
        CHECK(a == m);
    }
    for (const char* bad : {"bad1", "bad2", "bad3", "bad4"}) CHECK(seq_r.at(bad)["finish_reason"] == "error");
    CHECK(seq_r.at("bad1")["error"]["message"].get<std::string>().find("[0, 20]") != std::string::npos);
    CHECK(seq_r.at("long")["error"]["kind"] == "capacity");

    // Against the library alone.
    Session gen_session(model, small_session());
    SessionOptions so = small_session();
    so.all_logits = true;
    Session score_session(model, so);
    for (const BatchRequest& r : read_requests(in, o.defaults, {})) {
        if (r.failed || r.id == "long") continue;
        INFO(r.id);
        const nlohmann::json& j = seq_r.at(r.id);
        if (r.score.empty()) {
            gen_session.reset();
            const GenerateResult g = generate(gen_session, &tok, tok.encode(r.prompt, true), r.options);
            REQUIRE(j["logprobs"].size() == g.tokens.size());
            for (size_t i = 0; i < g.tokens.size(); ++i) {
                const nlohmann::json& t = j["logprobs"][i];
                CHECK(t["token"] == g.tokens[i]);
                CHECK(t["piece"] == tok.piece(g.tokens[i]));
                CHECK(t["logprob"].get<float>() == g.logprobs[i]);
                CHECK(t.contains("top") == (g.top_n > 0));
                for (int k = 0; k < g.top_n; ++k) {
                    CHECK(t["top"][size_t(k)]["token"] == g.top_logprobs[i * size_t(g.top_n) + size_t(k)].token);
                    CHECK(t["top"][size_t(k)]["logprob"].get<float>() ==
                          g.top_logprobs[i * size_t(g.top_n) + size_t(k)].logprob);
                }
            }
            continue;
        }
        CHECK(j["finish_reason"] == "scored");
        const ScoreIds ids = score_ids(tok, r.prompt, r.score);
        CHECK(j["prompt_tokens"] == int(ids.prompt.size()));
        const std::vector<ContinuationScore> s = score_continuations(score_session, ids.prompt, ids.continuations);
        REQUIRE(j["scores"].size() == s.size());
        size_t best = 0;
        for (size_t i = 0; i < s.size(); ++i) {
            CHECK(j["scores"][i]["text"] == r.score[i]);
            CHECK(j["scores"][i]["logprob"].get<double>() == s[i].logprob);
            CHECK(j["scores"][i]["tokens"] == s[i].tokens);
            CHECK(j["scores"][i]["greedy"] == s[i].greedy);
            if (s[i].logprob > s[best].logprob) best = i;
        }
        CHECK(j.contains("choice") == r.choices);
        if (r.choices) CHECK(j["choice"] == r.score[best]);
    }
}
