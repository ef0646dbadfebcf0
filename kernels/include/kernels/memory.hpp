// Buffer: one anonymous, 64-byte-aligned, zero-filled allocation (mmap, with a
// transparent-huge-page hint). Weight arenas, KV caches and workspaces are
// Buffers; nothing is allocated after they are made.
#pragma once

#include <cstddef>
#include <utility>

namespace staticlm {

class Buffer {
public:
    Buffer() = default;
    explicit Buffer(size_t bytes);  // throws Error(io) naming the size when it cannot
    ~Buffer();
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    Buffer(Buffer&& other) noexcept { swap(other); }
    Buffer& operator=(Buffer&& other) noexcept {
        Buffer tmp(std::move(other));
        swap(tmp);
        return *this;
    }

    std::byte* data() const { return data_; }
    size_t size() const { return size_; }
    template <class T>
    T* as(size_t byte_offset = 0) const {
        return reinterpret_cast<T*>(data_ + byte_offset);
    }

private:
    void swap(Buffer& o) noexcept {
        std::swap(data_, o.data_);
        std::swap(size_, o.size_);
        std::swap(mapped_, o.mapped_);
    }
    std::byte* data_ = nullptr;
    size_t size_ = 0;
    size_t mapped_ = 0;
};

// Rounds up to a multiple of 64 (cache line / AVX-512 vector).
constexpr size_t align64(size_t n) { return (n + 63) & ~size_t{63}; }

}  // namespace staticlm
