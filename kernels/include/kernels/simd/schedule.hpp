// Work sharing of the fused matmuls: the units of work (panels, or tiles) of
// several matrices laid end to end, handed out to threads as they ask.
// Target-independent; used inside one parallel() region per call.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/parallel.hpp"

namespace staticlm::kernels::detail {

// [begin, end) of part i of n equal parts of [0, count).
inline void split(int count, int parts, int i, int& begin, int& end) {
    begin = int(int64_t(count) * i / parts);
    end = int(int64_t(count) * (i + 1) / parts);
}

// Guided self-scheduling over segments laid end to end (segment s holds units
// [start(s), end_[s])): each take is a contiguous range of about 1/(2·threads)
// of what is left, at least min_take units, never crossing a segment's end.
// Early takes are long (long weight streams, few atomics); the short ones at
// the end even out threads that ran slower (a shared or busy core).
class GuidedRanges {
public:
    GuidedRanges(const int* seg_end, int n_seg, int min_take, int n_threads)
        : seg_end_(seg_end),
          n_seg_(n_seg),
          min_take_(std::max(1, min_take)),
          div_(2 * std::max(1, n_threads)),
          total_(n_seg > 0 ? seg_end[n_seg - 1] : 0) {}

    // The next range: segment seg, units [begin, end) counted within it.
    bool next(int& seg, int& begin, int& end) {
        int cur = next_.load(std::memory_order_relaxed);
        for (;;) {
            if (cur >= total_) return false;
            int s = 0;
            while (seg_end_[s] <= cur) ++s;
            const int take = std::max(min_take_, (total_ - cur) / div_);
            const int stop = std::min(cur + take, seg_end_[s]);
            if (next_.compare_exchange_weak(cur, stop, std::memory_order_relaxed)) {
                const int start = s > 0 ? seg_end_[s - 1] : 0;
                seg = s;
                begin = cur - start;
                end = stop - start;
                return true;
            }
        }
    }

    int total() const { return total_; }

private:
    const int* seg_end_;
    int n_seg_;
    int min_take_;
    int div_;
    int total_;
    std::atomic<int> next_{0};
};

}  // namespace staticlm::kernels::detail
