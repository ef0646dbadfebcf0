// SentencePiece ModelProto checks before libsentencepiece loads it: pieces,
// the normalizer's and denormalizer's precompiled_charsmap, and the flags that
// decide whether long texts may be encoded in chunks (see sp_model.hpp).
#include "tokenizer/sp_model.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <unordered_map>

#include "base/file.hpp"
#include "staticlm/error.hpp"

namespace staticlm {
namespace {

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
    // Reads one field: a varint's value in `value`, a length-delimited payload in `bytes`.
    bool field(uint32_t& number, uint32_t& wire_type, uint64_t& value, std::string_view& bytes) {
        const uint64_t key = varint();
        number = uint32_t(key >> 3);
        wire_type = uint32_t(key & 7);
        bytes = {};
        value = 0;
        switch (wire_type) {
            case 0:
                value = varint();
                break;
            case 1:
                skip(8);
                break;
            case 5:
                skip(4);
                break;
            case 2: {
                const uint64_t n = varint();
                if (n > in.size() - std::min(at, in.size())) ok = false;
                if (ok) bytes = in.substr(at, size_t(n));
                skip(size_t(n));
                break;
            }
            default:
                ok = false;  // groups are not used by ModelProto
        }
        return ok;
    }
    void skip(size_t n) {
        if (n > in.size() - std::min(at, in.size()))
            ok = false;
        else
            at += n;
    }
};

// darts-clone's DoubleArrayUnit, as libsentencepiece reads it.
struct Unit {
    uint32_t u;
    bool has_leaf() const { return ((u >> 8) & 1) == 1; }
    uint32_t value() const { return u & ((1u << 31) - 1); }
    uint32_t label() const { return u & ((1u << 31) | 0xFF); }
    uint32_t offset() const { return (u >> 10) << ((u & (1u << 9)) >> 6); }
};

constexpr int kMaxTrieResults = 32;  // Normalizer::kMaxTrieResultsSize

}  // namespace

std::string check_charsmap(std::string_view blob, bool& touches_ascii) {
    if (blob.empty()) return "";
    if (blob.size() > kMaxCharsmapBytes)
        return std::to_string(blob.size()) + " bytes, more than the " +
               byte_limit_string(kMaxCharsmapBytes) + " staticlm accepts";
    if (blob.size() <= 4) return "blob of " + std::to_string(blob.size()) + " bytes has no trie";
    uint32_t trie_bytes = 0;
    std::memcpy(&trie_bytes, blob.data(), 4);  // little-endian
    if (uint64_t(trie_bytes) + 4 > blob.size())
        return "trie size " + std::to_string(trie_bytes) + " runs past the blob (" +
               std::to_string(blob.size()) + " bytes)";
    const size_t n_units = trie_bytes / 4;
    if (n_units == 0) return "trie size " + std::to_string(trie_bytes) + " holds no unit";
    const std::string_view normalized = blob.substr(4 + size_t(trie_bytes));
    auto unit = [&](size_t i) {
        Unit x;
        std::memcpy(&x.u, blob.data() + 4 + 4 * i, 4);
        return x;
    };
    // darts-clone builds its array from a DAWG, so a node may have several
    // parents; a cycle, though, would let a long input collect unbounded
    // results. Depth-first, iteratively: state 0 new, 1 on the path, 2 done;
    // most[node] = the most leaves on a path from node down.
    std::vector<uint8_t> state(n_units, 0), most(n_units, 0);
    struct Frame {
        size_t node, base;
        uint32_t next_c;
        uint8_t best;
    };
    std::vector<Frame> stack;
    auto enter = [&](size_t node) -> std::string {
        const size_t base = node ^ unit(node).offset();
        // The search reads array[base ^ c] for the next input byte c before
        // comparing labels: the whole 256-slot block must be inside the array.
        const size_t block = base & ~size_t{0xFF};
        if (block + 256 > n_units)
            return "a node's children [" + std::to_string(block) + ", " +
                   std::to_string(block + 256) + ") lie outside the trie's " +
                   std::to_string(n_units) + " units";
        if (node != 0 && unit(node).has_leaf()) {
            if (base >= n_units)
                return "a leaf value at unit " + std::to_string(base) + " is outside the trie";
            const uint32_t value = unit(base).value();
            if (value >= normalized.size() ||
                normalized.find('\0', value) == std::string_view::npos)
                return "a replacement at offset " + std::to_string(value) +
                       " is not a NUL-terminated string inside the " +
                       std::to_string(normalized.size()) + "-byte table";
        }
        state[node] = 1;
        stack.push_back({node, base, 0, 0});
        return "";
    };
    if (std::string why = enter(0); !why.empty()) return why;
    while (!stack.empty()) {
        Frame& f = stack.back();
        bool descended = false;
        while (!descended && f.next_c < 256) {  // `descended` first: `f` may dangle then
            const uint32_t c = f.next_c++;
            const size_t child = f.base ^ c;
            if (unit(child).label() != c) continue;
            if (c >= 0x20 && c < 0x7f) touches_ascii = true;
            if (state[child] == 1)
                return "unit " + std::to_string(child) + " lies on a cycle: not a trie";
            if (state[child] == 2) {
                f.best = std::max(f.best, most[child]);
                continue;
            }
            if (std::string why = enter(child); !why.empty()) return why;
            descended = true;  // `f` may dangle now: the loop re-reads the top
        }
        if (descended) continue;
        const size_t node = f.node;
        const int total = f.best + ((node != 0 && unit(node).has_leaf()) ? 1 : 0);
        if (total > kMaxTrieResults)
            return "a key has more than " + std::to_string(kMaxTrieResults) +
                   " prefixes with rules";
        most[node] = uint8_t(total);
        state[node] = 2;
        stack.pop_back();
        if (!stack.empty()) stack.back().best = std::max(stack.back().best, most[node]);
    }
    return "";
}

SpModelFacts check_sentencepiece_model(std::string_view proto, const std::string& file) {
    SpModelFacts facts;
    int32_t model_type = 1;                 // UNIGRAM unless the trainer spec says otherwise
    std::string_view charsmap, decharsmap;  // protobuf: the last occurrence wins (messages merge)
    std::unordered_map<std::string_view, size_t> seen;
    Wire model{proto};
    uint32_t number = 0, wire = 0;
    uint64_t value = 0;
    std::string_view bytes;
    // Every byte is read: a group (which protobuf would skip, and which no
    // ModelProto has) or a cut-short field could otherwise hide pieces or
    // flags from these checks while the library still loads them.
    auto unreadable = [&](const Wire& w, const char* what) {
        if (!w.ok)
            throw Error(ErrorKind::format, file + ": not a SentencePiece model: unreadable protobuf field in " + what +
                                               " (a group or a field cut short), message at byte " +
                                               std::to_string(model.at));
    };
    // An enum field as protobuf stores it: the varint cut to int32, values
    // outside the enum ignored (the field keeps its earlier value).
    auto enum_value = [](uint64_t v, int32_t lo, int32_t hi, int32_t& out) {
        const auto e = static_cast<int32_t>(static_cast<uint32_t>(v));
        if (e >= lo && e <= hi) out = e;
    };
    while (!model.done() && model.field(number, wire, value, bytes)) {
        if (wire != 2) continue;
        Wire sub{bytes};
        uint32_t n2 = 0, w2 = 0;
        uint64_t v2 = 0;
        std::string_view b2;
        if (number == 1) {  // pieces: SentencePiece.piece = 1, .type = 3 (the last one wins)
            std::string_view piece;
            int32_t type = kSpPieceNormal;
            while (!sub.done() && sub.field(n2, w2, v2, b2)) {
                if (n2 == 1 && w2 == 2) piece = b2;
                if (n2 == 3 && w2 == 0) enum_value(v2, 1, 6, type);
            }
            unreadable(sub, "a piece");
            const size_t index = facts.pieces.size();
            const std::string where = file + ": piece " + std::to_string(index);
            if (piece.empty()) throw Error(ErrorKind::format, where + " is empty");
            if (piece.find('\0') != std::string_view::npos)
                throw Error(ErrorKind::format, where + " contains a NUL byte");
            const auto [it, fresh] = seen.emplace(piece, index);
            if (!fresh)
                throw Error(ErrorKind::format,
                            where + " repeats piece " + std::to_string(it->second));
            facts.pieces.push_back(piece);
            facts.piece_types.push_back(uint8_t(type));
        } else if (number == 2) {  // TrainerSpec
            while (!sub.done() && sub.field(n2, w2, v2, b2)) {
                if (w2 != 0) continue;
                if (n2 == 3) enum_value(v2, 1, 4, model_type);
                if (n2 == 24) facts.treat_whitespace_as_suffix = v2 != 0;
            }
            unreadable(sub, "trainer_spec");
        } else if (number == 3) {  // NormalizerSpec
            while (!sub.done() && sub.field(n2, w2, v2, b2)) {
                if (n2 == 2 && w2 == 2) charsmap = b2;
                if (w2 != 0) continue;
                if (n2 == 3) facts.add_dummy_prefix = v2 != 0;
                if (n2 == 4) facts.remove_extra_whitespaces = v2 != 0;
                if (n2 == 5) facts.escape_whitespaces = v2 != 0;
            }
            unreadable(sub, "normalizer_spec");
        } else if (number == 5) {  // denormalizer_spec: a NormalizerSpec used by decode
            while (!sub.done() && sub.field(n2, w2, v2, b2))
                if (n2 == 2 && w2 == 2) decharsmap = b2;
            unreadable(sub, "denormalizer_spec");
        }
    }
    unreadable(model, "the model");
    facts.bpe = model_type == 2;
    bool ascii = false;
    if (const std::string why = check_charsmap(charsmap, ascii); !why.empty())
        throw Error(
            ErrorKind::format,
            file + ": normalizer_spec.precompiled_charsmap is not a valid charsmap: " + why);
    facts.charsmap_touches_ascii = ascii;
    bool unused = false;
    if (const std::string why = check_charsmap(decharsmap, unused); !why.empty())
        throw Error(
            ErrorKind::format,
            file + ": denormalizer_spec.precompiled_charsmap is not a valid charsmap: " + why);
    return facts;
}

}  // namespace staticlm
