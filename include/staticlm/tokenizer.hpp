// The tokenizer interface shared by the SentencePiece (tokenizer.model) and
// Hugging Face tokenizer.json implementations.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm {

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Ids of `text`. add_special: prepend BOS (when the tokenizer's config
    // says so) — the text itself is never split inside special-token strings
    // for tokenizer.json; SentencePiece treats them as plain text.
    virtual std::vector<int> encode(std::string_view text, bool add_special) const = 0;
    // encode(), stopping early for callers with a token budget (a session's
    // capacity): when the text has at most max_tokens ids (specials included)
    // the result is exactly encode(text, add_special); otherwise it has more
    // than max_tokens ids — a prefix of the text's ids, how many more is
    // unspecified — and the rest of the text is not encoded. Texts longer than
    // chunk_bytes are encoded in chunks cut where the tokenizer provably
    // splits ("letter space letter", see docs/HARDENING.md), so time and memory
    // grow with the ids produced, not with the text; a text with no such cut
    // (or a tokenizer where none is provable) is encoded whole. Invalid UTF-8
    // anywhere in `text` is Error(input), as for encode().
    static constexpr size_t kEncodeChunkBytes = size_t{16} << 10;
    std::vector<int> encode_limited(std::string_view text, bool add_special, size_t max_tokens,
                                    size_t chunk_bytes = kEncodeChunkBytes) const;
    // Text of ids (special/control tokens are dropped).
    virtual std::string decode(const std::vector<int>& ids) const = 0;
    virtual int vocab_size() const = 0;
    // Id of a piece/token string, or -1.
    virtual int token_id(std::string_view piece) const = 0;
    virtual std::string piece(int id) const = 0;
    virtual int bos_id() const = 0;  // -1 when none
    virtual int eos_id() const = 0;  // -1 when none

protected:
    // encode_limited for a text longer than chunk_bytes; the default encodes it whole.
    virtual std::vector<int> encode_in_chunks(std::string_view text, bool add_special,
                                              size_t max_tokens, size_t chunk_bytes) const;
};

// Streaming decode: feed ids one at a time, get the newly completed text.
// Holds back incomplete UTF-8 sequences (byte-fallback pieces) so that every
// returned chunk is valid UTF-8, and applies the leading-space rule (the space
// a SentencePiece piece carries after BOS is dropped once, as decode() does).
// Each push decodes only a short window of recent ids (Tokenizer::decode
// returns a new string, so a push allocates that much; its own buffers are
// reserved at construction).
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer);
    // Returns the text that is complete after `id` (may be empty).
    std::string_view push(int id);
    // Returns whatever is still held back (invalid sequences become U+FFFD).
    std::string_view flush();
    void reset();

private:
    void trim();  // drops old ids from the window when that cannot change the text

    const Tokenizer& tok_;
    std::vector<int> ids_;       // window: recent ids since the last reset
    std::string text_;           // decode(ids_)
    size_t emitted_ = 0;         // bytes of text_ already returned
    std::string out_;
};

// Loads the tokenizer of a model directory: tokenizer.model (SentencePiece)
// unless absent or prefer_json, else tokenizer.json (+ tokenizer_config.json).
// Throws Error naming the file.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir,
                                          bool prefer_json = false);

}  // namespace staticlm
