// Test helpers: where the shared data and fixtures are, skipping with a
// message when they are absent, and reading reference files.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "staticlm/error.hpp"

namespace staticlm::test {

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
