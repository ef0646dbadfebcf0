// libFuzzer target: tokenizer.json loading (load_tokenizer_json) and, for any
// file accepted, encoding a fixed text with special-token strings, byte-level
// and non-ASCII characters, then decoding the ids; chunked encode_limited
// must give encode()'s ids. Input: a tokenizer.json file.
#include <cstddef>
#include <cstdint>

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
        staticlm::fuzz::check_chunked_encoding(*tok);
    } catch (const staticlm::Error&) {
    }
    return 0;
}
