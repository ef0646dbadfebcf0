// Pieces shared by runtime/batch_io.cpp and runtime/batch_job.cpp that are not
// part of the public batch API.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "staticlm/batch.hpp"

namespace staticlm {

// The shortest text that reads back as the same float / double (so results
// can be compared bit for bit); non-finite values (-inf: a token the model
// gives probability 0) as JSON has no infinity: a very large negative number.
template <typename T>
void append_number(std::string& s, T x) {
    if (!std::isfinite(x)) x = x > 0 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof(buf), x);
    s.append(buf, res.ptr);
}

// JSON text of a value, invalid UTF-8 replaced by U+FFFD.
std::string dump_json(const nlohmann::json& j);

// ,"timing":{"prefill_ms", "first_token_ms", "decode_ms", "total_ms", "decode_tok_per_s"}
void append_timing(std::string& s, const BatchResult& result);

// runtime/batch_formats.cpp: the OpenAI shapes, digests and verify.

// "scores":[{"text", "logprob", "tokens", "greedy"}, ...] and, for "choices", "choice".
void append_scores(std::string& s, const BatchResult& result);

// A request line in OpenAI's batch shape: it has "custom_id" or "body".
bool is_openai_request(const nlohmann::json& line);
// The native request object of an OpenAI line (with "id" from "custom_id",
// which the caller has checked): body fields mapped, ignored ones dropped.
// Throws Error(input) naming the field for anything that cannot be mapped.
nlohmann::json openai_request_to_native(const nlohmann::json& line);
// A result in OpenAI's batch output shape (the marker first), '\n' included.
std::string format_openai_result(const BatchResult& result, const Tokenizer* tokenizer,
                                 const ResultOptions& options, const std::string& digest);
// The digest of what a parsed result line holds ("" when it holds no output
// to hash), computed as result_digest_text() does at write time.
std::string content_digest(const nlohmann::json& line, ResultFormat format);

// Reads lines of at most max_bytes (the newline excluded) from a FILE, in
// fixed-size blocks: a longer line is skipped to its end and reported as
// too_long instead of growing a buffer without bound. A last line without a
// newline is returned with complete = false.
class LineReader {
public:
    struct Line {
        std::string text;
        bool complete = false;  // ended with '\n'
        bool too_long = false;  // text is empty then
        uint64_t begin = 0;     // byte offsets in the stream
        uint64_t end = 0;       // past the newline when complete
    };
    LineReader(std::FILE* f, size_t max_bytes);
    // False at the end of the stream (nothing read). Throws Error(io) on a read error.
    bool next(Line& out);

private:
    std::FILE* f_;
    std::vector<char> buf_;
    size_t pos_ = 0, end_ = 0;
    bool eof_ = false;
    uint64_t offset_ = 0;
    size_t max_;
};

}  // namespace staticlm
