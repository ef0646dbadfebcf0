// libFuzzer target: the batch file readers. Byte 0 picks the reader: request
// lines (staticlm's shape and OpenAI's batch shape, each line of the rest of
// the input through parse_request, then read_requests on the whole file), or
// a results file (scan_results: native and OpenAI result lines, their
// digests, the torn-line rule) and verify_results against itself. Bad input
// may only surface as a failed request or staticlm::Error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_common.hpp"
#include "staticlm/batch.hpp"
#include "staticlm/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace staticlm;
    if (size < 1) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    RequestLimits limits;
    limits.max_line_bytes = 1 << 16;
    static const auto requests = fuzz::scratch_path("batch_requests");
    static const auto results = fuzz::scratch_path("batch_results");
    try {
        if (data[0] % 2 == 0) {
            int n = 0;
            for (size_t b = 0; b <= text.size();) {
                const size_t e = std::min(text.find('\n', b), text.size());
                const BatchRequest r = parse_request(text.substr(b, e - b), ++n, RequestDefaults{}, limits);
                if (!r.failed && r.key.empty()) __builtin_trap();  // a usable request always has a key
                b = e + 1;
            }
            fuzz::write_scratch(requests, data + 1, size - 1);
            (void)read_requests(requests.string(), RequestDefaults{}, limits);
        } else {
            fuzz::write_scratch(results, data + 1, size - 1);
            (void)scan_results(results, limits.max_line_bytes);
            static const std::string empty_input = [] {
                const auto p = fuzz::scratch_path("batch_empty_input");
                fuzz::write_scratch(p, nullptr, 0);
                return p.string();
            }();
            (void)verify_results(empty_input, {results.string()}, {results.string()}, limits);
        }
    } catch (const Error&) {
    }
    return 0;
}
