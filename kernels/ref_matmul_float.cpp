// Scalar references for the f32 / f16 / bf16 matmuls on plain row-major
// weights: y = x · Wᵀ with double accumulation of exact fp32 products.
#include "kernels/ref.hpp"

namespace staticlm::kernels::ref {

namespace {

template <class Load>
void matmul_rows(const Load& load_w, int n, int k, const float* x, size_t ldx, int m, float* y,
                 size_t ldy) {
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            double acc = 0.0;
            for (int kk = 0; kk < k; ++kk)
                acc += double(x[size_t(i) * ldx + kk]) * double(load_w(size_t(j) * k + kk));
            y[size_t(i) * ldy + j] = float(acc);
        }
}

}  // namespace

void matmul_f32(const float* w, int n, int k, const float* x, size_t ldx, int m, float* y,
                size_t ldy) {
    matmul_rows([w](size_t i) { return w[i]; }, n, k, x, ldx, m, y, ldy);
}

void matmul_f16(const uint16_t* w, int n, int k, const float* x, size_t ldx, int m, float* y,
                size_t ldy) {
    matmul_rows([w](size_t i) { return f16_to_f32(w[i]); }, n, k, x, ldx, m, y, ldy);
}

void matmul_bf16(const uint16_t* w, int n, int k, const float* x, size_t ldx, int m, float* y,
                 size_t ldy) {
    matmul_rows([w](size_t i) { return bf16_to_f32(w[i]); }, n, k, x, ldx, m, y, ldy);
}

}  // namespace staticlm::kernels::ref
