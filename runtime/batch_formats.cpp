// The OpenAI side of batch files and the reproducibility contract: OpenAI
// batch request lines mapped onto staticlm's request fields, results in
// OpenAI's batch output shape, per-result digests, and the comparison of two
// runs by digest (`staticlm batch --verify-against`). docs/BATCH.md is the contract.
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <unordered_map>

#include "batch_internal.hpp"
#include "staticlm/tokenizer.hpp"

namespace staticlm {

using nlohmann::json;

std::string dump_json(const json& j) {
    return j.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

void append_timing(std::string& s, const BatchResult& r) {
    char timing[256];
    std::snprintf(timing, sizeof(timing),
                  ",\"timing\":{\"prefill_ms\":%.3f,\"first_token_ms\":%.3f,\"decode_ms\":%.3f,"
                  "\"total_ms\":%.3f,\"decode_tok_per_s\":%.2f}",
                  r.stats.prefill_seconds * 1e3, r.stats.first_token_seconds * 1e3,
                  r.stats.decode_seconds * 1e3, r.total_seconds * 1e3, r.stats.decode_tok_per_s());
    s += timing;
}

namespace {

// ---------------------------------------------------------------------------
// OpenAI request lines
// ---------------------------------------------------------------------------

[[noreturn]] void bad(const std::string& field, const std::string& must, const json& v) {
    std::string shown = dump_json(v);
    if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
    throw Error(ErrorKind::input,
                "field \"" + field + "\" must be " + must + ", got " + v.type_name() + " " + shown);
}

int64_t integer(const std::string& field, const json& v, int64_t lo, int64_t hi) {
    const std::string must = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    if (v.is_number_unsigned()) {
        if (v.get<uint64_t>() > uint64_t(hi)) bad(field, must, v);
        return int64_t(v.get<uint64_t>());
    }
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) bad(field, must, v);
    return v.get<int64_t>();
}

// A number in [lo, hi] ((lo, hi] with open_lo); `range` says which for the message.
double number(const std::string& field, const json& v, double lo, double hi, bool open_lo, const char* range) {
    const std::string must = std::string("a number in ") + range;
    if (!v.is_number()) bad(field, must, v);
    const double d = v.get<double>();
    if (!(open_lo ? d > lo : d >= lo) || !(d <= hi)) bad(field, must, v);
    return d;
}

bool one_of(const std::string& k, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (k == n) return true;
    return false;
}

// "content": a string, or an array of text parts [{"type": "text", "text": ...}] (joined).
std::string message_content(const std::string& at, const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (!v.is_array()) bad(at, "a string or an array of {\"type\": \"text\", \"text\"} parts", v);
    std::string text;
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string part = at + "[" + std::to_string(i) + "]";
        const json& p = v[i];
        if (!p.is_object()) bad(part, "an object {\"type\": \"text\", \"text\"}", p);
        if (!p.contains("type") || !p["type"].is_string()) bad(part + ".type", "a string", p.value("type", json()));
        const std::string type = p["type"].get<std::string>();
        if (type != "text")
            throw Error(ErrorKind::input, "field \"" + part + ".type\" is \"" + type +
                                              "\": only text parts are supported (staticlm batch runs text models)");
        for (auto f = p.begin(); f != p.end(); ++f)
            if (f.key() != "type" && f.key() != "text")
                throw Error(ErrorKind::input, "unknown field \"" + part + "." + f.key() + "\" (a text part has type and text)");
        if (!p.contains("text") || !p["text"].is_string()) bad(part + ".text", "a string", p.value("text", json()));
        text += p["text"].get<std::string>();
    }
    return text;
}

json messages_of(const json& v) {
    if (!v.is_array() || v.empty()) bad("body.messages", "a non-empty array of {role, content}", v);
    json out = json::array();
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string at = "body.messages[" + std::to_string(i) + "]";
        const json& m = v[i];
        if (!m.is_object()) bad(at, "an object {\"role\", \"content\"}", m);
        for (auto f = m.begin(); f != m.end(); ++f)
            if (f.key() != "role" && f.key() != "content" && f.key() != "name")
                throw Error(ErrorKind::input, "unknown field \"" + at + "." + f.key() +
                                                  "\" (a message has role, content and name; tool calls are not supported)");
        if (!m.contains("role") || !m["role"].is_string()) bad(at + ".role", "a string", m.value("role", json()));
        std::string role = m["role"].get<std::string>();
        if (role == "developer") role = "system";  // OpenAI's newer name for the system message
        if (role != "system" && role != "user" && role != "assistant")
            throw Error(ErrorKind::input, at + ".role must be system, developer, user or assistant, got \"" + role + "\"");
        if (!m.contains("content")) throw Error(ErrorKind::input, at + " needs \"content\"");
        if (m.contains("name") && !m["name"].is_string()) bad(at + ".name", "a string", m["name"]);
        out.push_back({{"role", role}, {"content", message_content(at + ".content", m["content"])}});
    }
    return out;
}

// response_format: "text" is the default; {"type": "json_schema", "json_schema":
// {"name", "schema", "strict", "description"}} gives the schema (null for text).
json response_format(const json& v) {
    if (!v.is_object() || !v.contains("type") || !v["type"].is_string())
        bad("body.response_format", "an object with a \"type\"", v);
    const std::string type = v["type"].get<std::string>();
    if (type == "text") return json();
    if (type == "json_schema") {
        const std::string at = "body.response_format.json_schema";
        if (!v.contains("json_schema") || !v["json_schema"].is_object())
            bad(at, "an object {\"name\", \"schema\"}", v.value("json_schema", json()));
        const json& js = v["json_schema"];
        for (auto f = js.begin(); f != js.end(); ++f)
            if (!one_of(f.key(), {"name", "schema", "strict", "description"}))
                throw Error(ErrorKind::input, "unknown field \"" + at + "." + f.key() +
                                                  "\" (it has name, schema, strict and description)");
        if (!js.contains("schema") || !js["schema"].is_object())
            bad(at + ".schema", "a JSON Schema object", js.value("schema", json()));
        return js["schema"];  // checked and compiled as the request's "json_schema"
    }
    if (type == "json_object")
        throw Error(ErrorKind::input, "response_format json_object is not supported");
    throw Error(ErrorKind::input, "field \"body.response_format.type\" must be text or json_schema, got \"" + type + "\"");
}

}  // namespace

bool is_openai_request(const json& line) { return line.contains("custom_id") || line.contains("body"); }

json openai_request_to_native(const json& line) {
    json out = json::object();
    out["id"] = line["custom_id"];
    for (auto it = line.begin(); it != line.end(); ++it) {
        const std::string& k = it.key();
        const json& v = it.value();
        if (k == "custom_id" || k == "body") continue;
        if (k == "method") {
            if (v != "POST") bad("method", "\"POST\"", v);
        } else if (k == "url") {
            if (v != "/v1/chat/completions") bad("url", "\"/v1/chat/completions\" (the one endpoint staticlm batch serves)", v);
        } else {
            throw Error(ErrorKind::input, "unknown field \"" + k + "\" (an OpenAI batch line has custom_id, method, url and body)");
        }
    }
    if (!line.contains("body")) throw Error(ErrorKind::input, "no \"body\"");
    const json& body = line["body"];
    if (!body.is_object()) bad("body", "an object (the chat completion request)", body);
    bool logprobs = false;
    int64_t top_logprobs = -1;
    bool have_max = false;
    for (auto it = body.begin(); it != body.end(); ++it) {
        const std::string& k = it.key();
        const std::string at = "body." + k;
        const json& v = it.value();
        if (v.is_null()) continue;  // as absent: what SDKs write for unset fields
        if (k == "messages") {
            out["messages"] = messages_of(v);
        } else if (k == "max_tokens" || k == "max_completion_tokens") {
            if (have_max) throw Error(ErrorKind::input, "give \"body.max_tokens\" or \"body.max_completion_tokens\", not both");
            have_max = true;
            out["n_predict"] = integer(at, v, 0, int64_t(1) << 30);
        } else if (k == "temperature") {
            out[k] = number(at, v, 0, 2, false, "[0, 2]");  // OpenAI's range
        } else if (k == "top_p") {
            out[k] = number(at, v, 0, 1, true, "(0, 1]");
        } else if (one_of(k, {"seed", "stop", "top_k", "min_p", "repetition_penalty", "enable_thinking", "hide_thinking"})) {
            out[k] = v;  // checked by the request reader, as on a native line
        } else if (k == "logprobs") {
            if (!v.is_boolean()) bad(at, "true or false", v);
            logprobs = v.get<bool>();
        } else if (k == "top_logprobs") {
            top_logprobs = integer(at, v, 0, kMaxLogprobs);
        } else if (k == "n") {
            if (integer(at, v, 1, int64_t(1) << 30) != 1)
                throw Error(ErrorKind::input, "field \"body.n\" must be 1: one choice per request (give each its own custom_id)");
        } else if (k == "stream") {
            if (v != false) throw Error(ErrorKind::input, "field \"body.stream\" must be false: batch results are not streamed");
        } else if (k == "frequency_penalty" || k == "presence_penalty") {
            if (!v.is_number() || v.get<double>() != 0)
                throw Error(ErrorKind::input, "field \"" + at + "\" is not supported (only 0); staticlm has \"repetition_penalty\"");
        } else if (k == "logit_bias") {
            if (!v.is_object() || !v.empty()) throw Error(ErrorKind::input, "field \"body.logit_bias\" is not supported (only {})");
        } else if (k == "response_format") {
            json schema = response_format(v);
            if (!schema.is_null()) out["json_schema"] = std::move(schema);
        } else if (one_of(k, {"model", "user", "metadata", "store", "service_tier"})) {
            continue;  // the job's --model runs every line; the rest is OpenAI bookkeeping
        } else if (one_of(k, {"tools", "tool_choice", "functions", "function_call", "parallel_tool_calls", "audio",
                              "modalities", "prediction", "reasoning_effort", "stream_options", "web_search_options"})) {
            throw Error(ErrorKind::input, "field \"" + at + "\" is not supported by staticlm batch");
        } else {
            throw Error(ErrorKind::input, "unknown field \"" + at + "\"");
        }
    }
    if (!out.contains("messages")) throw Error(ErrorKind::input, "no \"body.messages\"");
    if (top_logprobs >= 0 && !logprobs)
        throw Error(ErrorKind::input, "field \"body.top_logprobs\" needs \"body.logprobs\": true");
    if (logprobs) out["logprobs"] = top_logprobs >= 0 ? top_logprobs : 0;
    return out;
}

// ---------------------------------------------------------------------------
// Digests
// ---------------------------------------------------------------------------

namespace {

// The continuation with the highest sum, the first of equal ones ("choice").
template <typename Logprob>
size_t best_index(size_t n, Logprob logprob) {
    size_t best = 0;
    for (size_t i = 1; i < n; ++i)
        if (logprob(i) > logprob(best)) best = i;
    return best;
}

std::string hex16(uint64_t h) {
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016" PRIx64, h);
    return buf;
}

}  // namespace

std::string result_digest_text(const BatchResult& r) {
    std::string s = finish_reason_name(r.finish);
    s += ':';
    if (r.finish == FinishReason::error) {
        s += error_kind_name(r.error_kind);
    } else if (r.finish == FinishReason::scored) {
        s += std::to_string(best_index(r.scores.size(), [&](size_t i) { return r.scores[i].logprob; }));
        for (size_t i = 0; i < r.scores.size(); ++i) {
            s += i ? ',' : ':';
            s += std::to_string(r.scores[i].tokens) + (r.scores[i].greedy ? "/1" : "/0");
        }
    } else {
        for (size_t i = 0; i < r.tokens.size(); ++i) {
            if (i) s += ',';
            s += std::to_string(r.tokens[i]);
        }
    }
    return s;
}

std::string digest_hex(std::string_view text) { return hex16(fnv1a64(text)); }

std::string content_digest(const json& line, ResultFormat format) {
    // Where the output lives in each shape.
    const json none;
    auto at = [&](const json& j, const char* key) -> const json& {
        return j.is_object() && j.contains(key) ? j[key] : none;
    };
    std::string reason, kind;
    const json* tokens = &none;
    const json* scores = &none;
    if (format == ResultFormat::native) {
        reason = at(line, "finish_reason").is_string() ? at(line, "finish_reason").get<std::string>() : "";
        if (reason == "error" && at(at(line, "error"), "kind").is_string())
            kind = at(at(line, "error"), "kind").get<std::string>();
        tokens = &at(line, "tokens");
        scores = &at(line, "scores");
    } else {
        const json& ext = at(line, "staticlm");
        reason = at(ext, "finish_reason").is_string() ? at(ext, "finish_reason").get<std::string>() : "";
        if (reason == "error" && at(at(line, "error"), "code").is_string())
            kind = at(at(line, "error"), "code").get<std::string>();
        tokens = &at(ext, "tokens");
        scores = &at(at(at(line, "response"), "body"), "scores");
    }
    std::string s = reason + ':';
    if (reason == "error") {
        if (kind.empty()) return "";
        return digest_hex(s + kind);
    }
    if (reason == "scored") {
        if (!scores->is_array() || scores->empty()) return "";
        for (const json& c : *scores)
            if (!at(c, "logprob").is_number() || !at(c, "tokens").is_number_integer() || !at(c, "greedy").is_boolean())
                return "";
        s += std::to_string(best_index(scores->size(), [&](size_t i) { return (*scores)[i]["logprob"].get<double>(); }));
        for (size_t i = 0; i < scores->size(); ++i) {
            const json& c = (*scores)[i];
            s += i ? ',' : ':';
            s += std::to_string(c["tokens"].get<int64_t>()) + (c["greedy"].get<bool>() ? "/1" : "/0");
        }
        return digest_hex(s);
    }
    if (reason.empty() || !tokens->is_array()) return "";
    for (size_t i = 0; i < tokens->size(); ++i) {
        if (!(*tokens)[i].is_number_integer()) return "";
        if (i) s += ',';
        s += std::to_string((*tokens)[i].get<int64_t>());
    }
    return digest_hex(s);
}

// ---------------------------------------------------------------------------
// OpenAI result lines
// ---------------------------------------------------------------------------

namespace {

// GPT-2's byte-level alphabet: printable bytes stand for themselves, the other
// 68 for U+0100 onwards in byte order. Returns the byte of a code point, or -1.
int byte_level_byte(uint32_t cp) {
    auto printable = [](uint32_t b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; };
    if (cp < 256) return printable(cp) ? int(cp) : -1;
    uint32_t n = 0;
    for (uint32_t b = 0; b < 256; ++b)
        if (!printable(b) && 256 + n++ == cp) return int(b);
    return -1;
}

// The bytes of a byte-level BPE piece ("Ġthe" -> " the"); false when a character is not of that alphabet.
bool byte_level_bytes(std::string_view piece, std::string& out) {
    out.clear();
    for (size_t i = 0; i < piece.size();) {
        const unsigned char c = piece[i];
        uint32_t cp;
        size_t len;
        if (c < 0x80) {
            cp = c, len = 1;
        } else if ((c & 0xE0) == 0xC0 && i + 1 < piece.size()) {
            cp = (uint32_t(c & 0x1F) << 6) | (piece[i + 1] & 0x3F), len = 2;
        } else {
            return false;  // the alphabet lies below U+0144: two bytes at most
        }
        const int b = byte_level_byte(cp);
        if (b < 0) return false;
        out += char(b);
        i += len;
    }
    return true;
}

// Text and bytes of single tokens, as OpenAI's logprobs give them: the bytes
// the token adds to a text (decoded after an anchor token, so SentencePiece's
// leading space stays), the raw byte of a byte-fallback piece, the pieces of
// byte-level BPE that end inside a UTF-8 sequence, a special token's own text.
class TokenBytes {
public:
    explicit TokenBytes(const Tokenizer* tok) : tok_(tok) {
        if (!tok_) return;
        const std::vector<int> a = tok_->encode("a", false);
        if (!a.empty()) {
            anchor_ = a.back();
            base_ = tok_->decode({anchor_});
        }
    }

    std::string bytes(int id) const {
        if (!tok_ || id < 0 || id >= tok_->vocab_size()) return {};
        const std::string piece = tok_->piece(id);
        if (piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>') {
            unsigned v = 0;
            if (std::sscanf(piece.c_str() + 3, "%2x", &v) == 1) return std::string(1, char(v));
        }
        if (anchor_ < 0) return piece;
        const std::string t = tok_->decode({anchor_, id});
        if (t.size() <= base_.size() || t.compare(0, base_.size(), base_) != 0) return piece;  // a special token
        std::string out = t.substr(base_.size());
        std::string raw;
        if (out.find("\xEF\xBF\xBD") != std::string::npos && piece.find("\xEF\xBF\xBD") == std::string::npos &&
            byte_level_bytes(piece, raw))
            return raw;  // part of a UTF-8 sequence: decode() gave U+FFFD
        return out;
    }

private:
    const Tokenizer* tok_;
    int anchor_ = -1;
    std::string base_;
};

void append_token_logprob(std::string& s, int id, float logprob, const TokenBytes& tb) {
    const std::string b = tb.bytes(id);
    s += "{\"token\":" + dump_json(json(b));
    s += ",\"logprob\":";
    append_number(s, logprob);
    s += ",\"bytes\":[";
    for (size_t i = 0; i < b.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(unsigned(static_cast<unsigned char>(b[i])));
    }
    s += ']';
}

}  // namespace

void append_scores(std::string& s, const BatchResult& r) {
    const BatchRequest& q = *r.request;
    s += "\"scores\":[";
    for (size_t i = 0; i < r.scores.size(); ++i) {
        const ContinuationScore& c = r.scores[i];
        s += i ? ",{\"text\":" : "{\"text\":";
        s += dump_json(json(i < q.score.size() ? q.score[i] : std::string()));
        s += ",\"logprob\":";
        append_number(s, c.logprob);
        s += ",\"tokens\":" + std::to_string(c.tokens);
        s += c.greedy ? ",\"greedy\":true}" : ",\"greedy\":false}";
    }
    s += ']';
    const size_t best = best_index(r.scores.size(), [&](size_t i) { return r.scores[i].logprob; });
    if (q.choices && best < q.score.size()) s += ",\"choice\":" + dump_json(json(q.score[best]));
}

std::string format_openai_result(const BatchResult& r, const Tokenizer* tok, const ResultOptions& o,
                                 const std::string& digest) {
    const BatchRequest& q = *r.request;
    const std::string h = hex16(fnv1a64(q.key));  // stable names: a rerun writes the same ids
    std::string s(kResultMarker);
    s += "\"id\":\"batch_req_" + h + "\",\"custom_id\":";
    s += q.key[0] == '=' ? dump_json(json(q.id)) : "null";
    s += ",\"line\":" + std::to_string(q.line) + ",\"digest\":\"" + digest + '"';
    if (r.finish == FinishReason::error) {
        s += ",\"response\":null,\"error\":{\"code\":\"";
        s += error_kind_name(r.error_kind);
        s += "\",\"message\":" + dump_json(json(r.error)) + "}";
        s += ",\"staticlm\":{\"finish_reason\":\"error\"";
    } else {
        const std::string model = dump_json(json(o.model));
        s += ",\"response\":{\"status_code\":200,\"request_id\":\"req_" + h + "\",\"body\":{";
        if (r.finish == FinishReason::scored) {
            s += "\"object\":\"staticlm.score\",\"model\":" + model + ',';
            append_scores(s, r);
            s += ",\"usage\":{\"prompt_tokens\":" + std::to_string(r.prompt_tokens) +
                 ",\"completion_tokens\":0,\"total_tokens\":" + std::to_string(r.prompt_tokens) + "}}}";
        } else {
            s += "\"id\":\"chatcmpl-" + h + "\",\"object\":\"chat.completion\",\"created\":" +
                 std::to_string(int64_t(std::time(nullptr))) + ",\"model\":" + model;
            s += ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":" + dump_json(json(r.text)) +
                 "},\"logprobs\":";
            if (r.has_logprobs) {
                const TokenBytes tb(tok);
                s += "{\"content\":[";
                for (size_t i = 0; i < r.logprobs.size(); ++i) {
                    if (i) s += ',';
                    append_token_logprob(s, i < r.tokens.size() ? r.tokens[i] : -1, r.logprobs[i], tb);
                    s += ",\"top_logprobs\":[";
                    for (int k = 0; k < r.top_n; ++k) {
                        const TokenLogprob& t = r.top_logprobs[i * size_t(r.top_n) + size_t(k)];
                        if (k) s += ',';
                        append_token_logprob(s, t.token, t.logprob, tb);
                        s += '}';
                    }
                    s += "]}";
                }
                s += "],\"refusal\":null}";
            } else {
                s += "null";
            }
            // OpenAI has no "capacity": the context ran out, which it reports as "length".
            s += ",\"finish_reason\":\"";
            s += r.finish == FinishReason::stop ? "stop" : "length";
            s += "\"}]";
            const size_t completion = r.tokens.size();
            s += ",\"usage\":{\"prompt_tokens\":" + std::to_string(r.prompt_tokens) +
                 ",\"completion_tokens\":" + std::to_string(completion) +
                 ",\"total_tokens\":" + std::to_string(size_t(r.prompt_tokens) + completion) + "}}}";
        }
        s += ",\"error\":null,\"staticlm\":{\"finish_reason\":\"";
        s += finish_reason_name(r.finish);
        s += '"';
        if (r.finish != FinishReason::scored) {
            s += ",\"tokens\":[";
            for (size_t i = 0; i < r.tokens.size(); ++i) {
                if (i) s += ',';
                s += std::to_string(r.tokens[i]);
            }
            s += "],\"seed\":" + std::to_string(q.seed);
            append_timing(s, r);
            if (r.complete >= 0) s += r.complete ? ",\"complete\":true" : ",\"complete\":false";
        }
    }
    if (!q.meta_json.empty()) s += ",\"meta\":" + q.meta_json;
    s += "}}\n";
    return s;
}

// ---------------------------------------------------------------------------
// Formats and verify
// ---------------------------------------------------------------------------

ResultFormat parse_result_format(std::string_view name) {
    if (name == "native") return ResultFormat::native;
    if (name == "openai") return ResultFormat::openai;
    throw Error(ErrorKind::config, "format must be native or openai, got '" + std::string(name) + "'");
}

const char* result_format_name(ResultFormat format) {
    return format == ResultFormat::openai ? "openai" : "native";
}

VerifyReport verify_results(const std::string& input, const std::vector<std::string>& ours,
                            const std::vector<std::string>& theirs, const RequestLimits& limits) {
    if (ours.empty() || theirs.empty()) throw Error(ErrorKind::config, "verify needs results files on both sides");
    const std::vector<BatchRequest> requests = read_requests(input, RequestDefaults{}, limits);
    VerifyReport report;
    report.requests = int(requests.size());
    std::unordered_map<std::string, int> in_input;
    for (size_t i = 0; i < requests.size(); ++i) in_input.emplace(requests[i].key, int(i));
    struct Found {
        std::string digest;
        bool usable = true;  // its digest matches what it holds
    };
    auto load = [&](const std::vector<std::string>& files) {
        std::unordered_map<std::string, Found> found;
        std::unordered_map<std::string, std::string> where;
        for (const std::string& f : files) {
            if (!std::filesystem::exists(f)) throw Error(ErrorKind::io, f + ": results file not found");
            const ResultsScan scan = scan_results(f, limits.max_line_bytes);
            for (size_t l = 0; l < scan.lines.size(); ++l) {
                const ResultLine& line = scan.lines[l];
                const std::string here = f + " line " + std::to_string(l + 1);
                const std::string name =
                    line.key[0] == '=' ? "id '" + line.key.substr(1) + "'" : "input line " + line.key.substr(1);
                const auto [it, fresh] = where.emplace(line.key, here);
                if (!fresh) throw Error(ErrorKind::input, name + " has two results: " + it->second + " and " + here);
                Found r{line.digest, true};
                if (!in_input.count(line.key)) {
                    report.altered.push_back(here + ": " + name + " is not in " + input);
                    continue;
                }
                if (line.digest.empty()) {
                    report.altered.push_back(here + ": " + name + " has no digest (written before digests; rerun it)");
                    r.usable = false;
                } else if (line.digest != line.content_digest) {
                    report.altered.push_back(here + ": " + name + " carries digest " + line.digest +
                                             " but holds " + (line.content_digest.empty() ? "no output" : line.content_digest) +
                                             " (edited or damaged)");
                    r.usable = false;
                }
                found.emplace(line.key, std::move(r));
            }
        }
        return found;
    };
    const auto a = load(ours);
    const auto b = load(theirs);
    for (const BatchRequest& q : requests) {
        const auto x = a.find(q.key);
        const auto y = b.find(q.key);
        if (x == a.end()) report.missing_ours.push_back(q.key);
        if (y == b.end()) report.missing_theirs.push_back(q.key);
        if (x == a.end() || y == b.end() || !x->second.usable || !y->second.usable) continue;
        if (x->second.digest == y->second.digest)
            ++report.same;
        else
            report.differ.push_back(q.key);
    }
    return report;
}

}  // namespace staticlm
