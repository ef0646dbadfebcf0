// The file side of batch jobs: bounded line reading, request parsing, result
// lines, the results file (resume scan, torn-line cut, ownership, lock, one
// write() per line) and the merge of shard files. docs/BATCH.md is the contract.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "base/json.hpp"
#include "batch_internal.hpp"
#include "staticlm/batch.hpp"
#include "staticlm/tokenizer.hpp"

namespace staticlm {

using nlohmann::json;

namespace {

std::string errno_text() { return std::strerror(errno); }

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

uint64_t splitmix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

std::string dump(const json& j) { return dump_json(j); }


const char* json_type(const json& j) { return j.type_name(); }

// The key of a line without a usable id. (Appending, not "#" + to_string():
// GCC 12 warns falsely (-Wrestrict) about the latter once inlined.)
std::string line_key(int64_t line) {
    std::string k(1, '#');
    k += std::to_string(line);
    return k;
}

// An id as its canonical string: strings as they are, integers in decimal.
// Returns false (with why) for anything else. `name`: the field, for messages.
bool canonical_id(const json& id, std::string& out, std::string& why, const char* name = "id") {
    if (id.is_string()) {
        out = id.get<std::string>();
        if (out.empty()) {
            why = std::string("\"") + name + "\" is an empty string";
            return false;
        }
        if (out.size() > 1024) {
            why = std::string("\"") + name + "\" is longer than 1024 bytes";
            return false;
        }
        return true;
    }
    if (id.is_number_unsigned()) {
        out = std::to_string(id.get<uint64_t>());
        return true;
    }
    if (id.is_number_integer()) {
        out = std::to_string(id.get<int64_t>());
        return true;
    }
    why = std::string("\"") + name + "\" must be a string or an integer, got " + json_type(id);
    return false;
}

// Field readers: each throws Error(input) naming the field and what it must be.
[[noreturn]] void bad_field(const std::string& name, const std::string& must, const json& v) {
    std::string shown = dump(v);
    if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
    throw Error(ErrorKind::input, "field \"" + name + "\" must be " + must + ", got " +
                                      json_type(v) + " " + shown);
}

int64_t int_field(const std::string& name, const json& v, int64_t lo, int64_t hi) {
    const std::string must = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        if (u > uint64_t(hi)) bad_field(name, must, v);
        return int64_t(u);
    }
    if (!v.is_number_integer()) bad_field(name, must, v);
    const int64_t i = v.get<int64_t>();
    if (i < lo || i > hi) bad_field(name, must, v);
    return i;
}

double number_field(const std::string& name, const json& v, const std::string& must,
                    bool (*ok)(double)) {
    if (!v.is_number()) bad_field(name, must, v);
    const double d = v.get<double>();
    if (!std::isfinite(d) || !ok(d)) bad_field(name, must, v);
    return d;
}

std::string string_field(const std::string& name, const json& v) {
    if (!v.is_string()) bad_field(name, "a string", v);
    return v.get<std::string>();
}

// "score" / "choices": a non-empty array of non-empty strings.
std::vector<std::string> continuations_field(const std::string& name, const json& v) {
    if (!v.is_array() || v.empty()) bad_field(name, "a non-empty array of non-empty strings", v);
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string at = name + "[" + std::to_string(i) + "]";
        out.push_back(string_field(at, v[i]));
        if (out.back().empty()) throw Error(ErrorKind::input, "field \"" + at + "\" is an empty string");
    }
    return out;
}

void apply_fields(const json& j, BatchRequest& r) {
    bool have_prompt = false, have_messages = false, have_seed = false, have_score = false;
    std::string generation_field;  // the first field that only a generation has
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& k = it.key();
        const json& v = it.value();
        GenerateOptions& g = r.options;
        if (k != "id" && k != "prompt" && k != "messages" && k != "score" && k != "choices" && k != "meta" &&
            generation_field.empty())
            generation_field = k;
        if (k == "id") {
            continue;
        } else if (k == "prompt") {
            r.prompt = string_field(k, v);
            have_prompt = true;
        } else if (k == "messages") {
            if (!v.is_array() || v.empty()) bad_field(k, "a non-empty array of {role, content}", v);
            for (size_t i = 0; i < v.size(); ++i) {
                const json& m = v[i];
                const std::string at = "messages[" + std::to_string(i) + "]";
                if (!m.is_object()) bad_field(at, "an object {\"role\", \"content\"}", m);
                for (auto f = m.begin(); f != m.end(); ++f)
                    if (f.key() != "role" && f.key() != "content")
                        throw Error(ErrorKind::input, "unknown field \"" + at + "." + f.key() +
                                                          "\" (a message has role and content)");
                if (!m.contains("role") || !m.contains("content"))
                    throw Error(ErrorKind::input, at + " needs \"role\" and \"content\"");
                ChatMessage msg{string_field(at + ".role", m["role"]),
                                string_field(at + ".content", m["content"])};
                if (msg.role != "system" && msg.role != "user" && msg.role != "assistant")
                    throw Error(ErrorKind::input, at + ".role must be system, user or assistant, got \"" +
                                                      msg.role + "\"");
                r.messages.push_back(std::move(msg));
            }
            have_messages = true;
        } else if (k == "n_predict") {
            g.max_tokens = int(int_field(k, v, 0, 1 << 30));
        } else if (k == "temperature") {
            g.sampling.temperature = float(number_field(k, v, "a number >= 0", [](double d) { return d >= 0; }));
        } else if (k == "top_k") {
            g.sampling.top_k = int(int_field(k, v, 0, 1 << 30));
        } else if (k == "top_p") {
            g.sampling.top_p =
                float(number_field(k, v, "a number in (0, 1]", [](double d) { return d > 0 && d <= 1; }));
        } else if (k == "min_p") {
            g.sampling.min_p =
                float(number_field(k, v, "a number in [0, 1]", [](double d) { return d >= 0 && d <= 1; }));
        } else if (k == "repetition_penalty") {
            g.sampling.repetition_penalty =
                float(number_field(k, v, "a number > 0", [](double d) { return d > 0; }));
        } else if (k == "seed") {
            if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
                bad_field(k, "an integer in [0, 2^64)", v);
            g.sampling.seed = v.get<uint64_t>();
            have_seed = true;
        } else if (k == "stop") {
            g.stop_strings.clear();
            if (v.is_string()) {
                g.stop_strings.push_back(v.get<std::string>());
            } else if (v.is_array()) {
                for (size_t i = 0; i < v.size(); ++i)
                    g.stop_strings.push_back(string_field("stop[" + std::to_string(i) + "]", v[i]));
            } else {
                bad_field(k, "a string or an array of strings", v);
            }
            for (const std::string& s : g.stop_strings)
                if (s.empty()) throw Error(ErrorKind::input, "field \"stop\" holds an empty string");
        } else if (k == "enable_thinking") {
            if (!v.is_boolean()) bad_field(k, "true or false", v);
            r.thinking = v.get<bool>() ? 1 : 0;
        } else if (k == "hide_thinking") {
            if (!v.is_boolean()) bad_field(k, "true or false", v);
            r.hide_thinking = v.get<bool>();
        } else if (k == "logprobs") {
            g.logprobs = int(int_field(k, v, 0, kMaxLogprobs));
        } else if (k == "score" || k == "choices") {
            if (have_score) throw Error(ErrorKind::input, "give \"score\" or \"choices\", not both");
            r.score = continuations_field(k, v);
            r.choices = k == "choices";
            have_score = true;
        } else if (k == "meta") {
            r.meta_json = dump(v);
        } else if (k == "json_schema") {  // the text in the line's member order: parse_request
            if (!v.is_object()) bad_field(k, "a JSON Schema object", v);
            r.json_schema = dump(v);
        } else if (k == "grammar") {
            r.grammar = string_field(k, v);
            if (r.grammar.empty()) throw Error(ErrorKind::input, "field \"grammar\" is an empty string");
        } else {
            throw Error(ErrorKind::input,
                        "unknown field \"" + k +
                            "\" (known: id, prompt, messages, n_predict, temperature, top_k, top_p, "
                            "min_p, repetition_penalty, seed, stop, enable_thinking, hide_thinking, logprobs, score, "
                            "choices, meta, json_schema, grammar)");
        }
    }
    if (have_prompt == have_messages)
        throw Error(ErrorKind::input, have_prompt ? "give \"prompt\" or \"messages\", not both"
                                                  : "no \"prompt\" or \"messages\"");
    r.chat = have_messages;
    if (have_score) {
        const std::string what = r.choices ? "\"choices\"" : "\"score\"";
        if (have_messages)
            throw Error(ErrorKind::input, what + " goes with \"prompt\": chat requests are not scored");
        if (!generation_field.empty())
            throw Error(ErrorKind::input, "field \"" + generation_field + "\" is for generation; " + what +
                                              " generates nothing");
    }
    if (!r.json_schema.empty() && !r.grammar.empty())
        throw Error(ErrorKind::input, "give \"json_schema\" or \"grammar\", not both");
    if (r.thinking >= 0 && !have_messages)
        throw Error(ErrorKind::input, "\"enable_thinking\" goes with \"messages\" (a chat request)");
    if (!have_seed) r.options.sampling.seed = 0;  // parse_request derives it from the id
}

}  // namespace

// ---------------------------------------------------------------------------
// LineReader
// ---------------------------------------------------------------------------

LineReader::LineReader(std::FILE* f, size_t max_bytes) : f_(f), buf_(size_t(1) << 16), max_(max_bytes) {}

bool LineReader::next(Line& out) {
    out.text.clear();
    out.complete = false;
    out.too_long = false;
    out.begin = offset_;
    bool any = false;
    while (true) {
        if (pos_ == end_) {
            if (eof_) break;
            end_ = std::fread(buf_.data(), 1, buf_.size(), f_);
            pos_ = 0;
            if (end_ == 0) {
                if (std::ferror(f_)) throw Error(ErrorKind::io, "read failed: " + errno_text());
                eof_ = true;
                break;
            }
        }
        any = true;
        const char* start = buf_.data() + pos_;
        const void* nl = std::memchr(start, '\n', end_ - pos_);
        const size_t len = nl ? size_t(static_cast<const char*>(nl) - start) : end_ - pos_;
        if (!out.too_long) {
            if (out.text.size() + len > max_) {
                out.too_long = true;
                out.text.clear();
            } else {
                out.text.append(start, len);
            }
        }
        pos_ += len;
        offset_ += len;
        if (nl) {
            ++pos_;
            ++offset_;
            out.complete = true;
            break;
        }
    }
    out.end = offset_;
    return any;
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

uint64_t fnv1a64(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t request_seed(uint64_t base_seed, std::string_view id) {
    // 31 bits, so that `staticlm generate --seed S` (an int flag) can reproduce any result.
    return splitmix64(base_seed ^ fnv1a64(id)) & 0x7fffffffu;
}

BatchRequest parse_request(std::string_view line, int line_no, const RequestDefaults& defaults,
                           const RequestLimits& limits) {
    BatchRequest r;
    r.line = line_no;
    r.key = line_key(line_no);
    r.id_json = "null";
    r.options = defaults.generate;
    auto fail = [&](ErrorKind kind, const std::string& why) {
        r.failed = true;
        r.error_kind = kind;
        r.error = "line " + std::to_string(line_no) + ": " + why;
        return r;
    };
    if (line.size() > limits.max_line_bytes)
        return fail(ErrorKind::input, "longer than " + std::to_string(limits.max_line_bytes) + " bytes");
    if (json_too_deep_at(line, limits.max_depth) != std::string_view::npos)
        return fail(ErrorKind::format,
                    "JSON nested deeper than " + std::to_string(limits.max_depth) + " levels");
    json j;
    try {
        j = json::parse(line);
    } catch (const json::parse_error& e) {
        return fail(ErrorKind::format, "malformed JSON at byte " + std::to_string(e.byte) +
                                           " (one JSON object per line)");
    } catch (const json::exception& e) {  // out_of_range 406: a number beyond a double
        return fail(ErrorKind::format, std::string("unreadable JSON: ") + e.what());
    }
    if (!j.is_object()) return fail(ErrorKind::format, std::string("not a JSON object but ") + json_type(j));
    std::string why;
    const bool openai = is_openai_request(j);
    if (openai) {  // {"custom_id", "method", "url", "body"}: mapped onto the fields below
        if (!j.contains("custom_id")) return fail(ErrorKind::input, "no \"custom_id\" (an OpenAI batch request line)");
        if (!j["custom_id"].is_string())
            return fail(ErrorKind::input,
                        std::string("\"custom_id\" must be a string, got ") + json_type(j["custom_id"]));
        if (!canonical_id(j["custom_id"], r.id, why, "custom_id")) return fail(ErrorKind::input, why);
        r.key = "=" + r.id;
        r.id_json = dump(j["custom_id"]);
        try {
            j = openai_request_to_native(j);
        } catch (const Error& e) {
            return fail(e.kind(), e.what());
        }
    }
    if (!j.contains("id")) return fail(ErrorKind::input, "no \"id\"");
    if (!canonical_id(j["id"], r.id, why)) return fail(ErrorKind::input, why);
    r.key = "=" + r.id;
    r.id_json = dump(j["id"]);
    try {
        apply_fields(j, r);
    } catch (const Error& e) {
        if (j.contains("meta")) r.meta_json = dump(j["meta"]);
        return fail(e.kind(), e.what());
    }
    if (!r.json_schema.empty()) {  // json sorts members; a schema's properties keep their order
        nlohmann::ordered_json o = nlohmann::ordered_json::parse(line);
        const nlohmann::ordered_json& schema =
            openai ? o["body"]["response_format"]["json_schema"]["schema"] : o["json_schema"];
        if (schema.is_object())
            r.json_schema = schema.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    }
    if (!j.contains("seed")) r.options.sampling.seed = request_seed(defaults.base_seed, r.id);
    r.seed = r.options.sampling.seed;
    return r;
}

std::vector<BatchRequest> read_requests(const std::string& input, const RequestDefaults& defaults,
                                        const RequestLimits& limits) {
    std::FILE* f = input == "-" ? stdin : std::fopen(input.c_str(), "rb");
    if (!f) throw Error(ErrorKind::io, input + ": cannot open: " + errno_text());
    struct Closer {
        std::FILE* f;
        ~Closer() {
            if (f != stdin) std::fclose(f);
        }
    } closer{f};
    const std::string name = input == "-" ? "<stdin>" : input;
    std::vector<BatchRequest> out;
    std::unordered_map<std::string, int> seen;  // key -> line
    LineReader reader(f, limits.max_line_bytes);
    LineReader::Line line;
    int n = 0;
    try {
        while (reader.next(line)) {
            ++n;
            if (!line.text.empty() && line.text.back() == '\r') line.text.pop_back();
            if (line.text.find_first_not_of(" \t") == std::string::npos && !line.too_long) continue;
            BatchRequest r;
            if (line.too_long) {
                r.line = n;
                r.key = line_key(n);
                r.id_json = "null";
                r.failed = true;
                r.error = "line " + std::to_string(n) + ": longer than " +
                          std::to_string(limits.max_line_bytes) + " bytes";
            } else {
                r = parse_request(line.text, n, defaults, limits);
            }
            const auto [it, fresh] = seen.emplace(r.key, n);
            if (!fresh)
                throw Error(ErrorKind::input, name + ": duplicate id " + r.id_json.substr(0, 80) +
                                                  " on lines " + std::to_string(it->second) +
                                                  " and " + std::to_string(n) +
                                                  " (ids must be unique; nothing was run)");
            out.push_back(std::move(r));
        }
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::io) throw Error(ErrorKind::io, name + ": " + e.what());
        throw;
    }
    return out;
}

// ---------------------------------------------------------------------------
// Shards
// ---------------------------------------------------------------------------

int shard_of_key(std::string_view key, int count) {
    if (count <= 1) return 0;
    // "=id" hashes the id itself; "#line" (no id) hashes "#line".
    const std::string_view h = !key.empty() && key[0] == '=' ? key.substr(1) : key;
    return int(fnv1a64(h) % uint64_t(count));
}

ShardSpec parse_shard(std::string_view text) {
    const size_t slash = text.find('/');
    auto bad = [&] {
        return Error(ErrorKind::config, "shard must be I/N with 0 <= I < N, got '" +
                                            std::string(text) + "'");
    };
    if (slash == std::string_view::npos) throw bad();
    auto num = [&](std::string_view s) {
        if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string_view::npos)
            throw bad();
        return std::stoi(std::string(s));
    };
    ShardSpec s{num(text.substr(0, slash)), num(text.substr(slash + 1))};
    if (s.count < 1 || s.index >= s.count) throw bad();
    return s;
}

std::string shard_output_path(const std::string& output, ShardSpec shard) {
    if (shard.count <= 1 || output == "-") return output;
    const std::string tag = "." + std::to_string(shard.index) + "-of-" + std::to_string(shard.count);
    const size_t slash = output.rfind('/');
    const size_t dot = output.rfind('.');
    const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
    return has_ext ? output.substr(0, dot) + tag + output.substr(dot) : output + tag;
}

// ---------------------------------------------------------------------------
// Result lines
// ---------------------------------------------------------------------------

const char* finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::stop: return "stop";
        case FinishReason::length: return "length";
        case FinishReason::capacity: return "capacity";
        case FinishReason::error: return "error";
        case FinishReason::scored: return "scored";
    }
    return "?";
}

namespace {

void append_token(std::string& s, int id, float logprob, const Tokenizer* tok) {
    s += "{\"token\":" + std::to_string(id);
    if (tok) s += ",\"piece\":" + dump(json(tok->piece(id)));
    s += ",\"logprob\":";
    append_number(s, logprob);
}

}  // namespace

std::string format_result_line(const BatchResult& r, const Tokenizer* tok, const ResultOptions& options) {
    const std::string digest = digest_hex(result_digest_text(r));
    if (options.format == ResultFormat::openai) return format_openai_result(r, tok, options, digest);
    const BatchRequest& q = *r.request;
    std::string s(kResultMarker);
    s += "\"id\":" + q.id_json;
    s += ",\"line\":" + std::to_string(q.line);
    s += ",\"finish_reason\":\"";
    s += finish_reason_name(r.finish);
    s += '"';
    if (r.finish == FinishReason::error) {
        s += ",\"error\":{\"kind\":\"";
        s += error_kind_name(r.error_kind);
        s += "\",\"message\":" + dump(json(r.error)) + "}";
    } else if (r.finish == FinishReason::scored) {
        s += ',';
        append_scores(s, r);
        s += ",\"prompt_tokens\":" + std::to_string(r.prompt_tokens);
        char timing[128];
        std::snprintf(timing, sizeof(timing), ",\"timing\":{\"total_ms\":%.3f}", r.total_seconds * 1e3);
        s += timing;
    } else {
        s += ",\"text\":" + dump(json(r.text));
        s += ",\"tokens\":[";
        for (size_t i = 0; i < r.tokens.size(); ++i) {
            if (i) s += ',';
            s += std::to_string(r.tokens[i]);
        }
        s += ']';
        if (r.has_logprobs) {
            s += ",\"logprobs\":[";
            for (size_t i = 0; i < r.logprobs.size(); ++i) {
                if (i) s += ',';
                append_token(s, i < r.tokens.size() ? r.tokens[i] : -1, r.logprobs[i], tok);
                if (r.top_n > 0) {
                    s += ",\"top\":[";
                    for (int k = 0; k < r.top_n; ++k) {
                        const TokenLogprob& t = r.top_logprobs[i * size_t(r.top_n) + size_t(k)];
                        if (k) s += ',';
                        append_token(s, t.token, t.logprob, tok);
                        s += '}';
                    }
                    s += ']';
                }
                s += '}';
            }
            s += ']';
        }
        if (r.complete >= 0) s += r.complete ? ",\"complete\":true" : ",\"complete\":false";
        s += ",\"prompt_tokens\":" + std::to_string(r.prompt_tokens);
        s += ",\"seed\":" + std::to_string(q.seed);
        append_timing(s, r);
    }
    if (!q.meta_json.empty()) s += ",\"meta\":" + q.meta_json;
    s += ",\"digest\":\"" + digest + "\"}\n";  // last: the fields before it keep their places
    return s;
}

// ---------------------------------------------------------------------------
// Results files
// ---------------------------------------------------------------------------

ResultsScan scan_results(const std::filesystem::path& file, size_t max_line_bytes) {
    ResultsScan scan;
    std::FILE* f = std::fopen(file.c_str(), "rb");
    if (!f) {
        if (errno == ENOENT) return scan;
        throw Error(ErrorKind::io, file.string() + ": cannot open: " + errno_text());
    }
    struct Closer {
        std::FILE* f;
        ~Closer() { std::fclose(f); }
    } closer{f};
    // A result line is its request's size plus the generated text: allow more than an input line.
    LineReader reader(f, max_line_bytes + (size_t(64) << 20));
    LineReader::Line line;
    int n = 0;
    auto refuse = [&](const std::string& why) {
        return Error(ErrorKind::format,
                     file.string() + ": line " + std::to_string(n) + " " + why +
                         ": not a staticlm batch results file (or damaged); refusing to append to "
                         "it — give another --output");
    };
    try {
        while (reader.next(line)) {
            ++n;
            if (!line.complete) {  // what a killed writer leaves: redone by the next run
                scan.torn_bytes = size_t(line.end - line.begin);
                break;
            }
            if (line.too_long) throw refuse("is too long");
            if (line.text.compare(0, kResultMarker.size(), kResultMarker) != 0)
                throw refuse("does not start with " + std::string(kResultMarker));
            json j = json::parse(line.text, nullptr, /*allow_exceptions=*/false);
            if (j.is_discarded() || !j.is_object()) throw refuse("is not a JSON object");
            ResultLine r;
            std::string id, why;
            // OpenAI-shape lines: "id" is the batch request's own, "custom_id" the request's.
            r.format = j.contains("custom_id") ? ResultFormat::openai : ResultFormat::native;
            const char* id_field = r.format == ResultFormat::openai ? "custom_id" : "id";
            const json& idv = j.contains(id_field) ? j[id_field] : json();
            if (idv.is_null()) {
                if (!j.contains("line") || !j["line"].is_number_integer())
                    throw refuse("has neither an id nor an input line");
                r.key = line_key(j["line"].get<int64_t>());
            } else if (canonical_id(idv, id, why)) {
                r.key = "=" + id;
            } else {
                throw refuse("has an invalid id");
            }
            r.error = r.format == ResultFormat::openai
                          ? j.contains("error") && !j["error"].is_null()
                          : j.contains("finish_reason") && j["finish_reason"] == "error";
            if (j.contains("digest") && j["digest"].is_string()) r.digest = j["digest"].get<std::string>();
            r.content_digest = content_digest(j, r.format);
            r.text = std::move(line.text);
            scan.lines.push_back(std::move(r));
            scan.good_bytes = size_t(line.end);
        }
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::io) throw Error(ErrorKind::io, file.string() + ": " + e.what());
        throw;
    }
    return scan;
}

ResultsWriter::ResultsWriter(const std::string& path, SyncPolicy sync, size_t max_line_bytes,
                             ResultFormat format)
    : path_(path), sync_(sync), last_sync_(now_seconds()) {
    if (path == "-") {
        fd_ = STDOUT_FILENO;
        is_stdout_ = true;
        return;
    }
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(ErrorKind::io, path + ": cannot open for writing: " + errno_text());
    try {
        struct stat st {};
        if (::fstat(fd_, &st) == 0 && !S_ISREG(st.st_mode))
            throw Error(ErrorKind::io, path + ": not a regular file");
        if (::flock(fd_, LOCK_EX | LOCK_NB) != 0)
            throw Error(ErrorKind::io, path + ": " +
                                           (errno == EWOULDBLOCK
                                                ? std::string("another process is writing it (locked)")
                                                : "cannot lock: " + errno_text()));
        const ResultsScan scan = scan_results(path, max_line_bytes);
        for (size_t i = 0; i < scan.lines.size(); ++i) {
            if (scan.lines[i].format != format)
                throw Error(ErrorKind::config,
                            path + ": line " + std::to_string(i + 1) + " is in --format " +
                                result_format_name(scan.lines[i].format) +
                                " and this run writes --format " + result_format_name(format) +
                                ": one shape per file; resume with --format " +
                                result_format_name(scan.lines[i].format) + " or give another --output");
            done_.emplace(scan.lines[i].key, int(i) + 1);
        }
        if (scan.torn_bytes > 0) {
            if (::ftruncate(fd_, off_t(scan.good_bytes)) != 0)
                throw Error(ErrorKind::io, path + ": cannot cut its torn last line: " + errno_text());
            ::fdatasync(fd_);
            torn_ = scan.torn_bytes;
        }
    } catch (...) {
        ::close(fd_);
        throw;
    }
}

ResultsWriter::~ResultsWriter() {
    if (fd_ >= 0 && !is_stdout_) {
        ::fdatasync(fd_);
        ::close(fd_);
    }
}

void ResultsWriter::append(std::string_view line) {
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
        const ssize_t n = ::write(fd_, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw Error(ErrorKind::io, (is_stdout_ ? std::string("<stdout>") : path_) +
                                           ": write failed: " + errno_text());
        }
        p += n;
        left -= size_t(n);
    }
    if (is_stdout_) return;
    if (sync_.mode == SyncPolicy::Mode::every_line) {
        sync();
    } else if (sync_.mode == SyncPolicy::Mode::interval) {
        const double t = now_seconds();
        if (t - last_sync_ >= sync_.seconds) sync();
    }
}

void ResultsWriter::sync() {
    if (is_stdout_) return;
    if (::fdatasync(fd_) != 0 && errno != EINVAL)
        throw Error(ErrorKind::io, path_ + ": fdatasync failed: " + errno_text());
    last_sync_ = now_seconds();
}

// ---------------------------------------------------------------------------
// Merge
// ---------------------------------------------------------------------------

MergeSummary merge_results(const std::string& input, const std::vector<std::string>& shards,
                           const std::string& output, const RequestLimits& limits) {
    if (shards.empty()) throw Error(ErrorKind::config, "merge needs the shard files");
    for (const std::string& s : shards) {
        std::error_code ec;
        if (output != "-" && std::filesystem::equivalent(s, output, ec))
            throw Error(ErrorKind::config, output + " is one of the shard files: merge into another file");
    }
    const std::vector<BatchRequest> requests = read_requests(input, RequestDefaults{}, limits);
    struct Where {
        size_t shard;
        size_t line;
    };
    std::vector<ResultsScan> scans;
    std::unordered_map<std::string, Where> found;
    std::optional<Where> first_format;  // the first result: every other must have its shape
    for (size_t i = 0; i < shards.size(); ++i) {
        if (!std::filesystem::exists(shards[i]))
            throw Error(ErrorKind::io, shards[i] + ": shard file not found");
        scans.push_back(scan_results(shards[i], limits.max_line_bytes));
        const ResultsScan& sc = scans.back();
        if (sc.torn_bytes > 0)
            throw Error(ErrorKind::input, shards[i] + ": ends with an incomplete line (" +
                                              std::to_string(sc.torn_bytes) +
                                              " bytes): that shard was interrupted; rerun it with "
                                              "the same --output to finish it");
        for (size_t l = 0; l < sc.lines.size(); ++l) {
            if (!first_format) first_format = Where{i, l};
            const ResultLine& first = scans[first_format->shard].lines[first_format->line];
            if (sc.lines[l].format != first.format)
                throw Error(ErrorKind::input, shards[i] + " line " + std::to_string(l + 1) + " is in --format " +
                                                  result_format_name(sc.lines[l].format) + ", " +
                                                  shards[first_format->shard] + " line " +
                                                  std::to_string(first_format->line + 1) + " in --format " +
                                                  result_format_name(first.format) +
                                                  ": the shards were run with different --format");
            const auto [it, fresh] = found.emplace(sc.lines[l].key, Where{i, l});
            if (!fresh)
                throw Error(ErrorKind::input,
                            "request " + sc.lines[l].key.substr(1) + " has two results: " +
                                shards[it->second.shard] + " line " +
                                std::to_string(it->second.line + 1) + " and " + shards[i] +
                                " line " + std::to_string(l + 1));
        }
    }
    std::unordered_set<std::string> wanted;
    std::vector<std::string> missing;
    for (const BatchRequest& r : requests) {
        wanted.insert(r.key);
        if (!found.count(r.key)) missing.push_back(r.key);
    }
    if (!missing.empty()) {
        std::string list;
        for (size_t i = 0; i < missing.size() && i < 5; ++i) {
            list += i ? ", " : "";
            list += missing[i][0] == '=' ? "id '" + missing[i].substr(1) + "'"
                                         : "line " + missing[i].substr(1);
        }
        throw Error(ErrorKind::input, std::to_string(missing.size()) + " of " +
                                          std::to_string(requests.size()) +
                                          " requests have no result in the shard files (" + list +
                                          (missing.size() > 5 ? ", ..." : "") +
                                          "): run or finish the shards that hold them");
    }
    for (size_t i = 0; i < scans.size(); ++i)
        for (size_t l = 0; l < scans[i].lines.size(); ++l)
            if (!wanted.count(scans[i].lines[l].key))
                throw Error(ErrorKind::input, shards[i] + " line " + std::to_string(l + 1) +
                                                  ": request " + scans[i].lines[l].key.substr(1) +
                                                  " is not in " + input);

    MergeSummary summary;
    summary.requests = int(requests.size());
    const std::string tmp = output == "-" ? output : output + ".tmp." + std::to_string(::getpid());
    {
        // Written whole, synced, then renamed: the output is never half a merge.
        const int fd = output == "-" ? STDOUT_FILENO
                                     : ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) throw Error(ErrorKind::io, tmp + ": cannot open for writing: " + errno_text());
        std::string buf;
        auto flush = [&] {
            const char* p = buf.data();
            size_t left = buf.size();
            while (left > 0) {
                const ssize_t n = ::write(fd, p, left);
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) {
                    const std::string why = errno_text();
                    if (fd != STDOUT_FILENO) {
                        ::close(fd);
                        ::unlink(tmp.c_str());
                    }
                    throw Error(ErrorKind::io, (output == "-" ? "<stdout>" : tmp) + ": write failed: " + why);
                }
                p += n;
                left -= size_t(n);
            }
            buf.clear();
        };
        for (const BatchRequest& r : requests) {
            const Where w = found.at(r.key);
            const ResultLine& line = scans[w.shard].lines[w.line];
            summary.errors += line.error;
            buf += line.text;
            buf += '\n';
            if (buf.size() > (size_t(1) << 20)) flush();
        }
        flush();
        if (fd != STDOUT_FILENO) {
            if (::fsync(fd) != 0 || ::close(fd) != 0) {
                ::unlink(tmp.c_str());
                throw Error(ErrorKind::io, tmp + ": cannot sync: " + errno_text());
            }
            if (std::rename(tmp.c_str(), output.c_str()) != 0) {
                const std::string why = errno_text();
                ::unlink(tmp.c_str());
                throw Error(ErrorKind::io, output + ": cannot rename the merged file into place: " + why);
            }
        }
    }
    return summary;
}

}  // namespace staticlm
