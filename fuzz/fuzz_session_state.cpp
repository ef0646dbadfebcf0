// libFuzzer target: saved session states through Session::load_state, which
// must restore a consistent state or throw Error and leave the session as it
// was (checked: its own saved state is unchanged). The first byte picks how
// the rest is used, so that mutations reach the checks behind the checksum:
//   0: the bytes are the state;
//   1: (offset u16, value u8) edits of a valid state, checksum recomputed;
//   2: a valid state cut or grown to a u16 length, checksum recomputed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "model/config.hpp"
#include "model/model.hpp"
#include "staticlm/error.hpp"
#include "staticlm/session.hpp"

namespace {

using Bytes = std::vector<std::byte>;

// A small model with a sliding layer, in a ring session, holding 11 tokens.
struct Fixture {
    std::shared_ptr<const staticlm::Model> model;
    std::unique_ptr<staticlm::Session> session;
    Bytes valid;  // its state

    Fixture() {
        const staticlm::ModelConfig c = staticlm::parse_model_config(R"({
          "architectures": ["MistralForCausalLM"], "model_type": "mistral",
          "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 2, "intermediate_size": 64, "vocab_size": 64,
          "rms_norm_eps": 1e-05, "max_position_embeddings": 64, "rope_theta": 10000.0,
          "sliding_window": 4, "tie_word_embeddings": false
        })",
                                                                     "fuzz");
        model = staticlm::Model::synthetic(c, staticlm::WeightType::q8, 3, 1);
        staticlm::SessionOptions so;
        so.max_seq = 16;
        so.prefill_buckets = {4};
        so.append_buckets = {2};
        so.ring_sliding = true;
        so.threads = 1;
        session = std::make_unique<staticlm::Session>(model, so);
        const int ids[11] = {1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41};
        session->prefill(ids);
        valid = save();
    }
    Bytes save() const {
        Bytes b(session->state_bytes());
        session->save_state(b);
        return b;
    }
};

void sign(Bytes& b) {
    if (b.size() < 8) return;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < b.size() - 8; ++i) h = (h ^ uint64_t(b[i])) * 0x100000001b3ull;
    for (int i = 0; i < 8; ++i) b[b.size() - 8 + size_t(i)] = std::byte(h >> (8 * i));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static Fixture f;
    if (size == 0) return 0;
    Bytes state;
    const uint8_t* in = data + 1;
    const size_t n = size - 1;
    switch (data[0] % 3) {
        case 0:
            state.assign(reinterpret_cast<const std::byte*>(in),
                         reinterpret_cast<const std::byte*>(in) + n);
            break;
        case 1:
            state = f.valid;
            for (size_t i = 0; i + 3 <= n; i += 3) {
                const size_t at = (size_t(in[i]) | size_t(in[i + 1]) << 8) % state.size();
                state[at] = std::byte(in[i + 2]);
            }
            sign(state);
            break;
        default:
            state = f.valid;
            state.resize(n >= 2 ? size_t(in[0]) | size_t(in[1]) << 8 : 0, std::byte{0});
            sign(state);
            break;
    }
    try {
        f.session->load_state(state);
        f.session->load_state(f.valid);  // back to the fixture's state for the next input
    } catch (const staticlm::Error&) {
        if (f.save() != f.valid) std::abort();  // a failed load changed the session
    }
    return 0;
}
