/* The weight formats: the one list. C and C++, included by staticlm.h (the
 * slm_weights values), staticlm/types.hpp (WeightType) and the kernels (each
 * format's entry and SIMD body); kernels/meson.build reads it to compile each
 * format's folder kernels/formats/<name>/ (format.cpp, and simd.cpp where
 * there is one).
 *
 * One line per format, X(number, name, C enum suffix, description), in number
 * order. Append only: the numbers are the C API's slm_weights values, stable
 * across releases. The name is the format's --weights name and folder. */
#ifndef STATICLM_WEIGHT_FORMATS_H
#define STATICLM_WEIGHT_FORMATS_H

#define STATICLM_WEIGHT_FORMAT_LIST(X) \
    X(0, q8, Q8, "int8, a half scale per 32 (8.5 bits)") \
    X(1, f16, F16, "IEEE half (16 bits)") \
    X(2, bf16, BF16, "bfloat16 (16 bits)") \
    X(3, f32, F32, "float (32 bits)") \
    X(4, q4, Q4, "4-bit, a half scale per 32; GGUF Q4_0 (4.5 bits)") \
    X(5, q5, Q5, "5-bit, a half scale per 32; GGUF Q5_0 (5.5 bits)") \
    X(6, q4k, Q4K, "GGUF Q4_K: 4-bit, 6-bit scales and mins per 32 (4.625 bits)") \
    X(7, q6k, Q6K, "GGUF Q6_K: 6-bit, 8-bit scales per 16 (6.5625 bits)") \
    X(8, q5k, Q5K, "GGUF Q5_K: 5-bit, 6-bit scales and mins per 32 (5.625 bits)") \
    X(9, q4a, Q4A, "GGUF Q4_1: 4-bit, a half scale and offset per 32 (5 bits)") \
    X(10, q5a, Q5A, "GGUF Q5_1: 5-bit, a half scale and offset per 32 (6 bits)") \
    X(11, iq4nl, IQ4NL, "GGUF IQ4_NL: 4-bit indices into a 16-value table, a half scale per 32 (4.5 bits)") \
    X(12, q3k, Q3K, "GGUF Q3_K: 3-bit, 6-bit scales per 16 (3.4375 bits)") \
    X(13, iq4xs, IQ4XS, "GGUF IQ4_XS: IQ4_NL's table, 6-bit scales per 32, a half per 256 (4.3125 bits)") \
    X(14, q2k, Q2K, "GGUF Q2_K: 2-bit, 4-bit scales and mins per 16 (2.625 bits)")

#endif
