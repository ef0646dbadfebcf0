// Shared helpers of the libFuzzer targets: a per-process scratch file on tmpfs
// for parsers that only take paths, the encode_limited oracle of the tokenizer
// targets, and the rule that bad input may only ever surface as
// staticlm::Error (anything else escapes and libFuzzer reports it).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>

#include "staticlm/tokenizer.hpp"

namespace staticlm::fuzz {

// /dev/shm when present (no disk traffic per execution), else the temp dir.
inline std::filesystem::path scratch_path(const char* name) {
    std::filesystem::path dir = "/dev/shm";
    if (!std::filesystem::is_directory(dir)) dir = std::filesystem::temp_directory_path();
    return dir / ("staticlm_fuzz_" + std::to_string(::getpid()) + "_" + name);
}

inline void write_scratch(const std::filesystem::path& p, const uint8_t* data, size_t size) {
    std::FILE* f = std::fopen(p.c_str(), "wb");
    if (!f) return;
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
}

// Oracle for encode_limited's cut rule: a long text's ids cut into chunks of
// 16 bytes must be encode()'s; a difference traps (libFuzzer saves the input).
inline void check_chunked_encoding(const Tokenizer& tok) {
    static const std::string kLong = [] {
        std::string s;
        for (int i = 0; i < 6; ++i) s += "Hello world, the quick brown fox jumps over a lazy dog and says hi. ";
        return s;
    }();
    if (tok.encode_limited(kLong, true, std::numeric_limits<size_t>::max(), 16) != tok.encode(kLong, true))
        __builtin_trap();
}

}  // namespace staticlm::fuzz
