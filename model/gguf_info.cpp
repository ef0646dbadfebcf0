// The text summary of a GGUF file that `staticlm info` prints: header facts,
// every metadata key with its value (arrays: type, length, first elements),
// and a histogram of tensor types.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>

#include "model/family.hpp"
#include "model/gguf.hpp"
#include "staticlm/error.hpp"

namespace staticlm {
namespace {

std::string quoted(std::string_view s, size_t max = 60) {
    std::string out = "\"";
    for (char ch : s.substr(0, max)) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '\n') {
            out += "\\n";
        } else if (c >= 0x20 && c != 0x7f && c != '"' && c != '\\') {
            out += ch;
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    out += s.size() > max ? "...\"" : "\"";
    return out;
}

std::string number(double f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", f);
    return buf;
}

std::string with_commas(uint64_t v) {
    const std::string digits = std::to_string(v);
    std::string s;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) s += ',';
        s += digits[i];
    }
    return s;
}

std::string scalar_text(const GgufValue& v) {
    switch (v.type) {
        case GgufType::u8: case GgufType::u16: case GgufType::u32: case GgufType::u64: return std::to_string(v.u);
        case GgufType::i8: case GgufType::i16: case GgufType::i32: case GgufType::i64: return std::to_string(v.i);
        case GgufType::f32: case GgufType::f64: return number(v.f);
        case GgufType::boolean: return v.u ? "true" : "false";
        case GgufType::string: return quoted(v.str);
        case GgufType::array: return "";
    }
    return "";
}

// The first few elements of a flat array (the file is already validated).
std::string array_head(const GgufValue& v, size_t n_show) {
    std::string out;
    const std::byte* p = v.elems;
    const size_t n = size_t(std::min<uint64_t>(v.count, n_show));
    for (size_t k = 0; k < n; ++k) {
        GgufValue e;
        e.type = v.elem_type;
        switch (v.elem_type) {
            case GgufType::string: {
                uint64_t len;
                std::memcpy(&len, p, 8);
                e.str = std::string_view(reinterpret_cast<const char*>(p + 8), size_t(len));
                p += 8 + len;
                break;
            }
            case GgufType::u8: case GgufType::boolean: e.u = uint8_t(p[0]); p += 1; break;
            case GgufType::i8: e.i = int8_t(p[0]); p += 1; break;
            case GgufType::u16: { uint16_t x; std::memcpy(&x, p, 2); e.u = x; p += 2; break; }
            case GgufType::i16: { int16_t x; std::memcpy(&x, p, 2); e.i = x; p += 2; break; }
            case GgufType::u32: { uint32_t x; std::memcpy(&x, p, 4); e.u = x; p += 4; break; }
            case GgufType::i32: { int32_t x; std::memcpy(&x, p, 4); e.i = x; p += 4; break; }
            case GgufType::f32: { float x; std::memcpy(&x, p, 4); e.f = x; p += 4; break; }
            case GgufType::u64: { std::memcpy(&e.u, p, 8); p += 8; break; }
            case GgufType::i64: { std::memcpy(&e.i, p, 8); p += 8; break; }
            case GgufType::f64: { std::memcpy(&e.f, p, 8); p += 8; break; }
            case GgufType::array: return "";  // nested: not shown
        }
        if (k) out += ", ";
        out += scalar_text(e);
    }
    if (v.count > n) out += ", ...";
    return out;
}

}  // namespace

std::string gguf_summary(const GgufFile& file) {
    std::string s;
    char line[512];
    std::snprintf(line, sizeof line, "GGUF file %s: %s bytes, version %u, alignment %" PRIu64
                  ", tensor data at byte %" PRIu64 "\n",
                  file.path().c_str(), with_commas(file.file_size()).c_str(), file.version(), file.alignment(),
                  file.data_offset());
    s += line;
    for (const char* key : {"general.architecture", "general.name", "general.file_type",
                            "tokenizer.ggml.model"}) {
        const GgufValue* v = file.find(key);
        if (v && v->type != GgufType::array) s.append("  ").append(key).append(": ").append(scalar_text(*v)).append("\n");
    }
    try {
        const std::string_view arch = file.get_string("general.architecture");
        if (!find_gguf_family(arch))
            throw Error(ErrorKind::unsupported, "architecture '" + std::string(arch) + "' is not supported (" +
                                                    gguf_architectures_known() + " are)");
        const GgufModelInfo m = read_gguf_model_info(file);
        std::snprintf(line, sizeof line,
                      "  model: %s, %d layers, hidden %d, ffn %d, %d heads (%d kv) x %d, vocab %d, %s output\n",
                      m.architecture.c_str(), m.n_layers, m.hidden, m.ffn, m.n_heads, m.n_kv_heads, m.head_dim,
                      m.vocab, m.tied ? "tied" : "separate");
        s += line;
    } catch (const Error& e) {
        s.append("  model: not loadable: ").append(e.what()).append("\n");
    }
    s += "metadata: " + std::to_string(file.kvs().size()) + " keys\n";
    for (const GgufKv& kv : file.kvs()) {
        const GgufValue& v = kv.value;
        std::string type = gguf_type_name(v.type);
        std::string value;
        if (v.type == GgufType::array) {
            type.append(" of ").append(gguf_type_name(v.elem_type)).append(" [").append(std::to_string(v.count)).append("]");
            value = array_head(v, 4);
        } else {
            value = scalar_text(v);
        }
        std::snprintf(line, sizeof line, "  %-44s %-24s %s\n", quoted(kv.key, 120).c_str(), type.c_str(),
                      value.c_str());
        s += line;
    }

    struct Bucket {
        uint64_t tensors = 0, elements = 0, bytes = 0;
    };
    std::map<uint32_t, Bucket> by_type;
    Bucket total;
    for (const GgufTensor& t : file.tensors()) {
        Bucket& b = by_type[uint32_t(t.type)];
        for (Bucket* x : {&b, &total}) {
            x->tensors += 1;
            x->elements += t.numel;
            x->bytes += t.bytes;
        }
    }
    s += "tensors: " + std::to_string(total.tensors) + ", " + with_commas(total.elements) + " elements, " +
         with_commas(total.bytes) + " bytes\n";
    std::snprintf(line, sizeof line, "  %-8s %8s %16s %16s\n", "type", "tensors", "elements", "bytes");
    s += line;
    for (const auto& [type, b] : by_type) {
        std::snprintf(line, sizeof line, "  %-8s %8" PRIu64 " %16s %16s\n",
                      kernels::ggml_type_name(kernels::GgmlType(type)), b.tensors, with_commas(b.elements).c_str(),
                      with_commas(b.bytes).c_str());
        s += line;
    }
    return s;
}

}  // namespace staticlm
