// GGUF reader: mmap, then one bounded pass over header, metadata and tensor
// infos. Every length is checked against the bytes left before it is used or
// anything is reserved, nested arrays are walked with an explicit stack of
// bounded depth, and tensor ranges are checked for size (blocks × block
// bytes), alignment, extent and overlaps. Errors name the file and the key or
// tensor.
#include "model/gguf.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "staticlm/error.hpp"

namespace staticlm {

namespace {

namespace fs = std::filesystem;
using kernels::GgmlType;
using kernels::GgmlTypeInfo;

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian uint32
constexpr size_t kHeaderBytes = 24;      // magic, version, tensor count, kv count
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint64_t kMaxNameBytes = 65535;  // keys and tensor names (the GGUF spec's key limit)

const char* const kTypeNames[] = {"UINT8", "INT8",  "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
                                  "BOOL",  "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"};

bool known_type(uint32_t t) { return t <= uint32_t(GgufType::f64); }

// Bytes of one element of a fixed-size type; 0 for string and array.
size_t fixed_size(GgufType t) {
    switch (t) {
        case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
        case GgufType::u16: case GgufType::i16: return 2;
        case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
        case GgufType::u64: case GgufType::i64: case GgufType::f64: return 8;
        case GgufType::string: case GgufType::array: return 0;
    }
    return 0;
}

// The fewest bytes an element of type t can take (a string: its length; an
// array: element type and count), so that a count can be bounded up front.
size_t min_size(GgufType t) {
    if (t == GgufType::string) return 8;
    if (t == GgufType::array) return 12;
    return fixed_size(t);
}

bool is_integer(GgufType t) {
    switch (t) {
        case GgufType::u8: case GgufType::i8: case GgufType::u16: case GgufType::i16:
        case GgufType::u32: case GgufType::i32: case GgufType::u64: case GgufType::i64: return true;
        default: return false;
    }
}
bool is_signed(GgufType t) {
    return t == GgufType::i8 || t == GgufType::i16 || t == GgufType::i32 || t == GgufType::i64;
}

// Printable form of a name for messages: bytes outside printable ASCII escaped.
std::string printable(std::string_view s) {
    std::string out;
    for (char ch : s.substr(0, 200)) {
        const auto c = static_cast<unsigned char>(ch);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += ch;
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    if (s.size() > 200) out += "...";
    return out;
}

// A bounds-checked cursor over the mapping. `ctx` names what is being read
// ("key 'general.name'", "tensor info #3") for error messages.
class Cursor {
public:
    Cursor(const std::byte* base, size_t size, const fs::path& file)
        : base_(base), size_(size), file_(file) {}

    size_t pos() const { return pos_; }
    size_t left() const { return size_ - pos_; }
    const std::byte* here() const { return base_ + pos_; }
    std::string ctx;

    [[noreturn]] void fail(const std::string& what) const {
        throw Error(ErrorKind::format, file_.string() + ": " + (ctx.empty() ? "" : ctx + ": ") + what);
    }
    void need(uint64_t n, const std::string& what) const {
        if (n > left())
            fail(what + " (" + std::to_string(n) + " bytes at byte " + std::to_string(pos_) +
                 ") runs past the end of the file (" + std::to_string(size_) + " bytes)");
    }
    template <class T>
    T read(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, base_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    void skip(uint64_t n, const std::string& what) {
        need(n, what);
        pos_ += size_t(n);
    }
    std::string_view string(const char* what) {
        const uint64_t len = read<uint64_t>(what);
        need(len, std::string(what) + " of length " + std::to_string(len));
        std::string_view s(reinterpret_cast<const char*>(base_ + pos_), size_t(len));
        pos_ += size_t(len);
        return s;
    }
    // Fails unless count elements of at least `each` bytes can fit.
    void need_elements(uint64_t count, size_t each, const std::string& what) const {
        if (each != 0 && count > left() / each)
            fail(what + " of " + std::to_string(count) + " elements (at least " + std::to_string(each) +
                 " bytes each, at byte " + std::to_string(pos_) + ") runs past the end of the file (" +
                 std::to_string(size_) + " bytes)");
    }

private:
    const std::byte* base_;
    size_t size_;
    size_t pos_ = 0;
    const fs::path& file_;
};

GgufType read_type(Cursor& c, const char* what) {
    const uint32_t t = c.read<uint32_t>(what);
    if (!known_type(t)) c.fail("unknown value type " + std::to_string(t));
    return GgufType(t);
}

// Reads one array (after its key and type): element type, count, elements.
// Nested arrays are walked with an explicit stack, at most
// kGgufMaxArrayDepth deep; every count is bounded by the bytes left.
void read_array(Cursor& c, GgufValue& v) {
    struct Frame {
        GgufType elem;
        uint64_t remaining;
    };
    Frame stack[kGgufMaxArrayDepth];
    int depth = 0;
    auto open = [&](GgufType elem, uint64_t count) {
        if (depth == kGgufMaxArrayDepth)
            c.fail("arrays nested deeper than " + std::to_string(kGgufMaxArrayDepth) + " levels");
        c.need_elements(count, min_size(elem), std::string("array of ") + gguf_type_name(elem));
        stack[depth++] = {elem, count};
    };
    v.elem_type = read_type(c, "array element type");
    v.count = c.read<uint64_t>("array length");
    const size_t begin = c.pos();
    v.elems = c.here();
    open(v.elem_type, v.count);
    while (depth > 0) {
        Frame& f = stack[depth - 1];
        if (f.remaining == 0) {
            --depth;
        } else if (const size_t each = fixed_size(f.elem)) {
            c.skip(f.remaining * each, "array elements");  // no overflow: need_elements bounded it
            if (f.elem == GgufType::boolean) {
                const auto* b = reinterpret_cast<const uint8_t*>(c.here()) - f.remaining;
                for (uint64_t k = 0; k < f.remaining; ++k)
                    if (b[k] > 1) c.fail("array element " + std::to_string(k) + " is BOOL " + std::to_string(b[k]));
            }
            f.remaining = 0;
        } else if (f.elem == GgufType::string) {
            --f.remaining;
            c.string("array string");
        } else {
            --f.remaining;
            const GgufType elem = read_type(c, "nested array element type");
            const uint64_t count = c.read<uint64_t>("nested array length");
            open(elem, count);
        }
    }
    v.elems_bytes = c.pos() - begin;
}

GgufValue read_value(Cursor& c, GgufType type) {
    GgufValue v;
    v.type = type;
    switch (type) {
        case GgufType::u8: v.u = c.read<uint8_t>("UINT8 value"); break;
        case GgufType::i8: v.i = c.read<int8_t>("INT8 value"); break;
        case GgufType::u16: v.u = c.read<uint16_t>("UINT16 value"); break;
        case GgufType::i16: v.i = c.read<int16_t>("INT16 value"); break;
        case GgufType::u32: v.u = c.read<uint32_t>("UINT32 value"); break;
        case GgufType::i32: v.i = c.read<int32_t>("INT32 value"); break;
        case GgufType::u64: v.u = c.read<uint64_t>("UINT64 value"); break;
        case GgufType::i64: v.i = c.read<int64_t>("INT64 value"); break;
        case GgufType::f32: v.f = c.read<float>("FLOAT32 value"); break;
        case GgufType::f64: v.f = c.read<double>("FLOAT64 value"); break;
        case GgufType::boolean:
            v.u = c.read<uint8_t>("BOOL value");
            if (v.u > 1) c.fail("BOOL value " + std::to_string(v.u) + " is neither 0 nor 1");
            break;
        case GgufType::string: v.str = c.string("string value"); break;
        case GgufType::array: read_array(c, v); break;
    }
    return v;
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

const char* gguf_type_name(GgufType t) {
    return known_type(uint32_t(t)) ? kTypeNames[uint32_t(t)] : "?";
}

size_t GgufTensor::row_bytes() const {
    const GgmlTypeInfo* info = kernels::ggml_type_info(type);
    return info ? size_t(ne[0] / info->block_elems) * size_t(info->block_bytes) : 0;
}

std::string GgufTensor::shape_string() const {
    std::string s = "[";
    for (int i = 0; i < n_dims; ++i) s += (i ? ", " : "") + std::to_string(ne[size_t(i)]);
    return s + "]";
}

std::string GgufTensor::where() const {
    return "tensor '" + name + "' in " + (file ? file->string() : std::string("?"));
}

GgufFile::GgufFile(const fs::path& path) : path_(path) {
    // stat before the open and O_NONBLOCK in it: a FIFO or device named .gguf is
    // refused instead of blocking the open; fstat after it checks what is mapped.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw Error(ErrorKind::io, path.string() + ": cannot open: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw Error(ErrorKind::io, path.string() + ": not a regular file");
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw Error(ErrorKind::io, path.string() + ": cannot open: " + std::strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(ErrorKind::io, path.string() + ": not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ < kHeaderBytes) {
        ::close(fd);
        throw Error(ErrorKind::format, path.string() + ": truncated: " + std::to_string(size_) +
                                           " bytes, shorter than the 24-byte GGUF header");
    }
    void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) throw Error(ErrorKind::io, path.string() + ": cannot mmap: " + std::strerror(errno));
    map_ = p;
    try {
        const auto* base = static_cast<const std::byte*>(map_);
        Cursor c(base, size_, path_);
        const uint32_t magic = c.read<uint32_t>("magic");
        if (magic != kMagic) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "not a GGUF file (magic %02x %02x %02x %02x, expected \"GGUF\")",
                          magic & 0xff, (magic >> 8) & 0xff, (magic >> 16) & 0xff, magic >> 24);
            c.fail(buf);
        }
        version_ = c.read<uint32_t>("version");
        if (version_ == 1)
            throw Error(ErrorKind::unsupported,
                        path.string() + ": GGUF version 1 (32-bit lengths) is not supported; versions 2 and 3 are");
        if (version_ != 2 && version_ != 3) {
            // A big-endian file's version reads byte-swapped here.
            const uint32_t swapped = __builtin_bswap32(version_);
            if (swapped == 2 || swapped == 3)
                throw Error(ErrorKind::unsupported,
                            path.string() + ": big-endian GGUF files are not supported");
            c.fail("unknown GGUF version " + std::to_string(version_) + " (2 and 3 are supported)");
        }
        const uint64_t n_tensors = c.read<uint64_t>("tensor count");
        const uint64_t n_kv = c.read<uint64_t>("metadata key/value count");
        // Smallest entries: a key of 1 byte with a UINT8 value (14 bytes); a
        // tensor info with a 1-byte name and one dimension (33 bytes).
        c.need_elements(n_kv, 14, "metadata");
        c.need_elements(n_tensors, 33, "tensor info table");

        kvs_.reserve(size_t(n_kv));
        for (uint64_t k = 0; k < n_kv; ++k) {
            c.ctx = "metadata key #" + std::to_string(k);
            const std::string_view key = c.string("key");
            if (key.empty()) c.fail("empty key");
            if (key.size() > kMaxNameBytes)
                c.fail("key of " + std::to_string(key.size()) + " bytes (at most " +
                       std::to_string(kMaxNameBytes) + ")");
            c.ctx = "key '" + printable(key) + "'";
            if (kv_index_.count(key)) c.fail("duplicate key");
            const GgufType type = read_type(c, "value type");
            GgufKv kv{std::string(key), read_value(c, type)};
            kvs_.push_back(std::move(kv));
            kv_index_.emplace(key, kvs_.size() - 1);  // the view into the mapping stays valid
        }
        c.ctx.clear();
        if (const GgufValue* a = find("general.alignment")) {
            if (!is_integer(a->type))
                type_error("general.alignment", *a, "an integer");
            const uint64_t al = is_signed(a->type) ? uint64_t(std::max<int64_t>(a->i, 0)) : a->u;
            if (al == 0 || (al & (al - 1)) != 0 || al > (uint64_t{1} << 30))
                throw Error(ErrorKind::format, key_where("general.alignment") + ": " + std::to_string(al) +
                                                   " is not a power of two in [1, 2^30]");
            alignment_ = al;
        } else {
            alignment_ = kDefaultAlignment;
        }

        tensors_.reserve(size_t(n_tensors));
        for (uint64_t k = 0; k < n_tensors; ++k) {
            c.ctx = "tensor info #" + std::to_string(k);
            GgufTensor t;
            const std::string_view name = c.string("tensor name");
            if (name.empty()) c.fail("empty tensor name");
            if (name.size() > kMaxNameBytes)
                c.fail("tensor name of " + std::to_string(name.size()) + " bytes (at most " +
                       std::to_string(kMaxNameBytes) + ")");
            c.ctx = "tensor '" + printable(name) + "'";
            if (tensor_index_.count(name)) c.fail("duplicate tensor name");
            t.name = std::string(name);
            const uint32_t n_dims = c.read<uint32_t>("dimension count");
            if (n_dims < 1 || n_dims > 4) c.fail(std::to_string(n_dims) + " dimensions (1 to 4 are allowed)");
            t.n_dims = int(n_dims);
            uint64_t numel = 1, rows = 1;
            bool overflow = false;
            for (uint32_t d = 0; d < n_dims; ++d) {
                const uint64_t ne = c.read<uint64_t>("dimension");
                if (ne > uint64_t(INT64_MAX))
                    c.fail("dimension " + std::to_string(d) + " = " + std::to_string(ne) + " is out of range");
                t.ne[d] = int64_t(ne);
                overflow = overflow || __builtin_mul_overflow(numel, ne, &numel) || numel > uint64_t(INT64_MAX);
                // The row count on its own too: with a zero row length the
                // element count is 0 whatever the other dimensions are.
                if (d > 0) overflow = overflow || __builtin_mul_overflow(rows, ne, &rows) || rows > uint64_t(INT64_MAX);
            }
            t.rows = int64_t(rows);
            const uint32_t type = c.read<uint32_t>("tensor type");
            const GgmlTypeInfo* info = kernels::ggml_type_info(type);
            if (!info) c.fail("unknown tensor type " + std::to_string(type));
            t.type = GgmlType(type);
            t.offset = c.read<uint64_t>("data offset");
            if (overflow) c.fail("shape " + t.shape_string() + ": element count overflows");
            if (t.ne[0] % info->block_elems != 0)
                c.fail("row length " + std::to_string(t.ne[0]) + " is not a multiple of the " + info->name +
                       " block size " + std::to_string(info->block_elems));
            t.numel = numel;
            uint64_t bytes = 0;
            if (__builtin_mul_overflow(numel / uint64_t(info->block_elems), uint64_t(info->block_bytes), &bytes))
                c.fail("byte size overflows");
            t.bytes = size_t(bytes);
            t.file = &path_;
            tensors_.push_back(std::move(t));
            tensor_index_.emplace(name, tensors_.size() - 1);  // the view into the mapping stays valid
        }
        c.ctx.clear();
        data_offset_ = align_up(c.pos(), alignment_);

        struct Range {
            uint64_t begin, end;
            size_t index;
        };
        std::vector<Range> ranges;
        ranges.reserve(tensors_.size());
        for (size_t k = 0; k < tensors_.size(); ++k) {
            GgufTensor& t = tensors_[k];
            const std::string where = path_.string() + ": tensor '" + printable(t.name) + "': ";
            if (t.offset % alignment_ != 0)
                throw Error(ErrorKind::format, where + "data offset " + std::to_string(t.offset) +
                                                   " is not a multiple of the alignment " +
                                                   std::to_string(alignment_));
            uint64_t begin = 0, end = 0;
            if (__builtin_add_overflow(data_offset_, t.offset, &begin) ||
                __builtin_add_overflow(begin, uint64_t(t.bytes), &end) || end > size_)
                throw Error(ErrorKind::format,
                            where + std::string(kernels::ggml_type_name(t.type)) + " " + t.shape_string() +
                                " needs " + std::to_string(t.bytes) + " bytes at data offset " +
                                std::to_string(t.offset) + " (file byte " + std::to_string(data_offset_) +
                                " + offset), past the end of the file (" + std::to_string(size_) + " bytes)");
            t.data = base + begin;
            if (t.bytes) ranges.push_back({t.offset, t.offset + t.bytes, k});
        }
        std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
            return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
        });
        for (size_t k = 1; k < ranges.size(); ++k)
            if (ranges[k].begin < ranges[k - 1].end)
                throw Error(ErrorKind::format, path_.string() + ": tensors '" +
                                                   printable(tensors_[ranges[k - 1].index].name) + "' and '" +
                                                   printable(tensors_[ranges[k].index].name) +
                                                   "' have overlapping data");
    } catch (...) {
        munmap(map_, size_);
        map_ = nullptr;
        throw;
    }
}

GgufFile::~GgufFile() {
    if (map_) munmap(map_, size_);
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

std::string GgufFile::key_where(std::string_view key) const {
    return path_.string() + ": key '" + printable(key) + "'";
}

const GgufValue& GgufFile::require(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) throw Error(ErrorKind::model, path_.string() + ": missing key '" + printable(key) + "'");
    return *v;
}

void GgufFile::type_error(std::string_view key, const GgufValue& v, const char* expected) const {
    std::string got = gguf_type_name(v.type);
    if (v.type == GgufType::array) got += std::string(" of ") + gguf_type_name(v.elem_type);
    throw Error(ErrorKind::format, key_where(key) + " is " + got + ", expected " + expected);
}

std::string_view GgufFile::get_string(std::string_view key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufType::string) type_error(key, v, "STRING");
    return v.str;
}

uint64_t GgufFile::get_uint(std::string_view key, uint64_t max) const {
    const GgufValue& v = require(key);
    if (!is_integer(v.type)) type_error(key, v, "an integer");
    if (is_signed(v.type) && v.i < 0)
        throw Error(ErrorKind::format, key_where(key) + " = " + std::to_string(v.i) + " is negative");
    const uint64_t u = is_signed(v.type) ? uint64_t(v.i) : v.u;
    if (u > max)
        throw Error(ErrorKind::format, key_where(key) + " = " + std::to_string(u) + " is larger than " +
                                           std::to_string(max));
    return u;
}

int64_t GgufFile::get_int(std::string_view key) const {
    const GgufValue& v = require(key);
    if (!is_integer(v.type)) type_error(key, v, "an integer");
    if (is_signed(v.type)) return v.i;
    if (v.u > uint64_t(INT64_MAX))
        throw Error(ErrorKind::format, key_where(key) + " = " + std::to_string(v.u) + " is out of range");
    return int64_t(v.u);
}

double GgufFile::get_float(std::string_view key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufType::f32 && v.type != GgufType::f64) type_error(key, v, "FLOAT32");
    return v.f;
}

bool GgufFile::get_bool(std::string_view key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufType::boolean) type_error(key, v, "BOOL");
    return v.u != 0;
}

uint64_t GgufFile::get_array_count(std::string_view key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufType::array) type_error(key, v, "an ARRAY");
    return v.count;
}

std::vector<std::string_view> GgufFile::get_string_array(std::string_view key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufType::array || v.elem_type != GgufType::string) type_error(key, v, "ARRAY of STRING");
    std::vector<std::string_view> out;
    out.reserve(size_t(v.count));
    const std::byte* p = v.elems;  // validated when the file was opened
    for (uint64_t k = 0; k < v.count; ++k) {
        uint64_t len;
        std::memcpy(&len, p, 8);
        out.emplace_back(reinterpret_cast<const char*>(p + 8), size_t(len));
        p += 8 + len;
    }
    return out;
}

std::vector<float> GgufFile::get_f32_array(std::string_view key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufType::array || v.elem_type != GgufType::f32) type_error(key, v, "ARRAY of FLOAT32");
    std::vector<float> out(size_t(v.count));
    if (v.count) std::memcpy(out.data(), v.elems, size_t(v.count) * 4);
    return out;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
    const GgufValue& v = require(key);
    if (v.type != GgufType::array || !is_integer(v.elem_type)) type_error(key, v, "ARRAY of integers");
    const size_t each = fixed_size(v.elem_type);
    std::vector<int64_t> out(size_t(v.count));
    for (size_t k = 0; k < out.size(); ++k) {
        const std::byte* p = v.elems + k * each;
        switch (v.elem_type) {
            case GgufType::u8: out[k] = *reinterpret_cast<const uint8_t*>(p); break;
            case GgufType::i8: out[k] = *reinterpret_cast<const int8_t*>(p); break;
            case GgufType::u16: { uint16_t x; std::memcpy(&x, p, 2); out[k] = x; break; }
            case GgufType::i16: { int16_t x; std::memcpy(&x, p, 2); out[k] = x; break; }
            case GgufType::u32: { uint32_t x; std::memcpy(&x, p, 4); out[k] = x; break; }
            case GgufType::i32: { int32_t x; std::memcpy(&x, p, 4); out[k] = x; break; }
            case GgufType::i64: { int64_t x; std::memcpy(&x, p, 8); out[k] = x; break; }
            case GgufType::u64: {
                uint64_t x;
                std::memcpy(&x, p, 8);
                if (x > uint64_t(INT64_MAX))
                    throw Error(ErrorKind::format, key_where(key) + ": element " + std::to_string(k) + " = " +
                                                       std::to_string(x) + " is out of range");
                out[k] = int64_t(x);
                break;
            }
            default: break;
        }
    }
    return out;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::tensor(std::string_view name) const {
    const GgufTensor* t = find_tensor(name);
    if (!t) throw Error(ErrorKind::model, path_.string() + ": missing tensor '" + printable(name) + "'");
    return *t;
}

void gguf_dequantize_rows(const GgufTensor& t, int64_t row0, int64_t row1, float* out) {
    const GgmlTypeInfo* info = kernels::ggml_type_info(t.type);
    if (!info || !info->dequantizable)
        throw Error(ErrorKind::unsupported,
                    "unsupported tensor type " + std::string(kernels::ggml_type_name(t.type)) + " (" + t.where() +
                        "); staticlm reads F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, "
                        "Q5_K and Q6_K");
    if (row0 < 0 || row1 < row0 || row1 > t.n_rows())
        throw Error(ErrorKind::input, "rows [" + std::to_string(row0) + ", " + std::to_string(row1) +
                                          ") outside the " + std::to_string(t.n_rows()) + " rows of " + t.where());
    if (row1 == row0 || t.ne[0] == 0) return;
    kernels::dequantize_ggml(t.type, t.data + size_t(row0) * t.row_bytes(), out, (row1 - row0) * t.ne[0]);
}

std::vector<float> gguf_read_f32(const GgufTensor& t) {
    std::vector<float> out(size_t(t.numel));
    gguf_dequantize_rows(t, 0, t.n_rows(), out.data());
    return out;
}

}  // namespace staticlm
