// Test helpers: where the shared data and fixtures are, skipping with a
// message when they are absent, and reading reference files.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <stdlib.h>

#include "staticlm/error.hpp"

namespace staticlm::test {

// Built with AddressSanitizer (tools/test.sh's sanitizer pass, where code
// runs about ten times slower): the largest parameter sweeps run a rotating
// third of their cases there, so that every parameter value still meets the
// sanitizers, and all of them in the release pass.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// A fresh directory under /tmp, removed with what it holds at scope exit;
// dir / "name" is the path of a file in it.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        char tmpl[] = "/tmp/staticlm-test-XXXXXX";
        const char* made = ::mkdtemp(tmpl);
        REQUIRE_MESSAGE(made != nullptr, "mkdtemp failed under /tmp");
        path = made;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// A whole file's bytes ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline std::filesystem::path source_dir() { return STATICLM_SOURCE_DIR; }
inline std::filesystem::path fixtures_dir() { return source_dir() / "tests" / "fixtures"; }
inline std::filesystem::path shared_data() { return source_dir() / ".." / "shared" / "data"; }

// True when ../shared/data is there; otherwise prints why the test is skipped.
inline bool have_shared_data(const char* what) {
    if (std::filesystem::is_directory(shared_data())) return true;
    MESSAGE("SKIPPED (" << what << "): " << shared_data().string()
                        << " is absent; these tests need the shared model and tokenizer files");
    return false;
}

// The real Gemma 3 270M GGUF (tools/get_model.sh), or $STATICLM_GEMMA3_GGUF.
inline std::filesystem::path gemma3_gguf() {
    if (const char* p = std::getenv("STATICLM_GEMMA3_GGUF")) return p;
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home ? home : "/root") / ".cache" / "staticlm" / "gemma-3-270m-q4_k_m.gguf";
}

// True when that file is there; otherwise prints why the test is skipped.
inline bool have_gemma3_gguf() {
    if (std::filesystem::is_regular_file(gemma3_gguf())) return true;
    MESSAGE("SKIPPED (Gemma 3 270M): " << gemma3_gguf().string()
                                       << " is absent; run tools/get_model.sh (or set STATICLM_GEMMA3_GGUF)");
    return false;
}

// A LogitsSink target that copies every row to out[pos][vocab]
// (out must hold the whole sequence): {Rows::sink, &rows}.
struct Rows {
    std::vector<float>* out;
    static void sink(void* ctx, int pos, const float* rows, int t, int vocab) {
        auto* self = static_cast<Rows*>(ctx);
        std::copy(rows, rows + size_t(t) * size_t(vocab),
                  self->out->begin() + std::ptrdiff_t(pos) * vocab);
    }
};

// Runs f and checks that it throws an Error of `kind` whose message contains
// every needle (the file, tensor, key or limit it must name).
template <class F>
void expect_error(F&& f, ErrorKind kind, std::initializer_list<std::string> needles,
                  int line = __builtin_LINE()) {  // the caller's line (gcc and clang;
                                                  // clang 14 lacks std::source_location)
    INFO("expect_error at line " << line);
    try {
        f();
        FAIL_CHECK("no error thrown");
        return;
    } catch (const Error& e) {
        CHECK_MESSAGE(e.kind() == kind, "kind " << error_kind_name(e.kind()) << ": " << e.what());
        for (const std::string& n : needles)
            CHECK_MESSAGE(std::string(e.what()).find(n) != std::string::npos,
                          "'" << n << "' not in: " << e.what());
    }
}

}  // namespace staticlm::test
