// Plain value types shared by the public API and the internals.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "staticlm/weight_formats.h"

namespace staticlm {

// The weight formats, one per line of staticlm/weight_formats.h. The numbers
// are the C API's slm_weights values; what each format is (layout, sizes,
// kernels) is its folder kernels/formats/<name>/.
#define STATICLM_WEIGHT_TYPE_VALUE_(number, name, ...) name = number,
enum class WeightType : uint8_t { STATICLM_WEIGHT_FORMAT_LIST(STATICLM_WEIGHT_TYPE_VALUE_) };
#undef STATICLM_WEIGHT_TYPE_VALUE_
// The KV cache element types. q8: int8 values with one fp32 scale per 32
// values of a head's row (kernels::kv_row_bytes gives the layout). The numbers
// are the C API's slm_kv values and are recorded in saved states.
enum class KvType : uint8_t { f16 = 0, f32 = 1, q8 = 2 };

// Which arithmetic bounds a format's matmul in prefill: int8 dot products, fp32
// FMAs, or bf16 dot products where the CPU has them (fp32 FMAs elsewhere).
enum class WeightMath : uint8_t { fp32, int8, bf16 };

// What tools and the C API need to know about a weight format.
struct WeightTypeInfo {
    WeightType type;
    const char* name;       // as on the command line: "q8"
    WeightMath math;
    bool exact;             // holds f32 weights unchanged (no rounding at load)
    double bytes_per_weight;  // of the packed matrix, padding aside
};

// Every format, in the order of their numbers; name <-> type in one place.
std::span<const WeightType> weight_types();
const WeightTypeInfo& weight_type_info(WeightType type);  // throws Error for an unknown value
const char* weight_type_name(WeightType type);            // "?" for an unknown value
std::optional<WeightType> parse_weight_type(std::string_view name);
std::optional<WeightType> weight_type_from_id(int id);    // the slm_weights number
std::string weight_type_choices();                        // "q8, f16, ..., q4a or q5a"
const char* kv_type_name(KvType type);                    // "f16", "f32", "q8"; "?" for an unknown value
std::optional<KvType> parse_kv_type(std::string_view name);

// CPUs this process may run on (its sched_getaffinity set; at least 1).
int available_cpus();
// The largest thread count any setting accepts (LoadOptions, SessionOptions,
// the C API, --threads): kMaxThreadsPerCpu x available_cpus(). More threads
// than CPUs only slow a run down.
constexpr int kMaxThreadsPerCpu = 4;
int max_threads();

struct LoadOptions {
    WeightType weights = WeightType::q8;
    // `--weights native`: each matrix keeps the format nearest the one it is
    // stored in instead of `weights`: F32, F16, BF16 as they are, a GGUF block
    // type in the format that holds it bit for bit (Q8_0 as q8, Q4_K as q4k,
    // ...: docs/FORMATS.md lists them; the formats' GGUF hooks decide), a type
    // no format holds as q8. The CLI sets it for a .gguf file unless --weights
    // says otherwise; the library's default is `weights`.
    bool native_weights = false;
    // Activation precision of the integer formats (q8, q4, q5 and the GGUF
    // layouts): 8 — int8 with a scale per 32 inputs, as llama.cpp's q8_0
    // activations — or 16 — two int8 planes per input (256·q1 + q2), 2^8
    // times finer, for one more dot step per weight (decode, which waits on
    // memory, barely notices; prefill is compute-bound and runs on VNNI, not
    // AMX, with it). The float formats ignore it. `--act-bits` in the CLI.
    int act_bits = 8;
    int threads = 0;  // 0: the CPUs of this process's affinity set; at most max_threads()
    bool load_tokenizer = true;
    bool prefer_tokenizer_json = false;
    // Called from the loading thread with (bytes converted, bytes total),
    // while the loader's worker threads run: it must not wait for another
    // thread that is itself running staticlm work (that work waits for the
    // loader's threads).
    std::function<void(uint64_t done, uint64_t total)> progress;
};

}  // namespace staticlm
