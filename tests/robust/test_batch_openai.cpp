// OpenAI batch lines in and out (runtime/batch_formats.cpp) without a model:
// the mapping of a request line onto staticlm's fields, every bad OpenAI line
// a per-line error that leaves the other lines alone, the OpenAI result shape
// read back by resume, the per-result digest (FNV-1a 64 values computed by
// hand with Python) and verify_results on hand-made files; the bytes of OpenAI
// logprobs tokens on the Llama 3 and Gemma 3 tokenizers (expected bytes from
// transformers and GPT-2's byte table).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "staticlm/batch.hpp"
#include "staticlm/tokenizer.hpp"
#include "tests/support.hpp"

using namespace staticlm;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using staticlm::test::read_file;
using staticlm::test::TempDir;

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// An OpenAI line with `body` as the body.
std::string line(const std::string& custom_id, const std::string& body) {
    return R"({"custom_id":)" + custom_id + R"(,"method":"POST","url":"/v1/chat/completions","body":)" + body + "}";
}
const std::string kMessages = R"("messages":[{"role":"user","content":"Hi"}])";

void expect_bad(const std::string& text, const std::string& needle, ErrorKind kind = ErrorKind::input) {
    const BatchRequest r = parse_request(text, 5, RequestDefaults{});
    INFO(text);
    CHECK(r.failed);
    CHECK_MESSAGE(r.error_kind == kind, r.error);
    CHECK_MESSAGE(r.error.find(needle) != std::string::npos, r.error);
    CHECK_MESSAGE(r.error.find("line 5") != std::string::npos, r.error);
}

BatchRequest request(const std::string& id, int line_no) {
    BatchRequest q;
    q.line = line_no;
    q.id = id;
    q.key = "=" + id;
    q.id_json = json(id).dump();
    q.seed = 9;
    return q;
}

}  // namespace

TEST_CASE("openai batch lines: the body maps onto the request fields") {
    RequestDefaults d;
    d.generate.max_tokens = 77;
    d.generate.sampling.temperature = 0.7f;
    const BatchRequest a = parse_request(
        line(R"("req-1")",
             R"({"model":"gpt-4o-mini","messages":[{"role":"developer","content":"Be brief."},)"
             R"({"role":"user","content":[{"type":"text","text":"Hello "},{"type":"text","text":"there"}],"name":"u"}],)"
             R"("max_tokens":12,"temperature":0,"top_p":0.5,"seed":3,"stop":["\n"],"logprobs":true,"top_logprobs":4,)"
             R"("n":1,"stream":false,"frequency_penalty":0,"user":"x","metadata":{"a":"b"},"tools":null,)"
             R"("response_format":{"type":"text"}})"),
        2, d);
    REQUIRE_MESSAGE(!a.failed, a.error);
    CHECK(a.key == "=req-1");
    CHECK(a.id == "req-1");
    CHECK(a.id_json == "\"req-1\"");
    CHECK(a.line == 2);
    CHECK(a.chat);
    REQUIRE(a.messages.size() == 2);
    CHECK(a.messages[0].role == "system");  // developer is OpenAI's newer system
    CHECK(a.messages[0].content == "Be brief.");
    CHECK(a.messages[1].role == "user");
    CHECK(a.messages[1].content == "Hello there");
    CHECK(a.options.max_tokens == 12);
    CHECK(a.options.sampling.temperature == 0.0f);
    CHECK(a.options.sampling.top_p == 0.5f);
    CHECK(a.seed == 3);
    CHECK(a.options.stop_strings == std::vector<std::string>{"\n"});
    CHECK(a.options.logprobs == 4);

    // Defaults fill the rest; logprobs false (or absent) is no logprobs; the
    // seed derives from custom_id exactly as from a native id.
    const BatchRequest b = parse_request(line(R"("7")", "{" + kMessages + R"(,"logprobs":false})"), 3, d);
    REQUIRE_MESSAGE(!b.failed, b.error);
    CHECK(b.options.max_tokens == 77);
    CHECK(b.options.sampling.temperature == 0.7f);
    CHECK(b.options.logprobs == -1);
    CHECK(b.seed == request_seed(42, "7"));
    CHECK(b.key == parse_request(R"({"id":7,"prompt":"x"})", 1, d).key);  // the same request key
    CHECK(parse_request(line(R"("m")", "{" + kMessages + R"(,"max_completion_tokens":3})"), 1, d).options.max_tokens == 3);
    CHECK(parse_request(line(R"("l")", "{" + kMessages + R"(,"logprobs":true})"), 1, d).options.logprobs == 0);
    // method and url may be left out; staticlm's own sampling fields ride along in the body.
    const BatchRequest c = parse_request(
        R"({"custom_id":"c","body":{"messages":[{"role":"user","content":"x"}],"top_k":5,"min_p":0.2}})", 1, d);
    REQUIRE_MESSAGE(!c.failed, c.error);
    CHECK(c.options.sampling.top_k == 5);
    CHECK(c.options.sampling.min_p == doctest::Approx(0.2f));

    // response_format json_schema: the schema, members in the line's order, as a native "json_schema".
    const BatchRequest js = parse_request(
        line(R"("js")", "{" + kMessages +
                            R"(,"response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,)"
                            R"("schema":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},)"
                            R"("required":["name","age"]}}}})"),
        1, d);
    REQUIRE_MESSAGE(!js.failed, js.error);
    CHECK(js.json_schema ==
          R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]})");
    CHECK(parse_request(line(R"("t")", "{" + kMessages + R"(,"response_format":{"type":"text"}})"), 1, d).json_schema.empty());
}

TEST_CASE("openai batch lines: every bad line is a clear error naming the line and the field") {
    expect_bad(R"({"body":{"messages":[{"role":"user","content":"x"}]}})", "no \"custom_id\"");
    expect_bad(line("12", "{" + kMessages + "}"), "\"custom_id\" must be a string");
    expect_bad(line(R"("")", "{" + kMessages + "}"), "\"custom_id\" is an empty string");
    expect_bad(line(R"(")" + std::string(1025, 'x') + R"(")", "{" + kMessages + "}"), "longer than 1024 bytes");
    expect_bad(R"({"custom_id":"a"})", "no \"body\"");
    expect_bad(line(R"("a")", R"("messages")"), "\"body\" must be an object");
    expect_bad(line(R"("a")", "[1]"), "\"body\" must be an object");
    expect_bad(R"({"custom_id":"a","method":"GET","body":{}})", "\"method\" must be \"POST\"");
    expect_bad(R"({"custom_id":"a","url":"/v1/embeddings","body":{}})", "\"url\" must be \"/v1/chat/completions\"");
    expect_bad(R"({"custom_id":"a","body":{},"extra":1})", "unknown field \"extra\"");
    expect_bad(line(R"("a")", "{}"), "no \"body.messages\"");
    expect_bad(line(R"("a")", R"({"messages":"Hi"})"), "\"body.messages\" must be a non-empty array");
    expect_bad(line(R"("a")", R"({"messages":[]})"), "\"body.messages\" must be a non-empty array");
    expect_bad(line(R"("a")", R"({"messages":["Hi"]})"), "\"body.messages[0]\" must be an object");
    expect_bad(line(R"("a")", R"({"messages":[{"role":"tool","content":"x"}]})"), "body.messages[0].role must be");
    expect_bad(line(R"("a")", R"({"messages":[{"role":"user"}]})"), "body.messages[0] needs \"content\"");
    expect_bad(line(R"("a")", R"({"messages":[{"role":"user","content":5}]})"), "\"body.messages[0].content\" must be");
    expect_bad(line(R"("a")", R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})"),
               "only text parts");
    expect_bad(line(R"("a")", R"({"messages":[{"role":"assistant","content":"x","tool_calls":[]}]})"),
               "unknown field \"body.messages[0].tool_calls\"");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"n":2})"), "\"body.n\" must be 1");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"n":0})"), "\"body.n\"");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"max_tokens":-1})"), "\"body.max_tokens\" must be an integer in [0, 1073741824]");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"max_tokens":2.5})"), "\"body.max_tokens\"");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"max_tokens":5,"max_completion_tokens":5})"), "not both");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"temperature":2.5})"), "\"body.temperature\" must be a number in [0, 2]");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"temperature":-1})"), "\"body.temperature\"");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"temperature":"hot"})"), "\"body.temperature\"");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"top_p":0})"), "\"body.top_p\" must be a number in (0, 1]");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"seed":-2})"), "\"seed\"");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"stop":[3]})"), "\"stop[0]\" must be a string");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"logprobs":1})"), "\"body.logprobs\" must be true or false");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"logprobs":true,"top_logprobs":21})"), "\"body.top_logprobs\"");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"top_logprobs":2})"), "needs \"body.logprobs\": true");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"stream":true})"), "\"body.stream\" must be false");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"presence_penalty":0.5})"), "\"body.presence_penalty\" is not supported");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"logit_bias":{"5":1}})"), "\"body.logit_bias\" is not supported");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"tools":[]})"), "\"body.tools\" is not supported");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"colour":"red"})"), "unknown field \"body.colour\"");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"response_format":{"type":"json_object"}})"),
               "response_format json_object is not supported");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"response_format":"json"})"), "\"body.response_format\"");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"response_format":{"type":"json_schema"}})"),
               "\"body.response_format.json_schema\" must be an object");
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}})"),
               "\"body.response_format.json_schema.schema\" must be a JSON Schema object");
    expect_bad(line(R"("a")", "{" + kMessages +
                                  R"(,"response_format":{"type":"json_schema","json_schema":{"schema":{},"format":1}}})"),
               "unknown field \"body.response_format.json_schema.format\"");
    expect_bad(R"({"custom_id":"a","body":{)", "malformed JSON", ErrorKind::format);
    // A number beyond a double (found by fuzz/fuzz_batch.cpp): an error, not an escaped exception.
    expect_bad(line(R"("a")", "{" + kMessages + R"(,"max_tokens":2798e6183})"), "number overflow", ErrorKind::format);
    expect_bad(R"({"id":"a","prompt":"x","n_predict":-1e400})", "number overflow", ErrorKind::format);
    expect_bad(R"({"custom_id":"a","body":)" + std::string(40, '[') + std::string(40, ']') + "}", "nested deeper",
               ErrorKind::format);
    // A failed line keeps its custom_id: its error result is keyed by it (resume skips it).
    const BatchRequest r = parse_request(line(R"("k9")", "{" + kMessages + R"(,"n":3})"), 1, RequestDefaults{});
    CHECK(r.failed);
    CHECK(r.key == "=k9");
    CHECK(r.id_json == "\"k9\"");
}

TEST_CASE("openai batch files: bad lines leave the other lines alone; a duplicate custom_id is refused up front") {
    TempDir dir;
    const std::string good = line(R"("ok1")", "{" + kMessages + "}");
    write_file(dir / "in.jsonl", good + "\n" + line(R"("b1")", "{" + kMessages + R"(,"n":2})") + "\n" +
                                     R"({"id":"native","prompt":"x"})" + "\n" + line("5", "{}") + "\n" +
                                     line(R"("ok2")", "{" + kMessages + R"(,"max_tokens":4})") + "\n");
    const std::vector<BatchRequest> rs = read_requests(dir / "in.jsonl", RequestDefaults{}, RequestLimits{});
    REQUIRE(rs.size() == 5);
    CHECK_FALSE(rs[0].failed);
    CHECK(rs[1].failed);
    CHECK(rs[1].key == "=b1");
    CHECK_FALSE(rs[2].failed);  // one file may mix the shapes: each line is read in its own
    CHECK(rs[3].failed);
    CHECK(rs[3].key == "#4");  // no usable custom_id: keyed by its line
    CHECK_FALSE(rs[4].failed);
    CHECK(rs[4].options.max_tokens == 4);

    write_file(dir / "dup.jsonl", good + "\n" + good + "\n");
    try {
        read_requests(dir / "dup.jsonl", RequestDefaults{}, RequestLimits{});
        FAIL("a duplicate custom_id was accepted");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("duplicate id \"ok1\" on lines 1 and 2") != std::string::npos);
    }
    // custom_id "7" and a native id 7 are the same request.
    write_file(dir / "dup2.jsonl", R"({"id":7,"prompt":"x"})" "\n" + line(R"("7")", "{" + kMessages + "}") + "\n");
    CHECK_THROWS_WITH_AS(read_requests(dir / "dup2.jsonl", RequestDefaults{}, RequestLimits{}),
                         doctest::Contains("on lines 1 and 2"), Error);
}

TEST_CASE("result digests: FNV-1a 64 of the digest text") {
    const BatchRequest q = request("q1", 1);
    BatchResult r;
    r.request = &q;
    r.finish = FinishReason::stop;
    r.tokens = {1, 2, 3};
    CHECK(result_digest_text(r) == "stop:1,2,3");
    CHECK(digest_hex("stop:1,2,3") == "c7d1b97e6346038f");  // Python: FNV-1a 64 of the bytes
    r.finish = FinishReason::length;
    r.tokens = {};
    CHECK(result_digest_text(r) == "length:");
    CHECK(digest_hex(result_digest_text(r)) == "b115cf3acf5c6cfd");
    r.finish = FinishReason::capacity;
    r.tokens = {5};
    CHECK(digest_hex(result_digest_text(r)) == "5a9a5b28d073fe74");
    r.finish = FinishReason::error;
    r.error_kind = ErrorKind::input;
    r.error = "line 1: whatever";  // the message is not part of it
    CHECK(result_digest_text(r) == "error:input");
    CHECK(digest_hex("error:input") == "7c6bd340bf8dd807");
    r.finish = FinishReason::scored;
    r.scores = {{-3.5, 1, false}, {-1.25, 2, true}};
    CHECK(result_digest_text(r) == "scored:1:1/0,2/1");  // the best is the second
    CHECK(digest_hex("scored:1:1/0,2/1") == "1241e6e1be14812a");
}

TEST_CASE("openai results: the output shape, read back by resume and verify") {
    const BatchRequest q = request("q1", 3);
    BatchResult r;
    r.request = &q;
    r.finish = FinishReason::capacity;
    r.text = "a \"b\"";
    r.tokens = {10, 20};
    r.prompt_tokens = 4;
    r.has_logprobs = true;
    r.logprobs = {-0.5f, -1.25f};
    r.top_n = 1;
    r.top_logprobs = {{10, -0.5f}, {21, -1.0f}};
    ResultOptions o;
    o.format = ResultFormat::openai;
    o.model = "m1";
    const std::string text = format_result_line(r, nullptr, o);
    REQUIRE(text.back() == '\n');
    CHECK(text.rfind(std::string(kResultMarker), 0) == 0);
    const json j = json::parse(text);
    CHECK(j["id"] == "batch_req_687ee8182c1c0b1e");  // FNV-1a 64 of "=q1"
    CHECK(j["custom_id"] == "q1");
    CHECK(j["line"] == 3);
    CHECK(j["digest"] == digest_hex("capacity:10,20"));
    CHECK(j["error"].is_null());
    const json& resp = j["response"];
    CHECK(resp["status_code"] == 200);
    CHECK(resp["request_id"] == "req_687ee8182c1c0b1e");
    const json& body = resp["body"];
    CHECK(body["object"] == "chat.completion");
    CHECK(body["model"] == "m1");
    CHECK(body["created"].is_number_integer());
    REQUIRE(body["choices"].size() == 1);
    const json& c = body["choices"][0];
    CHECK(c["index"] == 0);
    CHECK(c["message"]["role"] == "assistant");
    CHECK(c["message"]["content"] == "a \"b\"");
    CHECK(c["finish_reason"] == "length");  // OpenAI has no "capacity"
    REQUIRE(c["logprobs"]["content"].size() == 2);
    CHECK(c["logprobs"]["content"][1]["logprob"] == -1.25);
    CHECK(c["logprobs"]["content"][1]["top_logprobs"][0]["logprob"] == -1.0);
    CHECK(body["usage"] == json::parse(R"({"prompt_tokens":4,"completion_tokens":2,"total_tokens":6})"));
    CHECK(j["staticlm"]["finish_reason"] == "capacity");
    CHECK(j["staticlm"]["tokens"] == json::parse("[10,20]"));
    CHECK(j["staticlm"]["seed"] == 9);

    BatchResult e;
    e.request = &q;
    e.finish = FinishReason::error;
    e.error_kind = ErrorKind::capacity;
    e.error = "too long";
    const json je = json::parse(format_result_line(e, nullptr, o));
    CHECK(je["response"].is_null());
    CHECK(je["error"] == json::parse(R"({"code":"capacity","message":"too long"})"));
    CHECK(je["digest"] == digest_hex("error:capacity"));

    // The native shape carries the same digest.
    const json jn = json::parse(format_result_line(r, nullptr));
    CHECK(jn["digest"] == j["digest"]);

    // Resume reads OpenAI lines back by custom_id (or line), with their digests
    // checked against what they hold; a file of the other shape is refused.
    TempDir dir;
    BatchRequest nameless = request("x", 4);
    nameless.key = "#4";
    nameless.id_json = "null";
    e.request = &nameless;
    const std::string path = dir / "out.jsonl";
    write_file(path, text + format_result_line(e, nullptr, o));
    const ResultsScan scan = scan_results(path, 1 << 20);
    REQUIRE(scan.lines.size() == 2);
    CHECK(scan.lines[0].key == "=q1");
    CHECK(scan.lines[0].format == ResultFormat::openai);
    CHECK_FALSE(scan.lines[0].error);
    CHECK(scan.lines[0].digest == scan.lines[0].content_digest);
    CHECK(scan.lines[1].key == "#4");
    CHECK(scan.lines[1].error);
    CHECK(scan.lines[1].digest == digest_hex("error:capacity"));
    CHECK(scan.lines[1].content_digest == scan.lines[1].digest);
    {
        ResultsWriter w(path, SyncPolicy{}, 1 << 20, ResultFormat::openai);
        CHECK(w.done("=q1"));
        CHECK(w.done("#4"));
    }
    CHECK_THROWS_WITH_AS(ResultsWriter(path, SyncPolicy{}, 1 << 20, ResultFormat::native),
                         doctest::Contains("line 1 is in --format openai and this run writes --format native"), Error);
}

TEST_CASE("verify_results: same, differ, missing, and a line edited by hand") {
    TempDir dir;
    write_file(dir / "in.jsonl", R"({"id":"a","prompt":"x"})" "\n" R"({"id":"b","prompt":"y"})" "\n"
                                 R"({"id":"c","prompt":"z"})" "\n");
    const BatchRequest qa = request("a", 1), qb = request("b", 2), qc = request("c", 3);
    auto result = [](const BatchRequest& q, std::vector<int> tokens, ResultFormat f) {
        BatchResult r;
        r.request = &q;
        r.finish = FinishReason::stop;
        r.tokens = std::move(tokens);
        ResultOptions o;
        o.format = f;
        return format_result_line(r, nullptr, o);
    };
    // Native here, OpenAI there: digests do not depend on the shape.
    write_file(dir / "one.jsonl", result(qa, {1, 2}, ResultFormat::native) + result(qb, {3}, ResultFormat::native) +
                                      result(qc, {4}, ResultFormat::native));
    write_file(dir / "two.jsonl", result(qc, {4}, ResultFormat::openai) + result(qa, {1, 2}, ResultFormat::openai) +
                                      result(qb, {3}, ResultFormat::openai));
    VerifyReport ok = verify_results(dir / "in.jsonl", {dir / "one.jsonl"}, {dir / "two.jsonl"});
    CHECK(ok.ok());
    CHECK(ok.requests == 3);
    CHECK(ok.same == 3);

    // b generated other tokens (digest and tokens agree: a real difference), c is missing.
    write_file(dir / "three.jsonl", result(qa, {1, 2}, ResultFormat::native) + result(qb, {3, 9}, ResultFormat::native));
    const VerifyReport bad = verify_results(dir / "in.jsonl", {dir / "one.jsonl"}, {dir / "three.jsonl"});
    CHECK_FALSE(bad.ok());
    CHECK(bad.same == 1);
    CHECK(bad.differ == std::vector<std::string>{"=b"});
    CHECK(bad.missing_theirs == std::vector<std::string>{"=c"});
    CHECK(bad.missing_ours.empty());

    // A token changed by hand without its digest: the line is reported, not compared.
    std::string edited = read_file(dir / "one.jsonl");
    const size_t at = edited.find("\"tokens\":[3]");
    REQUIRE(at != std::string::npos);
    edited.replace(at, 12, "\"tokens\":[8]");
    write_file(dir / "edited.jsonl", edited);
    const VerifyReport ed = verify_results(dir / "in.jsonl", {dir / "edited.jsonl"}, {dir / "two.jsonl"});
    CHECK_FALSE(ed.ok());
    CHECK(ed.same == 2);
    REQUIRE(ed.altered.size() == 1);
    CHECK(ed.altered[0].find("edited.jsonl line 2: id 'b' carries digest " + digest_hex("stop:3") + " but holds " +
                             digest_hex("stop:8") + " (edited or damaged)") != std::string::npos);

    // Shard files of different shapes are not merged into one file.
    CHECK_THROWS_WITH_AS(merge_results(dir / "in.jsonl", {dir / "one.jsonl", dir / "two.jsonl"}, dir / "m.jsonl"),
                         doctest::Contains(("two.jsonl line 1 is in --format openai, " + (dir / "one.jsonl") +
                                            " line 1 in --format native").c_str()),
                         Error);
    CHECK_FALSE(fs::exists(dir / "m.jsonl"));

    // The same id twice on one side is an error, as in merge.
    CHECK_THROWS_WITH_AS(verify_results(dir / "in.jsonl", {dir / "one.jsonl", dir / "two.jsonl"}, {dir / "two.jsonl"}),
                         doctest::Contains("id 'c' has two results"), Error);
}

TEST_CASE("openai logprobs: token bytes on byte-level BPE (Llama 3) and byte-fallback (Gemma 3) vocabularies") {
    if (!staticlm::test::have_shared_data("tokenizers")) return;
    // Expected bytes: transformers' tokens mapped through GPT-2's byte table
    // (Llama 3), or the piece with U+2581 as a space / the fallback byte (Gemma 3).
    struct Case {
        const char* tokenizer;
        std::vector<std::pair<int, std::vector<int>>> tokens;  // id, bytes
    };
    const Case cases[] = {
        {"llama3-tokenizer",
         {{279, {32, 116, 104, 101}},                // "Ġthe"
          {53050, {32, 99, 97, 102, 195, 169}},      // "ĠcafÃ©": " café"
          {9468, {240, 159}},                        // "ðŁ": the first half of an emoji
          {378, {226, 128}},                         // "âĢ"
          {198, {10}},                               // "Ċ"
          {128009, {60, 124, 101, 111, 116, 95, 105, 100, 124, 62}}}},  // <|eot_id|>: its spelling
        {"gemma3-tokenizer",
         {{506, {32, 116, 104, 101}},                // "▁the"
          {33443, {32, 99, 97, 102, 195, 169}},      // "▁café"
          {464, {226}},                              // "<0xE2>"
          {107, {10}},                               // "\n"
          {106, {60, 101, 110, 100, 95, 111, 102, 95, 116, 117, 114, 110, 62}}}},  // <end_of_turn>
    };
    for (const Case& c : cases) {
        INFO(c.tokenizer);
        const auto tok = load_tokenizer(staticlm::test::shared_data() / c.tokenizer, /*prefer_json=*/true);
        const BatchRequest q = request("t", 1);
        BatchResult r;
        r.request = &q;
        r.finish = FinishReason::length;
        r.has_logprobs = true;
        r.top_n = 1;
        for (const auto& [id, bytes] : c.tokens) {
            r.tokens.push_back(id);
            r.logprobs.push_back(-1.0f);
            r.top_logprobs.push_back({id, -1.0f});
        }
        ResultOptions o;
        o.format = ResultFormat::openai;
        const json j = json::parse(format_result_line(r, tok.get(), o));
        const json& content = j["response"]["body"]["choices"][0]["logprobs"]["content"];
        REQUIRE(content.size() == c.tokens.size());
        for (size_t i = 0; i < c.tokens.size(); ++i) {
            INFO("token " << c.tokens[i].first);
            CHECK(content[i]["bytes"] == json(c.tokens[i].second));
            CHECK(content[i]["top_logprobs"][0]["bytes"] == json(c.tokens[i].second));
        }
    }
}
