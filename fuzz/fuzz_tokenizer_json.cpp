// libFuzzer target: tokenizer.json loading (load_tokenizer_json) and, for any
// file accepted, encoding a fixed text with special-token strings, byte-level
// and non-ASCII characters, then decoding the ids; chunked encode_limited
// must give encode()'s ids. Input: a tokenizer.json file.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "fuzz/fuzz_common.hpp"
#include "staticlm/error.hpp"
#include "tokenizer/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::filesystem::path path = staticlm::fuzz::scratch_path("tokenizer.json");
    staticlm::fuzz::write_scratch(path, data, size);
    try {
        auto tok = staticlm::load_tokenizer_json(path, {});
        const auto ids = tok->encode("Hello, world!  \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80 123 <s> <bos>\n\t", true);
        (void)tok->decode(ids);
        for (int id : ids) (void)tok->piece(id);
        (void)tok->token_id("<unk>");
        // Oracle for encode_limited's cut rule: chunked ids must equal encode()'s.
        static const std::string kLong = [] {
            std::string s;
            for (int i = 0; i < 6; ++i)
                s += "Hello world, the quick brown fox jumps over a lazy dog and says hi. ";
            return s;
        }();
        if (tok->encode_limited(kLong, true, std::numeric_limits<size_t>::max(), 16) !=
            tok->encode(kLong, true))
            __builtin_trap();
    } catch (const staticlm::Error&) {
    }
    return 0;
}
