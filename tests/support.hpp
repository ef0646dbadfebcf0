// Test helpers: where the shared data and fixtures are, skipping with a
// message when they are absent, and reading reference files.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

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

}  // namespace staticlm::test
