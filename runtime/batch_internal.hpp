// Pieces shared by runtime/batch_io.cpp and runtime/batch_job.cpp that are not
// part of the public batch API.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace staticlm {

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
