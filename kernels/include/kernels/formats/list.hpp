// The list of weight formats, in the order of their WeightType numbers. Each
// name X has a kernels/formats/X.cpp (its FormatInfo: geometry, sizes, row
// unpacking) and a per-target SIMD body defining X_kernels() (pack, matmul).
// Adding a format: a WeightType value, one line here, those two files.
#pragma once

#define STATICLM_WEIGHT_FORMATS(X) X(q8) X(f16) X(bf16) X(f32) X(q4) X(q5) X(q4k) X(q6k) X(q5k) X(q4a) X(q5a)
