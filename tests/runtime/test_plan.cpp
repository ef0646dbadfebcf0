// The bucket rule of RUNTIME.md, table-driven: (buckets, P, T, K) -> plan.
#include <doctest/doctest.h>

#include <vector>

#include "staticlm/error.hpp"
#include "staticlm/session.hpp"

using staticlm::Session;
using staticlm::Step;

namespace {

std::vector<Step> repeat(Step s, int n) { return std::vector<Step>(size_t(n), s); }

std::vector<Step> concat(std::vector<Step> a, const std::vector<Step>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

TEST_CASE("bucket rule: smallest bucket that holds the rest, else the largest that fits") {
    struct Row {
        std::vector<int> buckets;
        int P, T, K;
        std::vector<Step> expected;
    };
    const std::vector<Row> rows = {
        {{64, 128, 256, 512}, 0, 100, 2048, {{128, 100}}},
        {{64, 128, 256, 512}, 0, 64, 2048, {{64, 64}}},
        {{64, 128, 256, 512}, 0, 600, 2048, {{512, 512}, {128, 88}}},
        {{64, 128, 256, 512}, 0, 1, 2048, {{1, 1}}},
        {{16, 32}, 10, 20, 64, {{32, 20}}},
        {{3, 5}, 0, 7, 100, {{5, 5}, {3, 2}}},
        {{5, 3}, 0, 13, 100, {{5, 5}, {5, 5}, {3, 3}}},  // unsorted input is sorted
        // capacity forces a smaller block, then the fallback to Q = 1
        {{64, 96}, 0, 100, 100, concat({{96, 96}}, repeat({1, 1}, 4))},
        {{64, 96}, 50, 40, 100, repeat({1, 1}, 40)},
        {{16, 64}, 40, 30, 100, {{16, 16}, {16, 14}}},
        {{8}, 5, 3, 8, repeat({1, 1}, 3)},
        {{2, 4}, 0, 8, 8, {{4, 4}, {4, 4}}},
        {{4}, 0, 6, 6, {{4, 4}, {1, 1}, {1, 1}}},
        // the whole capacity in one block
        {{32}, 0, 32, 32, {{32, 32}}},
    };
    for (const Row& r : rows) {
        CAPTURE(r.P);
        CAPTURE(r.T);
        CAPTURE(r.K);
        CHECK(Session::plan(r.buckets, r.P, r.T, r.K) == r.expected);
    }
}

TEST_CASE("bucket rule: invalid bucket lists and capacity are errors") {
    using staticlm::Error;
    using staticlm::ErrorKind;
    auto kind_of = [](auto&& fn) {
        try {
            fn();
        } catch (const Error& e) {
            return e.kind();
        }
        return ErrorKind::io;  // "no error" marker for these tests
    };
    CHECK(kind_of([] { Session::plan(std::vector<int>{}, 0, 4, 16); }) == ErrorKind::config);
    CHECK(kind_of([] { Session::plan(std::vector<int>{0, 4}, 0, 4, 16); }) == ErrorKind::config);
    CHECK(kind_of([] { Session::plan(std::vector<int>{32}, 0, 4, 16); }) == ErrorKind::config);
    CHECK(kind_of([] { Session::plan(std::vector<int>{4}, 10, 7, 16); }) == ErrorKind::capacity);
}
