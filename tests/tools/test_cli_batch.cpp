// `staticlm batch` end to end (the built binary, STATICLM_BIN): 200
// stories260K prompts whose texts equal `staticlm generate` of each prompt
// alone; three shards, one SIGKILLed mid-run (and a torn line added) then
// resumed, merged with every id exactly once; bad input rows and files;
// shards from Slurm / Kubernetes environment variables.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "staticlm/batch.hpp"
#include "tests/support.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string bin() {
    const char* b = std::getenv("STATICLM_BIN");
    return b ? b : "";
}

std::string model_dir() { return (staticlm::test::shared_data() / "stories260K-hf").string(); }

using staticlm::test::read_file;
using staticlm::test::TempDir;

void write_file(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

int count_lines(const std::string& path) {
    const std::string s = read_file(path);
    return int(std::count(s.begin(), s.end(), '\n'));
}

// Starts `staticlm args...` with stdin/stdout/stderr from/to files and extra
// environment variables ("NAME=value").
pid_t spawn(const std::vector<std::string>& args, const std::string& in, const std::string& out,
            const std::string& err, const std::vector<std::string>& env = {}) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        auto redirect = [](const std::string& path, int fd, int flags) {
            const int f = ::open(path.c_str(), flags, 0644);
            if (f < 0) ::_exit(126);
            ::dup2(f, fd);
            ::close(f);
        };
        redirect(in.empty() ? "/dev/null" : in, 0, O_RDONLY);
        redirect(out.empty() ? "/dev/null" : out, 1, O_WRONLY | O_CREAT | O_TRUNC);
        redirect(err.empty() ? "/dev/null" : err, 2, O_WRONLY | O_CREAT | O_TRUNC);
        for (const char* v : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
                              "JOB_COMPLETION_INDEX"})
            ::unsetenv(v);
        for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
        std::vector<char*> argv;
        const std::string b = bin();
        argv.push_back(const_cast<char*>(b.c_str()));
        for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(b.c_str(), argv.data());
        ::_exit(127);
    }
    return pid;
}

int wait_exit(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run(const std::vector<std::string>& args, const std::string& in = "", const std::string& out = "",
        const std::string& err = "", const std::vector<std::string>& env = {}) {
    return wait_exit(spawn(args, in, out, err, env));
}

std::vector<std::string> batch_args(const std::string& in, const std::string& out,
                                    std::vector<std::string> more = {}) {
    std::vector<std::string> a = {"batch", "--model", model_dir(), "--input", in, "--output", out,
                                  "--threads", "1", "--max-seq", "512", "--quiet"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
}

// 200 prompts of children's-story openings (quotes, a newline, non-ASCII and
// an empty prompt among them), greedy, 16..47 tokens each.
std::vector<json> story_requests() {
    const char* who[] = {"Once upon a time", "The little dog", "Lily", "Ben and his mom", "A big bird",
                         "The old tree", "Tom", "Sue said, \"Look!\"", "The cat\nand the mouse", "One day"};
    const char* what[] = {"", " was", " saw a", " wanted to", " went to the park", " had a red ball",
                          " was very happy", " said,", " and", " liked the café"};
    std::vector<json> out;
    for (int v = 0; v < 2; ++v)
        for (int i = 0; i < 10; ++i)
            for (int j = 0; j < 10; ++j) {
                const int k = int(out.size());
                std::string prompt = std::string(who[i]) + what[j] + (v ? "." : "");
                if (k == 0) prompt.clear();
                char id[16];
                std::snprintf(id, sizeof(id), "story-%03d", k);
                out.push_back({{"id", id}, {"prompt", prompt}, {"n_predict", 16 + (k * 7) % 32},
                               {"temperature", 0}});
            }
    return out;
}

std::string jsonl(const std::vector<json>& rows) {
    std::string s;
    for (const json& r : rows) s += r.dump() + "\n";
    return s;
}

// prefix + s (appended: GCC 12 warns falsely (-Wrestrict) on "x" + string once inlined).
std::string cat(const char* prefix, const std::string& s) {
    std::string k(prefix);
    k += s;
    return k;
}

// id -> result, checking that no id appears twice.
std::map<std::string, json> results(const std::string& file) {
    std::map<std::string, json> out;
    std::istringstream in(read_file(file));
    std::string line;
    while (std::getline(in, line)) {
        const json j = json::parse(line);
        const std::string id = j["id"].is_string() ? j["id"].get<std::string>()
                               : j["id"].is_null() ? cat("#", j["line"].dump())
                                                   : j["id"].dump();
        CHECK_MESSAGE(out.count(id) == 0, "duplicate result for " << id << " in " << file);
        out[id] = j;
    }
    return out;
}

bool ready() {
    if (bin().empty()) {
        MESSAGE("SKIPPED: STATICLM_BIN is not set");
        return false;
    }
    return staticlm::test::have_shared_data("staticlm batch");
}

}  // namespace

TEST_CASE("batch: 200 prompts equal staticlm generate alone; 3 shards, one killed and resumed") {
    if (!ready()) return;
    TempDir dir;
    const std::vector<json> reqs = story_requests();
    REQUIRE(reqs.size() == 200);
    const std::string in = dir / "prompts.jsonl";
    write_file(in, jsonl(reqs));

    const std::string all = dir / "all.jsonl";
    REQUIRE(run(batch_args(in, all), "", "", dir / "err.txt") == 0);
    const auto full = results(all);
    REQUIRE(full.size() == 200);

    // Every text equals `staticlm generate` of that prompt alone.
    int equal = 0;
    for (const json& r : reqs) {
        const std::string id = r["id"];
        write_file(dir / "prompt.txt", r["prompt"].get<std::string>());
        REQUIRE(run({"generate", "--model", model_dir(), "--prompt-file", dir / "prompt.txt", "--temp", "0",
                     "--n-predict", std::to_string(r["n_predict"].get<int>()), "--threads", "1",
                     "--max-seq", "512"},
                    "", dir / "gen.txt", dir / "gen_err.txt") == 0);
        const json& got = full.at(id);
        CHECK_MESSAGE(got["finish_reason"] != "error", id << ": " << got.dump());
        const bool same = got["text"] == read_file(dir / "gen.txt");
        CHECK_MESSAGE(same, id << ": batch " << got["text"].dump() << " vs generate "
                               << json(read_file(dir / "gen.txt")).dump());
        equal += same;
    }
    CHECK(equal == 200);

    // Three shards; shard 1 is killed with SIGKILL once some results are in.
    const std::string base = dir / "sh.jsonl";
    std::vector<std::string> files;
    for (int i = 0; i < 3; ++i) files.push_back((dir.path / ("sh." + std::to_string(i) + "-of-3.jsonl")).string());
    REQUIRE(run(batch_args(in, base, {"--shard", "0/3"})) == 0);
    REQUIRE(run(batch_args(in, base, {"--shard", "2/3"})) == 0);
    const int shard1_total = int(std::count_if(reqs.begin(), reqs.end(), [](const json& r) {
        return staticlm::shard_of_key(cat("=", r["id"].get<std::string>()), 3) == 1;
    }));
    int killed_at = -1;
    for (int attempt = 0; attempt < 5 && killed_at < 0; ++attempt) {
        fs::remove(files[1]);
        const pid_t pid = spawn(batch_args(in, base, {"--shard", "1/3", "--sync", "always"}), "", "", "");
        const auto t0 = std::chrono::steady_clock::now();
        int n = 0;
        while ((n = fs::exists(files[1]) ? count_lines(files[1]) : 0) < 3 &&
               std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        ::kill(pid, SIGKILL);
        CHECK(wait_exit(pid) == 128 + SIGKILL);
        n = count_lines(files[1]);
        if (n < shard1_total) killed_at = n;  // else it finished first: try again
    }
    REQUIRE_MESSAGE(killed_at >= 3, "could not kill shard 1 mid-run");
    MESSAGE("shard 1 killed after " << killed_at << " of " << shard1_total << " results");
    // As if the kill had come in the middle of a write: a torn last line.
    { std::ofstream(files[1], std::ios::app) << "{\"staticlm_batch\":1,\"id\":\"story-"; }
    CHECK(run({"batch", "--merge", "--input", in, "--output", base, "--shards", "3"}, "", "",
              dir / "merge_err.txt") == 1);
    CHECK(read_file(dir / "merge_err.txt").find("incomplete line") != std::string::npos);

    REQUIRE(run(batch_args(in, base, {"--shard", "1/3"}), "", "", dir / "resume_err.txt") == 0);
    REQUIRE(run({"batch", "--merge", "--input", in, "--output", base, "--shards", "3"}, "", "",
                dir / "merge_err.txt") == 0);
    const auto merged = results(base);  // the shards' --output names the merged file
    CHECK(merged.size() == 200);
    for (const auto& [id_, j] : full) {
        const std::string& id = id_;  // names, not bindings: INFO/CHECK lambdas capture them (clang 14)
        CHECK_MESSAGE(merged.at(id)["text"] == j["text"], id);
    }
    // Shard files hold disjoint ids that together are all of them.
    std::set<std::string> seen;
    for (int i = 0; i < 3; ++i)
        for (const auto& [id, j] : results(files[size_t(i)])) {
            CHECK(seen.insert(id).second);
            CHECK(staticlm::shard_of_key(cat("=", id), 3) == i);
        }
    CHECK(seen.size() == 200);
}

TEST_CASE("batch: bad rows are error results, bad files are clear errors, nothing is lost") {
    if (!ready()) return;
    TempDir dir;
    const std::string in = dir / "in.jsonl", out = dir / "out.jsonl", err = dir / "err.txt";
    write_file(in,
               "{\"id\":\"ok1\",\"prompt\":\"Once upon a time\",\"n_predict\":8,\"temperature\":0}\n"
               "{\"id\":\"broken\",\"prompt\":\"x\"\n"
               "{\"prompt\":\"no id\"}\n"
               "{\"id\":\"typed\",\"prompt\":\"x\",\"n_predict\":\"ten\"}\n"
               "{\"id\":\"huge\",\"prompt\":\"" + std::string(400, 'z') + " once upon\"}\n"
               "{\"id\":7,\"prompt\":\"The dog\",\"n_predict\":4,\"temperature\":0}\n");
    REQUIRE(run(batch_args(in, out, {"--max-seq", "64", "--prefill-buckets", "16,64", "--append-buckets", "16"}), "", "", err) == 0);
    const auto r = results(out);
    REQUIRE(r.size() == 6);
    CHECK(r.at("ok1")["finish_reason"] == "length");
    CHECK(r.at("7")["finish_reason"] == "length");
    CHECK(r.at("typed")["error"]["message"].get<std::string>().find("\"n_predict\" must be an integer") !=
          std::string::npos);
    CHECK(r.at("huge")["error"]["kind"] == "capacity");
    CHECK(r.at("huge")["error"]["message"].get<std::string>().find("K=64") != std::string::npos);
    CHECK(r.at("#2")["id"].is_null());  // malformed JSON and missing id: keyed by line
    CHECK(r.at("#3")["id"].is_null());
    const std::string text = read_file(out);
    CHECK(text.find("\"line\":2,\"finish_reason\":\"error\",\"error\":{\"kind\":\"format\"") != std::string::npos);
    CHECK(text.find("\"line\":3,\"finish_reason\":\"error\",\"error\":{\"kind\":\"input\",\"message\":\"line 3: no \\\"id\\\"\"") !=
          std::string::npos);
    // A rerun finds everything done, errors included.
    REQUIRE(run(batch_args(in, out), "", "", err) == 0);
    CHECK(read_file(out) == text);

    // Duplicate ids: nothing runs, nothing is written.
    write_file(dir / "dup.jsonl", "{\"id\":\"a\",\"prompt\":\"x\"}\n{\"id\":\"b\",\"prompt\":\"x\"}\n{\"id\":\"a\",\"prompt\":\"y\"}\n");
    CHECK(run(batch_args(dir / "dup.jsonl", dir / "dup_out.jsonl"), "", "", err) == 1);
    CHECK(read_file(err).find("duplicate id \"a\" on lines 1 and 3") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "dup_out.jsonl"));

    // An output that is not ours is refused and left as it was.
    write_file(dir / "notes.txt", "my notes\n");
    CHECK(run(batch_args(in, dir / "notes.txt"), "", "", err) == 1);
    CHECK(read_file(err).find("not a staticlm batch results file") != std::string::npos);
    CHECK(read_file(dir / "notes.txt") == "my notes\n");
    CHECK(run(batch_args(in, in), "", "", err) == 1);  // the input itself

    // Unwritable outputs: a missing directory, a directory, a read-only file.
    CHECK(run(batch_args(in, dir / "no/such/dir/out.jsonl"), "", "", err) == 1);
    CHECK(read_file(err).find("cannot open for writing") != std::string::npos);
    CHECK(run(batch_args(in, dir.path.string()), "", "", err) == 1);
    if (::geteuid() != 0) {
        write_file(dir / "ro.jsonl", "");
        fs::permissions(dir.path / "ro.jsonl", fs::perms::owner_read);
        CHECK(run(batch_args(in, dir / "ro.jsonl"), "", "", err) == 1);
        CHECK(read_file(err).find("Permission denied") != std::string::npos);
    }
    // A missing input; usage errors.
    CHECK(run(batch_args(dir / "missing.jsonl", dir / "o.jsonl"), "", "", err) == 1);
    CHECK(read_file(err).find("missing.jsonl: cannot open") != std::string::npos);
    CHECK(run({"batch", "--model", model_dir(), "--input", in}, "", "", err) == 2);
    CHECK(run(batch_args(in, out, {"--bogus", "1"}), "", "", err) == 2);
    CHECK(run(batch_args(in, out, {"--shard", "3/3"}), "", "", err) == 2);
}

TEST_CASE("batch: stdin/stdout, and shards from Slurm and Kubernetes variables") {
    if (!ready()) return;
    TempDir dir;
    std::vector<json> reqs = story_requests();
    reqs.resize(30);
    for (json& r : reqs) r["n_predict"] = 4;
    const std::string in = dir / "in.jsonl", err = dir / "err.txt";
    write_file(in, jsonl(reqs));
    REQUIRE(run(batch_args("-", "-"), in, dir / "stdout.jsonl", err) == 0);
    CHECK(results(dir / "stdout.jsonl").size() == 30);

    // f32 weights, 5 slots: float rows are bit-identical to solo decodes too.
    REQUIRE(run(batch_args(in, dir / "f32.jsonl", {"--weights", "f32", "--slots", "5"}), "", "", err) == 0);
    const auto f32 = results(dir / "f32.jsonl");
    for (const json& r : reqs) {
        write_file(dir / "prompt.txt", r["prompt"].get<std::string>());
        REQUIRE(run({"generate", "--model", model_dir(), "--prompt-file", dir / "prompt.txt", "--temp", "0",
                     "--n-predict", "4", "--threads", "1", "--max-seq", "512", "--weights", "f32"},
                    "", dir / "gen.txt", err) == 0);
        CHECK_MESSAGE(f32.at(r["id"].get<std::string>())["text"] == read_file(dir / "gen.txt"), r["id"]);
    }

    // Sampled (seeds derived from the ids): the same texts with 1 slot or 7, in
    // reversed input order, and as `staticlm generate --seed <the result's seed>`.
    std::vector<json> sampled = reqs;
    for (json& r : sampled) r.erase("temperature"), r["n_predict"] = 12;
    write_file(dir / "sampled.jsonl", jsonl(sampled));
    write_file(dir / "reversed.jsonl", jsonl(std::vector<json>(sampled.rbegin(), sampled.rend())));
    REQUIRE(run(batch_args(dir / "sampled.jsonl", dir / "s1.jsonl", {"--slots", "1"}), "", "", err) == 0);
    REQUIRE(run(batch_args(dir / "reversed.jsonl", dir / "s7.jsonl", {"--slots", "7"}), "", "", err) == 0);
    const auto s1 = results(dir / "s1.jsonl"), s7 = results(dir / "s7.jsonl");
    int differ_from_greedy = 0;
    for (const json& r : sampled) {
        const std::string id = r["id"];
        CHECK_MESSAGE(s1.at(id)["text"] == s7.at(id)["text"], id);
        CHECK(s1.at(id)["seed"] == s7.at(id)["seed"]);
        differ_from_greedy += s1.at(id)["tokens"] != f32.at(id)["tokens"];
    }
    CHECK(differ_from_greedy > 10);
    for (size_t i = 0; i < 8; ++i) {
        const json& r = sampled[i];
        const json& got = s7.at(r["id"].get<std::string>());
        write_file(dir / "prompt.txt", r["prompt"].get<std::string>());
        REQUIRE(run({"generate", "--model", model_dir(), "--prompt-file", dir / "prompt.txt", "--n-predict", "12",
                     "--threads", "1", "--max-seq", "512", "--seed", got["seed"].dump()},
                    "", dir / "gen.txt", err) == 0);
        CHECK_MESSAGE(got["text"] == read_file(dir / "gen.txt"), r["id"]);
    }

    // A chat request gets `staticlm chat`'s first reply.
    write_file(dir / "chat.jsonl", "{\"id\":\"c\",\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a time\"}],"
                                   "\"temperature\":0,\"n_predict\":40}\n");
    write_file(dir / "chat_in.txt", "Once upon a time\n");
    REQUIRE(run(batch_args(dir / "chat.jsonl", dir / "chat_out.jsonl"), "", "", err) == 0);
    REQUIRE(run({"chat", "--model", model_dir(), "--temp", "0", "--n-predict", "40", "--threads", "1",
                 "--max-seq", "512"},
                dir / "chat_in.txt", dir / "chat_stdout.txt", err) == 0);
    CHECK(results(dir / "chat_out.jsonl").at("c")["text"].get<std::string>() + "\n" ==
          read_file(dir / "chat_stdout.txt"));

    const std::string base = dir / "out.jsonl";
    REQUIRE(run(batch_args(in, base), "", "", err,
                {"SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_COUNT=3"}) == 0);
    REQUIRE(run(batch_args(in, base, {"--shards", "3"}), "", "", err, {"JOB_COMPLETION_INDEX=0"}) == 0);
    REQUIRE(run(batch_args(in, base, {"--shard", "2/3"}), "", "", err) == 0);
    for (int i = 0; i < 3; ++i)
        for (const auto& [id, j] : results(dir / ("out." + std::to_string(i) + "-of-3.jsonl")))
            CHECK(staticlm::shard_of_key(cat("=", id), 3) == i);
    REQUIRE(run({"batch", "--merge", "--input", in, "--output", dir / "merged.jsonl", dir / "out.0-of-3.jsonl",
                 dir / "out.1-of-3.jsonl", dir / "out.2-of-3.jsonl"},
                "", "", err) == 0);
    CHECK(results(dir / "merged.jsonl").size() == 30);
    CHECK(run(batch_args(in, base), "", "", err, {"JOB_COMPLETION_INDEX=0"}) == 2);
    CHECK(read_file(err).find("give --shards N") != std::string::npos);
    CHECK(run(batch_args(in, base), "", "", err, {"SLURM_ARRAY_TASK_ID=5", "SLURM_ARRAY_TASK_COUNT=3"}) == 2);
}

namespace {

// custom_id -> result of an OpenAI-shape results file, checking that no id appears twice.
std::map<std::string, json> openai_results(const std::string& file) {
    std::map<std::string, json> out;
    std::istringstream in(read_file(file));
    std::string line;
    while (std::getline(in, line)) {
        CHECK(line.rfind("{\"staticlm_batch\":1,", 0) == 0);
        const json j = json::parse(line);
        const std::string id = j["custom_id"].is_string() ? j["custom_id"].get<std::string>() : cat("#", j["line"].dump());
        CHECK_MESSAGE(out.count(id) == 0, "duplicate result for " << id << " in " << file);
        out[id] = j;
    }
    return out;
}

// Bytes of an OpenAI logprobs "bytes" array as a string.
std::string bytes_of(const json& a) {
    std::string s;
    for (const json& b : a) s += char(b.get<int>());
    return s;
}

}  // namespace

TEST_CASE("batch: OpenAI batch files in, --format openai out, resumed and sharded; --verify-against") {
    if (!ready()) return;
    TempDir dir;
    // 60 OpenAI-shape requests from the story prompts: greedy, sampled (seeds
    // from the custom_ids), some with logprobs; two bad lines among them.
    std::vector<json> reqs;
    const std::vector<json> stories = story_requests();
    for (size_t k = 0; k < 60; ++k) {
        const json& s = stories[k * 3];
        json body = {{"model", "gpt-4o-mini"},
                     {"messages", {{{"role", "user"}, {"content", s["prompt"]}}}},
                     {"max_tokens", 4 + int(k % 12)}};
        if (k % 2 == 0) body["temperature"] = 0;
        if (k % 5 == 0) body["logprobs"] = true, body["top_logprobs"] = int(k % 4);
        if (k == 17) body["n"] = 2;
        if (k == 31 || k == 33) {  // 33: a schema the engine cannot compile, an error result
            const json schema = k == 31 ? json::parse(R"({"type":"object","properties":{"name":{"type":"string",)"
                                                      R"("maxLength":8}},"required":["name"]})")
                                        : json::parse(R"({"type":"object","patternProperties":{}})");
            body["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}};
            body["max_tokens"] = 40;
        }
        reqs.push_back({{"custom_id", s["id"]}, {"method", "POST"}, {"url", "/v1/chat/completions"}, {"body", body}});
    }
    const std::string in = dir / "openai.jsonl", err = dir / "err.txt";
    write_file(in, jsonl(reqs));

    const std::string a = dir / "a.jsonl";
    REQUIRE(run(batch_args(in, a, {"--slots", "1", "--format", "openai"}), "", "", err) == 0);
    const auto ra = openai_results(a);
    REQUIRE(ra.size() == 60);
    // The same file in staticlm's own shape: the same outputs, the same digests.
    const std::string native = dir / "native.jsonl";
    REQUIRE(run(batch_args(in, native, {"--slots", "8"}), "", "", err) == 0);
    const auto rn = results(native);
    REQUIRE(rn.size() == 60);
    int with_logprobs = 0;
    for (const json& q : reqs) {
        const std::string id = q["custom_id"];
        const json& o = ra.at(id);
        const json& n = rn.at(id);
        CHECK(o["digest"] == n["digest"]);
        CHECK(o["id"].get<std::string>().rfind("batch_req_", 0) == 0);
        if (id == reqs[17]["custom_id"] || id == reqs[33]["custom_id"]) {
            CHECK(o["response"].is_null());
            CHECK(o["error"]["code"] == (id == reqs[17]["custom_id"] ? "input" : "unsupported"));
            CHECK(n["finish_reason"] == "error");
            continue;
        }
        REQUIRE_MESSAGE(o["error"].is_null(), o.dump());
        const json& resp = o["response"];
        CHECK(resp["status_code"] == 200);
        const json& body = resp["body"];
        CHECK(body["object"] == "chat.completion");
        CHECK(body["model"] == "stories260K-hf");
        const json& choice = body["choices"][0];
        CHECK(choice["message"]["role"] == "assistant");
        CHECK(choice["message"]["content"] == n["text"]);
        CHECK(choice["finish_reason"] == (n["finish_reason"] == "stop" ? "stop" : "length"));
        CHECK(o["staticlm"]["tokens"] == n["tokens"]);
        CHECK(o["staticlm"]["seed"] == n["seed"]);
        if (id == reqs[31]["custom_id"]) {  // constrained: a complete value that parses, or marked incomplete
            CHECK(o["staticlm"]["complete"] == n["complete"]);
            if (o["staticlm"]["complete"] == true) {
                const json v = json::parse(n["text"].get<std::string>());
                CHECK(v["name"].is_string());
            }
        }
        CHECK(body["usage"]["completion_tokens"] == n["tokens"].size());
        CHECK(body["usage"]["prompt_tokens"] == n["prompt_tokens"]);
        CHECK(body["usage"]["total_tokens"] == n["tokens"].size() + n["prompt_tokens"].get<size_t>());
        if (!q["body"].contains("logprobs")) {
            CHECK(choice["logprobs"].is_null());
            continue;
        }
        ++with_logprobs;
        // Per token: the native log-probability; the tokens' bytes spell the text.
        const json& content = choice["logprobs"]["content"];
        REQUIRE(content.size() == n["logprobs"].size());
        std::string spelled;
        for (size_t t = 0; t < content.size(); ++t) {
            CHECK(content[t]["logprob"] == n["logprobs"][t]["logprob"]);
            CHECK(content[t]["top_logprobs"].size() == q["body"]["top_logprobs"].get<size_t>());
            for (size_t k = 0; k < content[t]["top_logprobs"].size(); ++k)
                CHECK(content[t]["top_logprobs"][k]["logprob"] == n["logprobs"][t]["top"][k]["logprob"]);
            const std::string tb = bytes_of(content[t]["bytes"]);
            if (std::all_of(tb.begin(), tb.end(), [](char c) { return c > 0; }))  // whole characters
                CHECK(content[t]["token"].get<std::string>() == tb);
            spelled += bytes_of(content[t]["bytes"]);
        }
        // The text leaves out the space of a first SentencePiece piece, as decode() does.
        const std::string text = n["text"];
        if (n["finish_reason"] == "length")
            CHECK_MESSAGE((spelled == text || spelled == " " + text), id << ": " << json(spelled).dump());
    }
    CHECK(with_logprobs == 12);

    // Batch size 8 and two shards: verify passes against the one-slot run and the native run.
    const std::string b = dir / "b.jsonl";
    REQUIRE(run(batch_args(in, b, {"--slots", "8", "--shard", "0/2", "--format", "openai"}), "", "", err) == 0);
    REQUIRE(run(batch_args(in, b, {"--slots", "8", "--shard", "1/2", "--format", "openai"}), "", "", err) == 0);
    CHECK(run({"batch", "--input", in, "--output", b, "--shards", "2", "--verify-against", a}, "", dir / "v.txt", err) == 0);
    CHECK(read_file(dir / "v.txt").empty());
    CHECK(read_file(err).find("60 requests, 60 same, 0 differ, 0 missing, 0 bad lines") != std::string::npos);
    CHECK(run({"batch", "--input", in, "--output", native, "--verify-against", a}, "", "", err) == 0);
    // Merged in input order, still OpenAI lines.
    REQUIRE(run({"batch", "--merge", "--input", in, "--output", dir / "merged.jsonl", dir / "b.0-of-2.jsonl",
                 dir / "b.1-of-2.jsonl"}, "", "", err) == 0);
    CHECK(openai_results(dir / "merged.jsonl").size() == 60);

    // Resume: the first 20 results and a torn line; the rest is run again.
    {
        std::istringstream lines(read_file(a));
        std::string l, head;
        for (int i = 0; i < 20 && std::getline(lines, l); ++i) head += l + "\n";
        std::getline(lines, l);
        write_file(dir / "c.jsonl", head + l.substr(0, l.size() / 2));
    }
    REQUIRE(run(batch_args(in, dir / "c.jsonl", {"--format", "openai"}), "", "", err) == 0);
    const auto rc = openai_results(dir / "c.jsonl");
    CHECK(rc.size() == 60);
    for (const auto& [id_, j] : ra) {
        const std::string& id = id_;  // names, not bindings: INFO/CHECK lambdas capture them (clang 14)
        CHECK_MESSAGE(rc.at(id)["digest"] == j["digest"], id);
    }
    // One shape per file: a native run does not append to it.
    CHECK(run(batch_args(in, dir / "c.jsonl"), "", "", err) == 1);
    CHECK(read_file(err).find("is in --format openai and this run writes --format native") != std::string::npos);
    CHECK(run(batch_args(in, dir / "c.jsonl", {"--format", "xml"}), "", "", err) == 2);

    // Hand-altered results: a different output (tokens and digest agree) is
    // reported as differing; a digest that does not match its line as a bad line.
    std::string altered_text;
    const std::string diff_id = reqs[4]["custom_id"], bad_id = reqs[9]["custom_id"];
    std::istringstream a_lines(read_file(a));
    for (std::string l; std::getline(a_lines, l);) {
        nlohmann::ordered_json j = nlohmann::ordered_json::parse(l);  // the marker stays first
        const std::string id = j["custom_id"];
        if (id == diff_id) {
            j["staticlm"]["tokens"].push_back(5);
            std::string t = j["staticlm"]["finish_reason"].get<std::string>();
            for (size_t i = 0; i < j["staticlm"]["tokens"].size(); ++i) {
                t += i ? ',' : ':';
                t += j["staticlm"]["tokens"][i].dump();
            }
            j["digest"] = staticlm::digest_hex(t);
        }
        if (id == bad_id) j["digest"] = "0123456789abcdef";
        altered_text += j.dump() + "\n";
    }
    write_file(dir / "altered.jsonl", altered_text);
    CHECK(run({"batch", "--input", in, "--output", dir / "altered.jsonl", "--verify-against", b}, "", dir / "v.txt",
              err) == 1);  // b.jsonl itself does not exist (its run was sharded)
    CHECK(read_file(err).find("b.jsonl: results file not found") != std::string::npos);
    CHECK(run({"batch", "--input", in, "--output", dir / "altered.jsonl", "--verify-against", dir / "merged.jsonl"}, "",
              dir / "v.txt", err) == 1);
    const std::string report = read_file(dir / "v.txt");
    CHECK_MESSAGE(report.find("differ: id '" + diff_id + "'\n") != std::string::npos, report);
    CHECK_MESSAGE(report.find("id '" + bad_id + "' carries digest 0123456789abcdef") != std::string::npos, report);
    CHECK(read_file(err).find("60 requests, 58 same, 1 differ, 0 missing, 1 bad lines (FAILED)") != std::string::npos);
}
