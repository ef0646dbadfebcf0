// SentencePiece tokenizer (tokenizer.model) through libsentencepiece, with the
// BOS/EOS settings of tokenizer_config.json. Decoding follows the library's own
// rules (byte-fallback pieces, the dropped leading space, control tokens).
#include "tokenizer/tokenizer.hpp"

#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>

#include "staticlm/error.hpp"

namespace staticlm {
namespace {

// What tokenizer_config.json says about special tokens; absent keys keep the defaults.
struct SpecialSettings {
    bool add_bos = true;
    bool add_eos = false;
    std::string bos_token;  // empty: use the model's bos id
    std::string eos_token;
};

std::string token_string(const nlohmann::json& v, const std::filesystem::path& file,
                         const char* key) {
    // Either "<s>" or an AddedToken object {"content": "<s>", ...}.
    if (v.is_null()) return {};
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string())
        return v["content"].get<std::string>();
    throw Error(ErrorKind::format, file.string() + ": \"" + key +
                                       "\" is neither a string nor {\"content\": string}");
}

bool flag(const nlohmann::json& cfg, const char* key, bool fallback,
          const std::filesystem::path& file) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return fallback;
    if (!it->is_boolean())
        throw Error(ErrorKind::format, file.string() + ": \"" + key + "\" is not a boolean");
    return it->get<bool>();
}

SpecialSettings read_special_settings(const std::filesystem::path& file) {
    SpecialSettings s;
    if (file.empty() || !std::filesystem::exists(file)) return s;  // optional file
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(ErrorKind::io, "cannot read " + file.string());
    nlohmann::json cfg;
    try {
        cfg = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorKind::format, file.string() + ": invalid JSON: " + e.what());
    }
    if (!cfg.is_object()) throw Error(ErrorKind::format, file.string() + ": not a JSON object");
    s.add_bos = flag(cfg, "add_bos_token", true, file);
    s.add_eos = flag(cfg, "add_eos_token", false, file);
    if (cfg.contains("bos_token")) s.bos_token = token_string(cfg["bos_token"], file, "bos_token");
    if (cfg.contains("eos_token")) s.eos_token = token_string(cfg["eos_token"], file, "eos_token");
    return s;
}

// A reader of the protobuf wire format, just enough to walk ModelProto.
struct Wire {
    std::string_view in;
    size_t at = 0;
    bool ok = true;

    bool done() const { return !ok || at >= in.size(); }
    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (at >= in.size()) break;
            const auto b = static_cast<unsigned char>(in[at++]);
            v |= uint64_t(b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
        }
        ok = false;
        return 0;
    }
    // Reads one field; a length-delimited payload is returned in `bytes`.
    bool field(uint32_t& number, std::string_view& bytes) {
        const uint64_t key = varint();
        number = uint32_t(key >> 3);
        bytes = {};
        switch (key & 7) {
            case 0: varint(); break;
            case 1: skip(8); break;
            case 5: skip(4); break;
            case 2: {
                const uint64_t n = varint();
                if (n > in.size() - std::min(at, in.size())) ok = false;
                if (ok) bytes = in.substr(at, size_t(n));
                skip(size_t(n));
                break;
            }
            default: ok = false;  // groups are not used by ModelProto
        }
        return ok;
    }
    void skip(size_t n) {
        if (n > in.size() - std::min(at, in.size())) ok = false;
        else at += n;
    }
};

// libsentencepiece builds its piece tries without checking what it puts in
// them, and a piece that is empty or holds a NUL byte makes it throw through
// code that cannot unwind (std::terminate, found by fuzz_sentencepiece). So
// the pieces are read here first. A message that does not parse is left to
// the library, which reports it as a status.
void check_pieces(std::string_view proto, const std::string& file) {
    Wire model{proto};
    std::unordered_map<std::string_view, size_t> seen;
    size_t index = 0;
    uint32_t number = 0;
    std::string_view bytes;
    while (!model.done() && model.field(number, bytes)) {
        if (number != 1) continue;  // ModelProto.pieces = 1
        Wire sp{bytes};
        std::string_view piece;  // SentencePiece.piece = 1; the last one wins
        std::string_view b;
        while (!sp.done() && sp.field(number, b))
            if (number == 1) piece = b;
        if (!sp.ok) return;
        const std::string where = file + ": piece " + std::to_string(index);
        if (piece.empty()) throw Error(ErrorKind::format, where + " is empty");
        if (piece.find('\0') != std::string_view::npos)
            throw Error(ErrorKind::format, where + " contains a NUL byte");
        const auto [it, fresh] = seen.emplace(piece, index);
        if (!fresh)
            throw Error(ErrorKind::format,
                        where + " repeats piece " + std::to_string(it->second));
        ++index;
    }
}

class SentencePieceTokenizer final : public Tokenizer {
public:
    SentencePieceTokenizer(const std::filesystem::path& model_file,
                           const std::filesystem::path& tokenizer_config)
        : file_(model_file.string()) {
        if (!std::filesystem::is_regular_file(model_file))
            throw Error(ErrorKind::io, "SentencePiece model not found: " + file_);
        std::ifstream in(model_file, std::ios::binary);
        if (!in) throw Error(ErrorKind::io, "cannot read " + file_);
        const std::string proto((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
        check_pieces(proto, file_);
        const auto status = sp_.LoadFromSerializedProto(proto);
        if (!status.ok())
            throw Error(ErrorKind::format,
                        file_ + ": not a SentencePiece model: " + status.ToString());
        const auto special = read_special_settings(tokenizer_config);
        add_bos_ = special.add_bos;
        add_eos_ = special.add_eos;
        bos_ = resolve(special.bos_token, sp_.bos_id(), tokenizer_config, "bos_token");
        eos_ = resolve(special.eos_token, sp_.eos_id(), tokenizer_config, "eos_token");
    }

    std::vector<int> encode(std::string_view text, bool add_special) const override {
        check_utf8(text, file_);  // the library would silently replace invalid bytes
        std::vector<int> ids;
        const auto status = sp_.Encode(text, &ids);
        if (!status.ok())
            throw Error(ErrorKind::input, file_ + ": cannot encode text: " + status.ToString());
        if (add_special && add_bos_ && bos_ >= 0) ids.insert(ids.begin(), bos_);
        if (add_special && add_eos_ && eos_ >= 0) ids.push_back(eos_);
        return ids;
    }

    std::string decode(const std::vector<int>& ids) const override {
        for (size_t i = 0; i < ids.size(); ++i) check_id(ids[i], i);
        std::string text;
        const auto status = sp_.Decode(ids, &text);
        if (!status.ok())
            throw Error(ErrorKind::input, file_ + ": cannot decode ids: " + status.ToString());
        return text;
    }

    int vocab_size() const override { return sp_.GetPieceSize(); }

    int token_id(std::string_view piece) const override {
        const int id = sp_.PieceToId(piece);
        // PieceToId answers unk_id for unknown pieces; only "<unk>" itself maps there.
        if (id < 0 || (id == sp_.unk_id() && sp_.IdToPiece(id) != piece)) return -1;
        return id;
    }

    std::string piece(int id) const override {
        check_id(id, 0);
        return sp_.IdToPiece(id);
    }

    int bos_id() const override { return bos_; }
    int eos_id() const override { return eos_; }

private:
    void check_id(int id, size_t index) const {
        if (id < 0 || id >= sp_.GetPieceSize())
            throw Error(ErrorKind::input, file_ + ": token id " + std::to_string(id) +
                                              " at index " + std::to_string(index) +
                                              " outside the vocabulary [0, " +
                                              std::to_string(sp_.GetPieceSize()) + ")");
    }

    int resolve(const std::string& token, int fallback, const std::filesystem::path& config,
                const char* key) const {
        if (token.empty()) return fallback;
        const int id = token_id(token);
        if (id < 0)
            throw Error(ErrorKind::format, config.string() + ": " + key + " \"" + token +
                                               "\" is not a piece of " + file_);
        return id;
    }

    sentencepiece::SentencePieceProcessor sp_;
    std::string file_;
    bool add_bos_ = true;
    bool add_eos_ = false;
    int bos_ = -1;
    int eos_ = -1;
};

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file,
                                              const std::filesystem::path& tokenizer_config) {
    return std::make_unique<SentencePieceTokenizer>(model_file, tokenizer_config);
}

}  // namespace staticlm
