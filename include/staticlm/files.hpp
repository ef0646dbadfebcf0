// Reading a text file the way staticlm reads every input file: opened without
// blocking (a FIFO never hangs the caller), only regular files accepted
// (directories, FIFOs, devices such as /dev/zero and sockets are refused by
// name), and at most a stated number of bytes read. For the CLI's prompt files
// and any other text a tool hands to the library.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace staticlm {

// The limit staticlm applies to a JSON config or template (config.json,
// generation_config.json, tokenizer_config.json, chat_template.jinja, the
// safetensors index): a config of more than this is not a config.
inline constexpr size_t kMaxConfigFileBytes = size_t{64} << 20;

// The whole file at `path`, which must be a regular file of at most max_bytes.
// Throws Error(io) naming the file when it is missing, unreadable, a directory,
// a FIFO, a device or a socket; Error(format) naming the file, `what` and the
// limit when it holds more than max_bytes ("<file>: more than 64 MiB, the
// limit for a prompt file").
std::string read_text_file(const std::filesystem::path& path, size_t max_bytes,
                           std::string_view what);

}  // namespace staticlm
