// Saved session state: the tokens, last logits and K/V of positions < pos of
// a Session, behind a header with the model's identity and a 64-bit FNV-1a
// checksum (the format is in docs/EMBEDDING.md). Restoring validates the whole
// state before it writes anything, so a bad one leaves the session unchanged.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "session_impl.hpp"
#include "staticlm/error.hpp"

namespace staticlm {

namespace {

constexpr char kMagic[8] = {'S', 'L', 'M', 'S', 'T', 'A', 'T', 'E'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 80;
constexpr size_t kChecksumBytes = 8;
constexpr size_t kLayerRecordBytes = 8;  // u32 layer index, u32 first position

// 64-bit FNV-1a.
struct Fnv {
    uint64_t h = 0xcbf29ce484222325ull;
    void bytes(const void* data, size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    }
    template <class T>
    void value(const T& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        bytes(&v, sizeof v);
    }
    void text(const std::string& s) {
        value(uint64_t(s.size()));
        bytes(s.data(), s.size());
    }
    void floats(const std::vector<float>& v) {
        value(uint64_t(v.size()));
        bytes(v.data(), v.size() * sizeof(float));
    }
};

// Every config field the forward pass reads: two models with equal hashes
// compute the same function of the same weights.
uint64_t config_hash(const ModelConfig& c) {
    Fnv f;
    f.text(c.architecture);
    f.value(c.hidden);
    f.value(c.vocab);
    f.value(c.n_layers);
    f.value(c.rms_eps);
    f.value(c.norm_weight_offset);
    f.value(int(c.activation));
    f.value(c.embed_scale);
    f.value(c.final_softcap);
    f.value(c.residual_scale);
    f.value(c.logits_divisor);
    f.value(c.tie_embeddings);
    f.value(c.per_layer_dim);
    f.value(c.per_layer_vocab);
    for (const LayerConfig& l : c.layers) {
        f.value(int(l.attention));
        f.value(l.n_heads);
        f.value(l.n_kv_heads);
        f.value(l.head_dim);
        f.value(l.window);
        f.value(l.kv_source);
        f.value(l.ffn_dim);
        f.value(l.attn_scale);
        f.floats(l.inv_freq);
        f.floats(l.inv_freq_long);
        f.value(l.rope_long_after);
        f.value(l.rotary_dims);
        f.value(l.rope_scale);
        for (bool b : {l.qk_norm, l.v_norm, l.k_eq_v, l.qkv_bias, l.sandwich_norms, l.layer_scalar})
            f.value(b);
    }
    return f.h;
}

// The weight formats: the one asked for, native or not, the activation bits
// and the format of every matrix (native models mix them).
uint64_t format_hash(const Model& m) {
    Fnv f;
    f.value(uint8_t(m.weight_type()));
    f.value(m.native_weights());
    f.value(m.act_bits());
    for (WeightType t : m.matrix_types()) f.value(uint8_t(t));
    return f.h;
}

// A fingerprint of the packed weights: the whole arena up to 1 MiB, else 4096
// evenly spaced 64-byte pieces of it (and its size). Cheap on any model, and
// two checkpoints of one config (a fine-tune, another seed) differ in it.
uint64_t weights_hash(const Model& m) {
    const std::byte* data = m.arena_.data();
    const size_t n = m.arena_.size();
    Fnv f;
    f.value(uint64_t(n));
    constexpr size_t kWhole = size_t(1) << 20, kPieces = 4096, kPiece = 64;
    if (n <= kWhole) {
        f.bytes(data, n);
    } else {
        for (size_t i = 0; i < kPieces; ++i)
            f.bytes(data + (n - kPiece) / (kPieces - 1) * i, kPiece);
    }
    return f.h;
}

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string weights_name(uint8_t type, bool native, int act_bits) {
    std::string s = native ? "native" : weight_type_name(WeightType(type));
    return s + " weights, " + std::to_string(act_bits) + "-bit activations";
}

// Little-endian fields at fixed offsets.
void put_u32(std::byte* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = std::byte(v >> (8 * i));
}
void put_u64(std::byte* p, uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = std::byte(v >> (8 * i));
}
uint32_t get_u32(const std::byte* p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(p[i]) << (8 * i);
    return v;
}
uint64_t get_u64(const std::byte* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
    return v;
}

// The header, in the order of its bytes (offsets in docs/EMBEDDING.md).
struct Header {
    uint64_t config = 0, weights = 0, format = 0;
    uint8_t weight_type = 0, native = 0, act_bits = 0, kv = 0, ring = 0;
    uint32_t vocab = 0, n_layers = 0, max_seq = 0, pos = 0, n_kv_layers = 0;
    uint64_t payload = 0;

    void write(std::byte* p) const {
        std::memcpy(p, kMagic, 8);
        put_u32(p + 8, kVersion);
        put_u32(p + 12, uint32_t(kHeaderBytes));
        put_u64(p + 16, config);
        put_u64(p + 24, weights);
        put_u64(p + 32, format);
        p[40] = std::byte(weight_type);
        p[41] = std::byte(native);
        p[42] = std::byte(act_bits);
        p[43] = std::byte(kv);
        p[44] = std::byte(ring);
        std::memset(p + 45, 0, 3);
        put_u32(p + 48, vocab);
        put_u32(p + 52, n_layers);
        put_u32(p + 56, max_seq);
        put_u32(p + 60, pos);
        put_u32(p + 64, n_kv_layers);
        put_u32(p + 68, 0);
        put_u64(p + 72, payload);
    }
    static Header read(const std::byte* p) {
        Header h;
        h.config = get_u64(p + 16);
        h.weights = get_u64(p + 24);
        h.format = get_u64(p + 32);
        h.weight_type = uint8_t(p[40]);
        h.native = uint8_t(p[41]);
        h.act_bits = uint8_t(p[42]);
        h.kv = uint8_t(p[43]);
        h.ring = uint8_t(p[44]);
        h.vocab = get_u32(p + 48);
        h.n_layers = get_u32(p + 52);
        h.max_seq = get_u32(p + 56);
        h.pos = get_u32(p + 60);
        h.n_kv_layers = get_u32(p + 64);
        h.payload = get_u64(p + 72);
        return h;
    }
};

Error bad_state(const std::string& what) {
    return Error(ErrorKind::format, "saved state: " + what);
}
Error other_session(const std::string& what) {
    return Error(ErrorKind::input, "saved state is of another session: " + what);
}

// The first position of layer il a state holds: a ring keeps the slots
// written last, [high_water - n_slots, high_water), of which those < pos
// belong to the sequence; full storage holds them all.
int first_held(const StaticKVCache& cache, int il, int pos, int high_water) {
    return std::clamp(high_water - cache.view(il).n_slots, 0, pos);
}

}  // namespace

size_t Session::state_bytes() const {
    const Impl& s = *impl_;
    size_t n = kHeaderBytes + size_t(s.seq.pos) * sizeof(int32_t) +
               s.last_logits.size() * sizeof(float) + kChecksumBytes;
    for (int il = 0; il < s.seq.cache.n_layers(); ++il)
        if (s.seq.cache.owns(il))
            n += kLayerRecordBytes +
                 s.seq.cache.positions_bytes(il, s.seq.pos - first_held(s.seq.cache, il, s.seq.pos, s.seq.high_water));
    return n;
}

size_t Session::max_state_bytes() const {
    const Impl& s = *impl_;
    size_t n = kHeaderBytes + size_t(s.options.max_seq) * sizeof(int32_t) +
               s.last_logits.size() * sizeof(float) + kChecksumBytes;
    for (int il = 0; il < s.seq.cache.n_layers(); ++il)
        if (s.seq.cache.owns(il))
            n += kLayerRecordBytes + s.seq.cache.positions_bytes(il, s.options.max_seq);
    return n;
}

size_t Session::save_state(std::span<std::byte> out) const {
    SessionEntry entry(impl_->busy);
    const Impl& s = *impl_;
    const size_t total = state_bytes();
    if (out.size() < total)
        throw Error(ErrorKind::capacity,
                    "saved state needs " + std::to_string(total) + " bytes, the buffer has " +
                        std::to_string(out.size()) + " (state_bytes() gives the size)");
    const Model& m = *s.model;
    Header h;
    h.config = config_hash(m.config());
    h.weights = weights_hash(m);
    h.format = format_hash(m);
    h.weight_type = uint8_t(m.weight_type());
    h.native = m.native_weights();
    h.act_bits = uint8_t(m.act_bits());
    h.kv = uint8_t(s.options.kv);
    h.ring = s.options.ring_sliding;
    h.vocab = uint32_t(m.config().vocab);
    h.n_layers = uint32_t(m.config().n_layers);
    h.max_seq = uint32_t(s.options.max_seq);
    h.pos = uint32_t(s.seq.pos);
    for (int il = 0; il < s.seq.cache.n_layers(); ++il) h.n_kv_layers += s.seq.cache.owns(il);
    h.payload = total - kHeaderBytes - kChecksumBytes;
    std::byte* p = out.data();
    h.write(p);
    std::byte* at = p + kHeaderBytes;
    for (int i = 0; i < s.seq.pos; ++i, at += 4) put_u32(at, uint32_t(s.tokens[size_t(i)]));
    for (float x : s.last_logits) {
        uint32_t bits;
        std::memcpy(&bits, &x, 4);
        put_u32(at, bits);
        at += 4;
    }
    for (int il = 0; il < s.seq.cache.n_layers(); ++il) {
        if (!s.seq.cache.owns(il)) continue;
        const int first = first_held(s.seq.cache, il, s.seq.pos, s.seq.high_water);
        put_u32(at, uint32_t(il));
        put_u32(at + 4, uint32_t(first));
        at += kLayerRecordBytes;
        s.seq.cache.read_positions(il, first, s.seq.pos, at);  // raw f16/f32 elements (little-endian hosts)
        at += s.seq.cache.positions_bytes(il, s.seq.pos - first);
    }
    Fnv sum;
    sum.bytes(p, size_t(at - p));
    put_u64(at, sum.h);
    return total;
}

void Session::load_state(std::span<const std::byte> in) {
    SessionEntry entry(impl_->busy);
    Impl& s = *impl_;
    const Model& m = *s.model;
    const ModelConfig& c = m.config();

    // 1. The container: size, magic, version, length, checksum.
    if (in.size() < kHeaderBytes + kChecksumBytes)
        throw bad_state("truncated: " + std::to_string(in.size()) +
                        " bytes, a state has at least " +
                        std::to_string(kHeaderBytes + kChecksumBytes));
    const std::byte* p = in.data();
    if (std::memcmp(p, kMagic, 8) != 0)
        throw bad_state("not a staticlm saved state (no SLMSTATE magic)");
    if (const uint32_t v = get_u32(p + 8); v != kVersion)
        throw Error(ErrorKind::unsupported, "saved state: format version " + std::to_string(v) +
                                                ", this library reads version " +
                                                std::to_string(kVersion));
    if (const uint32_t hb = get_u32(p + 12); hb != kHeaderBytes)
        throw bad_state("header size " + std::to_string(hb) + ", version 1 has " +
                        std::to_string(kHeaderBytes));
    const Header h = Header::read(p);
    const uint64_t room = in.size() - kHeaderBytes - kChecksumBytes;
    if (h.payload > room)
        throw bad_state("truncated: the header announces " + std::to_string(h.payload) +
                        " payload bytes, " + std::to_string(room) + " are there (" +
                        std::to_string(in.size()) + " bytes in all)");
    if (h.payload < room)
        throw bad_state(std::to_string(room - h.payload) +
                        " bytes after the end the header announces (" +
                        std::to_string(kHeaderBytes + h.payload + kChecksumBytes) + " bytes)");
    Fnv sum;
    sum.bytes(p, kHeaderBytes + size_t(h.payload));
    const uint64_t stored = get_u64(p + kHeaderBytes + h.payload);
    if (sum.h != stored)
        throw bad_state("checksum mismatch (stored " + hex(stored) + ", computed " + hex(sum.h) +
                        "): the state was altered or damaged");

    // 2. The session it belongs to.
    if (h.config != config_hash(c))
        throw other_session("another model (config " + hex(h.config) + ", vocab " +
                            std::to_string(h.vocab) + ", " + std::to_string(h.n_layers) +
                            " layers; this session's model: config " + hex(config_hash(c)) +
                            ", vocab " + std::to_string(c.vocab) + ", " +
                            std::to_string(c.n_layers) + " layers)");
    if (h.format != format_hash(m))
        throw other_session(
            "another weight format (saved with " +
            weights_name(h.weight_type, h.native != 0, h.act_bits) + "; this session's model has " +
            weights_name(uint8_t(m.weight_type()), m.native_weights(), m.act_bits()) +
            (h.weight_type == uint8_t(m.weight_type()) && (h.native != 0) == m.native_weights() &&
                     h.act_bits == m.act_bits()
                 ? ", with another mix of matrix formats"
                 : "") +
            ")");
    if (h.weights != weights_hash(m))
        throw other_session("other weights of the same config and format (weights fingerprint " +
                            hex(h.weights) + ", this session's model " + hex(weights_hash(m)) +
                            "): another checkpoint");
    if (h.kv != uint8_t(s.options.kv))
        throw other_session(std::string("another KV cache type (saved ") +
                            kv_type_name(KvType(h.kv)) +
                            ", this session " + kv_type_name(s.options.kv) + ")");
    if (h.max_seq != uint32_t(s.options.max_seq))
        throw other_session("another capacity (saved max_seq " + std::to_string(h.max_seq) +
                            ", this session " + std::to_string(s.options.max_seq) + ")");
    if ((h.ring != 0) != s.options.ring_sliding)
        throw other_session(std::string("another ring option (saved ring_sliding ") +
                            (h.ring ? "on" : "off") + ", this session " +
                            (s.options.ring_sliding ? "on" : "off") + ")");

    // 3. The payload, checked in full before anything is written.
    if (h.pos > uint32_t(s.options.max_seq))
        throw bad_state("pos " + std::to_string(h.pos) + " exceeds max_seq " +
                        std::to_string(s.options.max_seq));
    const int pos = int(h.pos);
    int n_kv_layers = 0;
    for (int il = 0; il < s.seq.cache.n_layers(); ++il) n_kv_layers += s.seq.cache.owns(il);
    if (h.n_kv_layers != uint32_t(n_kv_layers))
        throw bad_state(std::to_string(h.n_kv_layers) + " K/V layers, the model has " +
                        std::to_string(n_kv_layers));
    const std::byte* const end = p + kHeaderBytes + h.payload;
    const std::byte* at = p + kHeaderBytes;
    auto take = [&](size_t n, const char* what) {
        if (size_t(end - at) < n)
            throw bad_state(std::string(what) + " needs " + std::to_string(n) + " bytes, " +
                            std::to_string(end - at) + " are left in the payload");
        const std::byte* r = at;
        at += n;
        return r;
    };
    const std::byte* tokens = take(size_t(pos) * 4, "the tokens");
    // -1 (0xffffffff): a position whose id the session did not know (load_prefix).
    for (int i = 0; i < pos; ++i)
        if (const uint32_t t = get_u32(tokens + size_t(i) * 4); t >= uint32_t(c.vocab) && t != 0xffffffffu)
            throw bad_state("token " + std::to_string(t) + " at position " + std::to_string(i) +
                            " is outside the vocabulary (" + std::to_string(c.vocab) + ")");
    const std::byte* logits = take(s.last_logits.size() * 4, "the logits");
    for (size_t i = 0; i < s.last_logits.size(); ++i) {
        const uint32_t bits = get_u32(logits + i * 4);
        float x;
        std::memcpy(&x, &bits, 4);
        if (!std::isfinite(x)) throw bad_state("logit " + std::to_string(i) + " is not finite");
    }
    struct LayerData {
        int first = 0;
        const std::byte* kv = nullptr;
    };
    // One record per layer that owns K/V, checked here and written below;
    // the first pass only checks (no allocation: the records are re-read).
    auto layer_record = [&](int il) {
        const std::byte* rec = take(kLayerRecordBytes, "a layer record");
        const uint32_t layer = get_u32(rec), first = get_u32(rec + 4);
        if (layer != uint32_t(il))
            throw bad_state("layer record for layer " + std::to_string(layer) + " where layer " +
                            std::to_string(il) + " (the next layer that owns K/V) belongs");
        const int window = c.layers[size_t(il)].window;
        const bool ring = s.seq.cache.view(il).n_slots < s.options.max_seq;
        // Full storage holds every position; a ring must hold the window before pos.
        const uint32_t limit = ring ? uint32_t(std::max(0, pos - window + 1)) : 0;
        if (first > limit)
            throw bad_state("layer " + std::to_string(il) + " starts at position " +
                            std::to_string(first) + ", it must hold every position from " +
                            std::to_string(limit) +
                            (ring ? " (the sliding window before pos)" : " (full storage)"));
        return LayerData{int(first),
                         take(s.seq.cache.positions_bytes(il, pos - int(first)), "the K/V of a layer")};
    };
    const std::byte* const layers_begin = at;
    for (int il = 0; il < s.seq.cache.n_layers(); ++il)
        if (s.seq.cache.owns(il)) (void)layer_record(il);
    if (at != end)
        throw bad_state(std::to_string(end - at) + " payload bytes left after the last layer");

    // 4. Write: tokens, logits, each layer's positions (a ring keeps the last
    //    n_slots), pos and the rewind limit of the rings.
    for (int i = 0; i < pos; ++i) s.tokens[size_t(i)] = int(get_u32(tokens + size_t(i) * 4));
    for (size_t i = 0; i < s.last_logits.size(); ++i) {
        const uint32_t bits = get_u32(logits + i * 4);
        std::memcpy(&s.last_logits[i], &bits, 4);
    }
    at = layers_begin;
    int high_water = pos;
    for (int il = 0; il < s.seq.cache.n_layers(); ++il) {
        if (!s.seq.cache.owns(il)) continue;
        const LayerData d = layer_record(il);
        const int n_slots = s.seq.cache.view(il).n_slots;
        const int first = std::max(d.first, pos - n_slots);
        s.seq.cache.write_positions(il, first, pos, d.kv, d.first);
        // max_rewind() takes a ring to hold [high_water - n_slots, high_water).
        if (n_slots < s.options.max_seq) high_water = std::max(high_water, first + n_slots);
    }
    s.seq.pos = pos;
    s.seq.high_water = high_water;
    s.n_steps = 0;
}

// Written to a temporary file next to `path`, then renamed over it: a failed
// or interrupted save never leaves a half-written state under that name.
void Session::save_state_file(const std::filesystem::path& path) const {
    std::vector<std::byte> buf(state_bytes());
    buf.resize(save_state(buf));
    std::filesystem::path tmp = path;
    tmp += ".tmp" + std::to_string(::getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f)
        throw Error(ErrorKind::io, "cannot create " + tmp.string() + " (to save " + path.string() +
                                       "): " + std::generic_category().message(errno));
    const bool wrote = std::fwrite(buf.data(), 1, buf.size(), f) == buf.size();
    const int err = errno;
    const bool closed = std::fclose(f) == 0;
    std::error_code ec;
    if (wrote && closed) std::filesystem::rename(tmp, path, ec);
    if (!wrote || !closed || ec) {
        const std::string why =
            ec ? ec.message() : std::generic_category().message(wrote ? errno : err);
        std::filesystem::remove(tmp, ec);
        throw Error(ErrorKind::io, "cannot write " + path.string() + ": " + why);
    }
}

void Session::load_state_file(const std::filesystem::path& path) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(path, ec);
    if (st.type() == std::filesystem::file_type::not_found)
        throw Error(ErrorKind::io, "cannot read saved state " + path.string() + ": no such file");
    if (ec)
        throw Error(ErrorKind::io,
                    "cannot read saved state " + path.string() + ": " + ec.message());
    if (!std::filesystem::is_regular_file(st))
        throw Error(ErrorKind::io, "saved state " + path.string() + " is not a regular file");
    const uintmax_t size = std::filesystem::file_size(path, ec);
    const size_t limit = max_state_bytes();
    if (ec)
        throw Error(ErrorKind::io,
                    "cannot read saved state " + path.string() + ": " + ec.message());
    if (size > limit)
        throw Error(ErrorKind::format, "saved state " + path.string() + " is " +
                                           std::to_string(size) +
                                           " bytes, more than the largest state of this session (" +
                                           std::to_string(limit) + " bytes at max_seq " +
                                           std::to_string(max_seq()) + ")");
    std::vector<std::byte> buf(static_cast<size_t>(size));
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f)
        throw Error(ErrorKind::io, "cannot open saved state " + path.string() + ": " +
                                       std::generic_category().message(errno));
    const size_t got = std::fread(buf.data(), 1, buf.size(), f);
    std::fclose(f);
    if (got != buf.size())
        throw Error(ErrorKind::io, "saved state " + path.string() + ": read " +
                                       std::to_string(got) + " of " + std::to_string(buf.size()) +
                                       " bytes");
    try {
        load_state(buf);
    } catch (const Error& e) {
        throw Error(e.kind(), path.string() + ": " + e.what());
    }
}

}  // namespace staticlm
