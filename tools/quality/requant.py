#!/usr/bin/env python3
"""Writes a copy of a GGUF file whose matrices are llama.cpp's Q4_0 (or
Q5_0) of the original weights: every 2-D tensor is dequantized to f32 and
quantized again with gguf-py's quantizer (the same rule as ggml's reference
quantize_row_q4_0 / q5_0); the token embedding and output head become Q8_0
(staticlm's q4 and q5 keep them in q8; llama.cpp's own 4-bit files keep the
output head at 6 bits); 1-D tensors (norms) and the metadata are copied as
they are.

The comparison file for `staticlm --weights q4` quality: the same weights,
quantized by llama.cpp's rule (round to nearest, the largest |x| at -8), and
loaded by staticlm exactly (Q4_0 repacks into q4, Q5_0 into q5, without
rounding). The Q5_0 copy of tests/fixtures/gguf/llama-tied.gguf is a fixture.

    /opt/slm-py/bin/pip install gguf==0.19.0 numpy==2.1.3
    /opt/slm-py/bin/python tools/quality/requant.py IN.gguf OUT.gguf [Q4_0|Q5_0]
"""
import sys

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
from gguf.quants import dequantize, quantize

if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] not in ("Q4_0", "Q5_0")):
    sys.exit(__doc__)
src, dst = sys.argv[1], sys.argv[2]
low_bit = GGMLQuantizationType[sys.argv[3] if len(sys.argv) == 4 else "Q4_0"]
reader = GGUFReader(src)
arch = reader.fields["general.architecture"].contents()
writer = GGUFWriter(dst, arch)
for field in reader.fields.values():
    if field.name.startswith("GGUF.") or field.name == "general.architecture":
        continue
    vtype = field.types[0]
    sub = field.types[-1] if vtype == GGUFValueType.ARRAY else None
    writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub)
for t in reader.tensors:
    shape = [int(d) for d in reversed(t.shape)]  # numpy order: rows first
    values = dequantize(t.data, t.tensor_type).reshape(shape).astype(np.float32)
    if len(shape) == 2 and shape[1] % 32 == 0:
        vocab = t.name in ("token_embd.weight", "output.weight")
        qtype = GGMLQuantizationType.Q8_0 if vocab else low_bit
        q = quantize(values, qtype)
        writer.add_tensor(t.name, q, raw_shape=q.shape, raw_dtype=qtype)
    else:
        writer.add_tensor(t.name, values)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
