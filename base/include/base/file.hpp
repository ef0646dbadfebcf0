// Files as every staticlm reader opens them: O_NONBLOCK | O_CLOEXEC, then
// fstat — only regular files are read, whatever the name says — with reads at
// offsets that turn a file truncated under us into an error naming it (no
// mapping, so no SIGBUS), and model-directory names that may not resolve
// outside the directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "staticlm/files.hpp"

namespace staticlm {

// Limits on what is read whole (JSON configs: kMaxConfigFileBytes).
inline constexpr size_t kMaxTokenizerFileBytes = size_t{1} << 30;  // tokenizer.json / .model

class File {
public:
    // Opens `path` read-only. Throws Error(io): "<path>: not found", "<path>:
    // is a directory, not a file", "<path>: is a FIFO (named pipe), not a
    // regular file", "... a character device ...", "<path>: cannot open: <why>".
    explicit File(const std::filesystem::path& path);
    ~File();
    File(File&& other) noexcept;
    File& operator=(File&& other) noexcept;
    File(const File&) = delete;
    File& operator=(const File&) = delete;

    // nullopt when nothing is at `path` (ENOENT); other failures throw as above.
    static std::optional<File> open_if_exists(const std::filesystem::path& path);

    const std::filesystem::path& path() const { return path_; }
    uint64_t size() const { return size_; }  // when opened

    // Reads exactly n bytes at `offset` into dst. A file that ends first (it
    // was truncated after it was opened) or a read error is Error(io) naming
    // the file and the byte range.
    void read_at(uint64_t offset, void* dst, size_t n) const;
    // The whole file; more than max_bytes is Error(format) naming `what` and
    // the limit (the size is not trusted: reading stops at max_bytes + 1).
    std::string read_all(size_t max_bytes, std::string_view what) const;

private:
    std::filesystem::path path_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

// "64 MiB", "1 GiB", "4096 bytes": a limit as messages state it.
std::string byte_limit_string(size_t bytes);

// The file `name` of the model directory `dir`, which must stay inside it: a
// symbolic link whose target lies outside `dir` is refused (Error(io) naming
// the link, its target and the directory), except in the Hugging Face hub
// cache layout, where <repo>/snapshots/<rev>/<name> links into <repo>/blobs/.
// Returns the resolved path, or nullopt when there is no such file. `name`
// must be a plain file name (no '/', no NUL).
std::optional<std::filesystem::path> model_file(const std::filesystem::path& dir,
                                                std::string_view name);

// `s` made safe to quote in a message: control bytes, NUL and bytes that are
// not valid UTF-8 become \xNN, and a long string is cut to max_bytes with its
// length stated ("abc..." (12345 bytes)).
std::string printable(std::string_view s, size_t max_bytes = 160);

}  // namespace staticlm
