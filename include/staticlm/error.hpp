// The one error type of staticlm: every failure on bad input is thrown as an
// Error with a kind (for callers and tests) and a message that names the file,
// tensor, index or limit involved. Nothing aborts on bad input.
#pragma once

#include <stdexcept>
#include <string>

namespace staticlm {

enum class ErrorKind {
    io,            // a file or directory cannot be read
    format,        // a file is malformed (JSON, safetensors header, tokenizer)
    unsupported,   // a valid file asks for something staticlm does not do
    model,         // tensors missing, misshaped or inconsistent with the config
    config,        // invalid session/generation settings (buckets, threads, ...)
    input,         // invalid call input: empty, token id out of range, bad UTF-8
    capacity,      // P + T > max_seq and similar limits
    busy,          // a session entered by a second thread while a call is running
    aborted,       // a callback asked to stop (load progress, a session's abort callback)
};

inline const char* error_kind_name(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::io: return "io";
        case ErrorKind::format: return "format";
        case ErrorKind::unsupported: return "unsupported";
        case ErrorKind::model: return "model";
        case ErrorKind::config: return "config";
        case ErrorKind::input: return "input";
        case ErrorKind::capacity: return "capacity";
        case ErrorKind::busy: return "busy";
        case ErrorKind::aborted: return "aborted";
    }
    return "?";
}

class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string& message)
        : std::runtime_error(message), kind_(kind) {}
    ErrorKind kind() const { return kind_; }

private:
    ErrorKind kind_;
};

}  // namespace staticlm
